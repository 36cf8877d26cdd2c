"""A path option given an empty value (``--decontaminate "$OUT"`` with OUT unset) is refused with
exit 2 naming the option, before any work; it was read as the option left out: exit 0 with no
decontaminated copy, no summary.json, no evidence, and a dedup that quietly ignored the review
file meant to steer it.

From the round-7 hostile review: each command line below exited 0 and wrote nothing where the
option asked (dedup --review '' kept records the review had split apart, as if no review existed).
What the options left out still do is unchanged (their defaults: tests/cli/test_cli_options.py)."""
from __future__ import annotations

import json

import pytest

QS = ["What is two plus two here today", "Name the capital city of France please",
      "Which colour is the sky at noon in summer", "What is two plus two here today"]

# (command before the option, the option): every option naming a path to write, a folder or a file to read
CASES = [
    (["scan", "{test}"], "--json"), (["scan", "{test}"], "--out-dir"), (["scan", "{test}"], "--shard-dir"),
    (["leak", "{train}", "{test}"], "--evidence"), (["leak", "{train}", "{test}"], "--json"),
    (["contamination", "{train}", "--benchmark", "{test}"], "--decontaminate"),
    (["contamination", "{train}", "--benchmark", "{test}", "--decontaminate", "{out}/c.jsonl"], "--manifest"),
    (["matrix", "-d", "a={train}", "-d", "b={test}"], "--out-dir"),
    (["clean", "{test}", "--against", "{train}", "--out", "{out}/c.jsonl"], "--report"),
    (["clean", "{test}", "--against", "{train}"], "--out"),
    (["dedup", "{test}", "--out", "{out}/d.jsonl"], "--review"),
    (["dedup", "{test}", "--out", "{out}/d.jsonl"], "--manifest"),
    (["dedup", "{test}"], "--out"),
]


@pytest.fixture
def files(tmp_path):
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps({"question": q}) + "\n" for q in QS), encoding="utf-8")
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"question": QS[0]}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    return test, train, out


@pytest.mark.parametrize("blank", ["", "  "])
@pytest.mark.parametrize("command,option", CASES, ids=[f"{c[0]} {o}" for c, o in CASES])
def test_an_empty_path_is_refused_before_any_work(files, run_cli, command, option, blank):
    test, train, out = files
    argv = [a.format(test=test, train=train, out=out) for a in command]
    rc, stdout, err = run_cli(*argv, option, blank, "--quiet", cwd=out)     # (a blank name would land in out)
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and stdout == ""
    assert f"argument {option}: an empty path" in err, err
    assert list(out.iterdir()) == []                         # nothing written
