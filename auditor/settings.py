"""Typed settings, validated once at the edge and passed down as they are.

- ``SourceSpec``: where one side's rows come from (source, config, split, row cap, token, kind);
- ``NearSettings``: the near-duplicate search (threshold, curve thresholds, shingles, method,
  MinHash parameters); ``audit.ScanSettings`` extends it with the normalisers.

``validated()`` is the one place a setting's range is checked (``check_threshold`` for every
Jaccard threshold); library calls that take loose keyword arguments build these objects from
them, so the CLI, the app and Python callers are held to the same rules.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field, replace
from typing import Literal

from .errors import AuditorError
from .shingles import ShingleSpec

DEFAULT_THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
METHODS = ("auto", "exact", "lsh")
SOURCE_KINDS = ("auto", "example", "local", "hub")
KEEP_RULES = ("first", "longest", "most_common_answer")     # dedup: which record of a cluster stays
# The semantic pass's default cosine threshold, calibrated on unrelated bundled sets (auditor.semantic's
# docstring, bench/semantic.py --calibrate); here so the CLI's help states it without loading the model code.
SEMANTIC_THRESHOLD = 0.5
# "auto" searches A x B exactly unless its pairs pass this many times the self-join's cap on
# exact candidates (near.MAX_EXACT_CANDIDATES): the exact join streams its pairs in bounded memory.
CROSS_PAIRS_FACTOR = 20


def check_threshold(value, what: str = "Threshold") -> float:
    """A Jaccard threshold: a real number in (0, 1] (not a string, a bool, NaN or infinity)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AuditorError("usage", f"{what} {value!r:.40} is not a number.",
                           "Jaccard thresholds are fractions in (0, 1] such as 0.7.")
    if not (0 < value <= 1):
        raise AuditorError("usage", f"{what} {value!r} is outside (0, 1].",
                           "Jaccard thresholds are fractions such as 0.7.")
    if round(float(value), 6) == 0:        # thresholds are kept to 6 decimals: this one would be 0
        raise AuditorError("usage", f"{what} {value!r} rounds to 0 at 6 decimals, the finest threshold step.",
                           "Jaccard thresholds are fractions such as 0.7.")
    return float(value)


@dataclass(frozen=True)
class SourceSpec:
    """One side's source: anything ``auditor.load`` takes (or an already loaded Table)."""
    source: object
    config: str | None = None
    split: str | None = None
    max_rows: int | None = None
    token: object = field(default=None, repr=False)     # never shown, stored or written
    kind: Literal["auto", "example", "local", "hub"] = "auto"
    default_split: str = "train"        # read when no split is given and there are several
    revision: str | None = None         # a Hub dataset's commit, branch or tag (None: its latest)

    def validated(self) -> "SourceSpec":
        from .sources import check_max_rows
        check_max_rows(self.max_rows)
        if self.kind not in SOURCE_KINDS:
            raise AuditorError("usage", f"Unknown source kind {self.kind!r:.40}.", "Use auto, example, local or hub.")
        return self


@dataclass(frozen=True)
class NearSettings:
    """The near-duplicate search: pairs at Jaccard >= ``threshold`` (and every curve threshold)."""
    threshold: float = 0.7
    thresholds: tuple = DEFAULT_THRESHOLDS
    shingle: ShingleSpec = ShingleSpec()
    method: Literal["auto", "exact", "lsh"] = "auto"
    num_perm: int = 128
    seed: int = 1

    def validated(self):
        given = self.thresholds
        if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
            raise AuditorError("usage", f"thresholds must be a list of numbers, got {given!r:.40}.",
                               "Give e.g. (0.9, 0.8, 0.7).")
        given = tuple(given)
        for t in (self.threshold, *given):
            check_threshold(t)
        if not given:
            raise AuditorError("usage", "No thresholds for the curve.", "Give e.g. 0.9,0.8,0.7.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not (0 <= self.seed < 2 ** 32):
            raise AuditorError("usage", f"Seed {self.seed!r:.40} is outside 0 .. 2^32-1.", "Use a whole number like 1.")
        if isinstance(self.num_perm, bool) or not isinstance(self.num_perm, int) or not (2 <= self.num_perm <= 1024):
            raise AuditorError("usage", f"num_perm {self.num_perm!r:.40} is outside 2 .. 1024.", "The default is 128.")
        if self.method not in METHODS:
            raise AuditorError("usage", f"Unknown method {self.method!r:.40}.", "Use auto, exact or lsh.")
        thresholds = tuple(sorted({round(float(t), 6) for t in given}, reverse=True))
        return replace(self, threshold=round(float(self.threshold), 6), thresholds=thresholds,
                       shingle=ShingleSpec.coerce(self.shingle))

    @property
    def min_threshold(self) -> float:
        return min(self.threshold, *self.thresholds)

    def cross_method(self, n_a: int, n_b: int) -> str:
        """The search between two sides: ``method``, with "auto" decided here."""
        if self.method != "auto":
            return self.method
        from .near import MAX_EXACT_CANDIDATES
        return "exact" if n_a * n_b <= CROSS_PAIRS_FACTOR * MAX_EXACT_CANDIDATES else "lsh"
