"""From the round-4 hostile review: `--fail-on-overlap` is a CI gate, and exit 0 means "compared,
nothing found". A side with nothing to compare (every B text blank, every A text missing, every
benchmark item shorter than the n-gram, a corpus of blank records) exited 0: the gate passed data
it never compared. Each is now exit 2 with one error line; real data with and without a finding
keeps exit 1 and 0."""
from __future__ import annotations

import json

import pytest

import real_data
from auditor.cli import main

TEST = real_data.rows("gsm8k/test.jsonl")


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return {
        "test": _write(tmp_path / "test.jsonl", TEST),
        "train": _write(tmp_path / "train.jsonl", real_data.rows("gsm8k/train.jsonl")),
        "spider": _write(tmp_path / "spider.jsonl", real_data.rows("spider/train_spider.jsonl")),
        # GSM8K answers kept, the questions blanked (a broken export): no text to compare
        "blank": _write(tmp_path / "blank.jsonl", [{"question": " ", "answer": r["answer"]} for r in TEST[:300]]),
        "null": _write(tmp_path / "null.jsonl", [{"question": None, "answer": r["answer"]} for r in TEST[:300]]),
        # the GSM8K final answers as a benchmark: numbers, shorter than any n-gram
        "numbers": _write(tmp_path / "numbers.jsonl",
                          [{"question": r["answer"].rsplit("####", 1)[1].strip()} for r in TEST[:300]]),
    }


def _run(capsys, argv) -> tuple[int, str, str]:
    code = main(argv + ["--quiet"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv, message", [
    (["leak", "{test}", "{blank}", "--fail-on-overlap", "--json", "{out}"], "None of B's 300 records has text"),
    (["leak", "{null}", "{test}", "--text", "question", "--fail-on-overlap", "--json", "{out}"],
     "None of A's 300 records has text"),
    (["contamination", "{train}", "--benchmark", "{numbers}", "--fail-on-overlap", "--json", "{out}"],
     "None of the benchmark's 300 items has 8 words to compare"),
    (["contamination", "{blank}", "--benchmark", "gsm8k", "--text", "question", "--fail-on-overlap",
      "--json", "{out}"], "None of the corpus's 300 records has a word to compare"),
])
def test_a_gate_with_nothing_to_compare_exits_2(files, tmp_path, capsys, argv, message):
    out = tmp_path / "summary.json"
    code, _, err = _run(capsys, [a.format(out=out, **files) for a in argv])
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {message}"), err
    assert "so --fail-on-overlap would pass data it never compared" in errors[0]
    assert not out.exists()                       # no summary that reads as a clean result


def test_the_json_error_on_stdout(files, capsys):
    code, out, _ = _run(capsys, ["leak", str(files["test"]), str(files["blank"]), "--fail-on-overlap", "--json", "-"])
    assert code == 2
    assert json.loads(out)["error"]["code"] == "bad_value"


def test_without_the_gate_the_report_says_it_and_exits_0(files, tmp_path, capsys):
    out = tmp_path / "summary.json"
    code, _, _ = _run(capsys, ["leak", str(files["test"]), str(files["blank"]), "--json", str(out)])
    assert code == 0
    assert json.loads(out.read_text())["b"]["no_text"] == 300


@pytest.mark.parametrize("argv, expected", [
    (["leak", "{train}", "{test}", "--fail-on-overlap"], 0),           # GSM8K's own splits share no text
    (["leak", "{test}", "{test}", "--fail-on-overlap"], 1),              # every record matches itself
    (["contamination", "{train}", "--benchmark", "gsm8k", "--fail-on-overlap"], 1),   # 3 items in GSM8K train
    (["contamination", "{spider}", "--benchmark", "gsm8k", "--fail-on-overlap"], 0),
])
def test_real_gates_keep_their_exit_codes(files, tmp_path, capsys, argv, expected):
    code, _, err = _run(capsys, [a.format(**files) for a in argv] + ["--json", str(tmp_path / "s.json")])
    assert code == expected, err
