"""Evidence a person can work through: the leaking B records and the contaminated benchmark items
are paged with their totals, the leak summary's rows are its filters (each count is the length of
its list), both lists are searchable, contamination items show their coverage and sort by it, and
copied items are told apart from items that only share a phrase. Every file is in Downloads with
its row count, and a leakage or contamination check reports progress at every step.

Data: 400 GSM8K train questions as A with 60 GSM8K test questions planted (40 verbatim, 20 with a
word changed) and 6 records sharing only a 16-word run with another test question; B = the first
200 GSM8K test questions. Expected figures are counted here from the rows."""
from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

import real_data
from ui import evidence, handlers

BASE = "http://localhost/"


def text_of(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def tokens(text: str) -> list:
    return re.sub(r"[^\w\s]|_", "", text.lower()).split()


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows = [{"question": r["question"], "answer": r["answer"]} for r in train[:400]]
    for k in range(40):
        a_rows[5 + 9 * k] = {"question": test[k]["question"], "answer": test[k]["answer"]}
    for k in range(40, 60):
        words = test[k]["question"].split()
        words[len(words) // 2] = "banana"
        a_rows[7 + 9 * (k - 40)] = {"question": " ".join(words), "answer": test[k]["answer"]}
    long_items = [i for i in range(200, 400) if len(tokens(test[i]["question"])) >= 45][:6]
    for k, i in enumerate(long_items):
        phrase = " ".join(test[i]["question"].split()[10:26])
        a_rows[380 + k] = {"question": f"Zebra quilts jump {k} times. {phrase} Then violet kites dance.",
                           "answer": "0"}
    b_rows = [{"question": r["question"], "answer": r["answer"]} for r in test[:200]]
    folder = tmp_path_factory.mktemp("evidence")
    a, b = folder / "a.jsonl", folder / "b.jsonl"
    for path, rows in ((a, a_rows), (b, b_rows)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    view = handlers.run("upload:a.jsonl", "", "", "question", "answer", "", [], 0.7, None, str(a), None,
                        "upload:a.jsonl", BASE)
    steps = []
    got = handlers.leak_check(view["state"], "", "", "", "", str(b), False, "gsm8k", "",
                              progress=lambda f, text: steps.append((f, text)), ngram="13")
    assert got["leak_status"]["elem_classes"] == ["ok"], got["leak_status"]
    return {"got": got, "a": a_rows, "b": b_rows, "test": test, "steps": steps, "phrase_items": long_items}


def test_leak_evidence_is_paged_with_totals_and_the_summary_rows_filter_it(checked):
    got, st = checked["got"], checked["got"]["state"]
    evidence_csv = list(csv.DictReader(open(got["dl_evidence"]["value"], encoding="utf-8", newline="")))
    total = len(evidence_csv)
    assert total >= 40
    page = text_of(got["leak_evidence"])
    assert f"Showing 1–10 of {total} leaking B records" in page
    assert page.count("B row") == 10                               # one page, not every record at once
    summary = text_of(got["leak_md"])
    for key, (label, test) in evidence.LEAK_KINDS.items():
        n = sum(test(tuple(r["b_kinds"].split("+"))) for r in evidence_csv)
        if key in ("identical_answer", "identical_both"):
            pass
        suffix = r"(?: \(Jaccard ≥ 0\.7\)| \(≥ 70% of its shingles\))?"
        shown = re.search(re.escape(label) + suffix + r" ([\d,]+) \(", summary)
        assert shown and int(shown.group(1).replace(",", "")) == n, (key, n)
        if not n:
            continue
        listed = handlers.evidence_event(st, "leak", "kind", key)
        assert f"of {n} leaking B records" in text_of(listed["leak_evidence"]) or n == total
        assert "aria-pressed='true'" in listed["leak_md"]
    # every page, one after the other, reaches every record once
    rows, view = [], st
    for k in range(-(-total // 10)):
        out = handlers.evidence_event(view, "leak", "page", k)
        view = out["state"]
        rows += [int(x) for x in re.findall(r"B row <b>(\d+)</b>", out["leak_evidence"])]
    assert sorted(rows) == sorted(int(r["b_row"]) for r in evidence_csv)
    # search
    word = checked["b"][3]["question"].split()[6]
    found = handlers.evidence_event(st, "leak", search=word)
    expected = sum(word.lower() in (r["b_text"] + r["a_text"] + r["b_answer"] + r["a_answer"]).lower()
                   for r in evidence_csv)
    assert f"of {expected} leaking B records" in text_of(found["leak_evidence"]) or expected == 0


def test_contamination_items_show_their_coverage_and_copies_come_apart_from_phrases(checked):
    got, st = checked["got"], checked["got"]["state"]
    rows = list(csv.DictReader(open(got["dl_contam"]["value"], encoding="utf-8", newline="")))
    items = {int(r["benchmark_row"]) for r in rows}
    copied_truth = set(range(40))
    assert copied_truth <= items and set(checked["phrase_items"]) <= items
    summary = got["contam_md"]
    copied_n = int(re.search(r"of which look copied[^|]*\| ([\d,]+)", summary).group(1))
    phrase_n = int(re.search(r"of which only share a phrase[^|]*\| ([\d,]+)", summary).group(1))
    assert copied_n + phrase_n == len(items) and copied_n >= 40
    choices = dict((v, k) for k, v in got["contam_kind"]["choices"])
    assert choices["copied"] == f"look copied ({copied_n:,} items)"
    copied = handlers.evidence_event(st, "contam", "kind", "copied")
    shown = copied["contam_evidence"]
    assert "shares a phrase" not in shown and shown.count("looks copied") == 10
    phrase = handlers.evidence_event(st, "contam", "kind", "phrase")
    assert f"of {phrase_n} benchmark item–record matches" in text_of(phrase["contam_evidence"])
    rows_shown = [int(x) for x in re.findall(r"benchmark row <b>(\d+)</b>", phrase["contam_evidence"])]
    assert set(rows_shown) <= set(checked["phrase_items"]) | (items - copied_truth - set(range(40, 60)))
    coverages = [int(x) for x in re.findall(r"coverage <b>(\d+)%</b>", got["contam_evidence"])]
    assert coverages == sorted(coverages, reverse=True) and coverages[0] == 100     # sorted by coverage
    in_order = handlers.evidence_event(st, "contam", sort="row")
    firsts = [int(x) for x in re.findall(r"benchmark row <b>(\d+)</b>", in_order["contam_evidence"])]
    assert firsts == sorted(firsts)
    # The headline counts the copied items and the leaking records.
    assert f"<b>{copied_n:,}</b> of 1,319 items look copied" in got["headline"]


def test_every_file_is_in_downloads_with_its_row_count(checked):
    got = checked["got"]
    evidence_rows = list(csv.DictReader(open(got["dl_evidence"]["value"], encoding="utf-8", newline="")))
    assert got["dl_evidence"]["label"] == f"leak_evidence.csv · {len(evidence_rows)} leaking records"
    clean = [line for line in Path(got["dl_clean"]["value"]).read_text("utf-8").split("\n") if line.strip()]
    assert got["dl_clean"]["label"] == f"clean_b.jsonl · {len(clean)} of {len(checked['b'])} B records"
    contam = list(csv.DictReader(open(got["dl_contam"]["value"], encoding="utf-8", newline="")))
    assert got["dl_contam"]["label"] == f"contamination_evidence.csv · {len(contam)} matches"
    kept = [line for line in Path(got["dl_decontam"]["value"]).read_text("utf-8").split("\n") if line.strip()]
    assert got["dl_decontam"]["label"].endswith(f"· {len(kept)} of {len(checked['a'])} records")


def test_a_check_reports_progress_at_every_step(checked):
    steps = checked["steps"]
    fractions = [f for f, _ in steps]
    assert fractions == sorted(fractions) and fractions[-1] >= 0.9
    texts = [t for _, t in steps]
    for step in ("reading B", "leakage: ", "writing the leak evidence", "contamination: indexing",
                 "contamination: scanning", "contamination: writing the evidence"):
        assert any(t.startswith(step) for t in texts), (step, texts)
