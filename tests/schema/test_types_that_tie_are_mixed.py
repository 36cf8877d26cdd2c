"""A field whose values split evenly between types has no majority type: it is typed "mixed",
with every type's count, not called the type that sorts first by name. From the round-4 hostile
review (a field of 2 booleans and 2 integers was typed "boolean", the integers its deviations)."""
from __future__ import annotations

import json

import auditor
from auditor.schema import check_schema


def test_a_tie_between_boolean_and_integer_is_mixed_with_the_counts(tmp_path, run_cli):
    rows = [{"text": "first text here", "flag": True}, {"text": "second text here", "flag": 1},
            {"text": "third text here", "flag": False}, {"text": "fourth text here", "flag": 0},
            {"text": "fifth text here"}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    summary = auditor.scan(str(path)).summary()
    assert {f["name"]: f["type"] for f in summary["schema"]["fields"]} == {"text": "string", "flag": "mixed"}
    flag = [i for i in summary["schema"]["issues"] if i["field"] == "flag"]
    assert [(i["kind"], i["records"], i["found"], i["rows_sample"]) for i in flag] == [
        ("mixed", 4, {"boolean": 2, "integer": 2}, [0, 1, 2, 3]), ("missing", 1, {}, [4])]
    rc, out, err = run_cli("scan", path, "--quiet")
    assert rc == 0, err
    assert "| flag | mixed | 4 | one type (no type is the majority) | boolean: 2, integer: 2 | 0, 1, 2, 3 |" in out


def test_a_majority_is_still_a_type_and_nulls_never_break_a_tie():
    schema = check_schema([{"a": 1}, {"a": 2}, {"a": "x"}])
    assert schema.fields[0].majority_type == "integer"
    assert [(i.kind, i.found) for i in schema.issues] == [("type", {"string": 1})]
    # null is not a type of its own here: one string and two nulls is a string field with nulls
    schema = check_schema([{"a": None}, {"a": None}, {"a": "x"}])
    assert schema.fields[0].majority_type == "string"
    # three types, two tied at the top
    schema = check_schema([{"a": 1.5}, {"a": "x"}, {"a": 2.5}, {"a": "y"}, {"a": None}, {"a": [1]}])
    assert schema.fields[0].majority_type == "mixed"
    assert [(i.kind, i.records, i.found) for i in schema.issues] == [
        ("mixed", 6, {"float": 2, "list": 1, "null": 1, "string": 2})]
