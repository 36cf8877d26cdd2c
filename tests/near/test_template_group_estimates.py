"""A template group past the work budget: its pair counts come from a seeded sample of its rows
(an estimate with a 95% interval), while clusters, records in clusters, the largest cluster and
every cluster's membership stay exact at every threshold (its forest still scores every pair).

Ground truth: the independent all-pairs reference (tests/ground_truth.py) on a shared-prefix set
(one instruction before edited copies of real GSM8K questions: one dense group whose pairs are
nearly all similar), with swapped notices (classes of nodes) and exact copies beside it."""
from __future__ import annotations

import json
import math
import random

import pytest

import ground_truth as gt
from auditor import near, scan
from auditor.clusters import cluster_labels, curve
from auditor.near import dense, join, sink as sink_mod
from auditor.shingles import shingle_matrix

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.35, 0.3)
SEEDS = 40
HEAD = ("you are a careful assistant working through school mathematics. read the question below, think "
        "step by step, show each calculation on its own line, check the units of every quantity, and give "
        "the final answer as a single number after four hashes. do not repeat the question and keep the "
        "working short and clear so that a grader can follow it")


def shared_prefix_set(real_data, sources: int = 110, seed: int = 7) -> list[str]:
    """HEAD before edited copies of real questions (5-25 copies each, 2-40% of words replaced),
    400 notices with an id word (a third with one word swapped: classes) and 30 exact copies."""
    rng = random.Random(seed)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", sources)
    pool = " ".join(questions).split()
    texts = []
    for q in questions:
        words = q.split()
        for _ in range(rng.randint(5, 25)):
            rate = rng.uniform(0.02, 0.4)
            texts.append(HEAD + " " + " ".join(rng.choice(pool) if rng.random() < rate else w for w in words))
    notice = ("please read this notice before you continue this site uses cookies to improve your experience "
              "and measure how visitors use our pages").split()
    for i in range(400):
        words = list(notice)
        if rng.random() < 1 / 3:
            words[rng.randrange(len(words))] = f"slot{rng.randrange(3)}"
        texts.append(" ".join(words) + f" id{i}x")
    texts += rng.sample(texts, 30)
    rng.shuffle(texts)
    return texts


def components(pairs, threshold) -> list:
    label, _ = cluster_labels(pairs, threshold)
    groups: dict = {}
    for record, lab in enumerate(label.tolist()):
        if lab >= 0:
            groups.setdefault(lab, []).append(record)
    return sorted(tuple(g) for g in groups.values())


@pytest.fixture(scope="module")
def prefix_set(real_data):
    texts = shared_prefix_set(real_data)
    ref = gt.reference(texts)
    clusters = {t: [tuple(c) for c in ref.clusters(t)] for t in THRESHOLDS}
    return texts, shingle_matrix(texts), ref, clusters


@pytest.fixture
def small_blocks(monkeypatch):
    """Small blocks, so sampled rows come in many chunks."""
    monkeypatch.setattr(dense, "BLOCK_CELLS", 40_000)


@pytest.fixture
def small_engine(monkeypatch, small_blocks):
    """And small outputs and buffers, so the forest is compacted and re-read in the middle of a
    group's emit pass."""
    monkeypatch.setattr(dense, "EMIT_CAP", 2_000)
    monkeypatch.setattr(sink_mod, "BUFFER_MIN", 5_000)


@pytest.mark.slow
def test_past_the_budget_a_groups_counts_are_estimated_and_clusters_stay_exact(prefix_set, small_blocks):
    texts, matrix, ref, clusters = prefix_set
    exact = {t: ref.pair_count(t) for t in THRESHOLDS}
    held, cases, widths = 0, 0, []
    for seed in range(SEEDS):
        pairs = near.find_pairs(matrix, 0.3, "exact", budget=1, seed=seed)
        assert len(pairs.dense_groups) == 1 and pairs.dense_groups[0] > 1000     # the shape is what it says
        e = pairs.estimate
        group_pairs = pairs.dense_groups[0] * (pairs.dense_groups[0] - 1) // 2
        # The group's rows were sampled: most of its pairs were never counted.
        assert e.row_rate == join.SAMPLE_RATE and e.uncounted > 0.8 * group_pairs
        for t in THRESHOLDS:
            low, high = pairs.pairs_interval(t)
            assert low <= pairs.record_pairs(t) <= high
            held += low <= exact[t] <= high
            cases += 1
            assert components(pairs, t) == clusters[t], (seed, t)
            if t == 0.3:
                widths.append((high - low) / exact[t])
        points = curve(pairs, list(THRESHOLDS))
        assert [p.clusters for p in points] == [len(clusters[t]) for t in THRESHOLDS]
    # A 95% interval, checked over 40 seeds x 8 thresholds against the exact count ...
    assert held / cases >= 0.95, f"{held} of {cases} intervals held the exact count"
    # ... that still says something: at 0.3 it spans well under the count itself.
    assert max(widths) < 0.6, widths


@pytest.mark.slow
def test_the_pairs_shown_past_the_budget_are_true_pairs(prefix_set, small_engine):
    texts, matrix, ref, _ = prefix_set
    pairs = near.find_pairs(matrix, 0.3, "exact", budget=1, seed=3)
    assert not pairs.complete
    for t in (0.9, 0.6, 0.3):
        truth = ref.record_pairs(t)
        shown = pairs.record_pair_sample(t, 200)
        assert len(shown) == 200
        for a, b, j in shown:
            assert truth[(a, b)] == pytest.approx(j, abs=1e-12)


@pytest.mark.slow
def test_a_budget_that_covers_the_group_counts_it_exactly(prefix_set):
    texts, matrix, ref, clusters = prefix_set
    unlimited = near.find_pairs(matrix, 0.3, "exact", budget=math.inf)
    assert not unlimited.pairs_estimated
    for t in THRESHOLDS:
        assert unlimited.record_pairs(t) == ref.pair_count(t)
        assert components(unlimited, t) == clusters[t]
    size = unlimited.dense_groups[0]
    group_pairs = size * (size - 1) // 2
    # Exactly the group's pairs: the group is counted exactly (the join, left no budget, is not).
    covered = near.find_pairs(matrix, 0.3, "exact", budget=group_pairs)
    assert covered.estimate is None or covered.estimate.row_rate is None
    # One pair less: the group's rows are sampled.
    short = near.find_pairs(matrix, 0.3, "exact", budget=group_pairs - 1)
    assert short.estimate is not None and short.estimate.row_rate == join.SAMPLE_RATE
    for pairs in (covered, short):
        for t in THRESHOLDS:
            interval = pairs.pairs_interval(t)
            assert interval is None or interval[0] <= ref.pair_count(t) <= interval[1]
            assert components(pairs, t) == clusters[t]


def test_lsh_past_the_budget_samples_the_group_too(prefix_set):
    texts, matrix, ref, clusters = prefix_set
    pairs = near.find_pairs(matrix, 0.3, "lsh", budget=1)
    assert pairs.method == "minhash-lsh" and pairs.estimate.row_rate == join.SAMPLE_RATE
    # Its clusters are those of the pairs LSH proposed; those inside the group are all scored.
    for t in (0.9, 0.7, 0.5, 0.3):
        low, high = pairs.pairs_interval(t)
        assert low <= pairs.record_pairs(t) <= high


def test_scan_labels_a_sampled_group_in_summary_and_report(prefix_set, tmp_path, monkeypatch):
    texts, _, ref, _ = prefix_set
    path = tmp_path / "prefix.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    monkeypatch.setenv("AUDITOR_NEAR_WORK", "1")
    result = scan(str(path), text="text")
    d = result.summary()
    e = d["method"]["pairs_estimate"]
    assert d["method"]["pairs_estimated"] is True
    assert e["template_row_rate"] == join.SAMPLE_RATE and e["template_pairs_not_counted"] > 0
    for point in d["curve"]:
        assert point["pairs_estimated"] is True
        low, high = point["pairs_interval"]
        assert low <= point["pairs"] <= high
        assert point["clusters"] == ref.cluster_count(point["threshold"])
    report = result.markdown()
    assert f"In template groups, {e['template_pairs_not_counted']:,} pairs were scored" in report
