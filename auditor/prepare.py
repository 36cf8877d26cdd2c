"""One way to prepare a side: load -> roles -> extract -> fingerprint.

``prepare`` returns a frozen ``PreparedSide`` that every command uses (scan, leak, the benchmark
side of contamination, matrix, clean): the loaded table, the roles resolved on it, every role's
values as text, and the fingerprint of the records and roles. The digests of normalised texts and
answers (``digests``: 16 bytes a record) are computed on demand and kept, so a side prepared once
(clean's TEST, the app's audited dataset) is normalised once however many comparisons use it.

``answer_normalizer`` is the one rule for comparing answers: code or SQL answers under ``code``,
anything else under the text normaliser.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import normalize
from .digests import digests, present
from .errors import AuditorError
from .io.sources import load
from .io.table import PackedRows, Packer, Table
from .normalize import normalized
from .report.leak import side_block
from .roles import (
    Fields,
    Roles,
    canonical_record,
    extract,
    fingerprint_of,
    fold_records,
    late_notices,
    resolve_roles,
    text_column,
)
from .settings import SourceSpec


@dataclass(frozen=True)
class PreparedSide:
    table: Table
    roles: Roles
    fields: Fields = field(repr=False)
    fingerprint: str
    _normalized: dict = field(default_factory=dict, repr=False, compare=False)
    _digests: dict = field(default_factory=dict, repr=False, compare=False)
    _counts: dict = field(default_factory=dict, repr=False, compare=False)
    # The records and the role fields, however the roles were chosen (named or guessed): what a
    # review file is bound to (``dedup.review_fingerprint``).
    data_fingerprint: str = ""

    @property
    def records(self) -> int:
        return len(self.table.rows)

    @property
    def no_text(self) -> int:
        """Records with no text: missing, null, or nothing left after the default normaliser."""
        if "no_text" not in self._counts:
            self._counts["no_text"] = int((~present(self.digests("text"))).sum())
        return self._counts["no_text"]

    def release_digests(self) -> None:
        """Drops the kept digests (16 bytes a record each), keeping what a report reads of them
        (``no_text``): a leak's training side holds them no longer than its exact stage (100 MB of
        8-word records: 70 MB of text and answer digests held through the near search)."""
        _ = self.no_text
        self._digests.clear()

    def digests(self, role: str, normalizer: str = "default") -> np.ndarray | None:
        """The digests of the role's values ("text" or "answer") under ``normalizer`` (all zero where
        blank; ``digests.digests``), kept."""
        key = (role, normalizer)
        if key not in self._digests:
            self._digests[key] = digests(getattr(self.fields, role), normalizer)
        return self._digests[key]

    def normalized(self, role: str, normalizer: str = "default") -> list | None:
        """The role's values ("text" or "answer") under ``normalizer`` (None where blank), kept: for a
        small side only (the Ray engine's evaluation side); ``digests`` for the keys of a large one."""
        key = (role, normalizer)
        if key not in self._normalized:
            self._normalized[key] = normalized(getattr(self.fields, role), normalizer)
        return self._normalized[key]

    def block(self) -> dict:
        """What a leak report says about this side (``report.leak.side_block``)."""
        return side_block(self)


def answer_normalizer(answers: list | None, requested: str = "auto", text_normalizer: str = "default") -> str | None:
    """The normaliser answers are compared under: None without answers; ``requested`` unless it is
    "auto"; else "code" when most answers read as code or SQL (comments and layout do not make two
    programs differ), else the text normaliser."""
    if answers is None:
        return None
    if requested != "auto":
        return requested
    return "code" if normalize.looks_like_code(answers) else text_normalizer


def in_source(exc: AuditorError, source: str) -> AuditorError:
    """A role error that names the dataset it is about: leak, matrix and contamination read several."""
    if exc.code not in ("missing_field", "bad_value") or exc.message.startswith(f"{source}: "):
        return exc
    return AuditorError(exc.code, f"{source}: {exc.message}", exc.hint)


def checked_table(table: Table) -> Table:
    """A Table built by a caller (``auditor.Table(rows=ROWS, source=NAME)``): its rows must be a list
    (or tuple) of records, each a dict; anything else is a clear error, not a crash deep inside (a
    generator, a dict of columns, a list of strings or numbers)."""
    rows = table.rows
    if rows is None:
        return replace(table, rows=[])
    if not isinstance(rows, (list, tuple, PackedRows)):
        raise AuditorError("usage", f"Table rows must be a list of records (dicts), got {type(rows).__name__}.",
                           "Pass rows=list(...) of dicts; a dict of columns: pandas.DataFrame(...).to_dict('records').")
    if not isinstance(rows, PackedRows):
        bad = next((i for i, row in enumerate(rows) if not isinstance(row, dict)), None)
        if bad is not None:
            raise AuditorError("usage", f"Table record {bad} (0-based) is {type(rows[bad]).__name__} "
                               f"{str(rows[bad])[:60]!r}, not a record (a dict of fields).",
                               "Give each record as a dict, e.g. {'text': ...}.")
    return table


def load_table(spec: SourceSpec) -> Table:
    source = spec.source
    if isinstance(source, PreparedSide):
        return source.table
    if isinstance(source, Table):
        given = [name for name in ("config", "split", "max_rows", "revision") if getattr(spec, name) is not None]
        if given:
            # (they were ignored: max_rows=5 on a Table audited all its records)
            raise AuditorError("usage", f"A loaded Table is audited as it is: {', '.join(given)} "
                               f"{'does' if len(given) == 1 else 'do'} not apply to it.",
                               "Give them to auditor.load(SOURCE, ...) and pass the Table it returns, or pass "
                               "the source itself.")
        return checked_table(source)
    return load(source, spec.config, spec.split, max_rows=spec.max_rows, token=spec.token, kind=spec.kind,
                default_split=spec.default_split, revision=spec.revision)


def empty_role_notices(roles, fields) -> list[str]:
    """A notice for an answer or group field with no value in any record (each missing, null, NaN or
    blank): every record is then degenerate, which must not pass without a word (a float column of
    NaN, an empty CSV column)."""
    notes = []
    for role, values in (("answer", fields.answer), ("group", fields.group)):
        name = getattr(roles, role)
        if values and name is not None and all(map(normalize.is_blank, values)):
            how = "guessed" if role in roles.guessed else "named"
            notes.append(f"the {role} field {name!r} ({how}) is missing, null, NaN or blank in every record: every "
                         f"record counts as degenerate (an empty {role}) and no {role} is compared; name another "
                         f"with --{role}, or check the file")
    return notes


def prepare(source, *, config=None, split=None, max_rows=None, token=None, kind: str = "auto",
            text=None, answer=None, group=None, labels=None, id=None, require_rows: bool = False,
            text_only: bool = False, record_keys: tuple = (), default_split: str = "train"):
    """A prepared side of ``source`` (anything ``auditor.load`` takes, a ``SourceSpec``, a loaded
    Table, or a PreparedSide, whose table is reused). With ``record_keys`` (normaliser names),
    returns ``(side, {normalizer: digests})``: the digests of every record's canonical JSON under each,
    which the scan's record duplicates are keyed on (the canonical JSON, which the fingerprint is
    made of, is made a batch at a time and never held whole).
    ``text_only``: only the text role's values are read (matrix, a benchmark); the roles are still
    all resolved, since the fingerprint covers them."""
    spec = source if isinstance(source, SourceSpec) else SourceSpec(source, config, split, max_rows, token, kind,
                                                                     default_split)
    table = load_table(spec.validated())
    if require_rows and not table.rows:
        raise AuditorError("empty_input", f"{table.source}: no records to audit.", "Check the source and split.")
    try:
        roles = resolve_roles(table.rows, text=text, answer=answer, group=group, labels=labels, id=id)
        # Packed records are packed again without their text (filled back from the text column on
        # decode), so a long text is held once, not in the pickle and as the column's string too.
        one_text = isinstance(table.rows, PackedRows) and len(roles.text_names) == 1
        packer = Packer(roles.text_names[0]) if one_text else None
        add = None if packer is None else packer.add
        fields = (Fields(text=text_column(table.rows, roles, add), answer=None, group=None, labels={}, ids=None)
                  if text_only else extract(table.rows, roles, add))
    except AuditorError as exc:
        raise in_source(exc, table.source) from None
    if packer is not None:
        table = replace(table, rows=packer.rows(fields.text))
    notes = (*late_notices(roles), *empty_role_notices(roles, fields))
    empty = [note for note in notes if note not in table.notices]
    if empty:
        table = replace(table, notices=(*table.notices, *empty))
    fold, keys = _records(table.rows, record_keys)
    side = PreparedSide(table, roles, fields, fingerprint_of(fold, roles),
                        data_fingerprint=fingerprint_of(fold, replace(roles, guessed=())))
    return (side, keys) if record_keys else side


RECORD_BATCH_CHARS = 1 << 22     # characters of canonical JSON made at a time


def _records(rows: list, normalizers: tuple) -> tuple:
    """The fold of the records' canonical JSON (``roles.fold_records``, the fingerprint's) and, per
    normaliser, the digests of each record's canonical JSON under it, a batch of about
    RECORD_BATCH_CHARS at a time."""
    fold = (0, 0)
    keys = {name: np.zeros((len(rows), 2), dtype=np.uint64) for name in normalizers}
    lo, records, held = 0, [], 0

    def flush():
        nonlocal fold
        fold = fold_records(records, fold)
        for name, out in keys.items():
            out[lo:lo + len(records)] = digests(records, name)

    for row in rows:
        records.append(canonical_record(row))
        held += len(records[-1])
        if held >= RECORD_BATCH_CHARS:
            flush()
            lo, records, held = lo + len(records), [], 0
    flush()
    return fold, keys
