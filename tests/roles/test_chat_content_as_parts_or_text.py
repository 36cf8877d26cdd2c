"""Chat records whose turn ``content`` is a string in some records and a list of parts in others
([{"type": "text", "text": ...}, {"type": "image_url", ...}], as multimodal SFT data holds it).

From a hostile review: such a file could not be read whole. No text was guessed, ``--text
messages[role=user].content`` was refused ("an object, not text"), and ``messages[role=user].content.text``
read every string turn as empty (2 duplicate groups / 3 redundant for the true 4 / 6; leak found 5 of
10 copies). A contamination corpus whose every user content is a list of parts was not guessed either.
The rule: a list of parts reads as the text of its text parts, joined by spaces as any list is, and
a string reads as itself, by ``.content`` and by ``.content.text`` alike, on every engine.
"""
from __future__ import annotations

import json

import pytest

from definitions import contamination_reference, read_jsonl, write_jsonl

LAYOUTS = {"plain": lambda i: False, "parts": lambda i: True, "mixed": lambda i: i % 2 == 0}
USER_PATHS = ("messages[role=user].content", "messages[role=user].content.text")


def question(i: int) -> str:
    return f"please solve problem number {i % 4} for me now"


def content(text: str, as_parts: bool, i: int):
    """A turn's content: the string, or parts holding it (split in two text parts, an image between,
    in some records: the parts' texts joined by a space are the string)."""
    if not as_parts:
        return text
    if i % 3:
        return [{"type": "text", "text": text}]
    head, tail = text.split(" ", 1)
    return [{"type": "text", "text": head},
            {"type": "image_url", "image_url": {"url": f"https://img.example/{i}.png"}},
            {"type": "text", "text": tail}]


def chats(layout: str, questions: list[str]) -> list[dict]:
    as_parts = LAYOUTS[layout]
    return [{"messages": [{"role": "user", "content": content(q, as_parts(i), i)},
                          {"role": "assistant", "content": str(i)}]} for i, q in enumerate(questions)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The review's files: ten records of four questions (4 groups, 6 redundant), per layout."""
    folder = tmp_path_factory.mktemp("chat_content")
    questions = [question(i) for i in range(10)]
    for layout in LAYOUTS:
        write_jsonl(folder / f"conv_{layout}.jsonl", chats(layout, questions))
    write_jsonl(folder / "test.jsonl", [{"question": q} for q in questions])
    return folder, questions


@pytest.mark.parametrize("path", USER_PATHS)
def test_every_layout_reads_the_user_turns_as_written(files, path):
    from auditor.roles import column, resolve_roles
    folder, questions = files
    for layout in LAYOUTS:
        rows = read_jsonl(folder / f"conv_{layout}.jsonl")
        assert column(rows, resolve_roles(rows, text=path).text) == questions, (layout, path)


def test_the_guess_is_the_user_turns_on_every_layout(files):
    from auditor.roles import column, resolve_roles
    folder, questions = files
    for layout in LAYOUTS:
        rows = read_jsonl(folder / f"conv_{layout}.jsonl")
        roles = resolve_roles(rows)
        assert roles.text == "messages[role=user].content", layout
        assert column(rows, roles.text) == questions, layout


@pytest.mark.parametrize("path", (None, *USER_PATHS))
def test_scan_counts_the_true_exact_duplicates(files, path):
    import auditor
    folder, _ = files
    for layout in LAYOUTS:
        summary = auditor.scan(str(folder / f"conv_{layout}.jsonl"), text=path).summary()
        text = summary["exact_duplicates"]["text"]
        assert (text["groups"], text["redundant"], summary["degenerate"]["records"]) == (4, 6, 0), (layout, path)


@pytest.mark.parametrize("path", (None, *USER_PATHS))
def test_leak_finds_every_copied_question(files, path):
    import auditor
    folder, _ = files
    for layout in LAYOUTS:
        result = auditor.leak(str(folder / f"conv_{layout}.jsonl"), str(folder / "test.jsonl"),
                              text=path, text_b="question")
        assert result.summary()["identical_text"]["records"] == 10, (layout, path)


def test_a_parts_content_with_no_text_is_empty_and_other_objects_are_still_refused():
    from auditor.errors import AuditorError
    from auditor.roles import as_text, lookup
    image_only = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]}
    assert as_text(lookup(image_only, "messages[role=user].content"), "content", 0) == ""
    with pytest.raises(AuditorError, match="is an object, not text"):
        as_text([{"url": "u"}], "links", 0)         # objects naming no type are no parts


def contamination_items(run_cli, path, *options) -> tuple[str, dict]:
    code, out, err = run_cli("contamination", str(path), "--benchmark", "gsm8k", *options,
                             "--json", "-", "--quiet", timeout=300)
    assert code == 0 and "Traceback" not in err, err
    got = json.loads(out)
    items = {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"]) for it in got["items"]}
    return got["corpus"]["text"], items, got["settings"]["ngram"]


def gsm8k_chats(real_data, layout: str, assistant_parts: bool) -> tuple[list, list, list]:
    """Ten chats whose user turns are GSM8K test questions 0-9 (the planted rows) and whose answers
    are train answers; the corpus text by definition (every turn's text, joined by spaces); the
    benchmark's questions."""
    test = [r["question"] for r in read_jsonl(real_data / "gsm8k/test.jsonl")]
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:10]
    rows = chats(layout, test[:10])
    for i, row in enumerate(rows):
        answer = train[i]["answer"]
        row["messages"][1]["content"] = [{"type": "text", "text": answer}] if assistant_parts else answer
    truth = [f"{test[i]} {train[i]['answer']}" for i in range(10)]
    return rows, truth, test


@pytest.mark.parametrize("layout, assistant_parts", [("parts", False), ("parts", True), ("mixed", False)])
def test_contamination_guesses_the_turns_and_finds_every_planted_question(real_data, run_cli, tmp_path,
                                                                           layout, assistant_parts):
    rows, truth, test = gsm8k_chats(real_data, layout, assistant_parts)
    write_jsonl(tmp_path / "chat.jsonl", rows)
    field, items, n = contamination_items(run_cli, tmp_path / "chat.jsonl")
    assert field in ("messages.content", "messages.content.text")
    assert all(i in items and i in items[i][0] for i in range(10))
    assert items == contamination_reference(truth, test, n)


@pytest.mark.slow
def test_the_ray_engine_reads_the_mixed_turns_as_the_local_one(real_data, run_cli, tmp_path):
    pytest.importorskip("ray")
    rows, _, _ = gsm8k_chats(real_data, "mixed", False)
    write_jsonl(tmp_path / "chat.jsonl", rows)
    for path in ("messages[role=user].content", "messages.content.text"):
        local = contamination_items(run_cli, tmp_path / "chat.jsonl", "--text", path)
        ray = contamination_items(run_cli, tmp_path / "chat.jsonl", "--text", path, "--engine", "ray")
        assert ray == local and all(i in local[1] for i in range(10)), path


def test_the_text_of_a_string_turn_is_the_string_under_any_turn_key():
    """ShareGPT's ``value``, as OpenAI's ``content``: ``.value.text`` reads a string value as itself
    (it was refused, no value holding parts), and a path a string holds no more of is still missing."""
    from auditor.roles import MISSING, column, lookup
    rows = [{"conversations": [{"from": "human", "value": question(i)}, {"from": "gpt", "value": str(i)}]}
            for i in range(4)]
    assert column(rows, "conversations[from=human].value.text") == column(rows, "conversations[from=human].value")
    assert lookup(rows[0], "conversations[from=human].value.type") is MISSING
    assert lookup({"message": {"content": "a string"}}, "message.content.text") == "a string"   # one turn alone
