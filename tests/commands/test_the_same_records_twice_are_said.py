"""``contamination`` with the benchmark as its corpus (the same file, or a copy) and ``matrix`` given
the same records twice say so, in a warning and a note of REPORT.md, as ``leak`` and ``clean`` do:
every record matches itself, so the figures say nothing about contamination or overlap.

From the round-8 hostile review: ``auditor contamination test.jsonl --benchmark test.jsonl`` reported
1,319 of 1,319 items (100%) contaminated, and ``matrix -d a=test.jsonl -d b=test.jsonl`` 100% cells,
without a word. Ground truth: the sides' record fingerprints (``auditor.leak``); GSM8K's train
split, which shares no record with its test split, and a corpus of one record more get no note."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import auditor
from auditor.contamination import contamination
from auditor.matrix import overlap_matrix
from auditor.report.contamination import SAME_AS_BENCHMARK, same_as_benchmark
from definitions import read_jsonl, write_jsonl

MATRIX_NOTE = "hold the same records (the same fingerprint)"


@pytest.fixture
def test_copy(real_data, tmp_path):
    test = real_data / "gsm8k/test.jsonl"
    copy = Path(shutil.copy(test, tmp_path / "copy.jsonl"))
    same = auditor.leak(str(copy), str(test))
    assert same.a.fingerprint == same.b.fingerprint                      # ground truth: the same records
    return test, copy


@pytest.mark.parametrize("which", ["the same file", "a copy"])
def test_contamination_of_the_benchmark_by_itself_is_said(test_copy, run_cli, tmp_path, which):
    test, copy = test_copy
    corpus = test if which == "the same file" else copy
    code, out, err = run_cli("contamination", corpus, "--benchmark", test, "--quiet")
    assert code == 0, err
    assert f"warning: {SAME_AS_BENCHMARK}" in err, err
    assert f"> Note: {SAME_AS_BENCHMARK}" in out
    assert "1,319 of 1,319 benchmark items" in out


def test_contamination_of_the_benchmark_by_itself_is_in_summary_notices(test_copy, run_cli, tmp_path):
    """From the round-9 review: the note was in REPORT.md and stdout, but not in summary.json's
    ``notices``, where matrix puts its same-records note (a pipeline reads summary.json)."""
    test, copy = test_copy
    code, _, err = run_cli("contamination", copy, "--benchmark", test, "--out-dir", tmp_path / "c", "--quiet")
    assert code == 0, err
    summary = json.loads((tmp_path / "c" / "summary.json").read_text(encoding="utf-8"))
    assert summary["notices"] == [SAME_AS_BENCHMARK]
    assert summary["contaminated"]["records"] == summary["benchmark"]["records"] == 1319
    assert f"> Note: {SAME_AS_BENCHMARK}" in (tmp_path / "c" / "REPORT.md").read_text(encoding="utf-8")


def test_a_corpus_with_other_records_gets_no_note(real_data, tmp_path):
    test = real_data / "gsm8k/test.jsonl"
    rows = read_jsonl(test)
    more = tmp_path / "more.jsonl"
    write_jsonl(more, rows + [{"question": "A record the benchmark does not hold, long enough to count here."}])
    assert not same_as_benchmark(contamination(str(more), str(test)).summary())     # one record more
    train = contamination(str(real_data / "gsm8k/train.jsonl"), str(test))
    assert not same_as_benchmark(train.summary()) and SAME_AS_BENCHMARK not in train.markdown()
    assert "notices" not in train.summary()


def test_matrix_given_the_same_records_twice_says_so(test_copy, run_cli, tmp_path):
    test, copy = test_copy
    code, _, err = run_cli("matrix", "-d", f"a={test}", "-d", f"b={test}", "-d", f"c={copy}",
                           "--out-dir", tmp_path / "m", "--quiet")
    assert code == 0, err
    assert f"warning: a/all and b/all {MATRIX_NOTE}" in err and f"warning: a/all and c/all {MATRIX_NOTE}" in err
    summary = json.loads((tmp_path / "m" / "summary.json").read_text(encoding="utf-8"))
    assert len(summary["notices"]) == 2
    assert f"> Note: a/all and b/all {MATRIX_NOTE}" in (tmp_path / "m" / "REPORT.md").read_text(encoding="utf-8")


def test_matrix_of_different_splits_has_no_note(real_data):
    result = overlap_matrix([f"gsm8k:train={real_data / 'gsm8k/train.jsonl'}",
                             f"gsm8k:test={real_data / 'gsm8k/test.jsonl'}"], compare=False)
    assert result.notices == () and "notices" not in result.summary()
