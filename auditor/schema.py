"""Checks of shape: the majority type of every field, records that deviate from it or
omit it, and degenerate records (empty text, answer or group)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import islice

from .normalize import is_blank

SAMPLE_ROWS = 5      # rows listed per issue
# Fields typed and listed, in order of first appearance; further fields are counted only. One record
# of 1M keys listed every field: 229 s, 4.1 GB and a 285 MB summary.json.
MAX_FIELDS = 1000
MIXED = "mixed"      # a field's type when two or more types tie for the most values


def type_name(value) -> str:
    if value is None or value != value:       # NaN: pandas' missing value, read as missing (roles.as_text)
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return _OTHER_TYPES.get(type(value).__name__, type(value).__name__.lower())


# Values Parquet and CSV readers hand over beyond JSON's: named as the data's types, not Python's classes.
_OTHER_TYPES = {"Decimal": "decimal", "Timestamp": "timestamp", "datetime": "timestamp", "date": "date",
                "time": "time", "timedelta": "duration", "Timedelta": "duration", "bytes": "binary",
                "bytearray": "binary"}


@dataclass(frozen=True)
class FieldSchema:
    name: str
    majority_type: str
    present: int


@dataclass(frozen=True)
class SchemaIssue:
    field: str
    kind: str            # "missing" (field absent), "type" (present with another type) or "mixed" (types tie)
    records: int
    expected: str
    found: dict          # type -> count (for "type" issues)
    rows_sample: list


@dataclass(frozen=True)
class Schema:
    fields: list
    issues: list
    fields_total: int = 0       # distinct fields of the data; more than len(fields) when capped (MAX_FIELDS)

    @property
    def capped(self) -> bool:
        return self.fields_total > len(self.fields)

    @property
    def records_with_issues(self) -> int:
        return sum(i.records for i in self.issues)


def check_schema(rows: list[dict], max_fields: int = MAX_FIELDS) -> Schema:
    """Each field's majority type and the records that deviate from it or omit it, for the first
    ``max_fields`` fields (in order of first appearance); the others are counted, not typed."""
    types: dict[str, Counter] = {}
    rows_by: dict[tuple, list] = {}
    others_seen: set = set()            # fields beyond the cap: their names only, to count them
    for i, row in enumerate(rows):
        for key, value in row.items():
            counts = types.get(key)
            if counts is None:
                if len(types) >= max_fields:
                    others_seen.add(key)
                    continue
                counts = types[key] = Counter()
            t = type_name(value)
            counts[t] += 1
            bucket = rows_by.setdefault((key, t), [])
            if len(bucket) < SAMPLE_ROWS:
                bucket.append(i)
    fields, issues = [], []
    n = len(rows)
    for key, counts in types.items():
        present = sum(counts.values())
        # The majority among non-null values; null counts as a deviation only for typed fields.
        non_null = Counter({t: c for t, c in counts.items() if t != "null"}) or counts
        ranked = sorted(non_null.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            # No majority: naming one of the tied types (the first by name, "boolean" before
            # "integer") would call the others deviations from a type the data does not have.
            fields.append(FieldSchema(str(key), MIXED, present))
            sample = sorted(i for t in counts for i in rows_by[(key, t)])[:SAMPLE_ROWS]
            issues.append(SchemaIssue(str(key), "mixed", present, "one type (no type is the majority)",
                                      dict(sorted(counts.items())), sample))
            if present < n:
                missing_rows = list(islice((i for i, row in enumerate(rows) if key not in row), SAMPLE_ROWS))
                issues.append(SchemaIssue(str(key), "missing", n - present, MIXED, {}, missing_rows))
            continue
        majority = ranked[0][0]
        fields.append(FieldSchema(str(key), majority, present))
        if present < n:
            # Stop at the sample: a walk costs the key's present rows plus the sample, so all the
            # keys together cost the data's size (a full pass per key is quadratic in wide data).
            missing_rows = list(islice((i for i, row in enumerate(rows) if key not in row), SAMPLE_ROWS))
            issues.append(SchemaIssue(str(key), "missing", n - present, majority, {}, missing_rows))
        others = {t: c for t, c in counts.items() if t != majority}
        if others:
            sample = sorted(i for t in others for i in rows_by[(key, t)])[:SAMPLE_ROWS]
            issues.append(SchemaIssue(str(key), "type", sum(others.values()), majority,
                                      dict(sorted(others.items())), sample))
    return Schema(fields=fields, issues=issues, fields_total=len(types) + len(others_seen))


@dataclass(frozen=True)
class Degenerate:
    records: int          # records with at least one empty evaluated field
    by_role: dict         # role -> count of empty values
    rows_sample: list


def check_degenerate(columns: dict) -> Degenerate:
    """``columns``: role -> list of text values (None = missing). Empty means nothing but whitespace
    and hidden characters (zero-width and direction marks: ``normalize.is_blank``)."""
    by_role, bad = {}, set()
    for role, values in columns.items():
        if values is None:
            continue
        empty = [i for i, v in enumerate(values) if is_blank(v)]
        by_role[role] = len(empty)
        bad.update(empty)
    return Degenerate(records=len(bad), by_role=by_role, rows_sample=sorted(bad)[:SAMPLE_ROWS * 2])
