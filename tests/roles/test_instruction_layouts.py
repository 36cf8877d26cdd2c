"""Instruction-tuning layouts (Alpaca's instruction/input/output, Dolly's instruction/context/
response): audited on the instruction with its input, the whole record the contamination corpus
text, a question beside them kept as the text. Expected figures from plain Python over real rows."""
from __future__ import annotations

import json
import re

import pytest

import auditor
import real_data
from auditor import leakage
from auditor.roles import resolve_roles, resolve_text_spec
from definitions import read_jsonl, write_jsonl


def ngram_tokens(text):
    """The contamination tokens by their definition: lowercase, drop what is neither a word
    character nor whitespace (and underscores), split on whitespace."""
    return re.sub(r"[^\w\s]+|_+", "", (text or "").lower()).split()


def contaminated_items(questions, corpus_texts, n):
    grams = {}
    for i, q in enumerate(questions):
        words = ngram_tokens(q)
        for s in range(len(words) - n + 1):
            grams.setdefault(tuple(words[s:s + n]), set()).add(i)
    hit = set()
    for text in corpus_texts:
        words = ngram_tokens(text)
        for s in range(len(words) - n + 1):
            hit |= grams.get(tuple(words[s:s + n]), set())
    return hit


PASSAGE_TEMPLATE = "Answer the question using the passage."


@pytest.fixture(scope="module")
def gsm_train200(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl")[:200]


def norm(text: str) -> str:
    return " ".join(text.lower().split())


REWRITE_TEMPLATE = "Rewrite the following problem in plain words."
# Three instructions, each held by a third of the records: instructions that tell tasks apart.
INSTRUCTIONS = (REWRITE_TEMPLATE, "Solve the problem below and show each step.", "Explain the problem below to a child.")


@pytest.fixture(scope="module")
def gsm_train400(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl")[:400]


@pytest.mark.parametrize("fields", [("instruction", "input", "output"), ("instruction", "output")])
def test_guessed_corpus_text_of_an_instruction_layout_is_the_whole_record(tmp_path, fields):
    """From the round-4 review (real data): An Alpaca-shaped corpus with --text left blank: the guess was
    "instruction" alone, so a
    benchmark item copied into a record's input or output was never looked for (on the real
    5,000-row Alpaca subset, 3 of the 11 GSM8K items sharing a 6-gram were reported). The guess is
    now every field of the layout, as --text instruction,input,output checks them."""
    from auditor.contamination import contamination
    mbpp = real_data.rows("mbpp/mbpp.jsonl")
    train = real_data.rows("gsm8k/train.jsonl")
    questions = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    rows = [{"instruction": mbpp[i]["text"], "input": "", "output": train[i]["answer"]} for i in range(600)]
    rows[10]["instruction"] = "Solve: " + questions[5]
    rows[20]["input"] = questions[6]
    rows[30]["output"] = "The problem was: " + questions[7]
    rows = [{k: r[k] for k in fields} for r in rows]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    result = contamination(str(path), "gsm8k", ngram=8).summary()
    assert result["corpus"]["text"] == ",".join(f for f in fields)
    whole = contaminated_items(questions, ["\n".join(r[f] for f in fields if r.get(f) is not None) for r in rows], 8)
    instruction_only = contaminated_items(questions, [r["instruction"] for r in rows], 8)
    assert {5, 6 if "input" in fields else 5, 7} <= whole and 7 not in instruction_only
    assert {it["benchmark_row"] for it in result["items"]} == whole
    # A text named by the user is kept as named.
    named = contamination(str(path), "gsm8k", ngram=8, corpus_text="instruction").summary()
    assert named["corpus"]["text"] == "instruction"
    assert {it["benchmark_row"] for it in named["items"]} == instruction_only


def test_a_question_beside_an_instruction_and_context_stays_the_text(gsm_train200, tmp_path):
    # 40 passages, 3 distinct questions each (GSM8K questions as questions, answers as passages)
    """From the review of the late round-5 commits."""
    rows = [{"instruction": PASSAGE_TEMPLATE, "context": gsm_train200[p]["answer"], "question": gsm_train200[40 + 3 * p + k]["question"],
             "answer": str(k)} for p in range(40) for k in range(3)]
    rows.append(dict(rows[5]))                      # one planted exact copy
    path = tmp_path / "rc.jsonl"
    write_jsonl(path, rows)
    summary = auditor.scan(str(path)).summary()
    assert summary["roles"]["text"] == "question"
    groups: dict = {}
    for i, r in enumerate(rows):
        groups.setdefault(norm(r["question"]), []).append(i)
    expected = [g for g in groups.values() if len(g) > 1]
    exact = summary["exact_duplicates"]["text"]
    assert exact["groups"] == len(expected) == 1 and exact["records"] == 2


def test_a_guessed_layout_with_numeric_inputs_keeps_the_whole_record_as_corpus_text(gsm_train200):
    """From the review of the late round-5 commits."""
    rows = [{"instruction": r["question"], "input": i, "output": r["answer"]} for i, r in enumerate(gsm_train200[:50])]
    assert resolve_text_spec(rows) == ",".join(["instruction", "input", "output"])


def test_an_alpaca_layout_is_audited_on_instruction_and_input(gsm_train400, tmp_path):
    """From the round-5 review of role guesses."""
    rows = [{"instruction": INSTRUCTIONS[i % 3], "input": r["question"], "output": r["answer"]}
            for i, r in enumerate(gsm_train400[:300])]
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
    # the instruction alone (named): one group per instruction, every record in one
    alone = auditor.scan(str(path), text="instruction").summary()["exact_duplicates"]["text"]
    assert alone["groups"] == len(INSTRUCTIONS) and alone["records"] == len(rows)


def test_a_dolly_layout_and_the_contamination_corpus_text(gsm_train400):
    """From the round-5 review of role guesses."""
    dolly = [{"instruction": INSTRUCTIONS[i % 3], "context": r["question"], "response": r["answer"], "category": "qa"}
             for i, r in enumerate(gsm_train400[:50])]
    roles = resolve_roles(dolly)
    assert roles.text_fields == ("instruction", "context") and roles.answer == "response"
    # the contamination scan's guessed corpus text is still the whole record
    alpaca = [{"instruction": REWRITE_TEMPLATE, "input": r["question"], "output": r["answer"]} for r in gsm_train400[:50]]
    assert resolve_text_spec(alpaca) == "instruction,input,output"
    assert resolve_text_spec(dolly) == "instruction,context,response"
    # a role the user gave is left alone: input as the answer leaves instruction as the text
    assert resolve_roles(alpaca, answer="input").text == "instruction"


TEMPLATE_PROMPT = ("Below is a grade-school math word problem. Read it carefully, reason step by step, show your "
                   "intermediate calculations, and give the final numeric answer on the last line after four hash marks.")


@pytest.mark.parametrize("layout", [("instruction", "input", "output"), ("instruction", "context", "response")])
def test_a_template_instruction_is_left_out_of_the_text(gsm_train400, real_data, tmp_path, layout):
    """One instruction in every record (a prompt template) tells no record apart: the input alone is
    the guessed text. Joined to each text, this 33-word prompt made 2,030 unrelated GSM8K questions one
    near-duplicate cluster at 0.4, and hid 28 of 30 test questions copied into the inputs from leak.
    The contamination corpus is still the whole record; an instruction that varies stays in the text."""
    instruction, body, answer = layout
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    planted = {37 + 11 * k: k for k in range(10)}               # input row -> GSM8K test row
    rows = [{instruction: TEMPLATE_PROMPT, body: test[planted[i]]["question"] if i in planted else r["question"],
             answer: r["answer"]} for i, r in enumerate(gsm_train400)]
    roles = resolve_roles(rows)
    assert (roles.text, roles.answer) == (body, answer)
    assert resolve_text_spec(rows) == ",".join(layout)
    path = tmp_path / "templated.jsonl"
    write_jsonl(path, rows)
    scan = auditor.scan(str(path)).summary()
    inputs = [r[body] for r in rows]
    expected = [ground_truth_clusters(inputs, t) for t in (0.5, 0.3)]
    assert [p["clusters"] for p in scan["curve"] if p["threshold"] in (0.5, 0.3)] == expected
    leak = leakage.leak(str(path), str(real_data / "gsm8k/test.jsonl"), text_b="question").summary()
    assert leak["identical_text"]["records"] == len(planted)
    # Half the records under one prompt is still a template; three prompts a third each are not.
    for i in range(0, len(rows), 2):
        rows[i] = dict(rows[i], **{instruction: INSTRUCTIONS[i % 3]})
    assert resolve_roles(rows).text == body
    varied = [dict(r, **{instruction: INSTRUCTIONS[i % 3]}) for i, r in enumerate(rows)]
    assert resolve_roles(varied).text_fields == (instruction, body)


def ground_truth_clusters(texts, threshold):
    """Clusters (components of 2 or more records) of word-3-shingle Jaccard >= threshold, all pairs."""
    import ground_truth
    return ground_truth.reference(texts).cluster_count(threshold)
