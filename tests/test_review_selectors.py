"""Review of two features against independent ground truth: role paths that choose a list's objects
by a key's value (``conversations[from=human].value``), and the dedup manifest's ``differs`` with
its note on dropped rows whose answer, group or label is not the kept one's (and ``clean --dedup``'s
internal duplicates, which drop rows the same way).

Paths that read nothing must be refused, never read as blank texts: a misspelt turn key, a selector
with no field after it (objects, not text) on every engine and reader, Parquet list<struct> from a
Hub included. Built from real GSM8K problems (tests/real_data.py); the references are computed here
from the rows (an n-gram reference for contamination, a plain normaliser for dedup).
"""
from __future__ import annotations

import csv
import json
import os
import re
import sys
import unicodedata
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


# --------------------------------------------------------------------------- paths that read nothing

@pytest.mark.parametrize("path", ["conversations[from=gpt].content", "conversations.content",
                                  "conversations[from=human].value.text", "conversations[from=human].",
                                  "conversations..value"])
def test_a_path_no_turn_holds_is_refused_not_read_blank(corpus, run_cli, path):
    """No turn has a 'content' key (ShareGPT says 'value'), no value holds parts: before, each of
    these read every record's text as blank and the scan and contamination check passed (exit 0,
    0 tokens, nothing contaminated). Now: refused, naming the fields there are."""
    folder, rows, _, _ = corpus
    assert not any(isinstance(t.get("value"), list) or "content" in t for r in rows for t in r["conversations"])
    for command in (("scan",), ("contamination", "--benchmark", "gsm8k")):
        code, doc, err = _summary(run_cli, command[0], folder / "chat.jsonl", *command[1:], "--text", path)
        assert code == 2 and doc["error"]["code"] == "missing_field", (command, path)
        assert "conversations[from=human].value" in doc["error"]["hint"]       # the fields there are


def test_a_misspelt_field_after_a_matching_selector_names_the_fields_not_the_selector(corpus):
    """The hint blames a selector only when it matches nothing: after one that matches, the name
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


def test_a_selector_with_no_field_after_it_is_refused_by_every_reader(corpus, run_cli):
    """``conversations[from=human]`` holds objects, not text. The scan refused it, but the
    contamination check's fast JSONL reader looked up a top-level key of that literal name and read
    200 blank texts (exit 0, 'clean'); the Ray engine's reader did the same."""
    pytest.importorskip("ray")
    folder, _, _, _ = corpus
    for engine in ("local", "ray"):
        code, doc, _ = _summary(run_cli, "contamination", folder / "chat.jsonl", "--benchmark", "gsm8k",
                                "--text", "conversations[from=human]", "--engine", engine)
        assert code == 2 and doc["error"]["code"] == "bad_value", engine
        assert "is an object" in doc["error"]["message"]


def test_speaker_turns_find_the_planted_questions_on_every_engine(corpus, run_cli):
    """The human turns hold the planted test questions, the model's turns none of them: the items
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
    """A batch of conversations (a list of lists of turns) is selected as the plain path reads it;
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
    """A speaker named with a comma would be split as two fields by the labels box and by a
    contamination field list: not offered; the others are, and a share link carries them back."""
    from urllib.parse import parse_qsl, urlsplit
    from auditor.roles import available_fields
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ui import state
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "tool,call", "content": "{}"}]}]
    offered = available_fields(rows)
    assert "messages[role=user].content" in offered and not any("tool" in f for f in offered)
    req = state.make_request("acme/chats", "", "train", "messages[role=user].content", "", "",
                             ["messages[role=system].content"], 0.7, None)
    url = state.share_url("http://space.example/", req, state.Source("hub", "acme/chats", "acme/chats"))
    back = dict(parse_qsl(urlsplit(url).query))
    assert (back["text"], back["labels"]) == ("messages[role=user].content", "messages[role=system].content")


def test_parquet_turns_from_a_hub_are_selected(corpus, run_cli, tmp_path):
    """Parquet list<struct> (every struct key present, null where a turn lacks it) served by a Hub:
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


# --------------------------------------------------------------------------- dedup: what each drop loses

def _norm(value):
    """The default normaliser, written again: NFC, lowercase, whitespace collapsed; blank is missing."""
    if value is None or not str(value).strip():
        return None
    return " ".join(unicodedata.normalize("NFC", str(value)).lower().split())


FIELDS = {"text": "question", "answer": "answer", "group": "src", "label:lvl": "lvl"}


@pytest.fixture(scope="module")
def conflicts(real_data, tmp_path_factory):
    """GSM8K questions repeated with every shape of missing value (null, "", "  ", absent), case
    and spacing variants, other answers, groups and labels."""
    t = read_jsonl(real_data / "gsm8k/test.jsonl")
    q = [r["question"] for r in t]
    rows = [
        {"question": q[0], "answer": "42", "src": "a", "lvl": "1"}, {"question": q[0], "answer": "", "src": "a"},
        {"question": q[0], "src": "a", "lvl": "1"},
        {"question": q[1], "answer": None, "src": None, "lvl": None}, {"question": q[1], "answer": "  ", "src": ""},
        {"question": "  " + q[1].upper(), "answer": "7", "src": "b", "lvl": "2"},
        {"question": q[2], "answer": "Yes", "src": "S", "lvl": "1"}, {"question": q[2], "answer": " yes ", "src": "s"},
        {"question": q[3], "answer": "5", "src": "a"}, {"question": q[3], "answer": "6", "src": "a"},
        {"question": q[3], "answer": "6", "src": "b", "lvl": "3"},
        *({"question": q[i], "answer": str(i), "src": "z"} for i in range(4, 30)),
    ]
    folder = tmp_path_factory.mktemp("conflicts")
    write_jsonl(folder / "data.jsonl", rows)
    return folder, rows


def _expected(rows, dropped) -> tuple[list, dict, int]:
    """Per dropped row the fields whose normalised values differ; the note's counts (only rows
    that hold a value there); and how many rows the note names."""
    differs, counts, named = [], {}, 0
    for d in dropped:
        a, b = rows[d["row"]], rows[d["kept_row"]]
        differs.append([name for name, f in FIELDS.items() if _norm(a.get(f)) != _norm(b.get(f))])
        held = [n for n in differs[-1] if n != "text" and _norm(a.get(FIELDS[n])) is not None]
        for n in held:
            counts[n] = counts.get(n, 0) + 1
        named += bool(held)
    return differs, counts, named


@pytest.mark.parametrize("keep", ["first", "longest", "most_common_answer"])
def test_differs_and_the_note_match_the_rows(conflicts, run_cli, keep):
    """Every dropped row's 'differs' equals the fields whose normalised values differ from the
    kept row's (null, "", blank and absent alike); the note counts the rows that hold another
    value (not those with none), in the JSON and CSV manifests alike; under most_common_answer it
    does not advise most_common_answer."""
    import auditor
    from auditor.dedup import dedup
    folder, rows = conflicts
    out = folder / f"out-{keep}.jsonl"
    code, summary, err = _summary(run_cli, "dedup", folder / "data.jsonl", "--text", "question", "--answer", "answer",
                                  "--group", "src", "--label", "lvl", "--keep", keep, "--out", out,
                                  "--manifest", folder / f"m-{keep}.csv")
    assert code == 0, err
    listed = list(csv.DictReader(open(folder / f"m-{keep}.csv", newline="", encoding="utf-8")))
    dropped = [{"row": int(r["row"]), "kept_row": int(r["kept_row"]), "differs": r["differs"]} for r in listed]
    differs, counts, named = _expected(rows, dropped)
    assert [d["differs"] for d in dropped] == [";".join(x) for x in differs]
    assert [d["differs"] for d in summary["dropped_rows"]] == differs
    assert any("answer" in x for x in differs) and (keep != "first" or any(not x for x in differs))
    notes = [n for n in summary["notices"] if "dropped row(s) differ" in n]
    assert notes == [n for n in notes if n.startswith(f"{named:,} dropped row(s)")] and len(notes) == 1
    assert all(f"{name} ({n:,})" in notes[0] for name, n in counts.items())
    assert ("keep most_common_answer" in notes[0]) == (keep != "most_common_answer")
    # A row with no answer beside a kept answer: named in differs, not counted as another answer.
    result = auditor.scan(str(folder / "data.jsonl"), text="question", answer="answer", group="src", labels="lvl")
    d = dedup(result, keep=keep)
    assert [list(x["differs"]) for x in d.dropped] == differs
    # Marks: row 8 is not a duplicate of 9 nor 10; what 10 differs in is then judged against 9 (or 8).
    marked = dedup(result, keep=keep, not_duplicates=[(8, 9), (8, 10)])
    again, _, _ = _expected(rows, marked.dropped)
    assert [list(x["differs"]) for x in marked.dropped] == again and 8 in marked.kept_rows


def test_the_api_manifest_names_the_differences(conflicts):
    """The Space's API endpoint writes the same 'differs' as the library, from the file uploaded."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ui import api
    folder, rows = conflicts
    _, manifest = api.dedup_file(file=str(folder / "data.jsonl"), text="question", answer="answer", keep="first")
    doc = json.loads(Path(manifest).read_text(encoding="utf-8"))
    expected = [[n for n in x if n in ("text", "answer")] for x in _expected(rows, doc["dropped_rows"])[0]]
    assert [d["differs"] for d in doc["dropped_rows"]] == expected


def test_clean_names_internal_duplicates_with_another_answer(real_data, run_cli, tmp_path):
    """clean --dedup drops a test question asked twice whatever its answers: a copy with another
    answer is named ('differs') and counted in a note; an exact copy and one with no answer are not
    counted."""
    test = read_jsonl(real_data / "gsm8k/test.jsonl")[:20]
    rows = [*test, dict(test[2]), {**test[3], "answer": "#### 999"}, {**test[4], "answer": None}]
    write_jsonl(tmp_path / "test.jsonl", rows)
    write_jsonl(tmp_path / "train.jsonl", read_jsonl(real_data / "gsm8k/train.jsonl")[:40])
    out = tmp_path / "clean.jsonl"
    code, _, err = run_cli("clean", tmp_path / "test.jsonl", "--against", tmp_path / "train.jsonl", "--dedup",
                           "--out", out)
    assert code == 0, err
    report = json.loads(Path(f"{out}.dropped.json").read_text())
    first = {}
    expected = {}
    for i, r in enumerate(rows):
        key = _norm(r["question"])
        if key in first:
            expected[i] = [] if _norm(r["answer"]) == _norm(rows[first[key]]["answer"]) else ["answer"]
        first.setdefault(key, i)
    assert {d["row"]: d["differs"] for d in report["dropped_rows"]} == expected
    held = sum(1 for i, x in expected.items() if x and _norm(rows[i]["answer"]) is not None)
    assert held == 1 and report["notices"][0].startswith(f"{held} internal duplicate(s)")
    assert re.search(r"note: 1 internal duplicate\(s\) dropped hold another answer", err)


def test_evaluated_key_is_equality_in_every_evaluated_field(conflicts):
    """The scan's record key (identical clusters, the dropped rows' reason) equals the
    per-field keys dedup reads: two records share it exactly when every normalised field is equal."""
    import auditor
    folder, rows = conflicts
    result = auditor.scan(str(folder / "data.jsonl"), text="question", answer="answer", group="src", labels="lvl")
    assert list(result.evaluated_keys) == list(FIELDS)
    values = [tuple(_norm(r.get(f)) for f in FIELDS.values()) for r in rows]
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (result.evaluated_key[i] == result.evaluated_key[j]) == (values[i] == values[j])
