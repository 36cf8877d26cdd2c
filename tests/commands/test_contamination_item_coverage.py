"""Contamination verdicts that read right: each contaminated item's coverage (the share of its words
that lie in one of its n-grams found in the corpus) tells a copied item, even with a word changed,
from one that only shares a stock phrase, in summary.json (additive keys: "contaminated" stays the
GPT-3 count) and REPORT.md.

The corpus: 150 GSM8K train questions, 6 GSM8K test questions copied whole (inside longer records),
6 copied with one word in the middle changed, and 6 records that share only a 16-word run with
another test question, inside text of their own. Coverage is counted here with the documented
tokenizer, independently of the tool."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import real_data  # noqa: E402
from conftest import run_cli  # noqa: E402

N = 13


def tokens(text: str) -> list:
    return re.sub(r"[^\w\s]|_", "", text.lower()).split()


def coverage(item: str, corpus: list) -> float:
    grams = {tuple(t[i:i + N]) for t in map(tokens, corpus) for i in range(len(t) - N + 1)}
    words = tokens(item)
    covered = set()
    for i in range(len(words) - N + 1):
        if tuple(words[i:i + N]) in grams:
            covered.update(range(i, i + N))
    return len(covered) / len(words)


@pytest.mark.slow
def test_copied_items_are_told_apart_from_stock_phrase_sharers(tmp_path):
    test = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    corpus = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")[:150]]
    long_items = [i for i, q in enumerate(test) if len(tokens(q)) >= 45][:12]
    copied, sharers = long_items[:6], long_items[6:]
    for k, i in enumerate(copied):
        corpus[10 + 20 * k] = "Practice problem. " + test[i] + " Show your work."
    edited = [i for i, q in enumerate(test) if 28 <= len(tokens(q)) <= 34][:6]     # short: few 13-grams
    for k, i in enumerate(edited):
        words = test[i].split()
        words[len(words) // 2] = "zebra"
        corpus[12 + 20 * k] = " ".join(words)
    for k, i in enumerate(sharers):
        words = test[i].split()
        phrase = " ".join(words[10:26])          # 16 words from the middle of another problem
        corpus[15 + 20 * k] = f"Zebra quilts jump {k} times. {phrase} Then violet oranges dance near {k} kites."
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus), encoding="utf-8")

    truth = {i: coverage(test[i], corpus) for i in range(len(test))}
    found = {i: c for i, c in truth.items() if c > 0}
    assert set(copied) | set(sharers) <= set(found)
    assert all(truth[i] == 1.0 for i in copied) and all(0 < truth[i] < 0.5 for i in sharers)
    assert all(0.9 < truth[i] < 1.0 for i in edited)            # a copy with one word changed is a copy

    code, out, err = run_cli("contamination", str(path), "--benchmark", "gsm8k", "--ngram", str(N), "--json", "-",
                             "--quiet")
    assert code == 0, err
    s = json.loads(out)
    assert s["contaminated"]["records"] == len(found)                 # the GPT-3 count, unchanged
    items = {it["benchmark_row"]: it for it in s["items"]}
    assert set(items) == set(found)
    for i, it in items.items():
        assert it["coverage"] == round(truth[i], 4)
        assert it["verdict"] == ("copied" if truth[i] >= 0.5 else "phrase")
    n_copied = sum(c >= 0.5 for c in found.values())
    assert s["copied"] == {"records": n_copied, "fraction": round(n_copied / 1319, 6), "min_coverage": 0.5}
    assert s["phrase_only"]["records"] == len(found) - n_copied
    assert {items[i]["verdict"] for i in copied + edited} == {"copied"}
    assert {items[i]["verdict"] for i in sharers} == {"phrase"}

    out_dir = tmp_path / "out"
    code, _, err = run_cli("contamination", str(path), "--benchmark", "gsm8k", "--ngram", str(N), "--out-dir",
                           str(out_dir), "--quiet")
    assert code == 0, err
    md = (out_dir / "REPORT.md").read_text(encoding="utf-8")
    assert f"Of these, **{n_copied:,} look copied**" in md
    assert f"**{len(found) - n_copied:,} only share a phrase**" in md
    rows = re.findall(r"\n\| (\d+) \| [^|]+ \| \d+ of \d+ \| \d+ \| (\d+)% \| (copied|shares a phrase) \|", md)
    assert {int(r): (int(c), v) for r, c, v in rows} == {
        i: (round(100 * truth[i]), "copied" if truth[i] >= 0.5 else "shares a phrase") for i in found}
