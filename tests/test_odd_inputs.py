"""Legitimately odd but valid inputs get correct results; a few more bad ones get specific errors.
(The main bad-input corpus is in test_sources_and_cli.py.)"""
import gzip
import json
import random

import pytest

import auditor
from auditor import AuditorError
from auditor.report import to_json


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_text_values_of_every_json_type(tmp_path):
    rows = [{"text": None}, {"text": 12345}, {"text": 1.5}, {"text": True}, {"text": ["a", "list", "of", "words"]},
            {"text": "a list of words"}, {"text": ""}, {}]
    result = auditor.scan(write_jsonl(tmp_path / "types.jsonl", rows), text="text")
    assert result.fields.text[:6] == [None, "12345", "1.5", "true", "a list of words", "a list of words"]
    summary = result.summary()
    assert summary["degenerate"]["records"] == 3            # null, "", missing
    assert summary["exact_duplicates"]["text"]["records"] == 2
    kinds = {(i["field"], i["kind"]) for i in summary["schema"]["issues"]}
    assert ("text", "type") in kinds and ("text", "missing") in kinds


def test_all_texts_empty_is_a_correct_empty_result(tmp_path):
    summary = auditor.scan(write_jsonl(tmp_path / "empty_texts.jsonl", [{"text": " "}] * 5 + [{"text": None}])).summary()
    assert summary["degenerate"]["records"] == 6
    assert summary["near_duplicates"]["pairs"] == 0 and summary["near_duplicates"]["clusters"] == 0
    assert summary["exact_duplicates"]["text"]["groups"] == 0   # blanks are degenerate, not duplicates


def test_text_field_present_in_no_row(tmp_path):
    with pytest.raises(AuditorError) as info:
        auditor.scan(write_jsonl(tmp_path / "x.jsonl", [{"question": "q"}]), text="prompt")
    assert info.value.code == "missing_field" and "'prompt'" in info.value.message
    assert "question" in info.value.hint


def test_single_ten_megabyte_record_and_a_million_tokens(tmp_path):
    rng = random.Random(5)
    words = [f"w{i}" for i in range(5000)]
    huge = " ".join(rng.choice(words) for _ in range(1_000_000))
    assert len(huge) > 5_000_000
    ten_mb = "x" * 10_000_000
    path = write_jsonl(tmp_path / "big.jsonl", [{"text": huge}, {"text": huge}, {"text": ten_mb}, {"text": "tiny one"}])
    summary = auditor.scan(path).summary()
    assert summary["input"]["records"] == 4
    assert summary["exact_duplicates"]["text"] == {**summary["exact_duplicates"]["text"], "groups": 1, "records": 2}
    assert summary["near_duplicates"]["pairs"] == 1 and summary["near_duplicates"]["pairs_sample"][0]["jaccard"] == 1.0


def test_one_hundred_thousand_identical_records(tmp_path):
    path = tmp_path / "same.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "the same words in every record"}) + "\n" * 1)
        for _ in range(99_999):
            fh.write(json.dumps({"text": "the same words in every record"}) + "\n")
    summary = auditor.scan(str(path)).summary()
    assert summary["exact_duplicates"]["text"]["groups"] == 1
    assert summary["exact_duplicates"]["text"]["records"] == 100_000
    assert summary["near_duplicates"]["pairs"] == 100_000 * 99_999 // 2
    assert summary["near_duplicates"]["clusters"] == 1
    assert summary["near_duplicates"]["giant_cluster"]["records"] == 100_000


def test_unicode_edge_cases_give_stable_reports(tmp_path):
    rows = [{"text": "e\u0301cole normale supe\u0301rieure paris"}, {"text": "école normale supérieure paris"},
            {"text": "مرحبا بالعالم الجميل اليوم"}, {"text": "👍🏽 family 👨‍👩‍👧 emoji test"},
            {"text": "zero\u200bwidth\u200djoiner text here"}, {"text": "nul\x00inside the text ok"},
            {"text": "\u202eright to left override text"}]
    path = write_jsonl(tmp_path / "uni.jsonl", rows)
    first = to_json(auditor.scan(path).summary())
    assert first == to_json(auditor.scan(path).summary())
    summary = json.loads(first)
    assert summary["exact_duplicates"]["text"]["groups"] == 1     # NFC joins the two spellings of école


def test_row_cap_smaller_than_the_data_is_stated(tmp_path):
    path = write_jsonl(tmp_path / "many.jsonl", [{"text": f"record number {i}"} for i in range(100)])
    result = auditor.scan(path, max_rows=30)
    summary = result.summary()
    assert summary["input"]["records"] == 30 and summary["input"]["truncated"] is True
    assert "Row cap" in result.markdown()
    assert auditor.scan(path, max_rows=100).summary()["input"]["truncated"] is False


def test_directory_with_mixed_formats(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [{"text": "from the jsonl file here"}])
    (folder / "b.csv").write_text("text\nfrom the csv file here\n", encoding="utf-8")
    (folder / "c.json").write_text(json.dumps([{"text": "from the json file here"}]), encoding="utf-8")
    (folder / "notes.txt").write_text("not data", encoding="utf-8")
    table = auditor.load(str(folder))
    assert [r["text"] for r in table.rows] == ["from the jsonl file here", "from the csv file here",
                                              "from the json file here"]
    assert table.files == ("a.jsonl", "b.csv", "c.json")


@pytest.mark.parametrize("kwargs, fragment", [
    ({"settings": auditor.ScanSettings(threshold=0)}, "outside (0, 1]"),
    ({"settings": auditor.ScanSettings(threshold=1.01)}, "outside (0, 1]"),
    ({"settings": auditor.ScanSettings(thresholds=())}, "No thresholds"),
    ({"settings": auditor.ScanSettings(seed=-3, method="lsh")}, "Seed"),
    ({"settings": auditor.ScanSettings(num_perm=1)}, "num_perm"),
    ({"settings": auditor.ScanSettings(normalizer="fancy")}, "fancy"),
    ({"max_rows": 0}, "max_rows"),
])
def test_bad_settings_are_usage_errors(tmp_path, kwargs, fragment):
    path = write_jsonl(tmp_path / "ok.jsonl", [{"text": "some words here"}] * 3)
    with pytest.raises(AuditorError) as info:
        auditor.scan(path, **kwargs)
    assert info.value.code == "usage" and fragment in info.value.message


def test_shingle_size_zero_is_refused():
    with pytest.raises(AuditorError) as info:
        auditor.ShingleSpec.parse("word:0")
    assert info.value.code == "usage"


def test_huge_file_without_a_cap_is_refused(tmp_path, monkeypatch):
    from auditor.io import budget, sources
    path = tmp_path / "huge.json"
    path.write_text(json.dumps([{"text": "x " * 100}] * 200), encoding="utf-8")
    monkeypatch.setattr(budget, "MAX_BYTES", 1000)
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path))
    assert info.value.code == "too_large" and "--max-rows" in info.value.hint
    # With a row cap, reading streams and stops at the cap: a file far beyond the byte limit gives
    # its first rows (the limit counts what is read, in chunks of at most 1/16 of it or 64 KiB).
    jsonl = write_jsonl(tmp_path / "huge.jsonl", [{"text": "x " * 100}] * 2000)
    monkeypatch.setattr(budget, "MAX_BYTES", 200_000)
    with pytest.raises(AuditorError) as info:
        auditor.load(jsonl)
    assert info.value.code == "too_large" and "--max-rows" in info.value.hint
    table = auditor.load(jsonl, max_rows=5)
    assert len(table.rows) == 5 and table.truncated
