"""The single-dataset audit: load -> roles -> checks -> shingles -> pairs -> clusters/curve.

``scan`` runs the steps in order and returns a ``ScanResult`` that keeps the verified
pairs, so ``result.near_duplicates(t)`` answers a new threshold without searching again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .clusters import GIANT_SHARE, CurvePoint, clusters_at, curve  # noqa: F401  (CurvePoint: the curve's type)
from .concentration import Concentration, concentration
from .digests import digest, digests, present
from .errors import AuditorError
from .exact import (
    DuplicateGroups,
    LabelConflicts,
    combine,
    digest_ids,
    duplicate_groups,
    label_conflicts,
)
from .io.table import Table
from .near import Pairs, find_pairs
from .normalize import DESCRIPTION as NORMALIZATION
from .prepare import PreparedSide, load_table, prepare
from .prepare import answer_normalizer as choose_answer_normalizer
from .progress import Progress
from .report import scan as report
from .roles import Fields, Roles
from .schema import Degenerate, Schema, check_degenerate, check_schema
from .settings import NearSettings, ScanSettings, SourceSpec, check_threshold
from .shingles import shingle_matrix

PAIRS_SAMPLE = 50
# The scan's stages: (name, what the progress callback says, share of the run).
STAGES = (("load", "loading", 0.15), ("roles", "reading fields", 0.10),
          ("exact", "checking schema and exact duplicates", 0.10), ("shingles", "hashing shingles", 0.10),
          ("near_duplicates", "searching near duplicates", 0.40), ("curve", "clustering", 0.15))


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
    # A 95% interval for ``pairs`` when it is estimated (the work budget was passed); not serialised
    # by the dataclass: reports add pairs_estimated / pairs_interval only then.
    pairs_interval: tuple | None = field(default=None, repr=False)

    @property
    def pairs_estimated(self) -> bool:
        return self.pairs_interval is not None


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
    # Per evaluated field (text, answer, group, label:NAME): an id per record, equal for values equal
    # under the default normaliser (missing its own value); dedup names a dropped row's differences by them.
    evaluated_keys: dict = field(default_factory=dict, repr=False)
    engine: dict | None = None           # {"name": ..., "seconds": ...}: on Ray, or in pieces (--shard-dir)
    normalization: str = NORMALIZATION   # the text normalisation (normalize.fold), as the report states it
    data_fingerprint: str = ""           # records and role fields, named or guessed (review files)

    @property
    def records(self) -> int:
        return len(self.table.rows)

    @property
    def side(self) -> PreparedSide:
        """The audited dataset as a prepared side (e.g. ``leak(result.side, test)``)."""
        return PreparedSide(self.table, self.roles, self.fields, self.fingerprint,
                            data_fingerprint=self.data_fingerprint)

    def near_duplicates(self, threshold: float | None = None) -> NearDuplicates:
        """Near-duplicate figures at any threshold within the searched range, from the cache."""
        t = self.settings.threshold if threshold is None else check_threshold(threshold)
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
                              giant_cluster=giant, pairs_sample=sample, pairs_interval=self.pairs.pairs_interval(t))

    def summary(self, threshold: float | None = None) -> dict:
        return report.summary(self, threshold)

    def markdown(self, threshold: float | None = None) -> str:
        return report.markdown(self, threshold)


def scan(source: str | Table, *, config: str | None = None, split: str | None = None,
         text: str | list | None = None, answer: str | None = None, group: str | None = None,
         labels=None, id: str | None = None, settings: ScanSettings | None = None,
         max_rows: int | None = None, token=None, kind: str = "auto", progress=None,
         search=None, revision: str | None = None) -> ScanResult:
    """Audit one dataset. ``source`` is anything ``auditor.load`` takes (``kind`` as there), a
    ``SourceSpec``, or a loaded Table. ``text`` names the text field, or several ("instruction,input"
    or a list) read as one text per record (``roles.resolve_roles``): exact and near duplicates, the
    evaluated-field split and the report all use that joined text. ``progress(fraction, stage)`` is
    called as the steps advance. ``search(matrix, settings, progress)`` finds the near-duplicate
    pairs (default: ``local_search``, in this process; ``engines.scan`` passes the Ray engine's).
    ``revision``: a Hub dataset's commit, branch or tag (default: the latest; the report records the
    commit read)."""
    if settings is not None and not isinstance(settings, ScanSettings):
        raise AuditorError("usage", f"settings must be an auditor.ScanSettings, got {type(settings).__name__}.",
                           "e.g. settings=auditor.ScanSettings(threshold=0.8).")
    settings = (settings or ScanSettings()).validated()
    spec = source if isinstance(source, SourceSpec) else SourceSpec(source, config, split, max_rows, token, kind,
                                                                     revision=revision)
    run = Progress(progress, STAGES)
    with run.stage("load"):
        table = load_table(spec.validated())
        if not table.rows:
            raise AuditorError("empty_input", f"{table.source}: no records to audit.", "Check the source and split.")

    with run.stage("roles"):
        side, record_keys = prepare(table, text=text, answer=answer, group=group, labels=labels, id=id,
                                    record_keys=tuple(dict.fromkeys(("exact", "default", settings.normalizer))))
        fields, table = side.fields, side.table     # its records packed without their texts: the load's freed

    with run.stage("exact"):
        schema = check_schema(table.rows)
        degenerate = check_degenerate({"text": fields.text, "answer": fields.answer, "group": fields.group})
        answer_normalizer = choose_answer_normalizer(fields.answer, settings.answer_normalizer, settings.normalizer)
        exact, by_normalizer, evaluated_keys, text_default = _exact_duplicates(
            fields, record_keys, settings.normalizer, answer_normalizer)
        del record_keys

    with run.stage("shingles"):
        matrix = shingle_matrix(fields.text, settings.shingle)
    with run.stage("near_duplicates"):
        pairs = (search or local_search)(matrix, settings, run.within)
        del matrix          # the pairs answer every threshold: the shingles are not read again

    with run.stage("curve"):
        evaluated_key = _combined(evaluated_keys)
        points = curve(pairs, list(settings.thresholds))
        conc = concentration(side.roles.group, fields.group) if fields.group is not None else None
        conflicts = label_conflicts(text_default, fields.labels)
    run.done()
    return ScanResult(table=table, roles=side.roles, settings=settings, fingerprint=side.fingerprint,
                      answer_normalizer=answer_normalizer, schema=schema, degenerate=degenerate, exact=exact,
                      exact_by_normalizer=by_normalizer, pairs=pairs, curve=points, concentration=conc,
                      label_conflicts=conflicts, fields=fields, evaluated_key=evaluated_key,
                      evaluated_keys=evaluated_keys, timings=run.timings, data_fingerprint=side.data_fingerprint)


def local_search(matrix, settings: NearSettings, progress=None) -> Pairs:
    """The near-duplicate pairs of a shingle matrix, searched in this process. The matrix is the
    search's to write over (``find_pairs(reuse_matrix=True)``): the audit reads it no more."""
    return find_pairs(matrix, settings.min_threshold, settings.method, num_perm=settings.num_perm,
                      seed=settings.seed, progress=progress, reuse_matrix=True)


def _exact_duplicates(fields: Fields, record_keys: dict, text_normalizer: str, answer_normalizer: str | None):
    """Duplicate groups on text, answer, text+answer and the whole record, and the key that
    says which records are identical in every evaluated field. Values are keyed by the digests of
    their normal forms (``digests``), each (field, normaliser) once, and each digest array is
    turned into ids (``exact.digest_ids``, int32) and dropped before the next is made;
    ``record_keys``: the digests of the canonical records by normaliser (``prepare``), emptied as
    they are used."""
    key_cache: dict[tuple, np.ndarray] = {}
    evaluated: dict[str, np.ndarray] = {}

    def keys(name: str, values: list | None, normalizer: str) -> np.ndarray:
        if (name, normalizer) not in key_cache:
            digested = record_keys.pop(normalizer) if name == "record" else digests(values, normalizer)
            key_cache[name, normalizer] = digest_ids(digested).astype(np.int32)
            if normalizer == "default" and name != "record":
                # Evaluated fields under the default normaliser; a missing value is its own value here.
                evaluated[name] = digest_ids(_with_missing(digested)).astype(np.int32)
        return key_cache[name, normalizer]

    def groups(name: str, values: list | None, normalizers: tuple) -> dict[str, DuplicateGroups]:
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
    by_normalizer["record"] = groups("record", None, ("exact", "default", text_normalizer))
    exact["record"] = by_normalizer["record"][text_normalizer]
    evaluated_fields = [("text", fields.text), ("answer", fields.answer), ("group", fields.group),
                        *((f"label:{k}", v) for k, v in fields.labels.items())]
    for name, values in evaluated_fields:
        if values is not None:
            keys(name, values, "default")
    return (exact, by_normalizer, {name: evaluated[name] for name, values in evaluated_fields if values is not None},
            keys("text", fields.text, "default"))


def _combined(evaluated_keys: dict) -> np.ndarray:
    """One id per record, equal for records equal in every evaluated field."""
    parts = [k.astype(np.int64) for k in evaluated_keys.values()]
    return combine(*parts) if len(parts) > 1 else parts[0]


MISSING_VALUE = digest("\x00missing")     # what a missing evaluated value is keyed as


def _with_missing(keys: np.ndarray) -> np.ndarray:
    missing = ~present(keys)
    if not missing.any():
        return keys
    keys = keys.copy()
    keys[missing] = np.frombuffer(MISSING_VALUE, dtype=np.uint64)
    return keys
