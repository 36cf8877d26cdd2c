"""Threads for the engine's heavy numpy/scipy steps. Sorting, sparse products and BLAS
release the GIL, so a 2-core machine runs two such steps at once."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# At most 4: beyond that, memory bandwidth rather than cores limits these steps. AUDITOR_THREADS overrides.
WORKERS = max(1, int(os.environ.get("AUDITOR_THREADS") or min(4, _available_cpus())))


def thread_map(fn, items):
    """list(map(fn, items)) on WORKERS threads, results in input order."""
    items = list(items)
    if WORKERS == 1 or len(items) < 2:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))
