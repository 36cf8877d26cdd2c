"""``--text`` (or ``--answer``, ``--group``) names the field of both sides of ``leak`` and ``clean``.
When the other side lacks it (a train JSONL's "question", a test CSV's "prompt"), the error's hint
names the option for that side's own field (--text-b, --text-against), not only its fields."""
from __future__ import annotations

import json

import pytest

import real_data
from auditor import AuditorError
from auditor.clean import clean
from auditor.leakage import leak


ROWS = real_data.rows("gsm8k/test.jsonl")[:30]


@pytest.fixture
def sides(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"question": r["question"], "answer": r["answer"]}) + "\n" for r in ROWS),
                     encoding="utf-8")
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps({"prompt": r["question"], "target": r["answer"]}) + "\n" for r in ROWS[:10]),
                    encoding="utf-8")
    return str(train), str(test)


@pytest.mark.parametrize("role,field,option", [("text", "question", "--text-b"), ("answer", "answer", "--answer-b")])
def test_leak_names_the_b_option(sides, role, field, option):
    """From the round-4 hostile review."""
    train, test = sides
    with pytest.raises(AuditorError) as info:
        leak(train, test, **{role: field})
    assert info.value.code == "missing_field"
    assert info.value.message == f"test.jsonl: The {role} field '{field}' is in no record."
    assert info.value.hint == (f"Available fields: prompt, target. --{role} names the field on both sides: "
                               f"{option} names B's own ({role}_b= in Python).")
    # and with B's own named, every B record is found in A
    got = leak(train, test, text="question", text_b="prompt", answer="answer", answer_b="target").summary()
    assert got["identical_both"]["records"] == 10


def test_leak_keeps_the_plain_hint_when_b_fields_are_named(sides):
    """From the round-4 hostile review: a field named for B itself gets no hint about naming it."""
    train, test = sides
    with pytest.raises(AuditorError) as info:
        leak(train, test, text="question", text_b="nope")
    assert info.value.hint == "Available fields: prompt, target."


def test_clean_names_the_against_option(sides, run_cli, tmp_path):
    """From the round-4 hostile review."""
    train, test = sides
    with pytest.raises(AuditorError) as info:
        clean(test, [train], text="prompt")
    assert info.value.message == "train.jsonl: The text field 'prompt' is in no record."
    assert info.value.hint.endswith("--text names the field on both sides: --text-against names the training "
                                    "sides' own (text_against= in Python).")
    code, _, err = run_cli("clean", test, "--against", train, "--text", "prompt", "--out", tmp_path / "c.jsonl")
    assert code == 2 and "--text-against names the training sides' own" in err
    assert len(clean(test, [train], text="prompt", text_against="question").kept) == 0
