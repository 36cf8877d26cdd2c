"""The number of nearest records kept per benchmark item (``k``, the CLI's --semantic-k) is at most
MAX_SEMANTIC_K: the running neighbour lists are items x k from the start, whatever the corpus holds.

From the round-7 hostile review: ``auditor leak A B --semantic --semantic-k 1000000`` on a 50 KB A
and 20 B items held 1.5 GB (0.4 GB at k=5), 12 bytes per item per k: a 1,319-item benchmark would
ask for 16 GB; k=99999999999 ended in 'out of memory', with a hint to cap the rows read. Now a usage
error naming the bound, before any model is loaded; k at the bound gives the same first neighbours
as k=5 (ground truth: the default run)."""
from __future__ import annotations

import json

import pytest

from auditor.errors import AuditorError
from auditor.semantic import semantic_search
from auditor.settings import MAX_SEMANTIC_K
import real_data

QUESTIONS = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:12]]
CORPUS = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")[:40]] + QUESTIONS[:3]


@pytest.mark.parametrize("k", [MAX_SEMANTIC_K + 1, 10**6, 10**11])
def test_more_nearest_records_than_the_bound_is_a_usage_error(k, monkeypatch):
    import auditor.semantic as semantic
    monkeypatch.setattr(semantic, "load_model", lambda *a, **kw: pytest.fail("the model was loaded"))
    with pytest.raises(AuditorError) as err:
        semantic_search(QUESTIONS, CORPUS, k=k)
    assert err.value.code == "usage" and f"at most {MAX_SEMANTIC_K:,}" in err.value.message


@pytest.mark.parametrize("command", [["leak", "{train}", "{test}"], ["contamination", "{train}", "--benchmark",
                                                                        "{test}"]])
def test_the_cli_refuses_it_before_reading(tmp_path, run_cli, command):
    test, train = tmp_path / "test.jsonl", tmp_path / "train.jsonl"
    test.write_text("".join(json.dumps({"question": q}) + "\n" for q in QUESTIONS), encoding="utf-8")
    train.write_text("".join(json.dumps({"question": q}) + "\n" for q in CORPUS), encoding="utf-8")
    argv = [a.format(test=test, train=train) for a in command]
    rc, out, err = run_cli(*argv, "--semantic", "--semantic-k", str(10**6), "--quiet")
    assert rc == 2 and out == "" and "Traceback" not in err
    assert f"argument --semantic-k: at most {MAX_SEMANTIC_K:,}" in err, err


def test_k_at_the_bound_keeps_the_default_runs_nearest_records():
    default = semantic_search(QUESTIONS, CORPUS, candidates=0)     # every record re-scored, as below
    widest = semantic_search(QUESTIONS, CORPUS, k=MAX_SEMANTIC_K)
    assert [nb[:5] for nb in widest.neighbours] == [nb[:5] for nb in default.neighbours]
    assert all(len(nb) == len(CORPUS) for nb in widest.neighbours)      # every record, not k slots
    assert widest.margin == default.margin
