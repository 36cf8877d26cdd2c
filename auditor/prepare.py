"""One way to prepare a side: load -> roles -> extract -> fingerprint.

``prepare`` returns a frozen ``PreparedSide`` that every command uses (scan, leak, the benchmark
side of contamination, matrix, clean): the loaded table, the roles resolved on it, every role's
values as text, and the fingerprint of the records and roles. Normalised text and answer keys are
computed on demand and kept, so a side prepared once (clean's TEST, the app's audited dataset)
is normalised once however many comparisons use it.

``answer_normalizer`` is the one rule for comparing answers: code or SQL answers under ``code``,
anything else under the text normaliser.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import normalize
from .errors import AuditorError
from .io.sources import load
from .io.table import Table
from .normalize import normalized
from .report.leak import side_block
from .roles import (
    Fields,
    Roles,
    canonical_record,
    extract,
    fingerprint_of,
    fold_records,
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
    # The records and the role fields, however the roles were chosen (named or guessed): what a
    # review file is bound to (``dedup.review_fingerprint``).
    data_fingerprint: str = ""

    @property
    def records(self) -> int:
        return len(self.table.rows)

    @property
    def no_text(self) -> int:
        """Records with no text: missing, null, or nothing left after the default normaliser."""
        return sum(key is None for key in self.normalized("text"))

    def normalized(self, role: str, normalizer: str = "default") -> list | None:
        """The role's values ("text" or "answer") under ``normalizer`` (None where blank), kept."""
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


def load_table(spec: SourceSpec) -> Table:
    source = spec.source
    if isinstance(source, PreparedSide):
        return source.table
    if isinstance(source, Table):
        return source
    return load(source, spec.config, spec.split, max_rows=spec.max_rows, token=spec.token, kind=spec.kind,
                default_split=spec.default_split, revision=spec.revision)


def prepare(source, *, config=None, split=None, max_rows=None, token=None, kind: str = "auto",
            text=None, answer=None, group=None, labels=None, id=None, require_rows: bool = False,
            text_only: bool = False, with_records: bool = False, default_split: str = "train"):
    """A prepared side of ``source`` (anything ``auditor.load`` takes, a ``SourceSpec``, a loaded
    Table, or a PreparedSide, whose table is reused). With ``with_records``, returns
    ``(side, records)``: the canonical JSON of every record, which the fingerprint is made of and
    the scan's record duplicates are keyed on (made once, freed by the caller when done).
    ``text_only``: only the text role's values are read (matrix, a benchmark); the roles are still
    all resolved, since the fingerprint covers them."""
    spec = source if isinstance(source, SourceSpec) else SourceSpec(source, config, split, max_rows, token, kind,
                                                                     default_split)
    table = load_table(spec.validated())
    if require_rows and not table.rows:
        raise AuditorError("empty_input", f"{table.source}: no records to audit.", "Check the source and split.")
    try:
        roles = resolve_roles(table.rows, text=text, answer=answer, group=group, labels=labels, id=id)
        fields = (Fields(text=text_column(table.rows, roles), answer=None, group=None, labels={}, ids=None)
                  if text_only else extract(table.rows, roles))
    except AuditorError as exc:
        raise in_source(exc, table.source) from None
    records = [canonical_record(r) for r in table.rows]
    fold = fold_records(records)
    side = PreparedSide(table, roles, fields, fingerprint_of(fold, roles),
                        data_fingerprint=fingerprint_of(fold, replace(roles, guessed=())))
    return (side, records) if with_records else side
