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
import sys
from dataclasses import dataclass, field, replace
from typing import Literal

from .errors import AuditorError

DEFAULT_THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
METHODS = ("auto", "exact", "lsh")
SOURCE_KINDS = ("auto", "example", "local", "hub")
ENGINES = ("local", "ray")
NORMALIZERS = ("exact", "default", "code")     # auditor.normalize holds what each does
KEEP_RULES = ("first", "longest", "most_common_answer")     # dedup: which record of a cluster stays
# Contained leak matches (auditor.near.contained): a B text counts as inside an A text only when the
# overlap it needs, ceil(t |S_b|), is at least this many shingles (11 word 3-shingles: a 13-word span).
CONTAINED_MIN_SHARED = 11
CONTAINED_METHOD = "prefix-containment"     # how they are searched, as summary.json names it
# The semantic pass's defaults, calibrated on bundled data (auditor.semantic's docstring, bench/semantic.py
# --calibrate); here so the CLI's help states them without loading the model code. An item is flagged when
# its best match's margin score is at least SEMANTIC_THRESHOLD and its cosine at least SEMANTIC_COSINE_FLOOR.
SEMANTIC_THRESHOLD = 0.45
SEMANTIC_COSINE_FLOOR = 0.54
# Nearest records kept per benchmark item: the running lists are items x k from the start (12 bytes
# each), so k is bounded: 10^6 asked 16 GB of a 1,319-item benchmark, whatever the corpus held.
MAX_SEMANTIC_K = 1_000
# "auto" uses LSH only when the exact search's candidate bound (known in advance) passes this. The
# bound (sum of squared prefix frequencies) overcounts pairs that share several prefix shingles
# (edited copies share dozens), LSH at a low threshold is no cheaper on dense clusters, and only the
# exact search streams its pairs in bounded memory, so the switch is kept for extreme inputs
# (measured in BENCHMARKS.md: exact beat LSH on every benchmark set, templated ones included).
MAX_EXACT_CANDIDATES = 30_000_000_000
MAX_ROWS_LIMIT = sys.maxsize
# "auto" searches A x B exactly unless its pairs pass this many times the self-join's cap on
# exact candidates (MAX_EXACT_CANDIDATES): the exact join streams its pairs in bounded memory.
CROSS_PAIRS_FACTOR = 20
# A contaminated benchmark item (one n-gram shared with the corpus: GPT-3's definition, the count
# reported) is "copied" when at least this share of its words lie in its n-grams found in the corpus,
# else it only shares a phrase (a stock sentence, a shared setup). Here so the report states it.
COPIED_COVERAGE = 0.5


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


def check_distinct_thresholds(values, spelt=None) -> None:
    """Each curve threshold once. Two equal at 6 decimals, the resolution every threshold is kept at
    (the app's too), are one threshold given twice: "0.5,0.5" or "0.5,0.50" is a typo for another
    value more often than not, so it is refused rather than merged. ``spelt``: the values as typed."""
    spelt = [repr(v) for v in values] if spelt is None else list(spelt)
    first: dict = {}
    for i, t in enumerate(values):
        j = first.setdefault(round(float(t), 6), i)
        if j != i:
            same = (f"{spelt[j]} is given twice" if spelt[i] == spelt[j] else
                    f"{spelt[j]} and {spelt[i]} are the same threshold (at 6 decimals)")
            raise AuditorError("usage", f"The curve's thresholds repeat a value: {same}.",
                               "Give each threshold once, e.g. 0.9,0.7,0.5.")


def check_max_rows(max_rows) -> None:
    """A row cap is a whole number from 1 to 2^63-1 (None: no cap)."""
    if max_rows is None:
        return
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise AuditorError("usage", f"max_rows must be a positive whole number, got {max_rows!r:.40}.",
                           "Leave it out to read every row.")
    if max_rows > MAX_ROWS_LIMIT:
        raise AuditorError("usage", f"max_rows {max_rows:,} is more than any source can hold (at most "
                           f"{MAX_ROWS_LIMIT:,}).", "Leave it out to read every row.")



def check_normalizer(name) -> str:
    """A normaliser's name: one of NORMALIZERS."""
    if name not in NORMALIZERS:
        raise AuditorError("usage", f"Unknown normaliser {name!r:.40}.", f"Choose one of: {', '.join(NORMALIZERS)}.")
    return name


@dataclass(frozen=True)
class ShingleSpec:
    unit: str = "word"    # "word" or "char"
    size: int = 3

    @classmethod
    def parse(cls, spec: str) -> "ShingleSpec":
        """'word:3' or 'char:5'."""
        unit, colon, size = str(spec).partition(":")
        unit = unit.strip().lower()
        try:
            n = int(size) if size else (-1 if colon else 3)      # "word" is word:3; "word:" names no size
        except ValueError:
            n = -1
        if unit not in ("word", "char") or n < 1 or n > 64:
            raise AuditorError("usage", f"Bad shingle setting {spec!r}.",
                               "Use word:N or char:N with N from 1 to 64, e.g. word:3 or char:5.")
        return cls(unit, n)

    def __str__(self) -> str:
        return f"{self.unit}:{self.size}"

    @classmethod
    def coerce(cls, value) -> "ShingleSpec":
        """A shingle setting as given to the library: None (the default), a ShingleSpec, or a
        string such as "word:3" or "char:5"; anything else is a clear usage error."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, cls):
            if value.unit in ("word", "char") and isinstance(value.size, int) and not isinstance(value.size, bool) \
                    and 1 <= value.size <= 64:
                return value
            return cls.parse(f"{value.unit}:{value.size}")          # raises, naming the setting
        raise AuditorError("usage", f"Bad shingle setting {value!r:.40} (of type {type(value).__name__}).",
                           "Pass a ShingleSpec or a string such as \"word:3\" or \"char:5\".")


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
        check_distinct_thresholds(given)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not (0 <= self.seed < 2 ** 32):
            raise AuditorError("usage", f"Seed {self.seed!r:.40} is outside 0 .. 2^32-1.", "Use a whole number like 1.")
        if isinstance(self.num_perm, bool) or not isinstance(self.num_perm, int) or not (2 <= self.num_perm <= 1024):
            raise AuditorError("usage", f"num_perm {self.num_perm!r:.40} is outside 2 .. 1024.", "The default is 128.")
        if self.method not in METHODS:
            raise AuditorError("usage", f"Unknown method {self.method!r:.40}.", "Use auto, exact or lsh.")
        thresholds = tuple(sorted((round(float(t), 6) for t in given), reverse=True))
        return replace(self, threshold=round(float(self.threshold), 6), thresholds=thresholds,
                       shingle=ShingleSpec.coerce(self.shingle))

    @property
    def min_threshold(self) -> float:
        return min(self.threshold, *self.thresholds)

    def cross_method(self, n_a: int, n_b: int) -> str:
        """The search between two sides: ``method``, with "auto" decided here."""
        if self.method != "auto":
            return self.method
        return "exact" if n_a * n_b <= CROSS_PAIRS_FACTOR * MAX_EXACT_CANDIDATES else "lsh"


@dataclass(frozen=True)
class ScanSettings(NearSettings):
    """The near-duplicate settings (``settings.NearSettings``) plus the exact-duplicate normalisers."""
    normalizer: str = "default"          # for text, text+answer and record duplicates
    answer_normalizer: str = "auto"      # "auto": code for code/SQL answers, else the text normaliser

    def validated(self) -> "ScanSettings":
        checked = super().validated()
        for name in (self.normalizer, *(() if self.answer_normalizer == "auto" else (self.answer_normalizer,))):
            if not isinstance(name, str):
                raise AuditorError("usage", f"A normaliser is named by a string, got {name!r:.40}.",
                                   "Use exact, default or code.")
            check_normalizer(name)
        return checked


@dataclass(frozen=True)
class RoleNames:
    """The fields a side's roles are read from (blank: guessed). ``text`` may name several fields
    ("instruction,input", or a tuple), read as one text per record (``roles.resolve_roles``)."""
    text: str | tuple | None = None
    answer: str | None = None
    group: str | None = None


@dataclass(frozen=True)
class LeakSettings:
    """Everything ``leak`` is asked besides its two sources. ``roles_b`` fields left blank take
    A's (the two sides of one dataset usually share a layout)."""
    near: NearSettings = NearSettings()
    roles_a: RoleNames = RoleNames()
    roles_b: RoleNames = RoleNames()

    def validated(self) -> "LeakSettings":
        return LeakSettings(near=self.near.validated(), roles_a=self.roles_a, roles_b=self.roles_b)

    @property
    def roles_for_b(self) -> RoleNames:
        a, b = self.roles_a, self.roles_b
        return RoleNames(b.text or a.text, b.answer or a.answer, b.group or a.group)


@dataclass(frozen=True)
class EngineSettings:
    """Which engine runs a command (``auditor.engines``): ``local``, this process, or ``ray``, Ray
    workers (the cluster at ``ray_address`` / RAY_ADDRESS, else a Ray started for the run), with
    each finished shard's result kept in ``shard_dir`` for resuming, and Ray's own log lines
    silenced when ``quiet``."""
    name: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    shard_dir: str | None = None
    quiet: bool = False

    @classmethod
    def coerce(cls, value) -> "EngineSettings":
        """An engine as the library takes it: None (local), a name, or EngineSettings."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls(value).validated()
        if isinstance(value, cls):
            return value.validated()
        raise AuditorError("usage", f"Bad engine {value!r:.40}.", "Use \"local\", \"ray\" or EngineSettings(...).")

    def validated(self) -> "EngineSettings":
        if self.name not in ENGINES:
            raise AuditorError("usage", f"Unknown engine {self.name!r:.40}.", "Use local or ray.")
        if self.name == "local" and self.ray_address:
            # (the run would pass for one on the cluster while it ran here, on one machine)
            raise AuditorError("usage", f"A Ray address ({self.ray_address!r:.60}) was given, but the engine is "
                               "local: nothing would run on that cluster.",
                               "Add --engine ray (engine=EngineSettings('ray', ...)), or leave the address out.")
        return self

    @property
    def on_ray(self) -> bool:
        return self.name == "ray"
