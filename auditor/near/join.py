"""The exact search: every pair with Jaccard >= the lowest threshold, provably, verified and
streamed into a sink. Blocks of ``PrefixIndex`` candidates run on parallel.WORKERS threads
(scipy's sparse kernels release the GIL); their verified pairs reach the sink in block order,
so the result does not depend on thread timing."""
from __future__ import annotations

import scipy.sparse as sp

from ..parallel import thread_map
from . import dense
from .prefix import PrefixIndex, prefix_matrix
from .verifier import Verifier


def prefix_join(nodes: sp.csr_matrix, prefixes: sp.csr_matrix, min_threshold: float, sink, *,
                queries: tuple[int, int], indexed: int, progress=None, joined=None, group=None) -> int:
    """Pairs (query row q, indexed row i) with Jaccard >= min_threshold, exactly, into ``sink``
    (as (q, i, jaccard) batches). Returns the number of candidates verified. ``joined`` and
    ``group``: see ``PrefixIndex`` (dense groups)."""
    first, last = queries
    index = PrefixIndex(nodes, prefixes, min_threshold, indexed, joined, group)
    blocks = index.blocks(queries)
    verifier = Verifier(nodes, min_threshold, sink)
    candidates = 0
    for (_, stop), (kept, count) in zip(blocks, thread_map(
            lambda block: verifier.verify_light(*index.candidates(block)), blocks)):
        candidates += count
        verifier.add(kept)
        if progress:
            progress((stop - first) / max(last - first, 1), "verifying pairs")
    return candidates


def exact_all_pairs(nodes: sp.csr_matrix, min_threshold: float, sink, progress=None, prefixes=None,
                    plan=None) -> tuple[int, list]:
    """Every node pair with Jaccard >= min_threshold into ``sink``: dense groups (``dense``)
    first, which seeds the forest well, then the prefix join. Returns (pairs scored, groups)."""
    prefixes = prefix_matrix(nodes, min_threshold) if prefixes is None else prefixes
    groups, joined = dense.plan(nodes, prefixes) if plan is None else plan
    scored = 0
    for i, group in enumerate(groups):
        if progress:
            progress(0.5 * i / len(groups), "scoring template groups")
        scored += dense.process(nodes, group, min_threshold, sink)
    n = nodes.shape[0]
    join_progress = None if progress is None else (
        (lambda f, stage: progress(0.5 + 0.5 * f, stage)) if groups else progress)
    scored += prefix_join(nodes, prefixes, min_threshold, sink, queries=(0, n), indexed=n, progress=join_progress,
                          joined=joined if groups else None, group=dense.group_of(n, groups) if groups else None)
    return scored, groups
