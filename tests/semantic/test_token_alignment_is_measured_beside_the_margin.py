"""Token alignment (BERTScore-style, auditor.semantic_align), measured for issue 31 item 2 as a
second score beside the margin and not adopted (BENCHMARKS.md, semantic pass). Real data: the
vendored GSM8K test slice (row i of the rephrases rephrases question i) planted among real GSM8K
train questions. Checked: it is off by default and never changes the decision; on, each aligned
pair's score equals its definition computed here from the model's token vectors and an idf counted
here over the corpus; a copy aligns fully; the planted rephrases align higher than the distinct
same-task best matches do (the direction the score was meant to capture)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from auditor import load, semantic_model
from auditor.normalize import fold
from auditor.semantic import ALIGN_FROM, COSINE_FLOOR, semantic_search
import real_data

texts = real_data.semantic_texts


@pytest.fixture(scope="module")
def planted():
    """(items, corpus, {corpus row: item row}): 60 GSM8K test questions; 300 GSM8K train questions,
    then 20 rephrases (items 0-19) and 5 copies (items 20-24)."""
    items = texts("gsm8k_questions.jsonl.gz", "question")
    rephrases = texts("gsm8k_rephrased.jsonl.gz", "text")
    train = [str(r["question"]) for r in load("example:gsm8k", "main", "train").rows[:300]]
    corpus = train + rephrases[:20] + items[20:25]
    truth = {300 + i: i for i in range(25)}
    return items, corpus, truth


@pytest.fixture(scope="module")
def results(planted):
    items, corpus, _ = planted
    return semantic_search(items, corpus), semantic_search(items, corpus, align=True)


@pytest.mark.slow
def test_off_by_default_and_the_decision_is_the_same_either_way(results):
    plain, aligned = results
    assert plain.alignment == () and all("alignment" not in it for it in plain.summary()["items"])
    strip = [{k: v for k, v in it.items() if k != "alignment"} for it in aligned.flagged()]
    assert strip == plain.flagged()
    assert all(0.0 <= it["alignment"] <= 1.0 for it in aligned.flagged())
    # measured exactly where the best match reaches ALIGN_FROM and the cosine floor
    for row, nb in enumerate(aligned.neighbours):
        measured = bool(nb) and nb[0][1] >= COSINE_FLOOR and aligned.margin[row] >= ALIGN_FROM
        assert (aligned.alignment[row] is not None) == measured


@pytest.mark.slow
def test_each_score_is_its_definition(planted, results):
    """Recall and precision of the pair's token vectors (special tokens left out), idf-weighted by
    ln((N + 1) / (df + 1)) + 1 with df counted here over the corpus texts; the larger one."""
    items, corpus, _ = planted
    _, aligned = results
    encoder = semantic_model.load_model()
    tok = encoder.tokenizer
    df: dict = {}
    for text in corpus:
        e = tok.encode(fold(text))
        for t in {i for part in [e, *e.overflowing] for i in part.ids}:
            df[t] = df.get(t, 0) + 1

    def vectors(text):
        e = tok.encode(fold(text))
        assert not e.overflowing                                   # question-length: one window
        ids = np.array([e.ids])
        hidden = encoder.token_outputs(ids, np.ones_like(ids))[0]
        keep = ~np.array(e.special_tokens_mask, bool)
        v = hidden[keep]
        return v / np.linalg.norm(v, axis=1, keepdims=True), np.array(e.ids)[keep]

    checked = 0
    for row, a in enumerate(aligned.alignment):
        if a is None or a == 1.0:
            continue
        va, ia = vectors(items[row])
        vb, ib = vectors(aligned.corpus_texts[aligned.neighbours[row][0][0]])
        w = lambda ids: np.array([math.log((len(corpus) + 1) / (df.get(int(t), 0) + 1)) + 1 for t in ids])  # noqa: E731
        s = va @ vb.T
        recall = (s.max(1) * w(ia)).sum() / w(ia).sum()
        precision = (s.max(0) * w(ib)).sum() / w(ib).sum()
        assert a == pytest.approx(max(recall, precision), abs=1e-4)
        checked += 1
    assert checked >= 20


@pytest.mark.slow
def test_copies_align_fully_and_rephrases_above_distinct_same_task_matches(planted, results):
    _, _, truth = planted
    _, aligned = results
    own = {item: row for row, item in truth.items()}
    copies = [aligned.alignment[i] for i in range(20, 25)]
    assert copies == [1.0] * 5
    found = [i for i in range(20) if aligned.neighbours[i][0][0] == own[i] and aligned.alignment[i] is not None]
    assert len(found) >= 18
    rephrased = np.array([aligned.alignment[i] for i in found])
    others = np.array([a for i, a in enumerate(aligned.alignment) if i >= 25 and a is not None])
    assert others.size >= 5                       # distinct GSM8K problems whose best match reaches ALIGN_FROM
    assert np.median(rephrased) > np.median(others)
