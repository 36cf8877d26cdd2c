"""The allocators' settings a memory-bound process runs with: glibc's mmap threshold
(``pin_mmap_threshold``), its heap trimmed after steps that leave it fragmented (``trim_heap``) and
Arrow's memory pool (``arrow_pool_returns_memory``)."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_MMAP_THRESHOLD = -3            # glibc's mallopt parameter (malloc.h)
MMAP_THRESHOLD = 128 * 1024      # glibc's default threshold, kept fixed


def pin_mmap_threshold() -> bool:
    """Keeps glibc's mmap threshold at its default 128 KiB, so every larger block (numpy arrays,
    the packed records' buffer, a long text) gets pages of its own, given back when freed. Left
    dynamic, freeing one large block raised the threshold to that block's size (up to 32 MiB)
    and later arrays came from the heap, whose freed pages are kept: a scan of 20 MB of long
    records held 21-30 MB freed that way, which undid dropping the records' texts (peak 353 MB;
    331 MB pinned, in the run instrumented at its stages; BENCHMARKS.md's table is the bench's).
    True when set; elsewhere (not glibc) a no-op."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):
        return False


def trim_heap() -> bool:
    """Hands the C heap's free pages back to the system (glibc's malloc_trim), after a step that
    made and dropped a Python object per word: tokenising 100 MB of Chinese text left 22 MB of the
    heap free but held, which the search's peak then stood on. True when pages went back; where
    there is no glibc, a no-op."""
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(_LIBC.malloc_trim(0))
    except (OSError, AttributeError):
        return False


_LIBC = None


def arrow_pool_returns_memory() -> None:
    """Arrow allocates from jemalloc, not pyarrow's default mimalloc, which kept what a batch freed:
    contamination of 8 MB of long texts (non-ASCII, folded by Arrow a block at a time) peaked at
    118 MB above the process's base with mimalloc, 95 MB with jemalloc. Before pyarrow is imported,
    through Arrow's own setting (so a Ray worker the process starts inherits it); after, by setting
    the pool. Where pyarrow lacks jemalloc, its default stays."""
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
        return
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:
        pass
