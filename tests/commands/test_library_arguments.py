"""The library's functions given arguments of the wrong kind: usage errors that name the
argument; a shingle spec given as a string is parsed."""
from __future__ import annotations

import json
from importlib import import_module

import pytest

import auditor
from auditor import AuditorError, ScanSettings, ShingleSpec


APPLE_ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in APPLE_ROWS).encode()


@pytest.mark.parametrize("kwargs, fragment", [
    ({"text": 5}, "text role must be a field name"),
    ({"answer": ["answer"]}, "answer role must be a field name"),
    ({"labels": 5}, "labels role must be a list of field names"),
    ({"labels": [1]}, "labels role must be a field name"),
    ({"max_rows": True}, "max_rows must be a positive whole number"),
    ({"max_rows": 2.5}, "max_rows must be a positive whole number"),
    ({"max_rows": 10 ** 30}, "more than any source can hold"),
    ({"settings": ScanSettings(shingle="word:0")}, "Bad shingle setting"),
    ({"settings": ScanSettings(shingle=3)}, "Bad shingle setting"),
    ({"settings": ScanSettings(shingle=ShingleSpec("word", 0))}, "Bad shingle setting"),
    ({"settings": ScanSettings(threshold="0.7")}, "is not a number"),
    ({"settings": ScanSettings(threshold=float("nan"))}, "outside (0, 1]"),
    ({"settings": ScanSettings(thresholds=0.5)}, "thresholds must be a list"),
    ({"settings": ScanSettings(thresholds=(0.5, None))}, "is not a number"),
    ({"settings": ScanSettings(method="fast")}, "Unknown method"),
    ({"settings": ScanSettings(num_perm=True)}, "num_perm"),
    ({"settings": ScanSettings(normalizer=["default"])}, "normaliser is named by a string"),
])
def test_library_arguments_of_the_wrong_kind_are_usage_errors(tmp_path, kwargs, fragment):
    """From the hostile-input review."""
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    with pytest.raises(AuditorError) as info:
        auditor.scan(path, **kwargs)
    assert info.value.code == "usage" and fragment in info.value.message, info.value.message


def test_shingle_spec_as_a_string_is_parsed(tmp_path):
    """From the hostile-input review."""
    from auditor.leakage import leak
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    assert auditor.scan(path, settings=ScanSettings(shingle="char:5")).settings.shingle == ShingleSpec("char", 5)
    assert leak(path, path, shingle="word:2").summary()["settings"]["shingle"] == {"unit": "word", "size": 2}


@pytest.mark.parametrize("call, fragment", [
    (lambda p: import_module("auditor.leakage").leak(p, p, threshold="0.5"), "is not a number"),
    (lambda p: import_module("auditor.leakage").leak(p, p, max_rows=0), "max_rows"),
    (lambda p: import_module("auditor.contamination").contamination(p, "gsm8k", max_rows=-1), "max_rows"),
    (lambda p: import_module("auditor.contamination").contamination(p, "gsm8k", ngram=10 ** 10), "from 1 to 64"),
    (lambda p: import_module("auditor.contamination").contamination(p, "gsm8k", ngram=True), "from 1 to 64"),
    (lambda p: import_module("auditor.clean").clean(p, p, threshold=2), "outside (0, 1]"),
    (lambda p: import_module("auditor.matrix").overlap_matrix([f"a:x={p}", f"b:y={p}"], threshold=0),
     "outside (0, 1]"),
])
def test_cross_dataset_api_checks_its_arguments(tmp_path, call, fragment):
    """From the hostile-input review."""
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    with pytest.raises(AuditorError) as info:
        call(path)
    assert info.value.code == "usage" and fragment in info.value.message


def test_the_package_leak_takes_the_roles_and_search_as_leakage_leak_does(tmp_path):
    """From a docs review: docs/python-api.md calls ``auditor.leak`` ``leakage.leak`` with
    ``engine=``, but it refused ``text=``, ``threshold=`` ... (TypeError)."""
    from auditor.leakage import leak as leakage_leak
    from auditor.settings import LeakSettings
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(JSONL)
    b.write_text("".join(json.dumps({"q": r["text"] + " today", "a": r["answer"]}) + "\n" for r in APPLE_ROWS[:20]),
                 encoding="utf-8")
    loose = dict(text="text", answer="answer", text_b="q", answer_b="a", threshold=0.5)
    by_package = auditor.leak(str(a), str(b), **loose).summary()
    assert by_package == leakage_leak(str(a), str(b), **loose).summary()
    assert by_package["settings"]["threshold"] == 0.5 and by_package["near_duplicate"]["records"] == 20
    with pytest.raises(AuditorError, match="settings object and loose"):
        auditor.leak(str(a), str(b), settings=LeakSettings(), text="text")
