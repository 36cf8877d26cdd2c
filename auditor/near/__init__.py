"""Step 4, search: every pair of records whose shingle sets have Jaccard >= the lowest
threshold of interest, each verified with its true Jaccard, kept in bounded memory.

One job per module:

- ``prefix``: records with identical shingle sets collapse into one *node* (100,000 copies of
  a text cost one node); each node's prefix (its rarest shingles) and the candidate pairs that
  share a prefix shingle, cut down by a size filter and an overlap bound;
- ``classes``: nodes that only private shingles (held by one node) tell apart, such as a
  notice with an id word or one swapped word, are searched once per class, and the class
  pairs expanded back to node pairs exactly;
- ``verifier``: exact Jaccard of candidates (a compiled merge of sorted shingle lists);
- ``dense``: template groups (thousands of nodes sharing most shingles), scored by blocked
  dense products and counted, never listed; past the work budget a group's pairs are counted on
  a seeded sample of its rows (estimate and 95% interval) while its forest still sees every pair;
- ``join``: the exact search (``exact-all-pairs``) that drives both, block by block; past a
  work budget (``EXACT_WORK`` product entries or template-group pairs, AUDITOR_NEAR_WORK) candidates the forest already
  implies at their Jaccard's upper bound are verified in a seeded sample only: clusters stay
  exact, pair counts become estimates with a 95% interval (``result.EstimatedCounts``);
- ``lsh``: MinHash-LSH candidates instead, when the exact search's candidate bound (known in
  advance) passes ``MAX_EXACT_CANDIDATES``, or on request; the catch probability per threshold
  is reported;
- ``sink``: where verified pairs go. Only exact counts per score, a maximum spanning forest
  and a bounded sample are kept, so memory follows records, not pairs;
- ``result``: ``Pairs`` / ``CrossPairs``, which answer any threshold in the searched range
  (pairs, clusters, best pairs) without searching again;
- ``pieces``: the same search cut into pieces that merge exactly (template groups, join and LSH
  partitions), saved for resuming: run one after another here, or mapped by the Ray engine.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..env import env_int
from ..errors import AuditorError
from ..memory import trim_heap
from ..settings import MAX_EXACT_CANDIDATES
from ..shingles import rows_in_place, set_sizes
from . import dense
from .classes import NodeClasses, expand, node_classes
from .join import EXACT_WORK, SAMPLE_RATE, dense_groups, exact_all_pairs, prefix_join
from .lsh import (TARGET_RECALL, distinct_rows, choose_bands, lsh_band_pairs, lsh_candidate_batches, lsh_candidates,
                  minhash_signatures, minhash_signatures_numpy, pairs_within_groups)
from .prefix import (PRODUCT_BUDGET, CandidateFilter, PrefixIndex, collapse_identical, estimated_candidates,
                     prefix_matrix, size_fits)
from .result import (EPS, STRATUM_CAP, CrossPairs, EstimatedCounts, Pairs, ScoreCounts, checked_search,
                     searched_threshold)
from .sink import CrossSink, PairSink
from .verifier import ListSink, Verifier, verify, verify_candidates

PLAN_SHARE = 0.1              # of a search's progress: collapsing, classes, prefixes and template groups
CROSS_MATCHES = 5             # A matches kept per B record across two datasets


def find_pairs(matrix: sp.csr_matrix, min_threshold: float, method: str = "auto", *,
               num_perm: int = 128, seed: int = 1, max_exact_candidates: int = MAX_EXACT_CANDIDATES,
               progress=None, on_pairs=None, budget: float | None = None, reuse_matrix: bool = False) -> Pairs:
    """All record pairs with Jaccard >= ``min_threshold`` (see the package docstring).
    ``on_pairs(a, b, jaccard)``, if given, also sees every verified batch of node pairs (and so
    every pair is verified). ``budget``: the exact search's work verified pair by pair (product
    entries, ``join.prefix_join``); past it clusters stay exact and pair counts are estimated
    (``Pairs.pairs_estimated``). None: AUDITOR_NEAR_WORK, else ``EXACT_WORK``; math.inf: no limit.
    ``reuse_matrix``: the caller reads ``matrix`` no more, so the searched rows are written over its
    buffers instead of copied (``shingles.rows_in_place``)."""
    min_threshold = checked_search(min_threshold, method)      # counts resolve thresholds to 6 decimals
    if budget is None:
        budget = env_int("AUDITOR_NEAR_WORK", EXACT_WORK, 1, 10 ** 18)
    if progress:
        progress(0.0, "planning candidates")
    node_of, weight, nodes = collapse_identical(matrix, in_place=reuse_matrix)
    owned = reuse_matrix or nodes is not matrix       # the nodes' buffers are this search's to write over
    del matrix
    # Nodes that only private shingles tell apart are searched once per class (``classes``); a
    # caller that sees every pair (on_pairs) gets node pairs, so no classes there.
    node_classes_ = node_classes(nodes, weight) if on_pairs is None else None
    if node_classes_ is not None:
        searched = rows_in_place(nodes, node_classes_.rep) if owned else nodes[node_classes_.rep]
        searched_weight, multiplicity = node_classes_.weight, node_classes_.count
    else:
        searched, searched_weight, multiplicity = nodes, weight, None
    n_records = node_of.size
    del nodes
    prefixes = plan = None
    if method in ("auto", "exact"):
        prefixes = prefix_matrix(searched, min_threshold)
        # A caller that sees every pair (on_pairs) gets no dense groups: those are never listed.
        plan = dense.plan(searched, prefixes) if on_pairs is None else ([], prefixes)
    if method == "auto":
        method = "exact" if estimated_candidates(plan[1]) <= max_exact_candidates else "lsh"
    search_progress = None if progress is None else (lambda f, stage: progress(PLAN_SHARE + (1 - PLAN_SHARE) * f,
                                                                               stage))
    if progress:
        progress(PLAN_SHARE, "candidates planned")
    trim_heap()           # the plan's small freed blocks, handed back before the join's peak
    sink = PairSink(searched_weight, min_threshold, multiplicity)
    target = sink if on_pairs is None else _Tee(sink, on_pairs)
    common = dict(n_records=n_records, node_of=node_of, min_threshold=min_threshold)
    if method == "exact":
        candidates, groups = exact_all_pairs(searched, min_threshold, target, search_progress, prefixes, plan,
                                             budget=budget if on_pairs is None else math.inf, seed=seed)
        fields = dict(method="exact-all-pairs", candidates=candidates,
                      dense_groups=tuple(int(g.ids.size) for g in groups))
    else:
        bands, rows = choose_bands(min_threshold, num_perm)
        # Template groups are scored by dense products here too (a bucket of a template's records
        # would otherwise propose all their pairs); LSH proposes the pairs outside them.
        groups = [] if on_pairs is not None else (
            dense.plan(searched, prefix_matrix(searched, min_threshold))[0] if plan is None else plan[0])
        candidates, _ = dense_groups(searched, groups, min_threshold, sink, budget=budget, seed=seed)
        signatures = minhash_signatures(searched, bands * rows, seed,
                                        None if progress is None else lambda f, s: search_progress(0.2 * f, s))
        for cand_a, cand_b in lsh_candidate_batches(
                signatures, bands, rows,
                progress=None if progress is None else lambda f, s: search_progress(0.2 + 0.8 * f, s),
                group=dense.group_of(searched.shape[0], groups) if groups else None):
            candidates += int(cand_a.size)
            verify_candidates(searched, cand_a, cand_b, min_threshold, sink=target)
        fields = dict(method="minhash-lsh", candidates=candidates, num_perm=num_perm, bands=bands, rows=rows,
                      seed=seed, **({"dense_groups": tuple(int(g.ids.size) for g in groups)} if groups else {}))
    if node_classes_ is None:
        return sink.result(**common, **fields)
    return expand(sink.result(**common, **fields), node_classes_, weight=weight, **common, **fields)


class _Tee:
    def __init__(self, sink, callback):
        self.sink, self.callback = sink, callback

    def add(self, a, b, j, **kw) -> None:
        self.callback(a, b, j)
        self.sink.add(a, b, j, **kw)


class _CrossAdapter:
    """Joins over the stacked [A; B] matrix report (B row + n_a, A row) or (low, high) pairs;
    the cross sink wants (A row, B row)."""

    def __init__(self, sink: CrossSink, n_a: int, queries_first: bool):
        self.sink, self.n_a, self.queries_first = sink, n_a, queries_first

    def add(self, x, y, j, **_) -> None:
        a, b = (y, x) if self.queries_first else (x, y)
        self.sink.add(a, b - self.n_a, j)


def find_cross_pairs(matrix_a: sp.csr_matrix, matrix_b: sp.csr_matrix, min_threshold: float,
                     method: str = "exact", *, num_perm: int = 128, seed: int = 1,
                     per_b: int = CROSS_MATCHES) -> CrossPairs:
    """Near duplicates between two shingle matrices built over one vocabulary (same width):
    each B record's best ``per_b`` A matches and the exact number of pairs. ``method`` is "exact"
    or "lsh": "auto" is decided by the caller's settings (``NearSettings.cross_method``)."""
    if method not in ("exact", "lsh"):
        raise AuditorError("usage", f"Unknown cross-search method {method!r:.40}.",
                           "Use exact or lsh (NearSettings.cross_method decides auto).")
    return find_stacked_cross_pairs(sp.vstack([matrix_a, matrix_b]).tocsr(), matrix_a.shape[0], min_threshold,
                                    method, num_perm=num_perm, seed=seed, per_b=per_b)


def find_stacked_cross_pairs(stacked: sp.csr_matrix, n_a: int, min_threshold: float, method: str = "exact", *,
                             num_perm: int = 128, seed: int = 1, per_b: int = CROSS_MATCHES) -> CrossPairs:
    """``find_cross_pairs`` of A's rows (the first ``n_a``) and B's (the others) of one matrix, as
    ``shingle_matrix(texts_a + texts_b)`` makes it: no copy of either side."""
    n_b = stacked.shape[0] - n_a
    if method not in ("exact", "lsh"):
        raise AuditorError("usage", f"Unknown cross-search method {method!r:.40}.",
                           "Use exact or lsh (NearSettings.cross_method decides auto).")
    sink = CrossSink(per_b)
    if method == "exact":
        # The self-join's search with B's rows as queries against A's, over one shingle order.
        prefixes = prefix_matrix(stacked, min_threshold)
        candidates = prefix_join(stacked, prefixes, min_threshold, _CrossAdapter(sink, n_a, True),
                                 queries=(n_a, n_a + n_b), indexed=n_a)
        return sink.result(min_threshold=min_threshold, method="exact-all-pairs", candidates=candidates)
    bands, rows = choose_bands(min_threshold, num_perm)
    index = np.flatnonzero(set_sizes(stacked) > 0)
    sig = minhash_signatures(stacked[index], bands * rows, seed)
    candidates = 0
    for lo, hi in lsh_candidate_batches(sig, bands, rows):
        lo, hi = index[lo], index[hi]
        cross = (lo < n_a) & (hi >= n_a)
        candidates += int(cross.sum())
        verify_candidates(stacked, lo[cross], hi[cross], min_threshold, sink=_CrossAdapter(sink, n_a, False))
    return sink.result(min_threshold=min_threshold, method="minhash-lsh", candidates=candidates,
                       bands=bands, rows=rows)
