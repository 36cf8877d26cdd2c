"""``leak`` counts the evaluation records whose question is near or inside a training record that
holds the same answer: answerable from memory although the text is not identical (an instruction
around the question, its worked answer after it; a reworded question). Both engines, against the
definitions (tests/definitions.py: word 3-shingles, Jaccard and containment decided exactly; answers
compared after the default normaliser).

From a review (session 52): 20 GSM8K test questions wrapped in an instruction, each with its exact
solution, were counted 20 near or contained and 20 identical answers, but 0 "answerable from memory"
(that row compared identical texts only)."""
from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

ray = pytest.importorskip("ray")

from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from auditor.settings import LeakSettings, NearSettings, RoleNames  # noqa: E402
from definitions import norm_default, shingles  # noqa: E402
from ray_leak_helpers import edit, local_ray, read  # noqa: E402,F401  (local_ray: autouse)

WRAP = "Below is an instruction. Solve the problem and show every step. Problem: {} Give the final answer."


@pytest.fixture(scope="module")
def sides(real_data, tmp_path_factory):
    """A: GSM8K train's first 1,500 records with 48 test questions planted in four ways (wrapped with
    their answer, edited with their answer, edited with another answer, wrapped with no answer);
    B: GSM8K test's first 240."""
    train = read(real_data / "gsm8k/train.jsonl")[:1500]
    test = read(real_data / "gsm8k/test.jsonl")[:240]
    rng = random.Random(4)
    a = [{"question": r["question"], "answer": r["answer"]} for r in train]
    for k, row in enumerate(rng.sample(range(len(a)), 48)):
        item = test[5 * k]
        how = k % 4
        question = WRAP.format(item["question"]) if how in (0, 3) else edit(item["question"])
        answer = {0: item["answer"], 1: item["answer"], 2: train[row]["answer"], 3: None}[how]
        a[row] = {"question": question, "answer": answer}
    folder = tmp_path_factory.mktemp("reworded")
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in a), encoding="utf-8")
    (folder / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test), encoding="utf-8")
    return folder / "a.jsonl", folder / "b.jsonl", a, test


def reworded_reference(a_rows, b_rows, t: float = 0.7) -> set:
    """B rows with an A record whose text reaches Jaccard t or holds t of B's shingles (|A| >= |B| / t,
    ceil(t|B|) >= 11 shingles) and whose answer is B's, with no A record identical in both."""
    f = Fraction(str(t))
    sets_a = [shingles(r["question"]) for r in a_rows]
    keys_a = [(norm_default(r["question"]), norm_default(r["answer"]) if r["answer"] else None) for r in a_rows]
    out = set()
    for j, r in enumerate(b_rows):
        s, answer = shingles(r["question"]), norm_default(r["answer"])
        if (norm_default(r["question"]), answer) in keys_a:
            continue
        need = -(-len(s) * f.numerator // f.denominator)
        for i, sa in enumerate(sets_a):
            inter = len(sa & s)
            near = inter * f.denominator >= len(sa | s) * f.numerator
            inside = need >= 11 and inter >= need and len(sa) * f.numerator >= len(s) * f.denominator
            if (near or inside) and keys_a[i][1] == answer:
                out.add(j)
                break
    return out


def test_both_engines_count_the_reworded_copies_with_their_answer(sides):
    a_path, b_path, a_rows, b_rows = sides
    expected = reworded_reference(a_rows, b_rows)
    assert len(expected) == 24                   # the wrapped and edited copies with their own answer
    settings = LeakSettings(near=NearSettings(threshold=0.7), roles_a=RoleNames("question", "answer"))
    local = leak(str(a_path), str(b_path), settings=settings)
    on_ray = ray_leak(str(a_path), str(b_path), settings=settings, quiet=True)
    for result in (local, on_ray):
        s = result.summary()
        assert s["settings"]["answer_normalizer"] == "default"
        assert {b for b, m in result.matches.items() if m.get("reworded_both")} == expected
        assert s["reworded_both"]["records"] == len(expected)
        assert s["identical_both"]["records"] == 0
        # Each listed A row holds the B record's answer, and the evidence shows that record.
        for b in expected:
            rows = result.matches[b]["reworded_both"]
            assert all(norm_default(a_rows[a]["answer"] or "") == norm_default(b_rows[b]["answer"]) for a in rows)
        evidence = {r["b_row"]: r for r in result.evidence_rows()}
        assert all(evidence[b]["a_row"] in result.matches[b]["reworded_both"] and
                   "reworded_both" in evidence[b]["kind"] for b in expected)
        assert "answerable from memory, reworded or wrapped | 24 | 10.00% |" in result.markdown()
    local_summary, ray_summary = local.summary(), on_ray.summary()
    ray_summary.pop("engine")
    assert json.dumps(local_summary, sort_keys=True) == json.dumps(ray_summary, sort_keys=True)
