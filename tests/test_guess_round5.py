"""Role guesses that a curator relies on when the form is left blank, on real GSM8K/MBPP text:

- an instruction-tuning layout (Alpaca's instruction/input/output, Dolly's instruction/context/
  response) is audited on its instruction with its input: with the instruction alone, every task
  under a template instruction was one exact duplicate;
- a nested "text" of an object describing the record (meta.text) is not its text, and several
  nested texts with none better (choice1.text, choice2.text) leave the choice to a top-level story;
- a JSON document with an id beside equal-length lists (one NER document) stays one record.

Expected figures come from plain Python over the rows built here.
"""
from __future__ import annotations

import json

import pytest

import auditor
from auditor.errors import AuditorError
from auditor.roles import resolve_roles, resolve_text_spec
from definitions import read_jsonl

TEMPLATE = "Rewrite the following problem in plain words."


@pytest.fixture(scope="module")
def gsm(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl")[:400]


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def test_an_alpaca_layout_is_audited_on_instruction_and_input(gsm, tmp_path):
    rows = [{"instruction": TEMPLATE, "input": r["question"], "output": r["answer"]} for r in gsm[:300]]
    rows += [dict(rows[7]), dict(rows[7]), dict(rows[42])]                  # 3 planted exact copies
    path = tmp_path / "alpaca.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = auditor.scan(str(path))
    roles = result.summary()["roles"]
    assert roles["text_fields"] == ["instruction", "input"] and roles["answer"] == "output"
    assert set(roles["guessed"]) == {"text", "answer"}
    # ground truth: exact groups of the joined text
    groups: dict = {}
    for i, r in enumerate(rows):
        groups.setdefault(norm(r["instruction"] + "\n" + r["input"]), []).append(i)
    expected = sorted(g for g in groups.values() if len(g) > 1)
    exact = result.summary()["exact_duplicates"]["text"]
    assert exact["groups"] == len(expected) == 2 and exact["records"] == sum(map(len, expected)) == 5
    # the instruction alone (named) is the template: one group of every record
    alone = auditor.scan(str(path), text="instruction").summary()["exact_duplicates"]["text"]
    assert alone["groups"] == 1 and alone["records"] == len(rows)


def test_a_dolly_layout_and_the_contamination_corpus_text(gsm):
    dolly = [{"instruction": TEMPLATE, "context": r["question"], "response": r["answer"], "category": "qa"}
             for r in gsm[:50]]
    roles = resolve_roles(dolly)
    assert roles.text_fields == ("instruction", "context") and roles.answer == "response"
    # the contamination scan's guessed corpus text is still the whole record
    alpaca = [{"instruction": TEMPLATE, "input": r["question"], "output": r["answer"]} for r in gsm[:50]]
    assert resolve_text_spec(alpaca) == "instruction,input,output"
    assert resolve_text_spec(dolly) == "instruction,context,response"
    # a role the user gave is left alone: input as the answer leaves instruction as the text
    assert resolve_roles(alpaca, answer="input").text == "instruction"


def test_nested_texts_that_are_not_the_records(gsm):
    body = [{"body": r["question"], "meta": {"text": "imported"}} for r in gsm[:30]]
    assert resolve_roles(body).text == "body"
    story = [{"story": r["question"], "choice1": {"text": "yes"}, "choice2": {"text": "no"}} for r in gsm[:30]]
    assert resolve_roles(story).text == "story"
    # nothing beside them: still refused, both named
    with pytest.raises(AuditorError) as info:
        resolve_roles([{"q": {"text": r["question"]}, "p": {"text": r["answer"]}} for r in gsm[:30]])
    assert "q.text" in info.value.message and "p.text" in info.value.message
    # a text-named nested field beside a short group-like string is still the text
    assert resolve_roles([{"q": {"text": r["question"]}, "source": "gsm8k"} for r in gsm[:30]]).text == "q.text"


def test_a_json_document_with_an_id_beside_its_lists_is_one_record(gsm, tmp_path):
    words = gsm[0]["question"].split()
    doc = {"id": 3, "tokens": words, "ner_tags": ["O"] * len(words)}
    (tmp_path / "doc.json").write_text(json.dumps(doc), encoding="utf-8")
    table = auditor.load(str(tmp_path / "doc.json"))
    assert table.rows == [doc]
    cols = {"question": [r["question"] for r in gsm[:5]], "answer": [r["answer"] for r in gsm[:5]], "version": "1.0"}
    (tmp_path / "cols.json").write_text(json.dumps(cols), encoding="utf-8")
    table = auditor.load(str(tmp_path / "cols.json"))
    assert table.rows == [{"question": q, "answer": a} for q, a in zip(cols["question"], cols["answer"])]
    assert any("'version'" in n for n in table.notices)
