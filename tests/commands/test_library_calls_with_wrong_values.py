"""The library's public functions (as docs/python-api.md shows them) called with values of the wrong
kind: a Table whose rows are no list of dicts, settings that are no settings object, a progress
that is not a function, a threshold that is not a number, dedup of something that is no scan, a
matrix of one string: each a usage error naming the value, never an AttributeError or TypeError
from deep inside. From the round-5 hostile review."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor import AuditorError, Table
from auditor.dedup import dedup, write_dedup
from auditor.leakage import leak
from auditor.matrix import overlap_matrix

ROWS = [{"question": f"question number {i} about apples pears and plums", "answer": str(i)} for i in range(20)]


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS + ROWS[:3]), encoding="utf-8")
    return str(path), auditor.scan(str(path))


@pytest.mark.parametrize("rows, fragment", [
    ([1, 2], "Table record 0 (0-based) is int '1', not a record"),
    ([*ROWS, "a text"], "Table record 20 (0-based) is str 'a text', not a record"),
    ({"question": ["a", "b"]}, "Table rows must be a list of records (dicts), got dict"),
    ((r for r in ROWS), "Table rows must be a list of records (dicts), got generator"),
    ("question,answer", "Table rows must be a list of records (dicts), got str"),
])
def test_a_table_of_rows_that_are_not_records(rows, fragment):
    with pytest.raises(AuditorError) as caught:
        auditor.scan(Table(rows=rows, source="mine"))
    assert caught.value.code == "usage" and fragment in caught.value.message
    with pytest.raises(AuditorError, match="Table r"):
        leak(Table(rows=ROWS, source="a"), Table(rows=rows, source="b"))


def test_a_tuple_of_records_and_no_rows_are_still_read():
    assert auditor.scan(Table(rows=tuple(ROWS), source="t"), text="question").records == 20
    with pytest.raises(AuditorError) as caught:
        auditor.scan(Table(rows=None, source="none"))
    assert caught.value.code == "empty_input"


@pytest.mark.parametrize("call, fragment", [
    (lambda p: auditor.scan(p, settings="word:3"), "settings must be an auditor.ScanSettings, got str"),
    (lambda p: auditor.scan(p, settings={"threshold": 0.5}), "settings must be an auditor.ScanSettings, got dict"),
    (lambda p: auditor.scan(p, progress=5), "progress must be a function progress(fraction, stage), got int"),
    (lambda p: leak(p, p, settings=auditor.ScanSettings()), "settings must be an auditor.settings.LeakSettings"),
    (lambda p: overlap_matrix(p), "overlap_matrix takes a list of datasets"),
    (lambda p: overlap_matrix(None), "overlap_matrix takes a list of datasets"),
    (lambda p: overlap_matrix([5, 6]), "overlap_matrix takes a list of datasets"),
])
def test_arguments_of_the_wrong_kind(scanned, call, fragment):
    path, _ = scanned
    with pytest.raises(AuditorError) as caught:
        call(path)
    assert caught.value.code == "usage" and fragment in caught.value.message


@pytest.mark.parametrize("threshold, fragment", [
    ("x", "Threshold 'x' is not a number"), ("0.5", "Threshold '0.5' is not a number"),
    (True, "Threshold True is not a number"), (float("nan"), "outside (0, 1]"), (2, "outside (0, 1]"),
    (0.1, "outside the searched range [0.3, 1]"),
])
def test_a_result_at_a_threshold_that_is_not_one(scanned, threshold, fragment):
    _, result = scanned
    for method in (result.near_duplicates, result.summary, result.markdown):
        with pytest.raises(AuditorError) as caught:
            method(threshold)
        assert caught.value.code == "usage" and fragment in caught.value.message
    # numbers of any kind are thresholds: the 3 copied records are 3 pairs at 0.5
    import numpy as np
    assert result.near_duplicates(np.float64(0.5)).pairs == result.near_duplicates(0.5).pairs == 3


def test_dedup_of_what_is_no_scan_and_a_copy_to_no_path(scanned, tmp_path):
    _, result = scanned
    for wrong in (None, "small.jsonl", {"pairs": 1}):
        with pytest.raises(AuditorError) as caught:
            dedup(wrong, 0.7)
        assert caught.value.code == "usage" and "dedup takes a scan result" in caught.value.message
    kept = dedup(result, 0.7)
    for path in (None, 5, "", "-"):
        with pytest.raises(AuditorError) as caught:
            write_dedup(result, kept, path)
        assert "needs a file path" in caught.value.message
    assert not list(tmp_path.iterdir())


def test_a_loaded_table_is_audited_as_it_is_or_refused_where_a_source_is_read(scanned):
    """From the round-5 hostile review: max_rows=5 on a Table audited all 20 records, a split named
    nothing, and contamination called a Table 'no dataset', its hint telling the caller to pass one."""
    path, _ = scanned
    from auditor.contamination import contamination
    from auditor.decontaminate import decontaminate
    table = Table(rows=ROWS, source="mine")
    for options, named in (({"max_rows": 5}, "max_rows does"), ({"split": "test"}, "split does"),
                           ({"config": "c", "revision": "main"}, "config, revision do")):
        with pytest.raises(AuditorError) as caught:
            auditor.scan(table, **options)
        assert caught.value.message == f"A loaded Table is audited as it is: {named} not apply to it."
    with pytest.raises(AuditorError, match="A loaded Table is audited as it is: max_rows"):
        leak(table, table, max_rows=5)
    assert auditor.scan(table).records == 20
    for call in (lambda: contamination(table, "gsm8k"), lambda: decontaminate(table, "gsm8k", "out.jsonl")):
        with pytest.raises(AuditorError) as caught:
            call()
        assert caught.value.message.startswith("A loaded Table ('mine') is not taken here")
        assert "write_rows" in caught.value.hint
    with pytest.raises(AuditorError, match="needs a file path, got NoneType"):
        decontaminate(path, "gsm8k", None)


@pytest.mark.parametrize("benchmark, corpus, named", [
    ("what is two plus two", ["a record"], "benchmark_texts must be a list of texts, got str"),
    (None, ["a record"], "benchmark_texts must be a list of texts, got NoneType"),
    (["an item"], "one corpus text", "corpus must be a list of texts, got str"),
    (["an item"], {"text": "x"}, "corpus must be a list of texts, got dict"),
])
def test_semantic_search_of_a_string_is_refused_not_read_as_its_characters(benchmark, corpus, named):
    """From the round-5 hostile review: semantic_search("abc", ...) searched 3 one-letter items."""
    from auditor.semantic import semantic_search
    with pytest.raises(AuditorError) as caught:
        semantic_search(benchmark, corpus)
    assert caught.value.code == "usage" and named in caught.value.message
