"""Two configs of one dataset read as two sides in a report's title and figures: the leak and
contamination reports name each side's config and split, not only its source.

From the docs review: comparing GSM8K's main and socratic configs titled the leak report
"example:gsm8k (test) → example:gsm8k (test)"."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor.contamination import contamination
from auditor.report import contamination as contamination_report
from auditor.report import leak as leak_report


@pytest.fixture(scope="module")
def gsm8k_configs():
    """GSM8K's test split in its main and socratic configs (the bundled copy)."""
    return (auditor.load("example:gsm8k", config="main", split="test", max_rows=300),
            auditor.load("example:gsm8k", config="socratic", split="test", max_rows=300))


def test_a_leak_between_two_configs_names_both_in_its_title(gsm8k_configs):
    main, socratic = gsm8k_configs
    result = auditor.leak(main, socratic)
    title, _, first = leak_report.markdown(result).splitlines()[:3]
    assert title == "# Leakage: example:gsm8k (main, test) → example:gsm8k (socratic, test)"
    assert "(example:gsm8k (socratic, test), 300 records)" in first
    assert "example:gsm8k (main, test) (300 records)" in first
    # the socratic questions are the main questions (the answers differ): every one is found by its
    # text, and summary.json keeps config and split as fields
    summary = leak_report.summary(result)
    assert summary["identical_text"]["records"] == 300 and summary["identical_both"]["records"] == 0
    assert (summary["a"]["config"], summary["b"]["config"]) == ("main", "socratic")


def test_a_side_without_config_is_named_by_its_split_alone(tmp_path, gsm8k_configs):
    main, _ = gsm8k_configs
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({"question": r["question"]}) + "\n" for r in main.rows[:40]), encoding="utf-8")
    result = auditor.leak(str(path), main)
    title = leak_report.markdown(result).splitlines()[0]
    assert title == "# Leakage: train.jsonl → example:gsm8k (main, test)"


def test_a_contamination_report_names_the_corpus_config_and_split(gsm8k_configs):
    result = contamination("example:gsm8k", "example:gsm8k", corpus_config="socratic", corpus_split="test",
                       benchmark_config="main", max_rows=300)
    title = contamination_report.markdown(result).splitlines()[0]
    assert title.endswith(" in example:gsm8k (socratic, test)"), title
    assert contamination_report.summary(result)["corpus"]["split"] == "test"
