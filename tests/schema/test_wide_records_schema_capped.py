"""Wide records: the schema types and lists the first MAX_FIELDS fields and says how many there
are; one record of 200,000 keys (or a CSV of 200,000 columns) no longer lists every one of them
in summary.json (a 1M-key record made a 285 MB summary.json, 229 s, 4.1 GB)."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor.schema import MAX_FIELDS, check_schema

WIDE = 200_000


def test_schema_lists_the_first_fields_and_counts_them_all():
    rows = [{f"k{i}": i for i in range(WIDE)}, {"k0": "a string", "k1": 2, "late": True}]
    schema = check_schema(rows)
    assert schema.fields_total == WIDE + 1 and schema.capped
    assert [f.name for f in schema.fields] == [f"k{i}" for i in range(MAX_FIELDS)]
    # the listed fields are typed as before: k0 has a string in one record, k2.. are missing in one
    issues = {(i.field, i.kind) for i in schema.issues}
    assert ("k0", "mixed") in issues and ("k2", "missing") in issues and ("k1", "missing") not in issues
    assert not check_schema([{"a": 1}, {"b": 2}]).capped


@pytest.mark.slow
def test_wide_jsonl_and_csv_reports_say_the_schema_is_capped(tmp_path):
    record = {f"k{i}": i for i in range(WIDE)}
    jsonl = tmp_path / "wide.jsonl"
    jsonl.write_text(json.dumps(dict(record, text="first text here")) + "\n"
                     + json.dumps(dict(record, text="second text there")) + "\n")
    columns = [f"c{i}" for i in range(WIDE)]
    csv = tmp_path / "wide.csv"
    csv.write_text("text," + ",".join(columns) + "\n" + "one text," + ",".join("1" * WIDE) + "\n"
                   + "two text," + ",".join("2" * WIDE) + "\n")
    for path in (jsonl, csv):
        result = auditor.scan(str(path), text="text")
        summary = result.summary()
        assert summary["schema"]["fields_total"] == WIDE + 1
        assert len(summary["schema"]["fields"]) == MAX_FIELDS
        assert len(json.dumps(summary)) < 1_000_000              # a listing of every field took 57 MB here
        assert "first 1,000" in summary["schema"]["note"] and "Wide records" in result.markdown()


def test_ordinary_data_reads_as_before():
    summary = auditor.scan("example:mbpp", split="test").summary()
    assert "fields_total" not in summary["schema"] and "note" not in summary["schema"]
