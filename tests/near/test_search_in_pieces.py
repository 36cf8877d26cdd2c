"""The search cut into pieces (``near.pieces``: template groups, join partitions, LSH band
partitions) gives the all-pairs reference's clusters and pair counts, whatever the cut, and the
one-pass search's result: the pieces a local run saves for resuming, and Ray maps, add up exactly."""
from __future__ import annotations

import numpy as np
import pytest

import ground_truth as gt
import real_data
from auditor import AuditorError
from auditor.clusters import cluster_labels
from auditor.near import find_pairs
from auditor.near.pieces import find_pairs_in_pieces
from auditor.shingles import shingle_matrix

THRESHOLDS = (0.9, 0.7, 0.5, 0.3)


def _texts() -> list[str]:
    """1,200 GSM8K test questions, edited copies of 150 of them (clusters), a long question edited
    500 times (a template group), one notice with an id word 400 times, a third with one word
    swapped (node classes), in a seeded order."""
    gsm = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    notice = ("Please note that the library will be closed on public holidays and all borrowed items must be "
              "returned to the front desk before the end of the month item")
    swaps = ["alpha", "beta", "gamma"]
    template = [notice.replace("front", swaps[i % 3]) if i % 3 == 0 else notice for i in range(400)]
    long = " ".join(gsm[0].split() * 3)[:400]
    texts = (gsm[:1200] + real_data.edited_copies(gsm[1200:1275], 2, 0.1, 4)
             + real_data.edited_copies([long], 500, 0.1, 2) + [f"{t} {i}" for i, t in enumerate(template)])
    return [texts[i] for i in np.random.default_rng(5).permutation(len(texts))]


@pytest.fixture(scope="module")
def texts():
    return _texts()


@pytest.fixture(scope="module")
def reference(texts):
    return gt.reference(texts)


def _clusters(pairs, threshold: float) -> list:
    labels = cluster_labels(pairs, threshold)[0]
    groups: dict = {}
    for record, label in enumerate(labels.tolist()):
        if label >= 0:
            groups.setdefault(label, []).append(record)
    return sorted(tuple(g) for g in groups.values() if len(g) >= 2)


def _same_sample(pieces, one_pass) -> None:
    """The pair sample (each piece's folded as it came) is the one-pass search's, pair for pair."""
    assert pieces.a.size > 1000
    for name in ("a", "b", "jaccard"):
        np.testing.assert_array_equal(getattr(pieces, name), getattr(one_pass, name))
    assert pieces.complete == one_pass.complete


@pytest.mark.parametrize("partitions", [1, 5, 64])
def test_exact_pieces_give_the_all_pairs_counts_and_clusters(texts, reference, partitions):
    matrix = shingle_matrix(texts)
    pairs = find_pairs_in_pieces(matrix, 0.3, "exact", partitions=partitions)
    assert pairs.method == "exact-all-pairs" and not pairs.pairs_estimated
    _same_sample(pairs, find_pairs(matrix, 0.3, "exact"))
    assert pairs.dense_groups, "the edited long question should form a template group"
    for t in THRESHOLDS:
        assert pairs.record_pairs(t) == reference.pair_count(t), t
        assert _clusters(pairs, t) == reference.clusters(t), t
    assert reference.pair_count(0.3) > 70_000                 # the template group's pairs are counted


def test_lsh_pieces_equal_the_one_pass_lsh(texts, reference):
    matrix = shingle_matrix(texts)
    one_pass = find_pairs(matrix, 0.3, "lsh", seed=2)
    stats: dict = {}
    pieces = find_pairs_in_pieces(matrix, 0.3, "lsh", seed=2, partitions=6, stats=stats)
    assert stats == {"partitions": stats["partitions"], "partitions_resumed": 0} and stats["partitions"] >= 2
    assert (pieces.method, pieces.bands, pieces.rows, pieces.candidates) == \
           (one_pass.method, one_pass.bands, one_pass.rows, one_pass.candidates)
    _same_sample(pieces, one_pass)
    for t in THRESHOLDS:
        assert pieces.record_pairs(t) == one_pass.record_pairs(t) <= reference.pair_count(t), t
        assert _clusters(pieces, t) == _clusters(one_pass, t), t
    # At 0.7 LSH's catch probability is ~1: the reference's clusters, found by candidates alone.
    assert _clusters(pieces, 0.7) == reference.clusters(0.7)


def test_saved_pieces_are_read_back_and_give_the_same_result(texts, tmp_path, monkeypatch):
    monkeypatch.setenv("AUDITOR_RESUME_SECRET", str(tmp_path / "secret" / "resume-secret"))
    matrix = shingle_matrix(texts)
    first, again = {}, {}
    a = find_pairs_in_pieces(matrix, 0.3, "exact", partitions=4, shard_dir=tmp_path / "pieces", stats=first)
    b = find_pairs_in_pieces(matrix, 0.3, "exact", partitions=4, shard_dir=tmp_path / "pieces", stats=again)
    assert first["partitions_resumed"] == 0 and again["partitions_resumed"] == again["partitions"] == \
        first["partitions"] == len(list((tmp_path / "pieces").iterdir()))
    for name in ("a", "b", "jaccard", "forest_a", "forest_b", "forest_jaccard", "node_of"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(a.counts.node_pairs, b.counts.node_pairs)


def test_a_bad_partition_count_is_a_clear_error(texts):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(AuditorError, match="partitions must be a whole number"):
            find_pairs_in_pieces(shingle_matrix(texts[:10]), 0.5, partitions=bad)


@pytest.mark.parametrize("method", ["exact", "lsh"])
def test_progress_moves_forward_to_the_end(texts, method):
    """Progress over the pieces never goes back and ends at 1 (From the session's review of this
    change: the template groups' share restarted when the partitions began)."""
    seen = []
    find_pairs_in_pieces(shingle_matrix(texts), 0.3, method, partitions=6,
                         progress=lambda fraction, stage: seen.append((fraction, stage)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) >= 4
    assert "template groups scored" in {s for _, s in seen}

