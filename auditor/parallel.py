"""Threads for the engine's heavy numpy/scipy steps. Sorting, sparse products and BLAS
release the GIL, so a 2-core machine runs two such steps at once."""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from .env import env_int


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


MAX_WORKERS = 64


def _workers() -> int:
    """AUDITOR_THREADS if set (1 .. 64; a bad value warns and the default applies), else the
    available cores up to 4 (beyond that, memory bandwidth rather than cores limits these steps)."""
    return env_int("AUDITOR_THREADS", max(1, min(4, _available_cpus())), 1, MAX_WORKERS)


def __getattr__(name):
    # WORKERS is read from the environment on first use, not at import (tests may also set it).
    if name == "WORKERS":
        globals()["WORKERS"] = value = _workers()
        return value
    raise AttributeError(name)


def fork_safe(lock):
    """``lock``, free in a forked child (the app computes each job in one): a fork waits while a
    thread holds it, so no child inherits it held by a thread that does not exist there. Only for
    locks held briefly (one held across a long computation would hold up every fork)."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=lock.acquire, after_in_parent=lock.release, after_in_child=lock.release)
    return lock


AHEAD = 2        # results computed ahead of the caller, per thread


def thread_map(fn, items):
    """map(fn, items) on WORKERS threads, yielding results in input order as they are ready,
    so the caller can consume (and report progress on) early results while later ones run.
    At most AHEAD x WORKERS items are in hand at a time: the pool's own map starts every item
    at once, and results waiting for a slower caller (a join's verified pairs, block after
    block) were held all together. WORKERS is read at call time (tests set it)."""
    items = list(items)
    workers = globals()["WORKERS"] if "WORKERS" in globals() else __getattr__("WORKERS")
    if workers == 1 or len(items) < 2:
        yield from map(fn, items)
        return
    pending: deque = deque()
    with ThreadPoolExecutor(workers) as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= AHEAD * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:                  # the caller stopped early or failed: nothing more is started
            for future in pending:
                future.cancel()
