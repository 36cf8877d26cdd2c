"""Role paths that choose a list's objects by a key's value (``conversations[from=human].value``):
paths that read nothing are refused, never read as blank texts, on every engine and reader (Parquet
list<struct> from a Hub included); the selected turns find exactly the planted questions."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from definitions import contamination_reference, read_jsonl, write_jsonl


SYSTEM = "You are a careful maths tutor: explain every step of the working before the answer."


@pytest.fixture(scope="module")
def corpus(real_data, tmp_path_factory):
    """A ShareGPT corpus of 120 GSM8K train conversations, every tenth user turn a GSM8K test
    question (the planted rows), each behind one system prompt; and the test questions."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:120]
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    planted = {i: i // 10 for i in range(0, 120, 10)}           # corpus row -> test row
    rows = [{"id": f"c{i}", "conversations": [
        {"from": "system", "value": SYSTEM},
        {"from": "human", "value": test[planted[i]]["question"] if i in planted else r["question"]},
        {"from": "gpt", "value": r["answer"]}]} for i, r in enumerate(train)]
    folder = tmp_path_factory.mktemp("selectors")
    write_jsonl(folder / "chat.jsonl", rows)
    return folder, rows, planted, [t["question"] for t in test]


def _summary(run_cli, *args, env=None) -> tuple[int, dict, str]:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet", timeout=300, env=env)
    assert "Traceback" not in err
    return code, json.loads(out), err


def _turns(rows, speaker) -> list:
    return [" ".join(t["value"] for t in r["conversations"] if t["from"] == speaker) or None for r in rows]


@pytest.mark.parametrize("path", ["conversations[from=gpt].content", "conversations.content",
                                  "conversations[from=human].value.type", "conversations[from=human].",
                                  "conversations..value"])
@pytest.mark.slow
def test_a_path_no_turn_holds_is_refused_not_read_blank(corpus, run_cli, path):
    """From the review of turn selectors and the dedup manifest: No turn has a 'content' key (ShareGPT says
    'value'), no value holds parts: before, each of
    these read every record's text as blank and the scan and contamination check passed (exit 0,
    0 tokens, nothing contaminated). Now: refused, naming the fields there are. (``value.text`` reads
    a string value as itself: tests/roles/test_chat_content_as_parts_or_text.py.)"""
    folder, rows, _, _ = corpus
    assert not any(isinstance(t.get("value"), list) or "content" in t for r in rows for t in r["conversations"])
    for command in (("scan",), ("contamination", "--benchmark", "gsm8k")):
        code, doc, err = _summary(run_cli, command[0], folder / "chat.jsonl", *command[1:], "--text", path)
        assert code == 2 and doc["error"]["code"] == "missing_field", (command, path)
        assert "conversations[from=human].value" in doc["error"]["hint"]       # the fields there are


def test_a_misspelt_field_after_a_matching_selector_names_the_fields_not_the_selector(corpus):
    """From the review of turn selectors and the dedup manifest: The hint blames a selector only when it
    matches nothing: after one that matches, the name
    that follows is wrong, and the hint lists the fields."""
    from auditor.errors import AuditorError
    from auditor.roles import resolve_roles
    _, rows, _, _ = corpus
    speakers = ", ".join(dict.fromkeys(t["from"] for r in rows for t in r["conversations"]))
    with pytest.raises(AuditorError) as wrong_speaker:
        resolve_roles(rows, text="conversations[from=user].value")
    assert f"Its 'from' values: {speakers}." in wrong_speaker.value.hint
    with pytest.raises(AuditorError) as wrong_name:
        resolve_roles(rows, text="conversations[from=human].valu")
    assert "Available fields:" in wrong_name.value.hint and "matches" not in wrong_name.value.hint
    with pytest.raises(AuditorError) as no_list:                  # nothing to select from: the fields
        resolve_roles(rows, text="messages[role=user].content")
    assert "Available fields:" in no_list.value.hint


@pytest.mark.slow
def test_a_selector_with_no_field_after_it_is_refused_by_every_reader(corpus, run_cli):
    """From the review of turn selectors and the dedup manifest: ``conversations[from=human]`` holds objects,
    not text. The scan refused it, but the
    contamination check's fast JSONL reader looked up a top-level key of that literal name and read
    200 blank texts (exit 0, 'clean'); the Ray engine's reader did the same."""
    pytest.importorskip("ray")
    folder, _, _, _ = corpus
    for engine in ("local", "ray"):
        code, doc, _ = _summary(run_cli, "contamination", folder / "chat.jsonl", "--benchmark", "gsm8k",
                                "--text", "conversations[from=human]", "--engine", engine)
        assert code == 2 and doc["error"]["code"] == "bad_value", engine
        assert "is an object" in doc["error"]["message"]


@pytest.mark.sweep
def test_speaker_turns_find_the_planted_questions_on_every_engine(corpus, run_cli):
    """From the review of turn selectors and the dedup manifest: The human turns hold the planted test
    questions, the model's turns none of them: the items
    found equal the n-gram reference computed on those turns, locally and on Ray."""
    pytest.importorskip("ray")
    folder, rows, planted, questions = corpus
    for engine in ("local", "ray"):
        for speaker in ("human", "gpt"):
            code, got, _ = _summary(run_cli, "contamination", folder / "chat.jsonl", "--benchmark", "gsm8k",
                                    "--text", f"conversations[from={speaker}].value", "--engine", engine)
            assert code == 0
            expected = contamination_reference(_turns(rows, speaker), questions, got["settings"]["ngram"])
            found = {it["benchmark_row"]: it["corpus_rows"] for it in got["items"]}
            assert found == {i: r for i, (r, _, _) in expected.items()}, (engine, speaker)
            hits = {row for rs in found.values() for row in rs}
            assert (set(planted) <= hits) == (speaker == "human")


def test_nested_lists_and_odd_selectors_read_what_the_plain_path_reads():
    """From the review of turn selectors and the dedup manifest: A batch of conversations (a list of lists of
    turns) is selected as the plain path reads it;
    values with '=', dots, spaces and non-ASCII letters are values; numbers and booleans are matched
    as written (1, true); a record with no such turn has no text there."""
    from auditor.roles import MISSING, column, lookup
    rows = [{"batch": [[{"role": "user", "content": "u1"}, {"role": "bot", "content": "b1"}],
                       [{"role": "user", "content": "u2"}]],
             "runs": [{"model": "gpt-3.5 turbo=fast", "out": "x"}, {"model": "llama", "out": "y"}],
             "flags": [{"ok": True, "t": "yes"}, {"ok": 1, "t": "one"}, {"ok": "1", "t": "text one"}],
             "turns": [{"rôle": "élève", "texte": "bonjour"}]},
            {"batch": [[{"role": "bot", "content": "b3"}]], "runs": [], "flags": [], "turns": []}]
    assert column(rows, "batch[role=user].content") == ["u1 u2", None]
    assert column(rows, "batch.content") == ["u1 b1 u2", "b3"]
    assert column(rows, "runs[model=gpt-3.5 turbo=fast].out") == ["x", None]
    assert column(rows, "flags[ok=true].t") == ["yes", None]
    assert column(rows, "flags[ok=1].t") == ["one text one", None]
    assert column(rows, "turns[rôle=élève].texte") == ["bonjour", None]
    assert lookup(rows[1], "batch[role=user].content") is MISSING
    assert lookup(rows[0], "runs.missing") is MISSING and lookup(rows[0], "runs[model=llama].missing") is MISSING


def test_the_space_offers_no_turn_path_it_cannot_read_back():
    """From the review of turn selectors and the dedup manifest: A speaker named with a comma would be split
    as two fields by the labels box and by a
    contamination field list: not offered; the others are, and a share link carries them back."""
    from urllib.parse import parse_qsl, urlsplit
    from auditor.roles import available_fields
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from ui import state
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "tool,call", "content": "{}"}]}]
    offered = available_fields(rows)
    assert "messages[role=user].content" in offered and not any("tool" in f for f in offered)
    req = state.make_request("acme/chats", "", "train", "messages[role=user].content", "", "",
                             ["messages[role=system].content"], 0.7, None)
    url = state.share_url("http://space.example/", req, state.Source("hub", "acme/chats", "acme/chats"))
    back = dict(parse_qsl(urlsplit(url).query))
    assert (back["text"], back["labels"]) == ("messages[role=user].content", "messages[role=system].content")


@pytest.mark.slow
def test_parquet_turns_from_a_hub_are_selected(corpus, run_cli, tmp_path):
    """From the review of turn selectors and the dedup manifest: Parquet list<struct> (every struct key
    present, null where a turn lacks it) served by a Hub:
    the selected turns give the reference's items; a key no struct has is refused."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hub_server import FakeHub
    _, rows, planted, questions = corpus
    data = pa.BufferOutputStream()
    with_extra = [dict(r, conversations=[dict(t, weight=1.5) if k == 1 and i == 3 else t
                                         for k, t in enumerate(r["conversations"])]) for i, r in enumerate(rows)]
    pq.write_table(pa.Table.from_pylist(with_extra), data)
    hub = FakeHub(tmp_path / "hub")
    hub.add_repo("acme/chats", {"data/train-00000-of-00001.parquet": data.getvalue().to_pybytes()})
    env = {"HF_ENDPOINT": hub.start(), "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HOME": str(tmp_path / "home"), "HF_DATASETS_CACHE": str(tmp_path / "home"), "HF_TOKEN": ""}
    try:
        code, got, _ = _summary(run_cli, "contamination", "acme/chats", "--benchmark", "gsm8k",
                                "--text", "conversations[from=human].value", env=env)
        assert code == 0
        expected = contamination_reference(_turns(rows, "human"), questions, got["settings"]["ngram"])
        assert {it["benchmark_row"]: it["corpus_rows"] for it in got["items"]} == \
            {i: r for i, (r, _, _) in expected.items()}
        code, got, _ = _summary(run_cli, "scan", "acme/chats", "--text", "conversations[from=gpt].content", env=env)
        assert code == 2 and got["error"]["code"] == "missing_field"
    finally:
        hub.stop()
