"""Options that were bent into something else without a word are refused with a one-line error
(exit 2), and a file not found is named as the user wrote it. From a hostile review (session 52):
``--text q --label q`` audited the text as its own label, ``--thresholds 0.9,,0.3`` became 0.9,0.3,
``--shingle word:`` became word:3, and ``../x`` was reported as 'x'."""
from __future__ import annotations

import pytest

from conftest import run_cli


@pytest.fixture
def records(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"q": "alpha beta gamma delta", "l": "y"}\n{"q": "alpha beta gamma delta", "l": "z"}\n',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("args, says", [
    (["--text", "q", "--label", "q"], "The text role and the labels both name the field 'q'"),
    (["--text", "q", "--thresholds", "0.9,,0.3"], "give thresholds like 0.9,0.8,0.7 (got '0.9,,0.3')"),
    (["--text", "q", "--thresholds", "0.9,0.3,"], "give thresholds like 0.9,0.8,0.7 (got '0.9,0.3,')"),
    (["--text", "q", "--shingle", "word:"], "Bad shingle setting 'word:'"),
])
def test_a_malformed_option_is_a_one_line_error(records, args, says):
    code, _, err = run_cli("scan", records, *args, "--quiet")
    assert code == 2 and "Traceback" not in err
    assert says in err


def test_the_good_spellings_still_run(records):
    for args in (["--text", "q", "--label", "l"], ["--text", "q", "--thresholds", "0.9,0.3"],
                 ["--text", "q", "--shingle", "word"], ["--text", "q", "--shingle", "char:5"]):
        code, _, err = run_cli("scan", records, *args, "--quiet", "--json", "-")
        assert code == 0, (args, err)


def test_a_missing_file_is_named_as_written(tmp_path):
    code, _, err = run_cli("scan", "../no_such_dir/x.jsonl", "--quiet", cwd=tmp_path)
    assert code == 2 and "File not found: '../no_such_dir/x.jsonl'." in err
    code, _, err = run_cli("scan", str(tmp_path / "deep" / "x.jsonl"), "--quiet")
    assert code == 2 and "File not found: 'x.jsonl'." in err        # an absolute path: its name only
