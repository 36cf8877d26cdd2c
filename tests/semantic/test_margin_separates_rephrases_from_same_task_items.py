"""The default decision on same-domain data: a fine-tuning file built for the benchmark's own task
(real GSM8K train questions) with a few of the benchmark's items planted in it, copied or
rephrased. The cosine alone flags nearly every item (distinct GSM8K problems score like
rephrases); the margin score flags the planted ones and few others. Ground truth: the planted
rows (rephrases from tests/data/semantic, row i rephrases GSM8K test row i). The margin itself is
checked against its definition computed here from a brute-force transformer product."""
from __future__ import annotations

import numpy as np
import pytest

from auditor import load, semantic, semantic_model
from auditor.semantic import semantic_search
from auditor.semantic_score import K_BACKGROUND, UNRELATED_COSINE
import real_data

texts = real_data.semantic_texts


@pytest.fixture(scope="module")
def planted():
    """(items, corpus, {corpus row: item row}): 60 GSM8K test questions; 800 GSM8K train questions
    with 10 of the items copied and 15 others rephrased, at seeded rows."""
    items = texts("gsm8k_questions.jsonl.gz", "question")
    rephrases = texts("gsm8k_rephrased.jsonl.gz", "text")
    train = [str(r["question"]) for r in load("example:gsm8k", "main", "train").rows[:800]]
    extra = [(items[i], i) for i in range(10)] + [(rephrases[i], i) for i in range(10, 25)]
    rng = np.random.default_rng(3)
    at = np.sort(rng.choice(len(train) + len(extra), len(extra), replace=False))
    corpus, truth, it = [], {}, iter(train)
    extra_it = iter(extra)
    for row in range(len(train) + len(extra)):
        if row in set(at.tolist()):
            text, item = next(extra_it)
            truth[row] = item
            corpus.append(text)
        else:
            corpus.append(next(it))
    return items, corpus, truth


@pytest.fixture(scope="module")
def result(planted):
    items, corpus, _ = planted
    return semantic_search(items, corpus)


@pytest.mark.slow
def test_the_planted_items_are_flagged_and_few_others(planted, result):
    items, _, truth = planted
    flagged = result.flagged()
    pairs = {(it["benchmark_row"], it["corpus_row"]) for it in flagged}
    expected = {(item, row) for row, item in truth.items()}
    assert len(pairs & expected) >= 0.9 * len(expected)                  # recall on the planted
    others = {b for b, _ in pairs} - set(truth.values())
    assert len(others) <= 0.05 * (len(items) - len(expected))            # the goal: <= 5% of the other items
    # The cosine alone (the previous decision) flags most unplanted items: same-task problems score high.
    by_cosine = {b for b, n in enumerate(result.neighbours) if n and n[0][1] >= semantic.COSINE_FLOOR}
    assert len(by_cosine - set(truth.values())) >= 0.5 * (len(items) - len(expected))


@pytest.mark.sweep
def test_the_margin_is_its_definition_on_a_brute_force_product(planted):
    """Exhaustive search (every record embedded) against the formula computed here: cosine of the
    best match (a pair's cosine is its best pair of windows) against the mean of the item's next 10
    records and of the record's 10 nearest other items."""
    items, corpus, _ = planted
    result = semantic_search(items, corpus, candidates=0)
    encoder = semantic_model.load_model()
    vi, wi = encoder.encode(items)
    vc, wc = encoder.encode(corpus)
    assert wi.owner.size == len(items)                    # the questions: one window each
    assert wc.owner.size > len(corpus)                    # a few train questions past 128 tokens: short windows too
    s = np.full((len(corpus), len(items)), -np.inf, np.float32)
    np.maximum.at(s, wc.owner, vc @ vi.T)                 # each record's best window against each item
    s = s.T
    for b in range(len(items)):
        order = np.argsort(-s[b], kind="stable")
        best = order[0]
        item_bg = s[b, order[1:K_BACKGROUND + 1]].mean()
        others = np.delete(s[:, best], b)
        record_bg = np.sort(others)[::-1][:K_BACKGROUND]
        record_bg = (record_bg.sum() + UNRELATED_COSINE * (K_BACKGROUND - record_bg.size)) / K_BACKGROUND
        bg = (item_bg + record_bg) / 2
        assert result.neighbours[b][0][0] == best
        assert result.margin[b] == pytest.approx((s[b, best] - bg) / (1 - bg), abs=2e-4)
        assert result.background[b] == pytest.approx(bg, abs=2e-4)


def test_small_sets_fill_missing_neighbours_with_the_unrelated_level(planted):
    items, corpus, truth = planted
    row, item = next(iter(sorted(truth.items())))
    one = semantic_search([items[item]], [corpus[row]])                   # no neighbours on either side
    assert one.background[0] == pytest.approx(UNRELATED_COSINE)
    cos = one.neighbours[0][0][1]
    assert one.margin[0] == pytest.approx((cos - UNRELATED_COSINE) / (1 - UNRELATED_COSINE), abs=1e-6)


@pytest.mark.slow
def test_report_and_summary_show_the_distribution_threshold_and_gap(planted, result):
    _, _, truth = planted
    d = result.summary()
    assert {"benchmark_row", "corpus_row", "score", "margin", "second", "gap", "anchors",
            "background"} <= set(d["items"][0])                          # additive keys; the contract stays
    assert d["decision"] == {"score": "margin", "threshold": semantic.DEFAULT_THRESHOLD,
                             "cosine_floor": semantic.COSINE_FLOOR, "neighbours": K_BACKGROUND,
                             "unrelated_cosine": UNRELATED_COSINE}
    margins = [m for m in result.margin if m is not None]
    assert d["margin_distribution"]["counts"] == np.histogram(np.clip(margins, 0, 1),
                                                              bins=np.linspace(0, 1, 21))[0].tolist()
    gap = d["gap"]
    # The gap parts the planted rephrases (copies are left out of it) from everything else.
    rephrased = {item for row, item in truth.items() if item >= 10}
    above = {b for b, m in enumerate(result.margin) if m is not None and m > gap["low"]
             and result.neighbours[b][0][1] < semantic.COPY_COSINE}
    assert len(above & rephrased) >= 0.8 * len(rephrased) and len(above - rephrased) <= 2
    report = result.markdown()
    assert f"lies between {gap['low']:.3f} and {gap['high']:.3f}" in report
    assert "← threshold" in report and "| margin score | items | |" in report
    # every flag's anchors (GSM8K rephrases keep the numbers and names) are shown beside it
    assert all(it["anchors"] is not None and it["anchors"] >= 0.5 for it in d["items"]
               if truth.get(it["corpus_row"]) == it["benchmark_row"])


@pytest.mark.slow
def test_progress_moves_while_the_transformer_rescores(planted):
    items, corpus, _ = planted
    seen = []
    semantic_search(items, corpus, progress=lambda f, s: seen.append((f, s)))
    fractions = [f for f, s in seen if s.startswith("records") or s.startswith("re-scoring")]
    assert len(set(fractions)) >= 4                                      # more than a start and an end
    assert [f for f, _ in seen] == sorted(f for f, _ in seen) and seen[-1][0] == 1.0
