"""The scan's record checks: schema issues, degenerate records, concentration of a group field
and label conflicts, against figures computed by hand."""
from __future__ import annotations

import json
from collections import Counter

import pytest

import auditor
from auditor import ScanSettings
from auditor.schema import check_schema


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def counts(result) -> dict:
    """Everything in a scan that must not depend on record order."""
    s = result.summary()
    return {
        "curve": [(p.threshold, p.pairs, p.clusters) for p in result.curve],
        "near": {t: (n.pairs, n.clusters, n.identical_clusters, n.variant_clusters, n.records_in_clusters,
                     n.largest_cluster) for t in THRESHOLDS for n in [result.near_duplicates(t)]},
        "exact": {k: None if v is None else (v["groups"], v["records"]) for k, v in s["exact_duplicates"].items()},
        "by_norm": {f: {k: (v["groups"], v["records"]) for k, v in t.items()}
                    for f, t in s["exact_duplicates_by_normalizer"].items()},
        "degenerate": (s["degenerate"]["records"], s["degenerate"]["by_role"]),
        "schema": sorted((i["field"], i["kind"], i["records"]) for i in s["schema"]["issues"]),
        "concentration": {k: v for k, v in s["concentration"].items()},
        "roles": s["roles"],
        "distinct_texts": s["method"]["distinct_texts"],
    }


def test_schema_of_many_fields_each_in_one_record(tmp_path):
    # Every record has its own field: 20,000 "missing" issues, each sampled without a pass over
    # every record per field (that was 20,000 x 20,000). The field cap raised past the data's
    # fields (by default the schema lists the first 1,000: tests/schema).
    """From the hostile-input sweep."""
    n = 20_000
    rows = [{"text": f"record {i}", f"k{i}": i} for i in range(n)] + [{"text": "last"}]
    schema = check_schema(rows, max_fields=n + 1)
    missing = {i.field: i for i in schema.issues if i.kind == "missing"}
    assert len(missing) == n
    for i in (0, 1, 3, 7, n - 1):
        expected = [r for r, row in enumerate(rows) if f"k{i}" not in row][:5]
        assert missing[f"k{i}"].rows_sample == expected and missing[f"k{i}"].records == n


def test_many_schema_issues_keep_the_report_table_short(tmp_path):
    """From the hostile-input sweep: Records each with a field of its own: summary.json lists every issue,
    REPORT.md the first
    50 and how many more."""
    rows = [{"text": f"record {i} says something", f"extra_{i}": i} for i in range(300)]
    result = auditor.scan(write_jsonl_str(tmp_path / "wide.jsonl", rows))
    issues = result.summary()["schema"]["issues"]
    assert len(issues) == 300 and {i["field"] for i in issues} == {f"extra_{i}" for i in range(300)}
    report = result.markdown()
    assert sum(line.startswith("| extra\\_") for line in report.splitlines()) == 50      # md_cell escapes _
    assert "... and 250 more schema issues, listed in summary.json." in report


def test_schema_issues_missing_and_type(tmp_path):
    rows = [
        {"q": "alpha beta gamma", "a": "1", "n": 1},
        {"q": "delta epsilon zeta", "a": "2", "n": 2},
        {"q": "eta theta iota", "n": "3"},                 # a missing, n a string
        {"q": "kappa lambda mu", "a": "4", "n": 4},
        {"q": "nu xi omicron", "a": "5", "n": None},       # n null
        {"q": "pi rho sigma", "a": "6", "n": 6},
    ]
    result = auditor.scan(write_jsonl_str(tmp_path / "s.jsonl", rows), text="q", answer="a")
    s = result.summary()["schema"]
    types = {f["name"]: (f["type"], f["present"]) for f in s["fields"]}
    assert types == {"q": ("string", 6), "a": ("string", 5), "n": ("integer", 6)}
    issues = {(i["field"], i["kind"]): i for i in s["issues"]}
    assert set(issues) == {("a", "missing"), ("n", "type")}
    assert issues[("a", "missing")]["records"] == 1
    assert issues[("a", "missing")]["rows_sample"] == [2]
    assert issues[("n", "type")]["records"] == 2
    assert issues[("n", "type")]["expected"] == "integer"
    assert issues[("n", "type")]["found"] == {"null": 1, "string": 1}
    assert issues[("n", "type")]["rows_sample"] == [2, 4]
    assert "## Schema issues" in result.markdown()


def test_clean_schema_has_no_issues(real_data):
    result = auditor.scan(str(real_data / "gsm8k" / "test.jsonl"), max_rows=200)
    assert result.schema.issues == []
    assert result.summary()["degenerate"]["records"] == 0


def test_degenerate_records(tmp_path):
    rows = [
        {"q": "ok one", "a": "x", "g": "g1"},
        {"q": "", "a": "x", "g": "g1"},           # empty text
        {"q": "   \n", "a": "", "g": "g1"},       # blank text and empty answer
        {"q": "ok two", "a": "y", "g": ""},       # empty group
        {"q": "ok three", "g": "g2"},             # no answer
        {"q": "ok four", "a": "z", "g": "g2"},
    ]
    result = auditor.scan(write_jsonl_str(tmp_path / "d.jsonl", rows), text="q", answer="a", group="g")
    d = result.summary()["degenerate"]
    assert d["records"] == 4
    assert d["by_role"] == {"text": 2, "answer": 2, "group": 1}
    assert d["rows_sample"] == [1, 2, 3, 4]
    # Blank texts have no shingles: they are never near duplicates of each other.
    assert result.near_duplicates(0.3).pairs == 0
    assert result.exact["text"].groups == 0


def test_concentration_on_spider_db_id(real_data):
    path = real_data / "spider" / "train_spider.jsonl"
    with open(path, encoding="utf-8") as fh:
        db_ids = [json.loads(line)["db_id"] for line in fh]
    counts = Counter(db_ids)
    total = len(db_ids)
    result = auditor.scan(str(path), settings=ScanSettings(thresholds=(0.9,), threshold=0.9))
    assert result.roles.group == "db_id"
    c = result.summary()["concentration"]
    assert c["field"] == "db_id"
    assert c["groups"] == len(counts) == 140
    assert c["records_without_group"] == 0
    value, records = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    assert c["largest"] == {"value": value, "records": records, "share": round(records / total, 4)}
    assert c["hhi"] == pytest.approx(sum((n / total) ** 2 for n in counts.values()), abs=1e-6)
    assert c["mean_per_group"] == pytest.approx(total / len(counts), abs=1e-4)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [(t["value"], t["records"]) for t in c["top"]] == top


def test_concentration_by_hand(tmp_path):
    rows = [{"t": f"text number {i}", "src": s} for i, s in enumerate(["a", "a", "b", "a", "", None])]
    result = auditor.scan(write_jsonl_str(tmp_path / "c.jsonl", rows), text="t", group="src")
    c = result.summary()["concentration"]
    assert c["groups"] == 2
    assert c["records_without_group"] == 2
    assert c["largest"] == {"value": "a", "records": 3, "share": 0.75}
    assert c["hhi"] == pytest.approx(0.75 ** 2 + 0.25 ** 2)
    assert c["mean_per_group"] == 2.0


def test_label_conflicts(tmp_path):
    rows = [
        {"text": "The movie was great", "label": "pos", "topic": "film"},
        {"text": "the movie   was GREAT", "label": "neg", "topic": "film"},
        {"text": "Bad film", "label": "neg", "topic": "film"},
        {"text": "bad film", "label": "neg", "topic": "film"},
        {"text": "Okay I guess", "label": "pos", "topic": "misc"},
        {"text": "Okay I guess", "label": "neu", "topic": "misc"},
        {"text": "Okay I guess", "label": "pos", "topic": "misc"},
        {"text": "Unique words here", "label": "pos", "topic": "misc"},
        {"text": "Same label, other topic", "label": "pos", "topic": "a"},
        {"text": "same label, other topic", "label": "pos", "topic": "b"},
    ]
    path = write_jsonl_str(tmp_path / "l.jsonl", rows)
    one = auditor.scan(path, text="text", labels=["label"])
    lc = one.summary()["label_conflicts"]
    assert lc["fields"] == ["label"]
    assert (lc["groups"], lc["records"]) == (2, 5)
    assert sorted(map(sorted, lc["examples"])) == [[0, 1], [4, 5, 6]]
    assert "## Label conflicts" in one.markdown()
    two = auditor.scan(path, text="text", labels="label,topic")       # comma-separated
    lc2 = two.summary()["label_conflicts"]
    assert lc2["fields"] == ["label", "topic"]
    assert (lc2["groups"], lc2["records"]) == (3, 7)
    none = auditor.scan(path, text="text")
    assert none.summary()["label_conflicts"] is None


def test_a_record_without_a_label_is_no_label_conflict(tmp_path):
    """From a hostile review: a missing, null, NaN or blank label beside "pos" counted as a conflict
    (3 records in conflict where no two labelled records disagree)."""
    same, other = "same text here ok", "other text here ok"
    rows = [{"text": same, "label": "pos"}, {"text": same}, {"text": same, "label": None},
            {"text": same, "label": float("nan")}, {"text": same, "label": "  "},
            {"text": other, "label": "pos"}, {"text": other, "label": None}, {"text": other, "label": "neg"}]
    path = tmp_path / "l.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")      # NaN as JSON's NaN
    lc = auditor.scan(str(path), text="text", labels=["label"]).summary()["label_conflicts"]
    assert (lc["groups"], lc["records"], lc["examples"]) == (1, 2, [[5, 7]])
