"""The forest pass of a template group (pass 2 of ``dense.process``): each block's rows are cut
into stretches whose compiled forest test runs on several threads at once, and in rows whose
pairs cannot enter the pair sample a division-free test passes over the pairs the forest already
implies through the hub and that need no exact count. Clusters must stay exact at every
threshold, and the result must not depend on the number of threads.

Ground truth: the independent all-pairs reference (tests/ground_truth.py, union-find over every
pair's exact Jaccard) on a shared-prefix set: one instruction before edited copies of real
GSM8K questions, so one template group holds nearly every record and most of its pairs."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ground_truth as gt
from auditor import near, parallel
from auditor.clusters import cluster_labels
from auditor.near import dense, sink as sink_mod
from auditor.shingles import shingle_matrix

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3)
HEAD = ("before you answer, read the whole problem twice, write down what is known and what is asked, "
        "work through it one step at a time and state the final answer as a number on the last line")


def prefix_texts(real_data, sources: int = 70, seed: int = 11) -> list[str]:
    """HEAD before 4-20 edited copies (2-45% of words replaced by words of the pool) of each of
    ``sources`` real questions, and 20 exact copies, shuffled."""
    rng = np.random.default_rng(seed)
    questions = [np.array(q.split()) for q in gt.read_field(real_data, "gsm8k/train.jsonl", "question", sources)]
    pool = np.concatenate(questions)
    texts = [HEAD + " " + " ".join(np.where(rng.random(q.size) < rate, rng.choice(pool, q.size), q))
             for q in questions for rate in rng.uniform(0.02, 0.45, size=int(rng.integers(4, 21)))]
    texts += [texts[i] for i in rng.choice(len(texts), 20, replace=False)]
    return [texts[i] for i in rng.permutation(len(texts))]


def engine_clusters(pairs, threshold) -> list:
    """The engine's clusters at ``threshold`` as sorted tuples of records (the reference's form)."""
    label = cluster_labels(pairs, threshold)[0]
    records = np.flatnonzero(label >= 0)
    if not records.size:
        return []
    by_label = records[np.argsort(label[records], kind="stable")]
    return sorted(tuple(g.tolist()) for g in np.split(by_label, np.flatnonzero(np.diff(label[by_label])) + 1))


@pytest.fixture(scope="module")
def prefix_set(real_data):
    texts = prefix_texts(real_data)
    ref = gt.reference(texts)
    return shingle_matrix(texts), ref, {t: [tuple(c) for c in ref.clusters(t)] for t in THRESHOLDS}


@pytest.fixture
def small_engine(monkeypatch):
    """Small blocks, outputs and buffers: the forest is compacted and re-read while both
    stretches of a block are still being tested."""
    monkeypatch.setattr(dense, "BLOCK_CELLS", 30_000)
    monkeypatch.setattr(dense, "EMIT_CAP", 300)
    monkeypatch.setattr(sink_mod, "BUFFER_MIN", 1_000)


def search(matrix, monkeypatch, *, workers: int, parts: int, **kw):
    monkeypatch.setattr(parallel, "WORKERS", workers, raising=False)
    monkeypatch.setattr(dense, "EMIT_PARTS", parts)
    return near.find_pairs(matrix, 0.3, "exact", **kw)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_past_the_budget_clusters_are_exact_and_independent_of_threads(prefix_set, small_engine, monkeypatch,
                                                                         seed):
    matrix, ref, clusters = prefix_set
    one = search(matrix, monkeypatch, workers=1, parts=2, budget=1, seed=seed)
    assert len(one.dense_groups) == 1 and one.dense_groups[0] > 700      # the shape is what it says
    assert one.estimate is not None and one.estimate.uncounted > 0        # rows sampled: the quiet test runs
    two = search(matrix, monkeypatch, workers=2, parts=2, budget=1, seed=seed)
    three = search(matrix, monkeypatch, workers=2, parts=3, budget=1, seed=seed)
    for t in THRESHOLDS:
        for pairs in (one, two, three):
            assert engine_clusters(pairs, t) == clusters[t], (seed, t)
            low, high = pairs.pairs_interval(t)
            assert low <= pairs.record_pairs(t) <= high
    # The same stretches give the same result on one thread or two, edge for edge.
    for field in ("forest_a", "forest_b", "forest_jaccard", "a", "b", "jaccard"):
        assert np.array_equal(getattr(one, field), getattr(two, field)), field
    assert [one.record_pairs(t) for t in THRESHOLDS] == [two.record_pairs(t) for t in THRESHOLDS]


@pytest.mark.slow
def test_within_the_budget_counts_and_clusters_are_exact_on_two_threads(prefix_set, small_engine, monkeypatch):
    matrix, ref, clusters = prefix_set
    for parts in (1, 2, 3):
        pairs = search(matrix, monkeypatch, workers=2, parts=parts, budget=math.inf)
        assert not pairs.pairs_estimated and len(pairs.dense_groups) == 1
        for t in THRESHOLDS:
            assert pairs.record_pairs(t) == ref.pair_count(t), (parts, t)
            assert engine_clusters(pairs, t) == clusters[t], (parts, t)


def test_row_stretches_cover_the_block_with_even_work():
    for rows, width, parts in ((1, 10, 2), (2, 2, 2), (7, 7, 2), (300, 5_000, 2), (300, 300, 3), (50, 50_000, 4)):
        bounds = dense._split_rows(rows, width, parts)
        assert bounds[0] == 0 and bounds[-1] == rows and bounds == sorted(bounds)
        cells = [sum(max(width - 1 - i, 0) for i in range(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]
        if rows >= 2 * parts:
            assert max(cells) - min(cells) <= 2 * width, (rows, width, parts, cells)
