"""Pair counts past the work budget: clusters stay exact, pair counts become estimates whose 95%
interval contains the exact count (the all-pairs reference's), labelled as such in summary.json
and REPORT.md; under the budget nothing changes and no key is added."""
from __future__ import annotations

import json
import math
import random

import pytest

import ground_truth as gt
from auditor import near, scan
from auditor.clusters import cluster_labels, curve
from auditor.near import prefix
from auditor.shingles import shingle_matrix

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
SEEDS = 40


def edited_copies(real_data, sources=150, seed=4) -> list[str]:
    """Real GSM8K questions, each copied 5-25 times with 2-40% of its words replaced."""
    rng = random.Random(seed)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", sources)
    pool = " ".join(questions).split()
    texts = []
    for q in questions:
        words = q.split()
        for _ in range(rng.randint(5, 25)):
            rate = rng.uniform(0.02, 0.4)
            texts.append(" ".join(rng.choice(pool) if rng.random() < rate else w for w in words))
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
def copies(real_data):
    texts = edited_copies(real_data)
    return texts, gt.reference(texts)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few hundred product entries, so the forest grows between budgeted blocks."""
    monkeypatch.setattr(prefix, "PRODUCT_BUDGET", 3_000)


@pytest.mark.slow
def test_past_the_budget_clusters_stay_exact_and_intervals_hold_the_exact_count(copies, small_blocks):
    texts, ref = copies
    matrix = shingle_matrix(texts)
    exact = {t: ref.pair_count(t) for t in THRESHOLDS}
    clusters = {t: [tuple(c) for c in ref.clusters(t)] for t in THRESHOLDS}
    held, cases, skipped = 0, 0, []
    for seed in range(SEEDS):
        pairs = near.find_pairs(matrix, 0.3, "exact", budget=1, seed=seed)
        assert pairs.pairs_estimated and pairs.estimate.skipped > 0
        skipped.append(pairs.estimate.skipped / (pairs.estimate.skipped + pairs.candidates))
        for t in THRESHOLDS:
            low, high = pairs.pairs_interval(t)
            assert low <= pairs.record_pairs(t) <= high
            held += low <= exact[t] <= high
            cases += 1
            assert components(pairs, t) == clusters[t], (seed, t)
        assert [p.clusters for p in curve(pairs, list(THRESHOLDS))] == [len(clusters[t]) for t in THRESHOLDS]
    # A 95% interval, checked over 40 seeds x 7 thresholds against the exact count.
    assert held / cases >= 0.95, f"{held} of {cases} intervals held the exact count"
    # The budget did skip work: a real share of the candidates was never verified.
    assert min(skipped) > 0.1


def test_under_the_budget_counts_are_exact_and_unlabelled(copies, small_blocks):
    texts, ref = copies
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact", budget=math.inf)
    assert not pairs.pairs_estimated and pairs.pairs_interval(0.5) is None
    for t in THRESHOLDS:
        assert pairs.record_pairs(t) == ref.pair_count(t)
    assert all(p.pairs_interval is None for p in curve(pairs, list(THRESHOLDS)))


def test_scan_labels_estimated_counts_in_summary_and_report(copies, small_blocks, tmp_path, monkeypatch):
    texts, ref = copies
    path = tmp_path / "copies.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    plain = scan(str(path), text="text")
    summary = plain.summary()
    assert "pairs_estimated" not in summary["method"] and "pairs_estimated" not in summary["near_duplicates"]
    assert all("pairs_interval" not in p for p in summary["curve"])

    monkeypatch.setenv("AUDITOR_NEAR_WORK", "1")
    result = scan(str(path), text="text")
    d = result.summary()
    assert d["method"]["pairs_estimated"] is True
    assert d["method"]["pairs_estimate"]["candidates_not_verified"] > 0
    near_block = d["near_duplicates"]
    assert near_block["pairs_estimated"] is True
    low, high = near_block["pairs_interval"]
    assert low <= near_block["pairs"] <= high
    for point in d["curve"]:
        assert point["pairs_estimated"] is True
        assert point["pairs_interval"][0] <= point["pairs"] <= point["pairs_interval"][1]
        assert point["clusters"] == ref.cluster_count(point["threshold"])
    # Everything but the pair counts is the exact scan's.
    assert d["near_duplicates"]["clusters"] == summary["near_duplicates"]["clusters"]
    assert d["near_duplicates"]["records_in_clusters"] == summary["near_duplicates"]["records_in_clusters"]
    assert d["near_duplicates"]["largest_cluster"] == summary["near_duplicates"]["largest_cluster"]
    report = result.markdown()
    assert "Pair counts are estimates" in report
    assert f"≈{near_block['pairs']:,} (estimated; 95% interval {low:,}–{high:,})" in report
