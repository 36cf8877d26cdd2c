"""The search's progress moves through every stage that can take long: candidates planned,
template groups scored block by block (both passes), pairs verified block by block."""
from __future__ import annotations

import random

import ground_truth as gt
from auditor import near
from auditor.near import dense, prefix
from auditor.shingles import shingle_matrix


def test_progress_moves_through_every_stage_and_never_back(real_data, monkeypatch):
    monkeypatch.setattr(dense, "HEAVY_DF", 64)
    monkeypatch.setattr(dense, "MIN_NODES", 64)
    monkeypatch.setattr(dense, "BLOCK_CELLS", 5_000)          # many blocks in the template group
    monkeypatch.setattr(prefix, "PRODUCT_BUDGET", 200)        # many blocks in the sparse join
    rng = random.Random(2)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", 1500)
    pool = " ".join(questions).split()
    template = " ".join(questions[30:34]).split()[:60]
    edited = [" ".join(rng.choice(pool) if rng.random() < rng.uniform(0.02, 0.12) else w for w in template)
              for _ in range(400)]
    texts = questions + edited
    rng.shuffle(texts)
    calls = []
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact", progress=lambda f, stage: calls.append((f, stage)))
    assert pairs.dense_groups
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1
    stages = [s for _, s in calls]
    order = ["planning candidates", "candidates planned", "scoring template groups", "joining template groups",
             "verifying pairs"]
    assert [s for s in dict.fromkeys(stages)] == order
    # Each long stage reports as it goes, not only when it starts.
    for stage in order[2:]:
        assert len({f for f, s in calls if s == stage}) >= 5, stage
    assert fractions[-1] > 0.99
