"""From the session-47 real-data review: the roles guessed (text, answer, group, id) on the shapes
common Hub datasets are published in, built here from real GSM8K questions and answers: Alpaca
(output as text, an object or a list), ARC (the original and the Hub's flattened choices), MMLU,
HellaSwag, SQuAD, BoolQ, TriviaQA, DROP, Dolly, OpenAssistant, ShareGPT and chat messages,
preference pairs, HumanEval-style code. For ARC and Alpaca, the exact duplicates and the leak found
with the guessed roles equal those pandas computes on the right fields. A field the first records
lack (null or absent in the first 2,000) is guessed from later records and the report says so; named,
it is read; in a streamed corpus, the error says how many records were read."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.contamination import contamination
from auditor.leakage import leak
from auditor.roles import resolve_roles

N = 60


@pytest.fixture(scope="module")
def gsm():
    rows = real_data.rows("gsm8k/train.jsonl")[:400]
    return [r["question"] for r in rows], [r["answer"] for r in rows]


def final(answer: str) -> str:
    return answer.split("####")[-1].strip()


def chat(question, answer, speaker="role", user="user", model="assistant", text="content"):
    return [{speaker: user, text: question}, {speaker: model, text: answer}]


def shapes(q, a):
    """name -> (records, expected roles: text, answer, group, id)."""
    n = range(N)
    return {
        "alpaca": ([{"instruction": q[i], "input": a[i][:40] if i % 2 else "", "output": a[i]} for i in n],
                   ("instruction,input", "output", None, None)),
        "alpaca output object": ([{"instruction": q[i], "input": "",
                                   "output": {"answer": final(a[i]), "rationale": a[i]}}
                                  for i in n], ("instruction", "output.answer", None, None)),   # (inputs all blank)
        "alpaca output list": ([{"instruction": q[i], "input": "", "output": [final(a[i]), a[i]]} for i in n],
                               ("instruction", "output", None, None)),
        "arc": ([{"id": f"Mercury_{7175875 + i}", "question": {"stem": q[i], "choices": [
            {"text": final(a[i]), "label": "A"}, {"text": "7", "label": "B"}]}, "answerKey": "AB"[i % 2]} for i in n],
                ("question.stem", "answerKey", None, "id")),
        "arc hub": ([{"id": f"Mercury_{i}", "question": q[i],
                      "choices": {"text": [final(a[i]), "7"], "label": ["A", "B"]},
                      "answerKey": "AB"[i % 2]} for i in n], ("question", "answerKey", None, "id")),
        "mmlu": ([{"question": q[i], "subject": "elementary_mathematics", "choices": [final(a[i]), "1", "2", "3"],
                   "answer": i % 4} for i in n], ("question", "answer", "subject", None)),
        "hellaswag": ([{"ind": i, "activity_label": "Baking cookies", "ctx_a": q[i][:30], "ctx_b": "then", "ctx": q[i],
                        "endings": [a[i], "x", "y", "z"], "source_id": f"activitynet~v_{i}", "split": "train",
                        "split_type": "indomain", "label": str(i % 4)} for i in n],
                      ("ctx", "label", "activity_label", "ind")),
        "squad": ([{"id": f"5733be28{i}", "title": "Maths", "context": a[i], "question": q[i],
                    "answers": {"text": [final(a[i])], "answer_start": [a[i].rfind("#") + 2]}} for i in n],
                  ("question", "answers.text", None, "id")),
        "boolq": ([{"question": q[i], "passage": a[i], "answer": i % 3 == 0} for i in n],
                  ("question", "answer", None, None)),
        "boolq superglue": ([{"question": q[i], "passage": a[i], "idx": i, "label": i % 2} for i in n],
                            ("question", "label", None, "idx")),
        "triviaqa": ([{"question": q[i], "question_id": f"tc_{i}", "question_source": "http://www.quiz.example/",
                       "answer": {"aliases": [final(a[i]), f"#{final(a[i])}"], "normalized_aliases": [final(a[i])],
                                  "value": final(a[i]), "type": "Numerical"}} for i in n],
                     ("question", "answer.value", None, "question_id")),
        "drop": ([{"section_id": f"nfl_{i // 5}", "query_id": f"q{i}", "passage": a[i], "question": q[i],
                   "answers_spans": {"spans": [final(a[i])], "types": ["number"]}} for i in n],
                 ("question", "answers_spans.spans", None, "query_id")),
        "dolly": ([{"instruction": q[i], "context": a[i][:50] if i % 3 else "", "response": a[i], "category": "open_qa"}
                   for i in n], ("instruction,context", "response", "category", None)),
        "openassistant": ([{"message_id": f"m{i}", "parent_id": None, "user_id": "u1", "text": q[i], "role": "prompter",
                            "lang": "en"} for i in n], ("text", None, None, "message_id")),
        "sharegpt": ([{"id": f"s{i}", "conversations": chat(q[i], a[i], "from", "human", "gpt", "value")} for i in n],
                     ("conversations[from=human].value", "conversations[from=gpt].value", None, "id")),
        "messages": ([{"messages": chat(q[i], a[i]), "source": "gsm8k"} for i in n],
                     ("messages[role=user].content", "messages[role=assistant].content", "source", None)),
        "preference": ([{"prompt": q[i], "chosen": a[i], "rejected": a[i + 1]} for i in n],
                       ("prompt", "chosen", None, None)),
        "preference chat": ([{"prompt": q[i], "prompt_id": f"p{i}", "chosen": chat(q[i], a[i]),
                              "rejected": chat(q[i], a[i + 1])} for i in n],
                            ("prompt", "chosen[role=assistant].content", None, "prompt_id")),
        "hh-rlhf": ([{"chosen": f"\n\nHuman: {q[i]}\n\nAssistant: {a[i]}",
                      "rejected": f"\n\nHuman: {q[i]}\n\nAssistant: {a[i + 1]}{a[i + 2]}"} for i in n],
                    ("chosen", None, None, None)),
        "code": ([{"task_id": f"HumanEval/{i}", "prompt": f'def f{i}():\n    """{q[i]}"""\n',
                   "canonical_solution": f"    return {final(a[i])}\n", "test": "assert True", "entry_point": f"f{i}"}
                  for i in n], ("prompt", "canonical_solution", None, "task_id")),
        "truthfulqa": ([{"type": "Adversarial", "category": "Misconceptions", "question": q[i], "best_answer": a[i],
                         "correct_answers": [a[i]], "incorrect_answers": ["no"], "source": f"https://example.org/{i}"}
                        for i in n], ("question", "best_answer", "category", None)),
    }


SHAPES = list(shapes([""] * (N + 2), ["#### 0"] * (N + 2)))


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_is_guessed_as_an_ml_user_would_name_it(gsm, name):
    rows, expected = shapes(*gsm)[name]
    roles = resolve_roles(rows)
    assert (roles.text, roles.answer, roles.group, roles.id) == expected
    assert set(roles.guessed) == {r for r, v in zip(("text", "answer", "group", "id"), expected) if v is not None}


def norm(text) -> str:
    return " ".join(str(text).lower().split())


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", ["arc", "arc hub", "alpaca"])
def test_duplicates_and_leak_with_guessed_roles_equal_pandas_on_the_right_fields(gsm, tmp_path, name):
    q, a = gsm
    text_of = {"arc": lambda r: r["question"]["stem"], "arc hub": lambda r: r["question"],
               "alpaca": lambda r: r["instruction"] + "\n" + r["input"]}[name]
    answer_of = {"arc": lambda r: r["answerKey"], "arc hub": lambda r: r["answerKey"],
                 "alpaca": lambda r: r["output"]}[name]
    train = shapes(q[:N + 2], a[:N + 2])[name][0]
    rows, _ = shapes(q[100:100 + N + 2], a[100:100 + N + 2])[name]
    rows = rows + [dict(rows[k]) for k in (3, 3, 17)]            # 3 planted exact copies
    test = rows + [dict(train[k]) for k in (5, 8, 13)]            # 3 training items in the test set
    changed = dict(train[21])                                     # ... and one with another answer
    if name == "alpaca":
        changed["output"] = "Another answer entirely."
    else:
        changed["answerKey"] = "C"
    test.append(changed)
    path = write(tmp_path / "test.jsonl", test)
    scan = auditor.scan(path)
    summary = scan.summary()
    frame = pd.DataFrame({"text": [norm(text_of(r)) for r in test], "answer": [norm(answer_of(r)) for r in test]})
    sizes = frame.groupby("text").size()
    exact = summary["exact_duplicates"]["text"]
    assert (exact["groups"], exact["records"]) == (int((sizes > 1).sum()), int(sizes[sizes > 1].sum())) == (2, 5)
    assert all(role in summary["roles"]["guessed"] for role in ("text", "answer"))
    report = scan.markdown()
    answer_field = "output" if name == "alpaca" else "answerKey"
    assert f"| answer | {answer_field} | guessed |" in report

    got = leak(write(tmp_path / "train.jsonl", train), path).summary()
    a_frame = pd.DataFrame({"text": [norm(text_of(r)) for r in train], "answer": [norm(answer_of(r)) for r in train]})
    in_text = frame["text"].isin(a_frame["text"])
    both = frame.merge(a_frame.drop_duplicates(), on=["text", "answer"], how="left", indicator=True)["_merge"] == "both"
    assert got["identical_text"]["records"] == int(in_text.sum()) == 4
    assert got["identical_both"]["records"] == int(both.sum()) == 3


def late_rows(q, a, kind):
    """2,400 records whose answer (and category) is null or absent in the first 2,000."""
    rows = []
    for i in range(2400):
        row = {"question": f"{q[i % 400]} (item {i})"}
        if i >= 2000:
            row.update(answer=final(a[i % 400]), category="arithmetic")
        elif kind == "null":
            row.update(answer=None, category=None)
        rows.append(row)
    return rows


@pytest.mark.parametrize("kind", ["null", "absent"])
def test_a_field_the_first_records_lack_is_guessed_and_the_report_says_so(gsm, tmp_path, kind):
    """Before, the answer was dropped unsaid: no answer role, no word in the report."""
    rows = late_rows(*gsm, kind)
    path = write(tmp_path / "late.jsonl", rows)
    scan = auditor.scan(path)
    summary = scan.summary()
    assert (summary["roles"]["answer"], summary["roles"]["group"]) == ("answer", "category")
    notices = summary["input"]["notices"]
    assert any("'answer' (guessed)" in n and "first in record 2,000" in n for n in notices)
    assert "first in record 2,000" in scan.markdown()
    answers = pd.Series([r.get("answer") for r in rows]).dropna()
    sizes = answers.map(norm).value_counts()
    exact = summary["exact_duplicates"]["answer"]
    assert (exact["groups"], exact["records"]) == (int((sizes > 1).sum()), int(sizes[sizes > 1].sum()))
    # Named, it is read the same way, and needs no notice.
    named = auditor.scan(path, answer="answer", group="category").summary()
    assert named["exact_duplicates"]["answer"] == exact
    assert not any("first in record" in n for n in named["input"]["notices"])


def test_a_named_field_first_present_past_100000_records_is_read(gsm):
    """Before, a field named by the user and first present in record 150,000 was said to be "in no record"."""
    q, a = gsm
    rows = [{"question": q[i % 400]} for i in range(150_000)] + [{"question": q[0], "answer": final(a[0])}]
    roles = resolve_roles(rows, answer="answer")
    assert roles.answer == "answer" and roles.late == ()
    with pytest.raises(AuditorError, match="is in no record"):
        resolve_roles(rows, answer="answers")


def test_a_streamed_corpus_says_how_many_records_it_checked(gsm, tmp_path):
    q, _ = gsm
    rows = [{"id": i} for i in range(1500)] + [{"id": i, "body": q[i]} for i in range(10)]
    path = write(tmp_path / "corpus.jsonl", rows)
    with pytest.raises(AuditorError) as named:
        contamination(path, "gsm8k", corpus_text="body")
    assert "'body' is in no record of the first 1,000 read" in named.value.message
    with pytest.raises(AuditorError) as blank:
        contamination(path, "gsm8k")
    assert "none could be guessed from the first 1,000 records" in blank.value.message
