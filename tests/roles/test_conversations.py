"""Conversation records (OpenAI-style ``messages`` [{role, content}], ShareGPT ``conversations``
[{from, value}]), the shape most fine-tuning data now has: with no field named, the text is guessed
as the user's turns and the answer as the model's (``messages[role=user].content``,
``messages[role=assistant].content``), a contamination corpus as every turn's text but the system
prompt's (``messages.content``), never a string id beside it, and the checks find what is planted
in a turn. Built from real GSM8K problems; compared with the n-gram reference of
tests/definitions.py on the turns' texts joined as the role reader joins a list (spaces).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from definitions import contamination_reference, norm_default, read_jsonl, write_jsonl, duplicate_figures

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


PLANTED_IN_PARTS = {3: 20, 150: 21, 299: 22}          # corpus row -> GSM8K test row planted in its user turn


@pytest.fixture(scope="module")
def gsm(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl"), read_jsonl(real_data / "gsm8k/test.jsonl")


def items_of(summary: dict) -> dict:
    return {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"])
            for it in summary["items"]}


def cli_json(run_cli, *args, code=0) -> dict:
    got, out, err = run_cli(*map(str, args), "--json", "-", "--quiet", timeout=300)
    assert got == code and "Traceback" not in err, err
    return json.loads(out)


def parts_chats(train, test) -> list:
    """OpenAI / Hugging Face chat records whose turns hold their text as a list of parts
    ([{"type": "text", "text": ...}], an image part beside it in some), with a long string id."""
    rows = []
    for i, r in enumerate(train[:300]):
        question = test[PLANTED_IN_PARTS[i]]["question"] if i in PLANTED_IN_PARTS else r["question"]
        user = [{"type": "text", "text": question}]
        if i % 7 == 0:
            user.append({"type": "image_url", "image_url": {"url": f"https://img.example/{i}.png"}})
        rows.append({"id": f"chat-{i:06d}-" + "x" * 40,
                     "messages": [{"role": "user", "content": user},
                                  {"role": "assistant", "content": [{"type": "text", "text": r["answer"]}]}]})
    return rows


def parts_text(row: dict) -> str:
    """The definition: every text part of every turn, in order, joined by a space."""
    return " ".join(p["text"] for turn in row["messages"] for p in turn["content"] if p.get("text"))


PLANTED = {17: 40, 333: 41}          # corpus row -> GSM8K test row whose question is its user turn


@pytest.fixture(scope="module")
def chats(real_data):
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:600]
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    openai, sharegpt = [], []
    for i, r in enumerate(train):
        question = test[PLANTED[i]]["question"] if i in PLANTED else r["question"]
        openai.append({"id": f"conv-{i:06d}-{'x' * 40}",       # a long string id: never the text
                       "messages": [{"role": "system", "content": "You solve grade-school maths problems."},
                                    {"role": "user", "content": question},
                                    {"role": "assistant", "content": r["answer"]}]})
        sharegpt.append({"conversations": [{"from": "human", "value": question}, {"from": "gpt", "value": r["answer"]}]})
    # One conversation twice (a new id): scan's exact duplicates must see it.
    openai[500] = dict(openai[499], id=openai[500]["id"])
    sharegpt[500] = sharegpt[499]
    return openai, sharegpt, [r["question"] for r in test]


def summary_of(run_cli, *args) -> dict:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet", timeout=300)
    assert code == 0, err
    return json.loads(out)


def test_content_parts_named_by_their_dotted_path_are_read(gsm, run_cli, tmp_path):
    """From the review of several fields, conversations, the leak gate and evidence: `--text
    messages.content.text` must read the parts' text, not silently give every record an empty text
    (roles.lookup does not descend into a list inside a list: 0 items found, exit 0). A later
    hostile review: `messages.content` reads a list of parts as its text parts too (it was refused,
    so no one path read a file mixing string and parts contents; tests/roles/test_chat_content_as_parts_or_text.py)."""
    train, test = gsm
    rows = parts_chats(train, test)
    write_jsonl(tmp_path / "chat.jsonl", rows)
    plain = cli_json(run_cli, "contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k",
                     "--text", "messages.content")
    got = cli_json(run_cli, "contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k",
                   "--text", "messages.content.text")
    assert got["corpus"]["no_words"] == 0 and items_of(plain) == items_of(got)
    expected = contamination_reference([parts_text(r) for r in rows], [r["question"] for r in test],
                                       got["settings"]["ngram"])
    assert {(row, item) for row, item in PLANTED_IN_PARTS.items()} <= {(r, i) for i, (rs, _, _) in expected.items() for r in rs}
    assert items_of(got) == expected


def test_content_parts_are_guessed_as_the_turns_text_never_the_id(gsm, run_cli, tmp_path):
    """From the review of several fields, conversations, the leak gate and evidence: With no field named, a
    conversation whose turns hold lists of parts must not fall back to
    the longest string field (here the id: the contamination check then reads ids, finds nothing
    and passes --fail-on-overlap)."""
    train, test = gsm
    rows = parts_chats(train, test)
    write_jsonl(tmp_path / "chat.jsonl", rows)
    got = cli_json(run_cli, "contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k", "--fail-on-overlap",
                   code=1)
    assert got["corpus"]["text"] != "id" and got["corpus"]["text"].startswith("messages.")
    expected = contamination_reference([parts_text(r) for r in rows], [r["question"] for r in test],
                                       got["settings"]["ngram"])
    assert items_of(got) == expected


def test_tool_call_turns_with_null_content_are_still_a_conversation(gsm):
    """From the review of several fields, conversations, the leak gate and evidence: OpenAI function-calling
    records: assistant turns that call a tool have content null. Half
    the turns null is no reason to read the id as the text (_chat_field counts null as not text)."""
    from auditor.roles import column, resolve_roles, resolve_text_spec
    train, _ = gsm
    rows = [{"id": f"call-{i:06d}-" + "y" * 40,
             "messages": [{"role": "user", "content": r["question"]},
                          {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "calc"}}]},
                          {"role": "tool", "content": r["answer"].split("####")[-1].strip()},
                          {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "say"}}]}]}
             for i, r in enumerate(train[:200])]
    roles = resolve_roles(rows)
    # The user's turns are the text; the assistant's hold no text, so no answer is guessed from them.
    assert roles.text == "messages[role=user].content" and roles.answer is None
    assert column(rows[:5], roles.text) == [r["messages"][0]["content"] for r in rows[:5]]
    corpus = resolve_text_spec(rows)
    assert corpus == "messages.content"
    assert column(rows[:5], corpus) == [" ".join(t["content"] for t in r["messages"] if t["content"])
                                        for r in rows[:5]]


def test_one_malformed_turn_does_not_move_the_guess_to_the_system_prompt(gsm):
    """From the review of several fields, conversations, the leak gate and evidence: ShareGPT records with a
    system prompt: one stray string among 400 turns makes the
    conversation guess give up (every turn must be an object), and the longest string, the system
    prompt that every record repeats, becomes the text."""
    from auditor.roles import resolve_roles
    train, _ = gsm
    system = "You are a careful assistant who solves grade-school mathematics problems step by step."
    rows = [{"system": system, "conversations": [{"from": "human", "value": r["question"]},
                                                 {"from": "gpt", "value": r["answer"]}]} for r in train[:200]]
    rows[57]["conversations"].append("<end of conversation>")
    roles = resolve_roles(rows)
    assert (roles.text, roles.answer) == ("conversations[from=human].value", "conversations[from=gpt].value")


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["openai", "sharegpt"])
def test_conversations_are_guessed_and_scanned(chats, run_cli, tmp_path, shape):
    openai, sharegpt, questions = chats
    rows = openai if shape == "openai" else sharegpt
    key, field = ("messages", "content") if shape == "openai" else ("conversations", "value")
    speaker, asks, answers = ("role", "user", "assistant") if shape == "openai" else ("from", "human", "gpt")
    write_jsonl(tmp_path / "chat.jsonl", rows)
    got = summary_of(run_cli, "contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k")
    assert got["corpus"]["text"] == f"{key}.{field}"
    # The definition: every turn's text but the system prompt's, joined by spaces.
    joined = [" ".join(turn[field] for turn in r[key] if turn.get("role") != "system") for r in rows]
    expected = contamination_reference(joined, questions, got["settings"]["ngram"])
    assert {it["benchmark_row"]: it["corpus_rows"] for it in got["items"]} == \
        {i: rows_ for i, (rows_, _, _) in expected.items()}
    assert {(r, i) for r, i in PLANTED.items()} <= {(r, i) for i, (rs, _, _) in expected.items() for r in rs}
    scan = summary_of(run_cli, "scan", tmp_path / "chat.jsonl")
    assert scan["roles"]["text"] == f"{key}[{speaker}={asks}].{field}" and "text" in scan["roles"]["guessed"]
    assert scan["roles"]["answer"] == f"{key}[{speaker}={answers}].{field}" and "answer" in scan["roles"]["guessed"]
    # The definition: the user's turns, joined by spaces.
    asked = [" ".join(turn[field] for turn in r[key] if turn.get(speaker) == asks) for r in rows]
    figures = scan["exact_duplicates"]["text"]
    assert (figures["groups"], figures["records"], figures["redundant"]) == \
        duplicate_figures([norm_default(t) for t in asked])
    assert figures["groups"] >= 1          # rows 499 and 500 at least


def test_leak_from_conversations_into_a_plain_test_split(chats, run_cli, tmp_path, real_data):
    """Training conversations against GSM8K test (its question field), at the default threshold: a
    question planted as a user turn is an identical text. (Read as every turn's text, the question
    beside its worked answer was under the threshold: 1 of 30 planted questions found at 0.7.)"""
    openai, _, questions = chats
    write_jsonl(tmp_path / "train.jsonl", openai)
    s = summary_of(run_cli, "leak", tmp_path / "train.jsonl", real_data / "gsm8k/test.jsonl", "--text-b", "question")
    assert s["a"]["roles"]["text"] == "messages[role=user].content"
    # The definition: test questions equal (normalised) to a user turn of the training side.
    asked = {norm_default(t["content"]) for r in openai for t in r["messages"] if t["role"] == "user"}
    expected = {i for i, q in enumerate(questions) if norm_default(q) in asked}
    assert set(PLANTED.values()) <= expected
    assert s["identical_text"]["records"] == len(expected)
    assert {p["b"] for p in s["pairs_sample"] if p["match"] in ("identical_text", "identical_both")} == expected


def test_field_lists_and_hints_name_the_turns(chats, run_cli, tmp_path):
    from auditor.roles import available_fields, resolve_roles
    openai, _, _ = chats
    assert available_fields(openai[:3]) == ["id", "messages", "messages.role", "messages.content",
                                            "messages[role=system].content", "messages[role=user].content",
                                            "messages[role=assistant].content"]
    write_jsonl(tmp_path / "chat.jsonl", openai[:20])
    code, out, err = run_cli("scan", tmp_path / "chat.jsonl", "--text", "messages")
    assert code == 2 and "messages.content" in err and "Traceback" not in err
    # A list of objects with no text key is not a conversation, and not text: the body is guessed.
    rows = [{"input": [{"x": "a" * 80}], "body": f"the body of record {i}"} for i in range(10)]
    assert resolve_roles(rows).text == "body"


def test_the_space_reads_an_uploaded_conversation_file(chats, tmp_path):
    """The Space's form: the turns' text is offered and pre-selected, and the audit finds the one
    conversation present twice (rows 499 and 500), shown with the file's own ids."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from ui import handlers
    openai, _, _ = chats
    path = tmp_path / "chat.jsonl"
    write_jsonl(path, openai)
    form = handlers.load_fields("upload:chat.jsonl", "", str(path), "")
    assert form["text"]["value"] == "messages[role=user].content"
    assert ("messages.content", "messages.content") in form["text"]["choices"]
    view = handlers.run("upload:chat.jsonl", "", "", form["text"]["value"], "", "", [], 0.7, None, str(path), None,
                        "upload:chat.jsonl", "http://space.example/")
    shown = handlers.pairs_event(view["state"], "next")
    assert f"id <b>{openai[499]['id']}</b>" in shown["pair_view"] and f"id <b>{openai[500]['id']}</b>" in shown["pair_view"]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["openai", "sharegpt"])
def test_turns_chosen_by_speaker(chats, run_cli, tmp_path, shape):
    """``messages[role=user].content`` reads only the user's turns (the planted benchmark questions
    are there), ``[role=assistant]`` only the answers (none of them), ``[role=system]`` the system
    prompt, which the plain path leaves out: each against the n-gram reference on those turns."""
    openai, sharegpt, questions = chats
    rows = openai if shape == "openai" else sharegpt
    key, speaker, field = ("messages", "role", "content") if shape == "openai" else ("conversations", "from", "value")
    user, bot = ("user", "assistant") if shape == "openai" else ("human", "gpt")
    write_jsonl(tmp_path / "chat.jsonl", rows)
    for who in (user, bot):
        path = f"{key}[{speaker}={who}].{field}"
        got = summary_of(run_cli, "contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k", "--text", path)
        assert got["corpus"]["text"] == path
        turns = [" ".join(t[field] for t in r[key] if t[speaker] == who) for r in rows]
        expected = contamination_reference(turns, questions, got["settings"]["ngram"])
        found = {it["benchmark_row"]: it["corpus_rows"] for it in got["items"]}
        assert found == {i: rows_ for i, (rows_, _, _) in expected.items()}
        planted = {(r, i) for r, i in PLANTED.items()} <= {(r, i) for i, rs in found.items() for r in rs}
        assert planted == (who == user)
    if shape == "openai":
        scan = summary_of(run_cli, "scan", tmp_path / "chat.jsonl", "--text", "messages[role=system].content")
        figures = scan["exact_duplicates"]["text"]
        assert (figures["groups"], figures["records"]) == (1, len(rows))     # one system prompt in every record


def test_a_selector_that_matches_nothing_names_the_values_held(chats, run_cli, tmp_path):
    openai, _, _ = chats
    write_jsonl(tmp_path / "chat.jsonl", openai[:30])
    for command in (("scan",), ("contamination", "--benchmark", "gsm8k")):
        code, _, err = run_cli(command[0], tmp_path / "chat.jsonl", *command[1:], "--text", "messages[role=usr].content")
        assert code == 2 and "Traceback" not in err
        assert "messages[role=usr].content" in err and "system, user, assistant" in err


def test_selector_values_with_dots_and_records_without_a_match():
    """A dot inside brackets belongs to the value; a record with no selected object has no text
    there (missing, not an empty string), and a dict is selected as a whole."""
    from auditor.roles import MISSING, column, lookup, path_parts
    rows = [{"runs": [{"model": "gpt-3.5", "out": "first"}, {"model": "gpt-4", "out": "second"}]},
            {"runs": [{"model": "gpt-4", "out": "third"}]},
            {"meta": {"lang": "en", "body": "hello"}}]
    assert path_parts("runs[model=gpt-3.5].out") == (("runs", (("model", "gpt-3.5"),)), ("out", ()))
    assert column(rows, "runs[model=gpt-3.5].out") == ["first", None, None]
    assert column(rows, "runs[model=gpt-4].out") == ["second", "third", None]
    assert lookup(rows[2], "meta[lang=en].body") == "hello" and lookup(rows[2], "meta[lang=fr].body") is MISSING


@pytest.mark.parametrize("speaker, asks, answers", [("role", "user", "assistant"), ("role", "prompter", "assistant"),
                                                    ("role", "user", "model"), ("from", "human", "gpt"),
                                                    ("role", "teacher", "pupil")])
def test_the_asking_and_answering_turns_are_the_text_and_the_answer(gsm, speaker, asks, answers):
    """Two-turn GSM8K conversations under the speaker names of OpenAI, OpenAssistant, Gemini and
    ShareGPT: the asking side's turns are the text and the answering side's the answer; speakers
    that name neither (teacher, pupil) leave every turn as the text, with no answer guessed."""
    from auditor.roles import column, resolve_roles, resolve_text_spec
    train, _ = gsm
    key, field = ("conversations", "value") if speaker == "from" else ("messages", "content")
    rows = [{key: [{speaker: asks, field: r["question"]}, {speaker: answers, field: r["answer"]}]} for r in train[:50]]
    roles = resolve_roles(rows)
    known = asks != "teacher"
    assert roles.text == (f"{key}[{speaker}={asks}].{field}" if known else f"{key}.{field}")
    assert roles.answer == (f"{key}[{speaker}={answers}].{field}" if known else None)
    assert column(rows, roles.text) == ([r["question"] for r in train[:50]] if known else
                                        [f"{r['question']} {r['answer']}" for r in train[:50]])
    if known:
        assert column(rows, roles.answer) == [r["answer"] for r in train[:50]]
    assert resolve_text_spec(rows) == f"{key}.{field}"
