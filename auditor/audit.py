"""The single-dataset audit: load -> roles -> checks -> shingles -> pairs -> clusters/curve.

``scan`` runs the steps in order and returns a ``ScanResult`` that keeps the verified
pairs, so ``result.near_duplicates(t)`` answers a new threshold without searching again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import normalize
from .clusters import GIANT_SHARE, CurvePoint, clusters_at, curve
from .concentration import Concentration, concentration
from .errors import AuditorError
from .exact import (DuplicateGroups, LabelConflicts, combine, duplicate_groups, key_ids, label_conflicts,
                    normalized)
from .near import Pairs, find_pairs
from .roles import Fields, Roles, canonical_record, extract, fingerprint, resolve_roles
from .schema import Degenerate, Schema, check_degenerate, check_schema
from .shingles import ShingleSpec, shingle_matrix
from .sources import Table, load

DEFAULT_THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
PAIRS_SAMPLE = 50


@dataclass(frozen=True)
class ScanSettings:
    threshold: float = 0.7
    thresholds: tuple = DEFAULT_THRESHOLDS
    shingle: ShingleSpec = ShingleSpec()
    normalizer: str = "default"          # for text, text+answer and record duplicates
    answer_normalizer: str = "auto"      # "auto": code for code/SQL answers, else default
    method: str = "auto"                 # near-duplicate search: auto, exact or lsh
    num_perm: int = 128
    seed: int = 1

    def validated(self) -> "ScanSettings":
        from .shingles import check_threshold
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
        if self.method not in ("auto", "exact", "lsh"):
            raise AuditorError("usage", f"Unknown method {self.method!r:.40}.", "Use auto, exact or lsh.")
        for name in (self.normalizer, *(() if self.answer_normalizer == "auto" else (self.answer_normalizer,))):
            if not isinstance(name, str):
                raise AuditorError("usage", f"A normaliser is named by a string, got {name!r:.40}.",
                                   "Use exact, default or code.")
            normalize.get(name)
        thresholds = tuple(sorted({round(float(t), 6) for t in given}, reverse=True))
        return replace(self, threshold=round(float(self.threshold), 6), thresholds=thresholds,
                       shingle=ShingleSpec.coerce(self.shingle))

    @property
    def min_threshold(self) -> float:
        return min(self.threshold, *self.thresholds)


@dataclass(frozen=True)
class NearDuplicates:
    threshold: float
    pairs: int
    clusters: int
    identical_clusters: int
    variant_clusters: int
    records_in_clusters: int
    largest_cluster: int
    giant_cluster: dict | None          # {records, share, sample_rows} when one cluster > 5% of records
    pairs_sample: list                  # [{a, b, jaccard}]


@dataclass(frozen=True)
class ScanResult:
    table: Table
    roles: Roles
    settings: ScanSettings
    fingerprint: str
    answer_normalizer: str | None
    schema: Schema
    degenerate: Degenerate
    exact: dict                          # name -> DuplicateGroups (text, answer, text_and_answer, record)
    exact_by_normalizer: dict            # name -> {normalizer: DuplicateGroups}
    pairs: Pairs
    curve: list                          # [CurvePoint]
    concentration: Concentration | None
    label_conflicts: LabelConflicts | None
    fields: Fields = field(repr=False)
    evaluated_key: np.ndarray = field(repr=False)
    timings: dict = field(default_factory=dict)

    @property
    def records(self) -> int:
        return len(self.table.rows)

    def near_duplicates(self, threshold: float | None = None) -> NearDuplicates:
        """Near-duplicate figures at any threshold within the searched range, from the cache."""
        t = self.settings.threshold if threshold is None else float(threshold)
        self.pairs.check_threshold(t)
        clusters = clusters_at(self.pairs, t, self.evaluated_key)
        largest = int(clusters.sizes.max(initial=0))
        giant = None
        if clusters.count and largest > GIANT_SHARE * self.records:
            biggest = int(np.argmax(clusters.sizes))
            giant = {"records": largest, "share": round(largest / self.records, 4),
                     "sample_rows": clusters.members(biggest)[:10].tolist()}
        sample = [{"a": a, "b": b, "jaccard": round(j, 4)}
                  for a, b, j in self.pairs.record_pair_sample(t, PAIRS_SAMPLE)]
        return NearDuplicates(threshold=t, pairs=self.pairs.record_pairs(t), clusters=clusters.count,
                              identical_clusters=int(clusters.identical.sum()),
                              variant_clusters=int((~clusters.identical).sum()),
                              records_in_clusters=int(clusters.sizes.sum()), largest_cluster=largest,
                              giant_cluster=giant, pairs_sample=sample)

    def summary(self, threshold: float | None = None) -> dict:
        from .report import summary
        return summary(self, threshold)

    def markdown(self, threshold: float | None = None) -> str:
        from .report import markdown
        return markdown(self, threshold)


def scan(source: str | Table, *, config: str | None = None, split: str | None = None,
         text: str | None = None, answer: str | None = None, group: str | None = None,
         labels=None, id: str | None = None, settings: ScanSettings | None = None,
         max_rows: int | None = None, token=None, kind: str = "auto", progress=None) -> ScanResult:
    """Audit one dataset. ``source`` is anything ``auditor.load`` takes (``kind`` as there), or
    a loaded Table. ``progress(fraction, stage)`` is called as the steps advance."""
    settings = (settings or ScanSettings()).validated()
    report = progress or (lambda fraction, stage: None)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def step(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round(now - clock, 4)
        clock = now

    report(0.0, "loading")
    table = source if isinstance(source, Table) else load(source, config, split, max_rows=max_rows, token=token,
                                                          kind=kind)
    rows = table.rows
    if not rows:
        raise AuditorError("empty_input", f"{table.source}: no records to audit.", "Check the source and split.")
    step("load")

    report(0.15, "reading fields")
    roles = resolve_roles(rows, text=text, answer=answer, group=group, labels=labels, id=id)
    fields = extract(rows, roles)
    records = [canonical_record(r) for r in rows]
    step("roles")

    report(0.25, "checking schema and exact duplicates")
    schema = check_schema(rows)
    degenerate = check_degenerate({"text": fields.text, "answer": fields.answer, "group": fields.group})
    answer_normalizer = None
    if fields.answer is not None:
        answer_normalizer = settings.answer_normalizer
        if answer_normalizer == "auto":
            answer_normalizer = "code" if normalize.looks_like_code(fields.answer) else settings.normalizer
    exact, by_normalizer, evaluated_key, text_default = _exact_duplicates(
        fields, records, settings.normalizer, answer_normalizer)
    digest = fingerprint(records, roles)
    del records          # one JSON string per record: free it before the memory-heavy steps
    step("exact")

    report(0.35, "hashing shingles")
    matrix = shingle_matrix(fields.text, settings.shingle)
    step("shingles")
    report(0.45, "searching near duplicates")
    pairs = find_pairs(matrix, settings.min_threshold, settings.method, num_perm=settings.num_perm,
                       seed=settings.seed,
                       progress=lambda f, stage: report(0.45 + 0.35 * f, stage))
    step("near_duplicates")

    report(0.85, "clustering")
    points = curve(pairs, list(settings.thresholds))
    conc = concentration(roles.group, fields.group) if fields.group is not None else None
    conflicts = label_conflicts(text_default, fields.labels)
    step("curve")
    report(1.0, "done")
    return ScanResult(table=table, roles=roles, settings=settings, fingerprint=digest,
                      answer_normalizer=answer_normalizer, schema=schema, degenerate=degenerate, exact=exact,
                      exact_by_normalizer=by_normalizer, pairs=pairs, curve=points, concentration=conc,
                      label_conflicts=conflicts, fields=fields, evaluated_key=evaluated_key, timings=timings)


def _exact_duplicates(fields: Fields, records: list, text_normalizer: str, answer_normalizer: str | None):
    """Duplicate groups on text, answer, text+answer and the whole record, and the key that
    says which records are identical in every evaluated field. Each (field, normaliser) pair is
    normalised once and reused."""
    cache: dict[tuple, list] = {}

    def norm(name: str, values: list, normalizer: str) -> list:
        if (name, normalizer) not in cache:
            cache[name, normalizer] = normalized(values, normalizer)
        return cache[name, normalizer]

    key_cache: dict[tuple, np.ndarray] = {}

    def keys(name: str, values: list, normalizer: str) -> np.ndarray:
        if (name, normalizer) not in key_cache:
            key_cache[name, normalizer] = key_ids(norm(name, values, normalizer))
        return key_cache[name, normalizer]

    def groups(name: str, values: list, normalizers: tuple) -> dict[str, DuplicateGroups]:
        return {n: duplicate_groups(keys(name, values, n), n) for n in dict.fromkeys(normalizers)}

    # In the report's key order: text, answer (when there is one), record.
    by_normalizer = {"text": groups("text", fields.text, ("exact", "default", text_normalizer))}
    exact = {"text": by_normalizer["text"][text_normalizer], "answer": None, "text_and_answer": None}
    if fields.answer is not None:
        # "code" is costly (a regex pass per value): only when the answers are code.
        by_normalizer["answer"] = groups("answer", fields.answer, ("exact", "default", answer_normalizer))
        exact["answer"] = by_normalizer["answer"][answer_normalizer]
        exact["text_and_answer"] = duplicate_groups(
            combine(keys("text", fields.text, text_normalizer), keys("answer", fields.answer, answer_normalizer)),
            f"{text_normalizer}+{answer_normalizer}")
    by_normalizer["record"] = groups("record", records, ("exact", "default", text_normalizer))
    exact["record"] = by_normalizer["record"][text_normalizer]
    # Evaluated fields under the default normaliser; a missing value is its own value here.
    evaluated_fields = [("text", fields.text), ("answer", fields.answer), ("group", fields.group),
                        *((f"label:{k}", v) for k, v in fields.labels.items())]
    parts = [key_ids(_with_missing(norm(name, values, "default")))
             for name, values in evaluated_fields if values is not None]
    evaluated = combine(*parts) if len(parts) > 1 else parts[0]
    return exact, by_normalizer, evaluated, keys("text", fields.text, "default")


def _with_missing(values: list) -> list:
    return ["\x00missing" if v is None else v for v in values]
