"""Long texts are embedded window by window, never cut silently: a question at the end of a long
passage (the shape of MMLU US-history items) is found by its rephrase, and a rephrase inside a
long record is found by its question; the report counts the windowed texts. Real text only: GSM8K
test questions and their LLM rephrasings (tests/data/semantic, row i rephrases row i: the ground
truth) and GSM8K train solutions (the bundled example) as the passages."""
from __future__ import annotations

import re

import numpy as np
import pytest

from auditor import load, semantic, semantic_model
from auditor.semantic import semantic_search
import real_data

texts = real_data.semantic_texts


@pytest.fixture(scope="module")
def shaped():
    """(questions, rephrases, passages): 40 GSM8K test questions and their rephrases, and a
    ~250-word passage of real prose per question (GSM8K train solutions, calculator marks removed)."""
    questions = texts("gsm8k_questions.jsonl.gz", "question")[:40]
    rephrases = texts("gsm8k_rephrased.jsonl.gz", "text")[:40]
    solutions = [re.sub(r"<<[^>]*>>|####.*", "", str(r["answer"])).replace("\n", " ").strip()
                 for r in load("example:gsm8k", "main", "train").rows[:2000]]
    rng = np.random.default_rng(7)
    passages = []
    for _ in questions:
        parts = []
        while sum(len(p.split()) for p in parts) < 250:
            parts.append(solutions[int(rng.integers(len(solutions)))])
        passages.append(" ".join(parts))
    return questions, rephrases, passages


def own_hits(result) -> set:
    return {it["benchmark_row"] for it in result.flagged() if it["corpus_row"] == it["benchmark_row"]}


@pytest.mark.sweep
def test_a_question_after_a_long_passage_is_found_by_its_rephrase(shaped):
    questions, rephrases, passages = shaped
    items = [f"This question refers to the following information.\n{p}\n{q}" for p, q in zip(passages, questions)]
    encoder = semantic_model.load_model()
    lengths = [len(encoder.windows([t]).encodings) for t in items]
    assert min(lengths) > 1                                   # every item is longer than one window
    result = semantic_search(items, rephrases)
    assert result.windowed_benchmark == len(items) and result.truncated_benchmark == 0
    hits = own_hits(result)
    assert len(hits) >= 0.8 * len(items)                      # found by their own rephrase (the alignment)
    assert len(result.flagged()) - len(hits) <= 1             # and almost nothing else
    d = result.summary()
    assert d["benchmark"]["windowed"] == len(items) and d["benchmark"]["truncated"] == 0
    assert f"{len(items)} benchmark items are longer than the model's 256-token window: each was embedded as " \
           "overlapping windows" in result.markdown()


@pytest.mark.slow
def test_without_windows_the_same_items_are_missed(shaped, monkeypatch):
    """The same search cut to one window per text (what the pass did before): the question at the
    end is not embedded, so its rephrase is not found."""
    questions, rephrases, passages = shaped
    items = [f"This question refers to the following information.\n{p}\n{q}" for p, q in zip(passages, questions)]
    monkeypatch.setattr(semantic_model, "MAX_WINDOWS", 1)
    monkeypatch.setattr(semantic_model, "_CACHE", {})
    encoder = semantic_model.load_model()
    monkeypatch.setattr(semantic_model, "_CACHE", {encoder.name: semantic_model.Encoder(
        encoder.name, encoder.session, encoder.tokenizer, encoder.max_tokens, encoder.inputs, None)})
    cut = semantic_search(items, rephrases)
    assert cut.truncated_benchmark == len(items)              # counted, and said in the report
    assert "only their first 1 windows were embedded" in cut.markdown()
    assert len(own_hits(cut)) <= 0.3 * len(items)


@pytest.mark.sweep
def test_a_rephrase_inside_a_long_record_is_found_by_its_question(shaped):
    questions, rephrases, passages = shaped
    records = [f"{passages[(i + 1) % len(passages)]}\n{r}\n{p}" for i, (r, p) in enumerate(zip(rephrases, passages))]
    result = semantic_search(questions, records)
    assert result.windowed_corpus == len(records)
    assert len(own_hits(result)) >= 0.8 * len(questions)


@pytest.mark.slow
def test_a_text_beyond_the_window_limit_is_cut_and_counted(shaped):
    questions, rephrases, passages = shaped
    huge = " ".join(passages) * 3                             # far beyond MAX_WINDOWS windows
    result = semantic_search(questions[:5], rephrases[:5] + [huge])
    assert result.truncated_corpus == 1 and result.windowed_corpus == 1
    assert f"1 corpus records are longer than {semantic_model.MAX_WINDOWS} windows: only their first " \
           f"{semantic_model.MAX_WINDOWS} windows were embedded, their end was not checked." in result.markdown()
    assert result.summary()["corpus"]["truncated"] == 1
    assert semantic.MAX_WINDOWS == semantic_model.MAX_WINDOWS
