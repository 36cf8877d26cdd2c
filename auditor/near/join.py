"""The exact search: every pair with Jaccard >= the lowest threshold, provably, verified and
streamed into a sink. Blocks of ``PrefixIndex`` candidates run on parallel.WORKERS threads
(scipy's sparse kernels release the GIL); their verified pairs reach the sink in block order,
so the result does not depend on thread timing."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..parallel import thread_map
from . import dense
from .prefix import PrefixIndex, prefix_matrix
from .result import EPS
from .sampling import sampled
from .verifier import Verifier, verify

EXACT_WORK = 4_000_000_000     # work counted exactly: template-group pairs, then the sparse join's product entries
SAMPLE_RATE = 1 / 16          # beyond it, the share of forest-implied candidates verified for the counts
REFRESH_MIN = 1024            # new forest edges after which a budgeted block re-reads the forest


def prefix_join(nodes: sp.csr_matrix, prefixes: sp.csr_matrix, min_threshold: float, sink, *,
                queries: tuple[int, int], indexed: int, progress=None, joined=None, group=None,
                budget: float | None = None, seed: int = 1, rate: float = SAMPLE_RATE) -> int:
    """Pairs (query row q, indexed row i) with Jaccard >= min_threshold, exactly, into ``sink``
    (as (q, i, jaccard) batches). Returns the number of candidates verified. ``joined`` and
    ``group``: see ``PrefixIndex`` (dense groups).

    ``budget``: product entries (the join's work, known before it starts) whose blocks are
    verified pair by pair. In the blocks past it, a candidate that the forest already joins at or
    above its Jaccard's upper bound (``PrefixIndex.bounded_candidates``) can change no cluster: it
    is verified only when a seeded hash puts it in the ``rate`` sample, and then only counted
    (``PairSink.add_sampled``), so clusters stay exact and the counts carry an estimate."""
    first, last = queries
    index = PrefixIndex(nodes, prefixes, min_threshold, indexed, joined, group)
    blocks = index.blocks(queries)
    verifier = Verifier(nodes, min_threshold, sink)
    within = [budget is None or work <= budget for work in index.work]      # None: no limit

    def run(item):
        block, exact = item
        if exact:
            return verifier.verify_light(*index.candidates(block))
        a, b, bound = index.bounded_candidates(block)
        picked = sampled(a, b, seed, rate)
        return a, b, bound, picked, verify(verifier.nodes, a[picked], b[picked], sizes=verifier.sizes,
                                            min_threshold=verifier.t)

    candidates = 0
    for (_, stop), exact, out in zip(blocks, within, thread_map(run, list(zip(blocks, within)))):
        if exact:
            kept, count = out
            candidates += count
            verifier.add(kept)
        else:
            candidates += _budgeted(verifier, sink, *out, rate)
        if progress:
            progress((stop - first) / max(last - first, 1), "verifying pairs")
    return candidates


def _budgeted(verifier: Verifier, sink, a, b, bound, picked, scores, rate: float) -> int:
    """One block past the budget, in block order: candidates the forest does not imply at their
    bound are verified and added; the implied ones count through the sample alone."""
    if sink.buffered >= max(REFRESH_MIN, sink.n // 16):
        sink.compact()                    # the forest as the blocks so far built it (block order:
        sink.index_forest()               # the same choices on every run)
    implied = sink.implied(a, b, bound)
    pa, pb, p_implied = a[picked], b[picked], implied[picked]
    reached = scores >= verifier.t - EPS
    counted = reached & p_implied
    sink.add_sampled(pa[counted], pb[counted], scores[counted], rate, int((implied & ~picked).sum()))
    added = reached & ~p_implied
    verifier.add((pa[added], pb[added], scores[added]))
    rest = ~implied & ~picked
    more, count = verifier.verify_light(a[rest], b[rest])
    verifier.add(more)
    return int(picked.sum()) + count


def dense_groups(nodes: sp.csr_matrix, groups: list, min_threshold: float, sink, progress=None, *,
                 budget: float | None = EXACT_WORK, seed: int = 1, rate: float = SAMPLE_RATE) -> tuple[int, int]:
    """Every template group into ``sink`` (``dense.process``), each moving ``progress`` in
    proportion to its pairs. A group's pairs are counted exactly while the pairs counted exactly
    so far, its own included, stay within ``budget`` (None: no limit); past it its counts come
    from a seeded sample of its rows at ``rate``, its forest still from every pair. Returns
    (pairs scored, pairs counted exactly)."""
    scored = counted = 0
    cells = np.array([float(g.ids.size) ** 2 for g in groups])
    done = np.concatenate(([0.0], np.cumsum(cells))) / max(float(cells.sum()), 1.0)
    for i, group in enumerate(groups):
        # Each group's blocks move the bar, in proportion to its pairs (the largest takes most).
        group_progress = None if progress is None else (
            lambda f, stage, i=i: progress(done[i] + f * (done[i + 1] - done[i]), stage))
        pairs = group.ids.size * (group.ids.size - 1) // 2
        exact = budget is None or counted + pairs <= budget
        counted += pairs if exact else 0
        scored += dense.process(nodes, group, min_threshold, sink, group_progress,
                                **({} if exact else {"rate": rate, "seed": seed}))
    return scored, counted


def exact_all_pairs(nodes: sp.csr_matrix, min_threshold: float, sink, progress=None, prefixes=None,
                    plan=None, budget: float | None = EXACT_WORK, seed: int = 1) -> tuple[int, list]:
    """Every node pair with Jaccard >= min_threshold into ``sink``: dense groups (``dense``)
    first, which seeds the forest well, then the prefix join. One work budget: the pairs the
    groups counted exactly leave the rest of it to the join. Returns (pairs scored, groups)."""
    prefixes = prefix_matrix(nodes, min_threshold) if prefixes is None else prefixes
    groups, joined = dense.plan(nodes, prefixes) if plan is None else plan
    scored, counted = dense_groups(nodes, groups, min_threshold, sink,
                                   None if progress is None else (lambda f, stage: progress(0.5 * f, stage)),
                                   budget=budget, seed=seed)
    n = nodes.shape[0]
    join_progress = None if progress is None else (
        (lambda f, stage: progress(0.5 + 0.5 * f, stage)) if groups else progress)
    scored += prefix_join(nodes, prefixes, min_threshold, sink, queries=(0, n), indexed=n, progress=join_progress,
                          joined=joined if groups else None, group=dense.group_of(n, groups) if groups else None,
                          budget=None if budget is None else max(budget - counted, 0), seed=seed)
    return scored, groups
