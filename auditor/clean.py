"""Clean splits: a copy of TEST without the records that leak into it from the
training side(s), optionally without internal duplicates (identical text; with ``near``, one record
per near-duplicate cluster too), in the original rows and columns; plus a report of every dropped
row and why."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import AuditorError
from .exact import digest_ids
from .io.copies import copier, files_copied_as_written, hub_files_copied, write_rows
from .io.table import HubParquet, select
from .clusters import cluster_labels
from .leakage import drop_reason, inherited_field_hint, leak
from .near import find_pairs
from .prepare import prepare
from .report import clean as report
from .settings import LeakSettings, NearSettings, RoleNames
from .shingles import shingle_matrix


@dataclass(frozen=True)
class CleanResult:
    kept: list           # original rows of TEST (a list, or packed rows: ``io.table.PackedRows``)
    dropped: list        # [{row, reason, against, matches}] (+ differs: internal duplicates)
    source: str
    records: int
    notices: tuple = ()
    truncated: bool = False      # TEST was read only up to a row cap
    hub_parquet: HubParquet | None = None     # TEST's Hub Parquet files, when it was read from them

    def summary(self) -> dict:
        return report.summary(self)


def clean(test, against: list, *, near: bool = False, dedup: bool = False, threshold: float = 0.7,
          config=None, split=None, text=None, answer=None, text_against=None, answer_against=None,
          max_rows=None, token=None, compare=None) -> CleanResult:
    """TEST without what leaks into it from each ``against`` source. TEST is prepared (loaded, its
    roles read, normalised) once and compared with every training side as it is, by
    ``compare(other, side, settings)`` (default: ``leakage.leak`` in this process; ``engines.clean``
    passes the Ray engine's). The training sides' fields are ``text`` and ``answer`` unless
    ``text_against`` / ``answer_against`` name theirs (a test CSV's "prompt", a train JSONL's "question")."""
    if isinstance(against, (str, os.PathLike)):
        against = [against]                # one training source, not a list of its characters
    roles_a = RoleNames(text if text_against is None else text_against,
                        answer if answer_against is None else answer_against)
    settings = LeakSettings(near=NearSettings(threshold=threshold), roles_a=roles_a).validated()
    if not against:
        raise AuditorError("usage", "Nothing to clean against.", "Give --against TRAIN (repeatable).")
    side = prepare(test, config=config, split=split, max_rows=max_rows, token=token, text=text, answer=answer,
                   default_split="test")        # TEST is an evaluation set: its test split by default
    reasons: dict[int, dict] = {}
    notices: list = []
    if compare is None:
        def compare(other, side, settings):
            return leak(other, side, max_rows=max_rows, token=token, settings=settings)
    for other in against:
        try:
            result = compare(other, side, settings)
        except AuditorError as exc:     # TEST's --text, not in a training side: --text-against names its own
            hinted = inherited_field_hint(exc, RoleNames(text, answer), RoleNames(text_against, answer_against),
                                          "against", "the training sides'")
            if hinted is exc:
                raise
            raise hinted from None
        _drop_leaks(result, reasons, near)
        if result.a.fingerprint == result.b.fingerprint:     # TEST given as its own training side
            notices.append(f"{result.a.table.source} holds the same records as TEST: every record matches itself, "
                           "so it drops them all and says nothing about leakage. Clean the evaluation split "
                           "against the training one.")
    if dedup:
        first: dict[int, int] = {}
        # An internal duplicate with another answer is a conflicting label, not a copy: it is dropped
        # (the text is what leaks), but named (differs) and counted, as auditor.dedup does.
        # Keys: ids of the normal forms' digests (-1: blank), equal where the normal forms are.
        answers = None if side.fields.answer is None else digest_ids(side.digests("answer", "default")).tolist()
        conflicts = 0
        for i, key in enumerate(digest_ids(side.digests("text")).tolist()):
            if key < 0:
                continue
            if key in first and i not in reasons:
                differs = [] if answers is None or answers[i] == answers[first[key]] else ["answer"]
                reasons[i] = {"row": i, "reason": "internal_duplicate", "against": None, "matches": [first[key]],
                              "differs": differs}
                conflicts += bool(differs) and answers[i] >= 0
            first.setdefault(key, i)
        if near:
            conflicts += _drop_near_copies(side, settings.near, reasons, answers)
        if conflicts:
            notices.append(f"{conflicts:,} internal duplicate(s) dropped hold another answer than the row kept "
                           "(their 'differs' names it): review them, the kept answer is the first row's.")
    kept = select(side.table.rows, [i for i in range(len(side.table.rows)) if i not in reasons])
    return CleanResult(kept=kept, dropped=[reasons[i] for i in sorted(reasons)], source=side.table.source,
                       records=len(side.table.rows), notices=tuple(notices), truncated=side.table.truncated,
                       hub_parquet=side.table.hub_parquet)


# Output suffixes whose copy of local TEST files may keep them as written (copies.files_copied_as_written)
COPY_FORMATS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}


def write_clean(result: CleanResult, out, *, source=None, split=None, stamps=None, before_replace=None,
                token=None) -> list:
    """The kept rows to ``out`` (format by its extension); returns notices. A .csv/.tsv copy of a
    local CSV/TSV ``source`` read whole (its files as ``stamps``, ``io.copies.local_stamps`` taken
    before the run, say) is its records as written less the dropped rows: the input's delimiter,
    quoting, byte-order mark and header kept (``copies.copy_csv_records``); a .parquet copy of local
    Parquet files of one schema, or of the Hub Parquet files TEST was read from (fetched with
    ``token`` at the commit read: ``copies.hub_files_copied``), their rows as stored
    (``copies.copy_parquet_records``)."""
    fmt = COPY_FORMATS.get(Path(os.fspath(out)).suffix.lower())
    notices = []
    files = files_copied_as_written(source, split, fmt, result.truncated, notices) if fmt and stamps else None
    if not files:
        files, hub_notices = hub_files_copied(result.hub_parquet, fmt, result.records, result.truncated, token)
        notices += hub_notices
    if not files:
        return [*notices, *write_rows(result.kept, out, before_replace=before_replace)]
    dropped = np.asarray(sorted(d["row"] for d in result.dropped), dtype=np.int64)
    copier(fmt, result.truncated)(files, dropped, result.records, out, source=result.source, stamps=stamps or (),
                                  before_replace=before_replace)
    return notices


def _drop_near_copies(side, near_settings: NearSettings, reasons: dict, answers: list | None) -> int:
    """TEST's own near duplicates (``--near --dedup``): in each cluster at the threshold (``auditor
    dedup``'s clusters: components of the verified pairs), the lowest row not dropped already is kept
    and the others are dropped as its near copies. Returns how many of those hold another answer."""
    matrix = shingle_matrix(side.fields.text, near_settings.shingle)
    pairs = find_pairs(matrix, near_settings.threshold, near_settings.method, num_perm=near_settings.num_perm,
                       seed=near_settings.seed, reuse_matrix=True)
    del matrix
    label, _ = cluster_labels(pairs, near_settings.threshold)
    dropped = np.zeros(label.size, dtype=bool)
    dropped[list(reasons)] = True
    members = np.flatnonzero((label >= 0) & ~dropped)          # ascending rows
    clusters, first_at = np.unique(label[members], return_index=True)
    kept = np.full(int(label.max()) + 1 if label.size else 0, -1, dtype=np.int64)
    kept[clusters] = members[first_at]
    conflicts = 0
    for row, first in zip(members.tolist(), kept[label[members]].tolist()):
        if row == first:
            continue
        differs = [] if answers is None or answers[row] == answers[first] else ["answer"]
        reasons[row] = {"row": row, "reason": "internal_near_duplicate", "against": None, "matches": [first],
                        "differs": differs}
        conflicts += bool(differs) and answers[row] >= 0
    return conflicts


def _drop_leaks(result, reasons: dict, near: bool) -> None:
    """B rows of one leak result to drop, with why (a row already dropped keeps its first reason)."""
    for b_row, m in result.matches.items():
        why = None if b_row in reasons else drop_reason(m, near)
        if why:
            reasons[b_row] = {"row": b_row, "reason": why[0], "against": result.a.table.source, "matches": why[1]}
