"""The pair sink merges its buffered edges into the forest and the pair sample a run of batches at
a time (``sink.COMPACT_EDGES``), so the merge's sorts never hold every buffered edge at once: the
forest, the sample, the counts and the clusters are the same as one merge of everything, and the
reference's. From the session-49 memory work (issue 34, item 2: the final merge of 1.45M edges of
edited copies was a scan's peak)."""
from __future__ import annotations

import random

import numpy as np
import pytest

import ground_truth as gt
from auditor import near
from auditor.clusters import cluster_labels
from auditor.near import result, sink as sink_mod
from auditor.shingles import shingle_matrix

FIELDS = ("a", "b", "jaccard", "forest_a", "forest_b", "forest_jaccard", "node_of", "weight")


@pytest.fixture(scope="module")
def edited(real_data):
    """GSM8K questions, each of the first 150 copied 6 times with 10-40% of its words replaced."""
    rng = random.Random(3)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", 1000)
    pool = " ".join(questions).split()
    copies = [" ".join(rng.choice(pool) if rng.random() < rate else w for w in q.split())
              for q in questions[:150] for rate in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4)]
    texts = questions + copies
    rng.shuffle(texts)
    return texts, gt.reference(texts, "word", 3)


@pytest.mark.parametrize("cap", [None, 40])
def test_merging_in_turns_gives_the_one_merge_forest_and_sample(edited, monkeypatch, cap):
    texts, ref = edited
    if cap is not None:                       # a truncated sample: floors and overflowed strata too
        monkeypatch.setattr(result, "STRATUM_CAP", cap)
        monkeypatch.setattr(sink_mod, "STRATUM_CAP", cap)
    monkeypatch.setattr(sink_mod, "COMPACT_EDGES", 10 ** 12)
    whole = near.find_pairs(shingle_matrix(texts), 0.3)
    monkeypatch.setattr(sink_mod, "COMPACT_EDGES", 1)          # every batch a turn of its own
    monkeypatch.setattr(sink_mod, "BUFFER_MIN", 300)           # and compactions during the search
    turns = near.find_pairs(shingle_matrix(texts), 0.3)
    for name in FIELDS:
        assert np.array_equal(getattr(turns, name), getattr(whole, name)), name
    assert turns.complete == whole.complete == (cap is None)
    for t in (0.9, 0.7, 0.5, 0.4, 0.3):
        assert turns.record_pairs(t) == ref.pair_count(t)
        label = cluster_labels(turns, t)[0]
        clusters = sorted(tuple(np.flatnonzero(label == k).tolist()) for k in np.unique(label[label >= 0]))
        assert clusters == [tuple(c) for c in ref.clusters(t)], t
