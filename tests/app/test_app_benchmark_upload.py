"""A curator's own benchmark file, uploaded for the n-gram scan: exactly the planted items are found,
and several text fields named are read joined."""
from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

import real_data
from browser_support import TIMEOUT, download, upload_and_run, wait_audited, write_jsonl

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

pytest_plugins = ["app_server", "browser_support"]


@pytest.fixture(scope="module")
def gsm_texts_and_answers():
    rows = real_data.rows("gsm8k/train.jsonl")[:60]
    return [r["question"] for r in rows], [r["answer"] for r in rows]


def tokens(text: str) -> list:
    """The documented tokenizer: lowercased, every character that is neither a word character nor
    whitespace (and underscores) deleted, split on whitespace."""
    return re.sub(r"[^\w\s]|_", "", text.lower()).split()


def ngram_hits(items, corpus, n: int) -> set:
    """Benchmark items (their row numbers) sharing an n-word sequence with any corpus text."""
    grams = {tuple(t[i:i + n]) for t in map(tokens, corpus) for i in range(len(t) - n + 1)}
    return {j for j, x in enumerate(items)
            if any(tuple(tokens(x)[i:i + n]) in grams for i in range(len(tokens(x)) - n + 1))}


def box(pg, elem_id: str):
    return pg.locator(f"#{elem_id} input, #{elem_id} textarea").first


def check(pg, expected: str = r"Checked|Could not"):
    pg.locator("#leak-run").click()
    expect(pg.locator("#leak-status")).to_contain_text(re.compile(expected), timeout=TIMEOUT)


def upload(pg, elem_id: str, path: Path):
    """A file into the upload slot ``elem_id`` (the one it holds, if any, cleared first)."""
    clear = pg.locator(f"#{elem_id} button[aria-label='Clear']")
    if clear.count():
        clear.click()
    pg.locator(f"input[type=file]:has(+ #{elem_id})").set_input_files(str(path))
    expect(pg.locator(f"#{elem_id}")).to_contain_text(path.stem)     # (the page breaks the name at its suffix)


def csv_rows(path) -> list:
    return list(csv.DictReader(open(path, encoding="utf-8", newline="")))


def upload_and_run_fresh(pg, app_url, path, records):
    pg.goto(app_url + "/")
    wait_audited(pg, "7,473")
    upload_and_run(pg, path, records)


def test_an_uploaded_benchmark_with_several_text_fields_reads_them_joined(gsm_texts_and_answers, tmp_path):
    """From the round-5 review: The Space's benchmark file with its text named as several fields
    ("question,answer"): the
    scan reads each item's fields joined, but the evidence texts were read as one field named
    "question,answer" (None for every item), and the check failed with "blank in every item"."""
    from ui import handlers
    qs, ans = gsm_texts_and_answers
    items = [{"question": q, "answer": a} for q, a in zip(qs[:5], ans[:5])] + [{"question": qs[5]}]
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    side = handlers.bench_side("", str(path), "question,answer", None)
    expected = ["\n".join(r[f] for f in ("question", "answer") if r.get(f) is not None) for r in items]
    assert side["texts"] == expected and side["text"] == "question,answer" and side["upload"]


@pytest.mark.slow
@pytest.mark.browser
def test_an_uploaded_benchmark_finds_exactly_the_planted_items(page, app_url, tmp_path):
    """From the round-5 review of share links and benchmark uploads: GSM8K train questions with 5 HumanEval
    prompts planted in them (inside longer records); the
    benchmark is a CSV of the first 40 HumanEval items (multi-line prompts, quoted): its text field
    is guessed ('prompt'), and exactly the planted items are contaminated."""
    humaneval = real_data.rows("humaneval/HumanEval.jsonl")[:40]
    items = [r["prompt"] for r in humaneval]
    corpus = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/train.jsonl")[:300]]
    planted = {}
    for k, i in enumerate(range(20, 300, 60)):
        corpus[i] = {"question": "Complete this code:\n" + items[10 + k] + "\nThanks!", "answer": ""}
        planted[10 + k] = i
    a_path = write_jsonl(tmp_path / "corpus.jsonl", corpus)
    bench_path = tmp_path / "he_bench.csv"
    with open(bench_path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task_id", "prompt", "entry_point"])
        writer.writerows([r["task_id"], r["prompt"], r["entry_point"]] for r in humaneval)

    upload_and_run_fresh(page, app_url, a_path, len(corpus))
    page.get_by_role("tab", name="Leakage", exact=True).click()
    upload(page, "bench-upload", bench_path)
    check(page)
    expect(page.locator("#leak-status")).to_contain_text("Checked contamination.")
    contam = page.locator("#contam-summary")
    expect(contam).to_contain_text("Contamination: is he_bench.csv inside A?")
    expect(contam).to_contain_text(f"Benchmark he_bench.csv: {len(items)} items")
    n = int(re.search(r"shares a (\d+)-token sequence", contam.inner_text()).group(1))
    truth = ngram_hits(items, [r["question"] for r in corpus], n)
    assert truth == set(planted)                      # the ground truth is the planted set
    expect(contam).to_contain_text(f"share an n-gram with A (contaminated) {len(planted)} (")
    rows = csv_rows(download(page, "dl-contam"))
    assert {(int(r["benchmark_row"]), int(r["corpus_row"])) for r in rows} == set(planted.items())
    assert all(r["benchmark_text"] == items[int(r["benchmark_row"])] for r in rows)
    kept = [json.loads(line) for line in Path(download(page, "dl-decontam")).read_text("utf-8").splitlines()]
    assert kept == [r for i, r in enumerate(corpus) if i not in set(planted.values())]
    # A named text field that is not there, then an n-gram size out of range: clear messages.
    box(page, "bench-text").fill("question")
    check(page, "Could not")
    expect(page.locator("#leak-status")).to_contain_text("The text field 'question' is in no record")
    expect(page.locator("#leak-status")).to_contain_text("task_id, prompt, entry_point")
    box(page, "bench-text").fill("prompt")
    box(page, "ngram").fill("99")
    check(page, "Could not")
    expect(page.locator("#leak-status")).to_contain_text("N-gram size '99' is not a whole number from 1 to 64")
    box(page, "ngram").fill("auto")
    # A file with no text field, then an empty file
    numbers = write_jsonl(tmp_path / "numbers.jsonl", [{"a": i, "b": i * 2} for i in range(5)])
    upload(page, "bench-upload", numbers)
    box(page, "bench-text").fill("")
    check(page, "Could not")
    expect(page.locator("#leak-status")).to_contain_text("numbers.jsonl: no text field could be guessed")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    upload(page, "bench-upload", empty)
    check(page, "Could not")
    expect(page.locator("#leak-status")).to_contain_text("empty.jsonl: no records found")
    expect(contam).to_have_text("")
    assert page.evaluate("window.__xss_hits.slice()") == []
