"""The normalisation finds no new matches on the bundled sets: every report (scan, leak,
contamination, and the leak's evidence) is the one the previous normalisation gives (lowercase for
tokens and shingles, NFC and lowercase for exact keys), byte for byte, apart from the line that
states the normalisation. The bundled sets hold a few such characters (GSM8K: a zero-width space,
a Cyrillic capital A, vulgar fractions), and none of them changes a finding."""
from __future__ import annotations

import json
import unicodedata

import pytest

import auditor
from auditor import evidence, normalize, schema, shingles, wordtokens
from auditor.contamination import contamination
from auditor.evidence import leak_evidence_csv
from auditor.leakage import leak


def _previous(monkeypatch):
    """The normalisation as it was before hidden characters, NFKC and confusables were handled."""
    def default(value: str) -> str:
        return " ".join(unicodedata.normalize("NFC", value).lower().split())

    def is_blank(value) -> bool:
        return value is None or not value.strip()

    # each module that reads texts through them holds its own reference (imported by name)
    monkeypatch.setattr(normalize, "fold", str.lower)
    monkeypatch.setattr(normalize, "default", default)
    for module in (normalize, schema):
        monkeypatch.setattr(module, "is_blank", is_blank)
    for module in (shingles, wordtokens, evidence):
        monkeypatch.setattr(module, "fold", str.lower)


def _reports() -> dict:
    out = {}
    for name, split in (("gsm8k", "train"), ("gsm8k", "test"), ("mbpp", "test"), ("humaneval", "test")):
        out[f"scan {name} {split}"] = auditor.scan(f"example:{name}", split=split).summary()
    leaked = leak("example:gsm8k", "example:gsm8k", split_a="train", split_b="test")
    out["leak gsm8k"] = leaked.summary()
    out["leak gsm8k evidence"] = leak_evidence_csv(leaked)
    out["contamination gsm8k"] = contamination("example:gsm8k", "gsm8k", corpus_split="train").summary()
    out["contamination mbpp"] = contamination("example:mbpp", "mbpp", corpus_split="train").summary()
    return out


def _without_statement(report):
    if isinstance(report, dict):
        report = json.loads(json.dumps(report))
        report.get("settings", {}).pop("normalization", None)
        return json.dumps(report, sort_keys=True)
    return report


@pytest.mark.slow
def test_bundled_reports_equal_the_previous_normalisations(monkeypatch):
    now = _reports()
    for report in now.values():
        if isinstance(report, dict):
            assert report["settings"]["normalization"] == normalize.DESCRIPTION
    with monkeypatch.context() as patch:
        _previous(patch)
        before = _reports()
    for name in now:
        assert _without_statement(now[name]) == _without_statement(before[name]), name


def test_bundled_sets_hold_such_characters_so_the_comparison_means_something():
    """GSM8K's files hold characters the normalisation changes: the test above compares runs that
    differ in what the checks read, not two identical pipelines."""
    import real_data
    texts = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")]
    changed = [t for t in texts if normalize.default(t) != " ".join(unicodedata.normalize("NFC", t).lower().split())]
    assert len(changed) >= 3
    assert any("\u200b" in r["question"] + r["answer"] for r in real_data.rows("gsm8k/test.jsonl"))
