"""Correctness sweep on real benchmark splits (Spider, MBPP full and sanitized, GSM8K, HumanEval and
LLM rephrasings of GSM8K test) against a reference written here from the documented definitions
alone (README "How it works", the docstrings of auditor/shingles.py and auditor/normalize.py):
plain Python sets and dicts, pandas value_counts and a scipy sparse product over a shingle
vocabulary built here. No auditor function is used to compute an expected figure; roles are given
explicitly only where the test checks the guess separately.

Data: the repository's bundled examples and tests/data (the ``real_data`` fixture), nothing else.
"""
from __future__ import annotations

import gzip
import io
import json
import random
import re
import tokenize
import unicodedata
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import auditor

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
REPHRASED = Path(__file__).resolve().parent / "data" / "semantic"      # GSM8K test rows 0-59, rephrased


from definitions import (all_pairs, at_least, components, contamination_reference, curve,  # noqa: F401
                         duplicate_figures, near_hits, ngrams, norm_default, norm_python, norm_sql,
                         read_jsonl, shingles, words, write_jsonl)


def mbpp_splits(real_data, tmp_path):
    """MBPP's train (tasks 601-974) and test (11-510) split out of the full file."""
    rows = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    train = [r for r in rows if 601 <= r["task_id"] <= 974]
    test = [r for r in rows if 11 <= r["task_id"] <= 510]
    write_jsonl(tmp_path / "mbpp_train.jsonl", train)
    write_jsonl(tmp_path / "mbpp_test.jsonl", test)
    return tmp_path / "mbpp_train.jsonl", tmp_path / "mbpp_test.jsonl", train, test


def cli_json(run_cli, *args) -> dict:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet")
    assert code == 0, err
    return json.loads(out)


# ----------------------------------------------------------------- scan

def figures(d: dict) -> tuple:
    return d["groups"], d["records"], d["redundant"]


def check_scan(summary: dict, rows: list[dict], text: str, answer: str | None, answer_norm, group: str | None):
    texts = [r.get(text) or "" for r in rows]
    by = summary["exact_duplicates_by_normalizer"]
    assert figures(by["text"]["exact"]) == duplicate_figures(t if t.strip() else None for t in texts)
    assert figures(by["text"]["default"]) == duplicate_figures(map(norm_default, texts))
    if answer:
        answers = [r.get(answer) or "" for r in rows]
        assert figures(by["answer"]["exact"]) == duplicate_figures(a if a.strip() else None for a in answers)
        assert figures(by["answer"]["default"]) == duplicate_figures(map(norm_default, answers))
        keyed = [answer_norm(a) for a in answers]
        assert figures(summary["exact_duplicates"]["answer"]) == duplicate_figures(keyed)
        assert figures(summary["exact_duplicates"]["text_and_answer"]) == duplicate_figures(
            (t, a) if t and a else None for t, a in zip(map(norm_default, texts), keyed))
        assert summary["degenerate"]["by_role"]["answer"] == sum(not a.strip() for a in answers)
    whole = [json.dumps({k: norm_default(v) if isinstance(v, str) else v for k, v in r.items()}, sort_keys=True)
             for r in rows]
    assert figures(summary["exact_duplicates"]["record"]) == duplicate_figures(whole)
    assert summary["degenerate"]["by_role"]["text"] == sum(not t.strip() for t in texts)
    assert summary["schema"]["issues"] == []
    assert {f["name"]: f["present"] for f in summary["schema"]["fields"]} == dict(
        Counter(k for r in rows for k in r))

    expected = curve(texts)
    assert [(p["threshold"], p["pairs"], p["clusters"]) for p in summary["curve"]] == \
        [(t, *expected[t][:2]) for t in THRESHOLDS]
    for p in summary["curve"]:
        assert p["clusters_per_1000"] == pytest.approx(1000 * expected[p["threshold"]][1] / len(rows), abs=1e-4)
    near = summary["near_duplicates"]
    assert (near["pairs"], near["clusters"], near["records_in_clusters"], near["largest_cluster"]) == expected[0.7]
    assert near["identical_clusters"] + near["variant_clusters"] == near["clusters"]

    if group:
        counts = pd.DataFrame(rows)[group].value_counts()
        share = counts / len(rows)
        conc = summary["concentration"]
        assert conc["field"] == group and conc["groups"] == len(counts)
        assert conc["hhi"] == pytest.approx(float((share ** 2).sum()), abs=1e-6)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        assert [(g["value"], g["records"]) for g in conc["top"]] == ranked
        assert conc["largest"]["share"] == pytest.approx(ranked[0][1] / len(rows), abs=1e-4)
    return expected


def test_scan_spider_train_cli_matches_brute_force(real_data, run_cli):
    """Spider train through the CLI: every exact-duplicate figure per normaliser, the whole curve
    and the db_id concentration agree with the reference; roles are guessed and said so."""
    rows = read_jsonl(real_data / "spider/train_spider.jsonl")
    summary = cli_json(run_cli, "scan", real_data / "spider/train_spider.jsonl")
    assert summary["roles"]["text"] == "question" and summary["roles"]["answer"] == "query"
    assert summary["roles"]["group"] == "db_id"
    assert set(summary["roles"]["guessed"]) >= {"text", "answer", "group"}
    assert summary["settings"]["answer_normalizer"] == "code"
    expected = check_scan(summary, rows, "question", "query", norm_sql, "db_id")
    # Spider is known to repeat questions and (by design, two questions per query) SQL
    assert expected[0.7][0] > 50 and summary["exact_duplicates"]["answer"]["records"] > 5000

    # label conflicts: one normalised question asked of different databases
    conflicts = auditor.scan(str(real_data / "spider/train_spider.jsonl"), labels=["db_id"]).summary()["label_conflicts"]
    by_text = defaultdict(list)
    for i, r in enumerate(rows):
        by_text[norm_default(r["question"])].append(i)
    mixed = [g for g in by_text.values() if len({rows[i]["db_id"] for i in g}) > 1]
    assert (conflicts["groups"], conflicts["records"]) == (len(mixed), sum(map(len, mixed))) and mixed
    assert all(sorted(g) in [sorted(m) for m in mixed] for g in conflicts["examples"])


@pytest.mark.parametrize("rel,text,group", [("mbpp/mbpp.jsonl", "text", None),
                                            ("mbpp/sanitized-mbpp.jsonl", "prompt", "source_file")])
def test_scan_mbpp_library_matches_brute_force(real_data, rel, text, group):
    """MBPP full and sanitized through ``auditor.scan`` with guessed roles (text, code, and the
    sanitized set's notebook as group); re-thresholding at 0.5 agrees with brute force too."""
    rows = read_jsonl(real_data / rel)
    result = auditor.scan(str(real_data / rel))
    summary = result.summary()
    assert (summary["roles"]["text"], summary["roles"]["answer"], summary["roles"]["group"]) == (text, "code", group)
    assert summary["roles"]["id"] == "task_id"
    expected = check_scan(summary, rows, text, "code", norm_python, group)
    at_half = result.summary(0.5)["near_duplicates"]
    assert (at_half["pairs"], at_half["clusters"], at_half["records_in_clusters"],
            at_half["largest_cluster"]) == expected[0.5]


def test_scan_gsm8k_socratic_and_humaneval(real_data):
    """Sets with almost no redundancy: GSM8K socratic test and HumanEval (code answers)."""
    rows = read_jsonl(real_data / "gsm8k/test_socratic.jsonl")
    summary = auditor.scan(str(real_data / "gsm8k/test_socratic.jsonl")).summary()
    assert (summary["roles"]["text"], summary["roles"]["answer"]) == ("question", "answer")
    check_scan(summary, rows, "question", "answer", norm_default, None)
    rows = read_jsonl(real_data / "humaneval/HumanEval.jsonl")
    summary = auditor.scan(str(real_data / "humaneval/HumanEval.jsonl")).summary()
    assert (summary["roles"]["text"], summary["roles"]["answer"]) == ("prompt", "canonical_solution")
    check_scan(summary, rows, "prompt", "canonical_solution", norm_python, None)


# ----------------------------------------------------------------- leak and clean

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


LEAK_KEYS = ("identical_text", "identical_answer", "identical_both", "near_duplicate", "any_leak", "answer_only",
             "text_leak")


def test_leak_between_real_splits(real_data, run_cli, tmp_path):
    """Spider train vs dev, MBPP train vs test and GSM8K train vs test: each figure is the count of
    evaluation records the reference finds; shared db_ids are the set intersection."""
    mbpp_train, mbpp_test, train, test = mbpp_splits(real_data, tmp_path)
    cases = [(real_data / "spider/train_spider.jsonl", real_data / "spider/dev.jsonl", "question", "query", norm_sql),
             (mbpp_train, mbpp_test, "text", "code", norm_python),
             (real_data / "gsm8k/train.jsonl", real_data / "gsm8k/test.jsonl", "question", "answer", norm_default)]
    seen = []
    for a, b, text, answer, answer_norm in cases:
        a_rows, b_rows = read_jsonl(a), read_jsonl(b)
        ident, ans, both, near = leak_reference(a_rows, b_rows, text, text, answer, answer_norm)
        summary = cli_json(run_cli, "leak", a, b)
        assert tuple(summary[k]["records"] for k in LEAK_KEYS) == (
            len(ident), len(ans), len(both), len(near), len(ident | ans | near), len(ans - ident - near),
            len(ident | near)), a.name
        assert summary["any_leak"]["fraction"] == pytest.approx(len(ident | ans | near) / len(b_rows), abs=1e-6)
        if "spider" in str(a):
            groups = sorted({r["db_id"] for r in a_rows} & {r["db_id"] for r in b_rows})
            assert summary["shared_groups"] == {"count": len(groups), "values": groups}
        seen.append(len(ident | near))
    assert seen[0] > 0 and seen[1] > 0          # Spider and MBPP do leak; the test would notice zeros


def test_leak_rephrased_gsm8k_is_not_lexical(real_data, run_cli, tmp_path):
    """LLM rephrasings of GSM8K test items (different words, same problems) against the originals:
    the reference finds no identical or near-duplicate text, and neither does the auditor, while
    the originals against themselves (a planted copy of each) all leak."""
    rephrased = [json.loads(x) for x in gzip.open(REPHRASED / "gsm8k_rephrased.jsonl.gz", "rt", encoding="utf-8")]
    originals = [json.loads(x) for x in gzip.open(REPHRASED / "gsm8k_questions.jsonl.gz", "rt", encoding="utf-8")]
    write_jsonl(tmp_path / "rephrased.jsonl", rephrased)
    write_jsonl(tmp_path / "originals.jsonl", originals)
    ident, _, _, near = leak_reference(rephrased, originals, "text", "question", None, None)
    summary = cli_json(run_cli, "leak", tmp_path / "rephrased.jsonl", tmp_path / "originals.jsonl")
    assert (summary["a"]["roles"]["text"], summary["b"]["roles"]["text"]) == ("text", "question")
    assert (summary["identical_text"]["records"], summary["near_duplicate"]["records"]) == (len(ident), len(near)) \
        == (0, 0)
    mixed = rephrased[:30] + originals[30:]
    write_jsonl(tmp_path / "mixed.jsonl", [{"text": r.get("text") or r.get("question")} for r in mixed])
    summary = cli_json(run_cli, "leak", tmp_path / "mixed.jsonl", tmp_path / "originals.jsonl")
    assert summary["identical_text"]["records"] == 30 and summary["any_leak"]["records"] == 30


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
    assert "| of which a shared answer only, no shared text | 30 | 100.00% |" in (tmp_path / "o/REPORT.md").read_text()
    planted = b_rows[:27] + [dict(r, answer="D") for r in a_rows[5:8]]
    write_jsonl(tmp_path / "b2.jsonl", planted)
    ident, ans, _, near = leak_reference(a_rows, planted, "question", "question", "answer", norm_default)
    code, out, err = run_cli("leak", tmp_path / "a.jsonl", tmp_path / "b2.jsonl", "--fail-on-overlap",
                             "--json", "-", "--quiet")
    assert code == 1
    summary = json.loads(out)
    assert summary["text_leak"]["records"] == len(ident | near) == 3
    assert summary["answer_only"]["records"] == len(ans - ident - near) == 27


def test_clean_drops_exactly_the_leaked_rows(real_data, run_cli, tmp_path):
    """``clean``: dropped = B rows whose normalised text is an A text, plus (--near) rows with an A
    text at Jaccard >= 0.7, plus (--dedup) later copies of a B text; the kept file is the other
    rows unchanged and in order; by_reason counts reasons by kind."""
    mbpp_train, mbpp_test, train, test = mbpp_splits(real_data, tmp_path)
    cases = [(real_data / "spider/train_spider.jsonl", real_data / "spider/dev.jsonl", "question"),
             (mbpp_train, mbpp_test, "text")]
    for a, b, text in cases:
        a_rows, b_rows = read_jsonl(a), read_jsonl(b)
        ident, _, _, near = leak_reference(a_rows, b_rows, text, text, None, None)
        first: dict = {}
        copies = set()
        for j, r in enumerate(b_rows):
            key = norm_default(r[text])
            if key in first:
                copies.add(j)
            first.setdefault(key, j)
        for flags, expected in [((), ident), (("--near",), ident | near), (("--near", "--dedup"), ident | near | copies)]:
            out = tmp_path / f"clean_{b.stem}{''.join(flags)}.jsonl"
            code, _, err = run_cli("clean", b, "--against", a, *flags, "--out", out, "--quiet")
            assert code == 0, err
            report = json.loads(out.with_name(out.name + ".dropped.json").read_text())
            assert {d["row"] for d in report["dropped_rows"]} == expected, (b, flags)
            assert read_jsonl(out) == [r for j, r in enumerate(b_rows) if j not in expected]
            assert report["kept"] + report["dropped"] == report["records"] == len(b_rows)
            kinds = Counter("identical_text" if j in ident else "near_duplicate" if j in near
                            else "internal_duplicate" for j in expected)
            assert report["by_reason"] == dict(sorted(kinds.items())), (b, flags)
        assert near - ident                      # --near adds rows here; the comparison is not vacuous
    # the output is never the input
    code, _, err = run_cli("clean", mbpp_test, "--against", mbpp_train, "--out", mbpp_test, "--quiet")
    assert code == 2 and "Traceback" not in err
    assert read_jsonl(mbpp_test) == test


# ----------------------------------------------------------------- contamination

def test_contamination_finds_planted_items_at_their_rows(real_data, run_cli, tmp_path):
    """A corpus of GSM8K train problems with GSM8K test questions planted at known rows (whole, or
    only their last 15 words) and LLM rephrasings of other test questions: exactly the planted
    rows are reported, for exactly the planted items; the rephrasings are not (13-grams miss
    paraphrases); matched n-gram counts agree with the reference."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:2500]
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    rephrased = [json.loads(x)["text"] for x in gzip.open(REPHRASED / "gsm8k_rephrased.jsonl.gz", "rt",
                                                           encoding="utf-8")]
    corpus = [r["question"] + "\n" + r["answer"] for r in train]
    rng = random.Random(11)
    rows = rng.sample(range(len(corpus)), 16)
    planted = dict(zip(rows[:10], rng.sample(range(60, len(test)), 10)))          # whole questions
    partial = dict(zip(rows[10:12], rng.sample(range(60, len(test)), 2)))         # last 15 words
    reworded = dict(zip(rows[12:], range(4)))                                      # rephrasings of items 0-3
    for r, i in planted.items():
        corpus[r] = "Seen online: " + test[i]["question"] + " (answer below)"
    for r, i in partial.items():
        corpus[r] = "fragment " + " ".join(test[i]["question"].split()[-15:])
    for r, i in reworded.items():
        corpus[r] = rephrased[i]
    write_jsonl(tmp_path / "corpus.jsonl", [{"text": t} for t in corpus])

    summary = cli_json(run_cli, "contamination", tmp_path / "corpus.jsonl", "--benchmark", "gsm8k")
    lengths = [len(words(r["question"])) for r in test]
    assert summary["settings"]["ngram"] == int(min(13, max(8, np.percentile(lengths, 5))))
    n = summary["settings"]["ngram"]
    expected = contamination_reference(corpus, [r["question"] for r in test], n)
    got = {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"]) for it in summary["items"]}
    assert got == expected
    reported = {(r, i) for i, (rs, _, _) in got.items() for r in rs}
    planted_pairs = set({**planted, **partial}.items())
    # GSM8K train itself shares a few 13-grams with test (e.g. "a snowflake design some had a truck
    # design and some had a rose"): those are reported too, at rows nothing was planted in
    natural = {(r, i) for i, (rs, _, _) in contamination_reference(
        [r["question"] + "\n" + r["answer"] for r in train],
        [r["question"] for r in test], n).items() for r in rs if r not in rows}
    assert reported == planted_pairs | natural
    assert not set(reworded.values()) & set(got)
    assert summary["contaminated"]["records"] == len({i for _, i in planted_pairs | natural})
    assert summary["too_short"]["records"] == sum(length < n for length in lengths)


def test_contamination_mbpp_auto_ngram_and_too_short(real_data, run_cli, tmp_path):
    """MBPP test as the benchmark: N is the 5th percentile of its item lengths (clamped 8..13), the
    items shorter than N are counted, and a planted test item is found at its row while a planted
    item of another MBPP split (the prompt split, tasks 1-10) is not reported."""
    mbpp = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    test = [r for r in mbpp if 11 <= r["task_id"] <= 510]
    corpus = [r["question"] for r in read_jsonl(real_data / "gsm8k/train.jsonl")[:1500]]
    corpus[7] = corpus[7] + " " + test[490]["text"]
    corpus[9] = "x " + mbpp[0]["text"]                       # task 1: not in the test split
    write_jsonl(tmp_path / "corpus.jsonl", [{"text": t} for t in corpus])
    summary = cli_json(run_cli, "contamination", tmp_path / "corpus.jsonl", "--benchmark", "mbpp")
    lengths = [len(words(r["text"])) for r in test]
    n = int(min(13, max(8, np.percentile(lengths, 5))))
    assert summary["settings"]["ngram"] == n and summary["benchmark"]["records"] == len(test)
    assert summary["too_short"]["records"] == sum(length < n for length in lengths) > 0
    expected = contamination_reference(corpus, [r["text"] for r in test], n)
    assert {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"])
            for it in summary["items"]} == expected
    assert expected[490][0] == [7]
