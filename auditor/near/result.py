"""What the near-duplicate search returns: small frozen results whose size is bounded by the
number of records, never by the number of similar pairs.

``Pairs`` holds, over *nodes* (groups of records with identical shingle sets):

- a maximum spanning forest of the similarity graph (at most nodes - 1 edges). For any
  threshold t, the components of the forest's edges with Jaccard >= t are exactly the
  components of the whole graph at t (a graph edge left out of the forest closes a cycle
  whose other edges all score at least as high, so dropping it never splits a component);
- exact counts of node pairs and record pairs per verified score, at a resolution of 1e-6
  (thresholds are rounded to 6 decimals, so every count at a threshold is exact);
- a bounded sample of the verified pairs themselves: the best ``STRATUM_CAP`` per 0.01-wide
  score stratum. When no stratum overflowed, the sample is every pair (``complete``).

So any threshold in the searched range is answered (pairs, clusters, the best pairs) without
searching again, in memory that grows with records only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaincinv

from ..errors import AuditorError
from ..settings import check_threshold

EPS = 1e-9                   # float slack when comparing a Jaccard with a threshold
SCORE_SCALE = 1_000_000      # count resolution: thresholds carry at most 6 decimals
STRATA = 100                 # pair-sample strata per unit of Jaccard (0.01 wide)
STRATUM_CAP = 20_000         # pairs kept per stratum (the best ones)


def score_bins(jaccard: np.ndarray) -> np.ndarray:
    """Bin k holds scores j with j + EPS in [k, k + 1) / SCORE_SCALE, so "j >= t - EPS" is
    "bin >= round(t * SCORE_SCALE)" for every t with at most 6 decimals."""
    return np.floor((np.asarray(jaccard, dtype=np.float64) + EPS) * SCORE_SCALE).astype(np.int64)


def threshold_bin(threshold: float) -> int:
    return int(round(float(threshold) * SCORE_SCALE))


def checked_search(threshold, method: str) -> float:
    """The searched threshold (``searched_threshold``) of a search request, once its threshold and
    method are checked: what every entry point of the search (one pass, pieces, Ray) validates."""
    check_threshold(threshold)
    if method not in ("auto", "exact", "lsh"):
        raise AuditorError("usage", f"Unknown near-duplicate method {method!r:.40}.", "Use auto, exact or lsh.")
    return searched_threshold(threshold)


def searched_threshold(threshold: float) -> float:
    """The lowest threshold to search for ``threshold``: itself on the 6-decimal grid, else the
    grid point just below (so every pair at or above it is found and counted)."""
    return math.floor(float(threshold) * SCORE_SCALE + 1e-6) / SCORE_SCALE


@dataclass(frozen=True)
class ScoreCounts:
    """Exact pair counts per verified score bin (bins ascending, nonzero bins only)."""

    bins: np.ndarray = field(repr=False)
    node_pairs: np.ndarray = field(repr=False)     # node pairs in each bin
    record_pairs: np.ndarray = field(repr=False)   # record pairs in each bin (node weights multiplied)

    def at_least(self, threshold: float, records: bool = True) -> int:
        """Pairs whose Jaccard is >= threshold."""
        start = int(np.searchsorted(self.bins, threshold_bin(threshold), side="left"))
        return int((self.record_pairs if records else self.node_pairs)[start:].sum())

    @staticmethod
    def empty() -> "ScoreCounts":
        z = np.zeros(0, np.int64)
        return ScoreCounts(bins=z, node_pairs=z, record_pairs=z)


@dataclass(frozen=True)
class EstimatedCounts:
    """Pairs the work budget did not count one by one, estimated from seeded samples:

    - the sparse join's (``near.join``): candidates the forest already implied at their Jaccard's
      upper bound, so they change no cluster, verified in a sample at ``rate``. Per score bin,
      over the sampled pairs that reached the lowest threshold: the record pairs they stand for
      (``record_sum``, and its squares) and the node pairs (``node_sum``);
    - template groups' (``near.dense``): the pairs (r, c > r) of a sample of rows r at
      ``row_rate``, per score bin (``row_node``, ``row_record``), and over those rows the sum of
      the square of each row's pairs at or above every 0.01 level (``row_*_sq``, index = level
      x 100). Their other pairs were scored for the forest only (``uncounted``), except those
      scoring at or above ``row_cut``, which are few and were all counted."""

    rate: float
    skipped: int                                   # candidates left out of the verified sample
    bins: np.ndarray = field(repr=False)
    node_sum: np.ndarray = field(repr=False)
    record_sum: np.ndarray = field(repr=False)
    record_sq: np.ndarray = field(repr=False)
    unit: float = 1.0                              # mean record pairs per sampled pair (0 hits' scale)
    row_rate: float | None = None                  # template groups' row sample (None: counted exactly)
    uncounted: int = 0
    row_cut: int = 0                               # score bin from which their pairs were all counted
    row_bins: np.ndarray | None = field(default=None, repr=False)
    row_node: np.ndarray | None = field(default=None, repr=False)
    row_record: np.ndarray | None = field(default=None, repr=False)
    row_node_sq: np.ndarray | None = field(default=None, repr=False)
    row_record_sq: np.ndarray | None = field(default=None, repr=False)

    def at_least(self, threshold: float, records: bool = True) -> tuple[float, float, float]:
        """(estimate, low, high) of the uncounted pairs with Jaccard >= threshold: each sample's
        sum over its rate, and a 95% interval (Garwood's exact Poisson interval on the samples'
        effective number of hits, scaled to their mean weight; the samples' own binomial spread
        is narrower, so the interval is conservative). A sampled row is one hit weighing its
        pairs at or above the threshold; its square is read at the 0.01 level at or below the
        threshold (no smaller), which only widens the interval."""
        tb = threshold_bin(threshold)
        start = int(np.searchsorted(self.bins, tb, side="left"))
        total = float((self.record_sum if records else self.node_sum)[start:].sum())
        squares = float(self.record_sq[start:].sum()) if records else total
        if self.row_rate is None:
            hits, scale = (total * total / squares, squares / total) if total > 0 else (0.0, self.unit if records
                                                                                         else 1.0)
            low, high = _garwood(hits)
            return total / self.rate, low * scale / self.rate, high * scale / self.rate
        # Both samples on one scale: each hit stands for 1 / its rate of the pairs.
        at = int(np.searchsorted(self.row_bins, tb, side="left"))
        rows = float((self.row_record if records else self.row_node)[at:].sum())
        row_sq = self.row_record_sq if records else self.row_node_sq
        level = min(tb // (SCORE_SCALE // STRATA), row_sq.size - 1)
        estimate = total / self.rate + rows / self.row_rate
        spread = squares / self.rate ** 2 + float(row_sq[level]) / self.row_rate ** 2
        if estimate > 0:
            low, high = _garwood(estimate * estimate / spread)
            return estimate, low * spread / estimate, high * spread / estimate
        # No hit: the scale is a typical hit of each sample that still estimates pairs this high.
        scales = [(self.unit if records else 1.0) / self.rate] if self.skipped else []
        if tb < self.row_cut:
            lowest = float((self.row_record if records else self.row_node).sum())
            scales.append((float(row_sq[0]) / lowest if lowest > 0 else 1.0) / self.row_rate)
        return 0.0, 0.0, _garwood(0.0)[1] * max(scales, default=0.0)


def _garwood(hits: float) -> tuple[float, float]:
    """Garwood's exact 95% interval for a Poisson count of ``hits``."""
    # chi2.ppf(q, 2k) / 2 is the inverse regularised gamma function (scipy.stats costs ~0.3 s to import)
    low = float(gammaincinv(hits, 0.025)) if hits > 0 else 0.0
    high = float(gammaincinv(hits + 1, 0.975))
    return low, high


@dataclass(frozen=True)
class Pairs:
    """Verified near-duplicate structure over nodes (groups of records with identical shingle sets)."""

    n_records: int
    node_of: np.ndarray = field(repr=False)    # (n_records,) node id, -1 for a record with no shingles
    weight: np.ndarray = field(repr=False)     # (n_nodes,) records per node
    a: np.ndarray = field(repr=False)          # sampled node pairs (a < b), sorted by jaccard desc, then a, b
    b: np.ndarray = field(repr=False)
    jaccard: np.ndarray = field(repr=False)
    forest_a: np.ndarray = field(repr=False)   # maximum spanning forest edges, sorted by jaccard desc
    forest_b: np.ndarray = field(repr=False)
    forest_jaccard: np.ndarray = field(repr=False)
    counts: ScoreCounts = field(repr=False)
    complete: bool = True                      # the sample holds every verified pair
    min_threshold: float = 0.3
    method: str = "exact-all-pairs"
    candidates: int = 0                        # node pairs whose Jaccard was computed
    dense_groups: tuple = ()                   # nodes per group verified by blocked dense products
    num_perm: int | None = None
    bands: int | None = None
    rows: int | None = None
    seed: int | None = None
    estimate: EstimatedCounts | None = None    # pairs past the work budget, estimated (None: all exact)

    @property
    def n_nodes(self) -> int:
        return int(self.weight.size)

    def catch_probability(self, threshold: float) -> float:
        """Chance that the search proposes a pair whose Jaccard is exactly ``threshold``."""
        if self.method != "minhash-lsh":
            return 1.0
        return float(1.0 - (1.0 - threshold ** self.rows) ** self.bands)

    def check_threshold(self, threshold: float) -> float:
        """The threshold as answered: rounded to 6 decimals (the counts' resolution)."""
        threshold = round(float(threshold), 6)
        if not (self.min_threshold - EPS <= threshold <= 1.0):
            raise AuditorError("usage", f"Threshold {threshold} is outside the searched range "
                               f"[{self.min_threshold}, 1].",
                               "Search again from a lower threshold to look that low (scan's --thresholds, "
                               "the --threshold of dedup, leak and clean).")
        return threshold

    def upto(self, threshold: float) -> int:
        """How many *sampled* node pairs have Jaccard >= threshold (they form a prefix)."""
        threshold = self.check_threshold(threshold)
        return int(np.searchsorted(-self.jaccard, -threshold + EPS, side="right"))

    def forest_upto(self, threshold: float) -> int:
        """How many forest edges have Jaccard >= threshold (they form a prefix)."""
        threshold = self.check_threshold(threshold)
        return int(np.searchsorted(-self.forest_jaccard, -threshold + EPS, side="right"))

    def node_pairs(self, threshold: float) -> int:
        """Node pairs with Jaccard >= threshold (exact, unless ``pairs_estimated``)."""
        threshold = self.check_threshold(threshold)
        extra = 0 if self.estimate is None else int(round(self.estimate.at_least(threshold, records=False)[0]))
        return self.counts.at_least(threshold, records=False) + extra

    def record_pairs(self, threshold: float) -> int:
        """Unordered record pairs with Jaccard >= threshold, identical texts included: exact, unless
        the work budget left some unverified (``pairs_estimated``; ``pairs_interval`` bounds it)."""
        threshold = self.check_threshold(threshold)
        extra = 0 if self.estimate is None else int(round(self.estimate.at_least(threshold)[0]))
        return self._exact_record_pairs(threshold) + extra

    def _exact_record_pairs(self, threshold: float) -> int:
        w = self.weight.astype(np.int64)
        within = int((w * (w - 1) // 2).sum())
        return within + self.counts.at_least(threshold)

    @property
    def pairs_estimated(self) -> bool:
        """Whether pair counts include an estimate (the work budget was passed)."""
        return self.estimate is not None

    def pairs_interval(self, threshold: float) -> tuple[int, int] | None:
        """A 95% interval for ``record_pairs(threshold)`` when it is estimated, else None."""
        if self.estimate is None:
            return None
        threshold = self.check_threshold(threshold)
        exact = self._exact_record_pairs(threshold)
        _, low, high = self.estimate.at_least(threshold)
        return exact + int(math.floor(low)), exact + int(math.ceil(high))

    def members(self) -> list[np.ndarray]:
        """Record ids of every node, in record order."""
        order = np.argsort(self.node_of, kind="stable")
        order = order[self.node_of[order] >= 0]
        return np.split(order, np.cumsum(self.weight)[:-1])

    def record_pair_sample(self, threshold: float, limit: int) -> list[tuple[int, int, float]]:
        """Up to ``limit`` record pairs (a < b) with their Jaccard, highest first, then by position.
        Exact (the same list a full pair list would give) for limit <= STRATUM_CAP."""
        # Each node's first record, and the records of nodes that hold several (identical sets):
        # no per-node arrays for the other nodes, which at 1M records are most of them.
        order = np.argsort(self.node_of, kind="stable")
        order = order[self.node_of[order] >= 0]
        starts = np.cumsum(self.weight) - self.weight
        first = order[starts]
        out: list[tuple[int, int, float]] = []
        for node in np.flatnonzero(self.weight > 1):          # identical shingle sets: Jaccard 1
            m = order[starts[node]:starts[node] + min(int(self.weight[node]), limit + 1)]
            out.extend((int(m[0]), int(x), 1.0) for x in m[1:limit + 1])
            if len(out) >= limit:     # nodes come by first record, so later ones only sort after these
                break
        k = self.upto(threshold)
        for a, b, j in zip(self.a[:k].tolist(), self.b[:k].tolist(), self.jaccard[:k].tolist()):
            if len(out) >= 2 * limit and j < out[-1][2]:
                break
            ra, rb = int(first[a]), int(first[b])
            out.append((min(ra, rb), max(ra, rb), j))
        out.sort(key=lambda p: (-p[2], p[0], p[1]))
        return out[:limit]


@dataclass(frozen=True)
class CrossPairs:
    """Verified pairs (a in dataset A, b in dataset B) with Jaccard >= min_threshold: for each
    B record its best ``per_b`` matches (Jaccard desc, then a), and the exact pair count."""

    a: np.ndarray
    b: np.ndarray
    jaccard: np.ndarray
    min_threshold: float
    method: str
    candidates: int
    pairs: int = 0                  # every verified cross pair, exactly
    per_b: int = 0                  # matches kept per B record
    bands: int | None = None
    rows: int | None = None
