"""Threads for the engine's heavy numpy/scipy steps. Sorting, sparse products and BLAS
release the GIL, so a 2-core machine runs two such steps at once."""
from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _workers() -> int:
    """AUDITOR_THREADS if set, else the available cores up to 4 (beyond that, memory
    bandwidth rather than cores limits these steps)."""
    setting = os.environ.get("AUDITOR_THREADS", "").strip()
    if setting:
        if setting.isdigit() and int(setting) >= 1:
            return int(setting)
        warnings.warn(f"AUDITOR_THREADS={setting!r} is not a positive whole number; using the default.")
    return max(1, min(4, _available_cpus()))


WORKERS = _workers()


def thread_map(fn, items):
    """map(fn, items) on WORKERS threads, yielding results in input order as they are ready,
    so the caller can consume (and report progress on) early results while later ones run.
    WORKERS is read at call time (tests set it)."""
    items = list(items)
    if WORKERS == 1 or len(items) < 2:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(WORKERS) as pool:
        yield from pool.map(fn, items)
