"""Hostile review of four features: contamination over several corpus fields, conversation records,
leak's CI gate (text_leak / answer_only) and the one evidence.csv format. Real GSM8K records
(tests/real_data.py) in the shapes curators meet; every expectation is computed here from the
definitions (tests/ground_truth.py, the n-gram reference of tests/definitions.py), never
from the auditor's own output.
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path

import pytest

import ground_truth
from definitions import contamination_reference, norm_default, read_jsonl, write_jsonl

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PLANTED = {3: 20, 150: 21, 299: 22}          # corpus row -> GSM8K test row planted in its user turn


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


# --------------------------------------------------------------------------- conversations

def parts_chats(train, test) -> list:
    """OpenAI / Hugging Face chat records whose turns hold their text as a list of parts
    ([{"type": "text", "text": ...}], an image part beside it in some), with a long string id."""
    rows = []
    for i, r in enumerate(train[:300]):
        question = test[PLANTED[i]]["question"] if i in PLANTED else r["question"]
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


def test_content_parts_named_by_their_dotted_path_are_read(gsm, run_cli, tmp_path):
    """`--text messages.content` on parts is refused with a hint naming messages.content.text;
    that path must then read the parts' text, not silently give every record an empty text
    (roles.lookup does not descend into a list inside a list: 0 items found, exit 0)."""
    train, test = gsm
    rows = parts_chats(train, test)
    write_jsonl(tmp_path / "chat.jsonl", rows)
    code, _, err = run_cli("contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k",
                           "--text", "messages.content", "--quiet")
    assert code == 2 and "messages.content.text" in err and "Traceback" not in err
    got = cli_json(run_cli, "contamination", tmp_path / "chat.jsonl", "--benchmark", "gsm8k",
                   "--text", "messages.content.text")
    assert got["corpus"]["no_words"] == 0
    expected = contamination_reference([parts_text(r) for r in rows], [r["question"] for r in test],
                                       got["settings"]["ngram"])
    assert {(row, item) for row, item in PLANTED.items()} <= {(r, i) for i, (rs, _, _) in expected.items() for r in rs}
    assert items_of(got) == expected


def test_content_parts_are_guessed_as_the_turns_text_never_the_id(gsm, run_cli, tmp_path):
    """With no field named, a conversation whose turns hold lists of parts must not fall back to
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
    """OpenAI function-calling records: assistant turns that call a tool have content null. Half
    the turns null is no reason to read the id as the text (_chat_field counts null as not text)."""
    from auditor.roles import column, resolve_roles
    train, _ = gsm
    rows = [{"id": f"call-{i:06d}-" + "y" * 40,
             "messages": [{"role": "user", "content": r["question"]},
                          {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "calc"}}]},
                          {"role": "tool", "content": r["answer"].split("####")[-1].strip()},
                          {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "say"}}]}]}
             for i, r in enumerate(train[:200])]
    roles = resolve_roles(rows)
    assert roles.text == "messages.content"
    assert column(rows[:5], roles.text) == [" ".join(t["content"] for t in r["messages"] if t["content"])
                                            for r in rows[:5]]


def test_one_malformed_turn_does_not_move_the_guess_to_the_system_prompt(gsm):
    """ShareGPT records with a system prompt: one stray string among 400 turns makes the
    conversation guess give up (every turn must be an object), and the longest string, the system
    prompt that every record repeats, becomes the text."""
    from auditor.roles import resolve_roles
    train, _ = gsm
    system = "You are a careful assistant who solves grade-school mathematics problems step by step."
    rows = [{"system": system, "conversations": [{"from": "human", "value": r["question"]},
                                                 {"from": "gpt", "value": r["answer"]}]} for r in train[:200]]
    rows[57]["conversations"].append("<end of conversation>")
    assert resolve_roles(rows).text == "conversations.value"


# --------------------------------------------------------------------------- evidence.csv

def leak_pair(train, test, n_a=400, n_b=60):
    a = [{"id": f"tr-{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(train[:n_a])]
    b = [{"id": f"te-{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(test[:n_b])]
    return a, b


def test_evidence_with_a_lone_surrogate_is_written_by_the_cli_and_the_app(gsm, run_cli, tmp_path):
    """A leaked text holding a lone surrogate (valid JSON: "\\ud800"): summary.json and REPORT.md
    write it as its escape (report.printable); evidence.csv must too, the same bytes from
    `--evidence`, from --out-dir and from the app, instead of a UnicodeEncodeError (a traceback
    from the CLI; the app's whole leak check fails with "Something went wrong")."""
    train, test = gsm
    a, b = leak_pair(train, test)
    a[5]["question"] = "Lone \ud800 surrogate: " + a[5]["question"]
    b[7]["question"] = a[5]["question"]
    write_jsonl(tmp_path / "a.jsonl", a)
    write_jsonl(tmp_path / "b.jsonl", b)
    code, _, err = run_cli("leak", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--out-dir", tmp_path / "out",
                           "--evidence", tmp_path / "evidence.csv", "--quiet")
    assert code == 0 and "Traceback" not in err, err
    written = (tmp_path / "evidence.csv").read_bytes()
    assert written == (tmp_path / "out" / "evidence.csv").read_bytes()
    rows = list(csv.DictReader(io.StringIO(written.decode("utf-8"), newline="")))
    (row,) = [r for r in rows if r["b_row"] == "7"]
    assert row["b_text"] == row["a_text"] == a[5]["question"].replace("\ud800", "\\ud800")
    from ui import handlers
    view = handlers.run("upload:a.jsonl", "", "", "", "", "", [], 0.7, None, str(tmp_path / "a.jsonl"), None,
                        "upload:a.jsonl", "http://space.example/")
    got = handlers.leak_check(view["state"], "", "", "", "", str(tmp_path / "b.jsonl"), False, "", "")
    assert got["leak_status"]["elem_classes"] == ["ok"], got["leak_status"]
    assert Path(got["dl_evidence"]["value"]).read_bytes() == written


def test_csv_outputs_keep_a_bare_carriage_return_inside_its_field(gsm, tmp_path):
    """csv's writer with lineterminator="\\n" quotes a field holding "\\n" but not one holding a
    bare "\\r" (old Mac line ends, scraped text): csv.reader, pandas and the auditor's own CSV
    reader then split the record there. evidence.csv (evidence.evidence_csv) and a clean copy
    written as .csv (clean.write_rows) must read back as written."""
    import auditor
    from auditor.io.copies import write_rows
    from auditor.leakage import leak
    train, test = gsm
    a, b = leak_pair(train, test)
    sentences = a[9]["question"].replace(",", "").replace('"', "").split(". ")
    a[9]["question"] = ".\r".join(sentences)                  # no comma, no quote, no "\n": only "\r"
    b[4]["question"] = a[9]["question"]
    write_jsonl(tmp_path / "a.jsonl", a)
    write_jsonl(tmp_path / "b.jsonl", b)
    result = leak(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    rows = list(csv.DictReader(io.StringIO(result.evidence_csv(), newline="")))
    assert [r["b_row"] for r in rows] == [str(i) for i in result.leaked_b_rows]
    (row,) = [r for r in rows if r["b_row"] == "4"]
    assert row["b_text"] == row["a_text"] == a[9]["question"] and row["a_id"] == "tr-9"
    write_rows([b[4], b[5]], tmp_path / "clean.csv")
    assert [r["question"] for r in auditor.load(str(tmp_path / "clean.csv")).rows] == [b[4]["question"], b[5]["question"]]


# --------------------------------------------------------------------------- the gate, both engines

def leak_truth(a: list, b: list, threshold: float = 0.7) -> dict:
    """Per B row, the kinds of match it has, from the definitions: identical text and answer after
    the default normaliser, near duplicates by word 3-shingle Jaccard."""
    key = lambda s: norm_default(s) if isinstance(s, str) and s.strip() else None   # noqa: E731
    texts_a, answers_a = {key(r["question"]) for r in a} - {None}, {key(r.get("answer")) for r in a} - {None}
    both_a = {(key(r["question"]), key(r.get("answer"))) for r in a}
    shingles_a = [ground_truth.word_shingles(r["question"]) for r in a]
    index: dict = {}
    for i, s in enumerate(shingles_a):
        for g in s:
            index.setdefault(g, set()).add(i)
    out = {}
    for j, r in enumerate(b):
        t, x = key(r["question"]), key(r.get("answer"))
        s = ground_truth.word_shingles(r["question"])
        near = any(ground_truth.jaccard(s, shingles_a[i]) >= threshold - 1e-9
                   for i in set().union(*(index.get(g, ()) for g in s)))
        kinds = {"identical_text": t is not None and t in texts_a, "identical_answer": x is not None and x in answers_a,
                 "identical_both": t is not None and x is not None and (t, x) in both_a, "near_duplicate": near}
        if any(kinds.values()):
            out[j] = {k for k, v in kinds.items() if v}
    return out


def test_gate_evidence_and_clean_agree_with_the_definitions_on_both_engines(gsm, run_cli, tmp_path):
    """A (3 shards, ids, answers; one B text copied 8 times across the shards) against B with
    every kind of match planted: the gate fails on text leaks only, answer_only and text_leak are
    the definitions' counts, clean --near keeps exactly the rest, and Ray's report and evidence.csv
    are the local engine's byte for byte (its tasks now carry A's answers and ids)."""
    pytest.importorskip("ray")
    train, test = gsm
    a, b = leak_pair(train, test, 1500, 200)
    for r in (11, 12, 510, 511, 1010, 1011, 1012):
        a[r]["question"] = a[10]["question"]
    b[0]["question"] = a[10]["question"]                                     # identical text, 8 A rows
    b[1]["question"] = "  " + a[20]["question"].upper() + " "                # identical after normalising
    words = a[30]["question"].split()
    b[2]["question"] = " ".join(words[:-3] + ["zebra"] + words[-2:])         # near duplicate
    b[3]["answer"] = a[40]["answer"]                                         # answer only
    b[4]["question"], b[4]["answer"] = a[50]["question"], a[50]["answer"]    # both
    a[60]["question"] = '=HYPERLINK("http://x","y")\n+1, "q" ' + a[60]["question"]
    b[5]["question"] = a[60]["question"]                                     # formula-like, quotes, newline
    a[700]["answer"] = b[6]["answer"] = '=1+1\n"two"'                        # answer only, formula-like
    del a[800]["id"]
    adir = tmp_path / "a"
    adir.mkdir()
    for k in range(3):
        write_jsonl(adir / f"part-{k}.jsonl", a[500 * k:500 * (k + 1)])
    write_jsonl(tmp_path / "b.jsonl", b)
    truth = leak_truth(a, b)
    text_rows = {j for j, kinds in truth.items() if kinds & {"identical_text", "near_duplicate"}}
    assert {0, 1, 2, 4, 5} <= text_rows and {3, 6} <= set(truth) - text_rows       # the premise

    runs = {}
    for engine, env in (("local", {}), ("ray", {"RAY_ADDRESS": ""})):
        out = tmp_path / engine
        code, _, err = run_cli("leak", adir, tmp_path / "b.jsonl", "--out-dir", out, "--fail-on-overlap", "--quiet",
                               "--engine", engine, env=env, timeout=600)
        assert code == 1 and "Traceback" not in err, (engine, err)
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        summary.pop("engine", None)
        runs[engine] = (summary, (out / "REPORT.md").read_bytes(), (out / "evidence.csv").read_bytes())
    assert runs["ray"] == runs["local"]
    summary, report, evidence = runs["local"]
    assert summary["text_leak"]["records"] == len(text_rows)
    assert summary["answer_only"]["records"] == len(truth) - len(text_rows)
    assert summary["any_leak"]["records"] == len(truth)
    assert f"`--fail-on-overlap` fails on it) | {len(text_rows)} |" in report.decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(evidence.decode("utf-8"), newline="")))
    assert {int(r["b_row"]) for r in rows} == set(truth)
    for r in rows:
        j, i = int(r["b_row"]), int(r["a_row"])
        assert set(r["b_kinds"].split("+")) == truth[j], j
        assert (r["b_text"], r["a_text"], r["b_answer"], r["a_answer"], r["b_id"], r["a_id"]) == \
            (b[j]["question"], a[i]["question"], b[j]["answer"], a[i]["answer"], b[j]["id"], a[i].get("id", ""))
    (first,) = [r for r in rows if r["b_row"] == "0"]
    assert first["a_rows"].split() == ["10", "11", "12", "510", "511"]

    # A shared answer alone does not fail the gate; clean --near keeps exactly the non-text rows.
    only = [dict(r, question=f"A question that appears nowhere else, number {j}, about {j} zebras.")
            for j, r in enumerate(b[:10])]
    write_jsonl(tmp_path / "b_answers.jsonl", only)
    got = cli_json(run_cli, "leak", adir, tmp_path / "b_answers.jsonl", "--fail-on-overlap")
    assert got["text_leak"]["records"] == 0 and got["answer_only"]["records"] == len(leak_truth(a, only)) >= 2
    code, _, err = run_cli("clean", tmp_path / "b.jsonl", "--against", adir, "--near", "--out", tmp_path / "kept.jsonl",
                           "--quiet")
    assert code == 0, err
    assert read_jsonl(tmp_path / "kept.jsonl") == [r for j, r in enumerate(b) if j not in text_rows]
