"""Leak's gate (text_leak / answer_only): shared multiple-choice letters are not a leak, and the
gate, evidence and clean agree with the definitions on both engines."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
from pathlib import Path

import pytest

import ground_truth
from auditor.evidence import spreadsheet_text
from definitions import near_hits, norm_default, read_jsonl, words, write_jsonl

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


REPHRASED = Path(__file__).resolve().parents[1] / "data" / "semantic"      # GSM8K test rows 0-59, rephrased


def leak_reference(a_rows, b_rows, text_a, text_b, answer, answer_norm) -> tuple:
    ta = [norm_default(r[text_a]) for r in a_rows]
    tb = [norm_default(r[text_b]) for r in b_rows]
    a_texts = set(filter(None, ta))
    ident = {j for j, t in enumerate(tb) if t and t in a_texts}
    ans = both = set()
    if answer:
        aa = [answer_norm(r[answer]) for r in a_rows]
        ab = [answer_norm(r[answer]) for r in b_rows]
        a_answers, a_both = set(filter(None, aa)), set(zip(ta, aa))
        ans = {j for j, a in enumerate(ab) if a and a in a_answers}
        both = {j for j in range(len(b_rows)) if tb[j] and ab[j] and (tb[j], ab[j]) in a_both}
    near = near_hits([r[text_a] for r in a_rows], [r[text_b] for r in b_rows])
    return ident, ans, both, near


@pytest.fixture(scope="module")
def gsm(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl"), read_jsonl(real_data / "gsm8k/test.jsonl")


def cli_json(run_cli, *args, code=0) -> dict:
    got, out, err = run_cli(*map(str, args), "--json", "-", "--quiet", timeout=300)
    assert got == code and "Traceback" not in err, err
    return json.loads(out)


def leak_pair(train, test, n_a=400, n_b=60):
    a = [{"id": f"tr-{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(train[:n_a])]
    b = [{"id": f"te-{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(test[:n_b])]
    return a, b


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


def test_leak_gate_ignores_shared_multiple_choice_letters(run_cli, tmp_path):
    """MMLU-style items (real sociology questions, answers "A"-"D"): every B record shares an answer
    with A by chance, and none shares a question. --fail-on-overlap passes and REPORT.md shows them
    as answer-only; three A questions planted in B fail it, with exactly those three as text leaks."""
    questions = [json.loads(x)["question"] for x in gzip.open(REPHRASED / "sociology_questions.jsonl.gz", "rt",
                                                              encoding="utf-8")]
    rows = [{"question": q, "answer": "ABCD"[i % 4]} for i, q in enumerate(questions)]
    a_rows, b_rows = rows[:30], rows[30:]
    write_jsonl(tmp_path / "a.jsonl", a_rows)
    write_jsonl(tmp_path / "b.jsonl", b_rows)
    ident, ans, _, near = leak_reference(a_rows, b_rows, "question", "question", "answer", norm_default)
    assert (len(ident | near), len(ans)) == (0, 30)       # the premise, from the reference
    code, out, err = run_cli("leak", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--fail-on-overlap",
                             "--out-dir", tmp_path / "o", "--quiet")
    assert code == 0, err
    summary = json.loads((tmp_path / "o/summary.json").read_text())
    assert [summary[k]["records"] for k in ("identical_answer", "any_leak", "answer_only", "text_leak")] == [30, 30, 30, 0]
    assert ("| of which a shared answer only (the text not identical, near or inside an A text) | 30 | 100.00% |"
            in (tmp_path / "o/REPORT.md").read_text())
    planted = b_rows[:27] + [dict(r, answer="D") for r in a_rows[5:8]]
    write_jsonl(tmp_path / "b2.jsonl", planted)
    ident, ans, _, near = leak_reference(a_rows, planted, "question", "question", "answer", norm_default)
    code, out, err = run_cli("leak", tmp_path / "a.jsonl", tmp_path / "b2.jsonl", "--fail-on-overlap",
                             "--json", "-", "--quiet")
    assert code == 1
    summary = json.loads(out)
    assert summary["text_leak"]["records"] == len(ident | near) == 3
    assert summary["answer_only"]["records"] == len(ans - ident - near) == 27


@pytest.mark.sweep
def test_gate_evidence_and_clean_agree_with_the_definitions_on_both_engines(gsm, run_cli, tmp_path):
    """From the review of several fields, conversations, the leak gate and evidence: A (3 shards, ids,
    answers; one B text copied 8 times across the shards) against B with
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
        # (a formula-like text opens as text: an apostrophe before it, tests/commands/test_formulas_in_csv_files...)
        assert (r["b_text"], r["a_text"], r["b_answer"], r["a_answer"], r["b_id"], r["a_id"]) == tuple(map(
            spreadsheet_text, (b[j]["question"], a[i]["question"], b[j]["answer"], a[i]["answer"], b[j]["id"],
                               a[i].get("id", ""))))
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
