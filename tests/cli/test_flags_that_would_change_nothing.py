"""Flags that, in the combination given, would change nothing are refused with what to add, never
run quietly as if they applied: --ray-address with the local engine (the run passed for one on the
cluster while it ran on this machine) and clean's --threshold without --near (only identical texts
are dropped then). From the round-5 hostile review."""
from __future__ import annotations

import json

import pytest

from auditor import AuditorError, EngineSettings, engines

QS = ["What is two plus two here today", "Name the capital city of France please",
      "Which colour is the sky at noon in summer"]


@pytest.fixture
def files(tmp_path):
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps({"question": q}) + "\n" for q in QS), encoding="utf-8")
    train = tmp_path / "train.jsonl"
    # one test question copied with its last word changed: a near copy (word 3-grams: Jaccard 4/6)
    train.write_text(json.dumps({"question": "What is two plus two here tomorrow"}) + "\n", encoding="utf-8")
    return test, train


@pytest.mark.parametrize("command", [["scan", "{test}"], ["leak", "{train}", "{test}"],
                                     ["contamination", "{test}", "--benchmark", "gsm8k"]])
def test_a_ray_address_without_the_ray_engine_is_refused(files, run_cli, command):
    test, train = files
    argv = [a.format(test=test, train=train) for a in command]
    rc, out, err = run_cli(*argv, "--ray-address", "127.0.0.1:6379", "--quiet")
    assert rc == 2 and "Traceback" not in err and out == ""
    assert "error: A Ray address ('127.0.0.1:6379') was given, but the engine is local" in err
    assert "Add --engine ray" in err


def test_the_library_refuses_it_too(files):
    test, _ = files
    with pytest.raises(AuditorError, match="the engine is local"):
        engines.scan(str(test), engine=EngineSettings("local", ray_address="127.0.0.1:6379"))


def test_clean_threshold_needs_near(files, run_cli, tmp_path):
    test, train = files
    out = tmp_path / "clean.jsonl"
    rc, _, err = run_cli("clean", test, "--against", train, "--out", out, "--threshold", "0.5", "--quiet")
    assert rc == 2 and "--threshold is the near-duplicate threshold: without --near" in err
    assert not out.exists()
    # with --near it applies: the near copy (0.67) is dropped at 0.5, kept at the default 0.7
    rc, _, err = run_cli("clean", test, "--against", train, "--out", out, "--near", "--threshold", "0.5", "--quiet")
    assert rc == 0, err
    assert [json.loads(x)["question"] for x in out.read_text().splitlines()] == QS[1:]
    rc, _, err = run_cli("clean", test, "--against", train, "--out", out, "--near", "--quiet")
    assert rc == 0, err
    assert [json.loads(x)["question"] for x in out.read_text().splitlines()] == QS


@pytest.mark.parametrize("command", [["leak", "{train}", "{test}"], ["contamination", "{test}", "--benchmark", "gsm8k"]])
def test_the_semantic_pass_is_refused_with_the_ray_engine_before_ray_is_reached(files, run_cli, command):
    """From a docs review: docs/engines.md says --semantic with --engine ray is refused, but
    contamination went on to join Ray (and would have read a cluster-sized corpus here after)."""
    test, train = files
    argv = [a.format(test=test, train=train) for a in command]
    rc, out, err = run_cli(*argv, "--engine", "ray", "--ray-address", "127.0.0.1:1", "--semantic", "--quiet")
    assert rc == 2 and "Traceback" not in err and out == ""
    assert "it does not run with --engine ray" in err and "Ray address" not in err
