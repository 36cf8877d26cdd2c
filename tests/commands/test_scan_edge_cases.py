"""Legitimately odd but valid inputs to a scan get correct results (every JSON type as text, all
texts empty, a 10 MB record, 100,000 identical records, Unicode edge cases); bad settings get
specific errors."""
import gzip
import json
import random

import pytest

import auditor
from auditor import AuditorError
from auditor.report import to_json


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_text_values_of_every_json_type(tmp_path):
    """From the odd-inputs review."""
    rows = [{"text": None}, {"text": 12345}, {"text": 1.5}, {"text": True}, {"text": ["a", "list", "of", "words"]},
            {"text": "a list of words"}, {"text": ""}, {}]
    result = auditor.scan(write_jsonl_str(tmp_path / "types.jsonl", rows), text="text")
    assert result.fields.text[:6] == [None, "12345", "1.5", "true", "a list of words", "a list of words"]
    summary = result.summary()
    assert summary["degenerate"]["records"] == 3            # null, "", missing
    assert summary["exact_duplicates"]["text"]["records"] == 2
    kinds = {(i["field"], i["kind"]) for i in summary["schema"]["issues"]}
    assert ("text", "type") in kinds and ("text", "missing") in kinds


def test_all_texts_empty_is_a_correct_empty_result(tmp_path):
    """From the odd-inputs review."""
    summary = auditor.scan(write_jsonl_str(tmp_path / "empty_texts.jsonl", [{"text": " "}] * 5 + [{"text": None}])).summary()
    assert summary["degenerate"]["records"] == 6
    assert summary["near_duplicates"]["pairs"] == 0 and summary["near_duplicates"]["clusters"] == 0
    assert summary["exact_duplicates"]["text"]["groups"] == 0   # blanks are degenerate, not duplicates


def test_text_field_present_in_no_row(tmp_path):
    """From the odd-inputs review."""
    with pytest.raises(AuditorError) as info:
        auditor.scan(write_jsonl_str(tmp_path / "x.jsonl", [{"question": "q"}]), text="prompt")
    assert info.value.code == "missing_field" and "'prompt'" in info.value.message
    assert "question" in info.value.hint


@pytest.mark.sweep
def test_single_ten_megabyte_record_and_a_million_tokens(tmp_path):
    """From the odd-inputs review."""
    rng = random.Random(5)
    words = [f"w{i}" for i in range(5000)]
    huge = " ".join(rng.choice(words) for _ in range(1_000_000))
    assert len(huge) > 5_000_000
    ten_mb = "x" * 10_000_000
    path = write_jsonl_str(tmp_path / "big.jsonl", [{"text": huge}, {"text": huge}, {"text": ten_mb}, {"text": "tiny one"}])
    summary = auditor.scan(path).summary()
    assert summary["input"]["records"] == 4
    assert summary["exact_duplicates"]["text"] == {**summary["exact_duplicates"]["text"], "groups": 1, "records": 2}
    assert summary["near_duplicates"]["pairs"] == 1 and summary["near_duplicates"]["pairs_sample"][0]["jaccard"] == 1.0


@pytest.mark.sweep
def test_one_hundred_thousand_identical_records(tmp_path):
    """From the odd-inputs review."""
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
    """From the odd-inputs review."""
    rows = [{"text": "e\u0301cole normale supe\u0301rieure paris"}, {"text": "école normale supérieure paris"},
            {"text": "مرحبا بالعالم الجميل اليوم"}, {"text": "👍🏽 family 👨‍👩‍👧 emoji test"},
            {"text": "zero\u200bwidth\u200djoiner text here"}, {"text": "nul\x00inside the text ok"},
            {"text": "\u202eright to left override text"}]
    path = write_jsonl_str(tmp_path / "uni.jsonl", rows)
    first = to_json(auditor.scan(path).summary())
    assert first == to_json(auditor.scan(path).summary())
    summary = json.loads(first)
    assert summary["exact_duplicates"]["text"]["groups"] == 1     # NFC joins the two spellings of école


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
    """From the odd-inputs review."""
    path = write_jsonl_str(tmp_path / "ok.jsonl", [{"text": "some words here"}] * 3)
    with pytest.raises(AuditorError) as info:
        auditor.scan(path, **kwargs)
    assert info.value.code == "usage" and fragment in info.value.message


def test_shingle_size_zero_is_refused():
    """From the odd-inputs review."""
    with pytest.raises(AuditorError) as info:
        auditor.ShingleSpec.parse("word:0")
    assert info.value.code == "usage"
