"""Texts made only of zero-width characters and direction marks have no content: they are
degenerate (no text), not 12 exact-duplicate groups and a 60-record near-duplicate cluster as the
hostile review found; they take no part in leak matches, and the contamination scan counts them as
records with no words."""
from __future__ import annotations

import json

import auditor
from auditor.contamination import contamination
from auditor.leakage import leak

MARKS = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u202a", "\u202c", "\u2066",
         "\u2069", "\u00ad"]


def _rows():
    hidden = [MARKS[i % len(MARKS)] * (1 + i // len(MARKS)) for i in range(60)]
    real = [" ".join(f"word{i}x{j}" for j in range(8)) for i in range(40)]     # no two share a word
    return hidden, real


def test_hidden_only_texts_are_degenerate_not_duplicates(tmp_path):
    hidden, real = _rows()
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({"question": t, "answer": "1"}) + "\n" for t in hidden + real))
    result = auditor.scan(str(path), text="question", answer="answer")
    summary = result.summary()
    assert summary["degenerate"]["by_role"]["text"] == 60
    for name, groups in summary["exact_duplicates_by_normalizer"]["text"].items():
        assert groups["groups"] == 0, name
    near = result.near_duplicates(0.5)
    assert near.records_in_clusters == 0 and near.largest_cluster == 0


def test_hidden_only_texts_match_nothing_across_datasets(tmp_path):
    hidden, real = _rows()
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"question": t}) + "\n" for t in hidden[:30] + real[:20]))
    b.write_text("".join(json.dumps({"question": t}) + "\n" for t in hidden[30:] + real[20:]))
    leaked = leak(str(a), str(b), text="question")
    assert not leaked.matches
    assert leaked.summary()["b"]["no_text"] == 30
    scanned = contamination(str(a), str(b), corpus_text="question", benchmark_text="question", ngram=5)
    assert scanned.corpus_no_words == 30 and not scanned.items
