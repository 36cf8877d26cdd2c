"""The overlap matrix compares configs of one dataset: -d NAME:CONFIG:SPLIT=SOURCE reads that
config (GSM8K's socratic questions are its main questions; the answers differ).

From the docs review: matrix had no way to name a config, so two configs could not be compared."""
from __future__ import annotations

import pytest

import auditor
from auditor.errors import AuditorError
from auditor.matrix import overlap_matrix, parse_spec
from auditor.report import matrix as matrix_report
from definitions import norm_default


def test_two_configs_of_one_dataset_are_two_groups():
    main = [r["question"] for r in auditor.load("example:gsm8k", config="main", split="test", max_rows=200).rows]
    socratic = auditor.load("example:gsm8k", config="socratic", split="test", max_rows=200).rows
    result = overlap_matrix(["g:main:test=example:gsm8k", "g:socratic:test=example:gsm8k"], max_rows=200)
    summary = matrix_report.summary(result)
    assert [(g["name"], g["config"], g["split"]) for g in summary["groups"]] == [
        ("g/main/test", "main", "test"), ("g/socratic/test", "socratic", "test")]
    # independent count: socratic questions whose normalised text is a main question
    expected = sum(norm_default(r["question"]) in {norm_default(q) for q in main} for r in socratic)
    assert expected == 200
    assert summary["split_matrix"]["g/socratic/test"]["g/main/test"]["count"] == expected


@pytest.mark.parametrize("spec", ["g:a:b:c=example:gsm8k", "g::test=example:gsm8k", ":test=example:gsm8k", "g:test="])
def test_a_malformed_spec_is_refused_with_the_syntax(spec):
    with pytest.raises(AuditorError, match="Bad dataset spec") as err:
        parse_spec(spec)
    assert "NAME[:[CONFIG:]SPLIT]=SOURCE" in err.value.hint


def test_a_config_on_a_local_file_is_refused(tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text('{"text": "a b c"}\n', encoding="utf-8")
    with pytest.raises(AuditorError, match="no configs"):
        overlap_matrix([f"x:main:test={path}", "g:test=example:gsm8k"], max_rows=10)
