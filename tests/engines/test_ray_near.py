"""Near duplicates on Ray (auditor/distributed/near.py) against the local engine and against the
pure-Python reference (tests/ground_truth.py), on a local Ray with two CPUs."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import ray

import ground_truth as gt
import real_data
from auditor import AuditorError
from auditor.audit import scan
from auditor.engines import scan as scan_on
from auditor.clusters import cluster_labels, curve
from auditor.distributed.near import ray_find_pairs
from auditor.near import find_pairs, pieces
from auditor.shingles import shingle_matrix

THRESHOLDS = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    if started:
        ray.shutdown()


def _questions(rel: str, field: str) -> list[str]:
    return [r[field] for r in real_data.rows(rel)]


def _synthetic() -> list[str]:
    """Real questions, edited copies of some (clusters), and one template edited 400 times
    (a dense template group in the local engine), in a seeded order."""
    gsm = _questions("gsm8k/test.jsonl", "question")
    template = " ".join(gsm[0].split() * 3)[:400]
    texts = gsm[:1200] + real_data.edited_copies(gsm[1200:1300], 6, 0.15, 1) + real_data.edited_copies([template], 400, 0.02, 2)
    return [texts[i] for i in np.random.default_rng(3).permutation(len(texts))]


_SETS = {
    "gsm8k-train": lambda: _questions("gsm8k/train.jsonl", "question"),
    "mbpp": lambda: _questions("mbpp/mbpp.jsonl", "text"),
    "spider-train": lambda: _questions("spider/train_spider.jsonl", "question"),
    "synthetic": _synthetic,
}


def _same_structure(ours, theirs) -> None:
    """Equal counts at every score, equal pair sample, equal components at every threshold."""
    assert ours.n_records == theirs.n_records and ours.min_threshold == theirs.min_threshold
    np.testing.assert_array_equal(ours.node_of, theirs.node_of)
    np.testing.assert_array_equal(ours.weight, theirs.weight)
    for name in ("bins", "node_pairs", "record_pairs"):
        np.testing.assert_array_equal(getattr(ours.counts, name), getattr(theirs.counts, name))
    for name in ("a", "b", "jaccard"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
    assert ours.complete == theirs.complete
    assert ours.forest_a.size == theirs.forest_a.size
    searched = [t for t in THRESHOLDS if t >= ours.min_threshold]
    assert curve(ours, searched) == curve(theirs, searched)
    for t in (ours.min_threshold, 0.55, 0.8, 1.0):
        np.testing.assert_array_equal(cluster_labels(ours, t)[0], cluster_labels(theirs, t)[0])


@pytest.mark.sweep
@pytest.mark.parametrize("name", list(_SETS))
def test_exact_equals_local_engine(name):
    matrix = shingle_matrix(_SETS[name]())
    local = find_pairs(matrix, 0.3, "exact")
    ours = ray_find_pairs(matrix, 0.3, "exact", partitions=3)
    _same_structure(ours, local)
    assert ours.method == "exact-all-pairs"
    # The same candidates are scored (the local filter, each pair once) and the same template groups.
    assert (ours.candidates, ours.dense_groups) == (local.candidates, local.dense_groups)
    assert local.record_pairs(0.3) > 0
    if name == "synthetic":
        assert local.dense_groups, "the template should form a dense group"


def test_exact_and_lsh_match_brute_force_reference():
    texts = _synthetic()[:2000]
    ref = gt.reference(texts)
    matrix = shingle_matrix(texts)
    pairs = ray_find_pairs(matrix, 0.3, "exact", partitions=4)
    assert pairs.complete
    expected = ref.record_pairs(0.3)
    found = gt.engine_record_pairs(pairs, 0.3)
    assert found.keys() == expected.keys()
    assert all(abs(found[k] - expected[k]) < 1e-9 for k in expected)
    for t in THRESHOLDS:
        assert pairs.record_pairs(t) == ref.pair_count(t)
        labels = cluster_labels(pairs, t)[0]
        clusters = sorted(tuple(np.flatnonzero(labels == c).tolist()) for c in range(labels.max() + 1))
        assert clusters == ref.clusters(t)

    lsh = ray_find_pairs(matrix, 0.3, "lsh", partitions=4, seed=7)
    assert lsh.method == "minhash-lsh" and lsh.seed == 7
    # LSH proposes candidates; every reported pair is a true pair with its exact Jaccard ...
    caught = gt.engine_record_pairs(lsh, 0.3)
    assert caught.keys() <= expected.keys()
    assert all(abs(caught[k] - expected[k]) < 1e-9 for k in caught)
    # ... and the same ones as the local LSH with the same seed (same signatures, same bands).
    local = find_pairs(matrix, 0.3, "lsh", seed=7)
    _same_structure(lsh, local)
    assert lsh.candidates == local.candidates
    for t in THRESHOLDS:
        assert lsh.catch_probability(t) == local.catch_probability(t)
    assert lsh.catch_probability(0.3) >= 0.99
    assert len(caught) >= 0.95 * len(expected)


def test_uneven_partitions_give_the_same_pairs(monkeypatch):
    texts = _synthetic()
    matrix = shingle_matrix(texts)
    local = find_pairs(matrix, 0.3, "exact")
    for partitions in (1, 7, 40):
        _same_structure(ray_find_pairs(matrix, 0.3, "exact", partitions=partitions), local)

    def skewed(df, partitions):        # of the shingles held twice or more: one, 1%, 50%, the rest
        held = np.flatnonzero(df >= 2)
        cuts = [held[i] for i in (1, held.size // 100, held.size // 2)]
        edges = sorted({0, *cuts, df.size})
        return list(zip(edges[:-1], edges[1:]))

    monkeypatch.setattr(pieces, "column_ranges", skewed)
    sizes = [p[0].size for p in pieces.exact_partitions(pieces.plan(matrix, 0.3, "exact"), 0)]
    assert len(sizes) >= 2 and max(sizes) >= 4 * min(sizes), sizes
    _same_structure(ray_find_pairs(matrix, 0.3, "exact"), local)
    monkeypatch.undo()
    # Very few nodes (most partitions empty) and no records at all.
    few = shingle_matrix(texts[:5] + texts[:2])
    _same_structure(ray_find_pairs(few, 0.3, "auto", partitions=16), find_pairs(few, 0.3))
    empty = shingle_matrix(["", " "])
    assert ray_find_pairs(empty, 0.5, "exact").record_pairs(0.5) == 0
    assert ray_find_pairs(empty, 0.5, "lsh").record_pairs(0.5) == 0


def test_two_runs_are_identical():
    matrix = shingle_matrix(_synthetic())
    for method in ("exact", "lsh"):
        first = ray_find_pairs(matrix, 0.4, method, partitions=5)
        second = ray_find_pairs(matrix, 0.4, method, partitions=5)
        for f in dataclasses.fields(first):
            x, y = getattr(first, f.name), getattr(second, f.name)
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
            elif f.name == "counts":
                for name in ("bins", "node_pairs", "record_pairs"):
                    np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
            else:
                assert x == y, f.name


def test_dataset_input_in_any_block_order():
    texts = _SETS["mbpp"]()
    order = np.random.default_rng(5).permutation(len(texts))
    ds = ray.data.from_items([{"text": texts[i], "row": int(i)} for i in order], override_num_blocks=4)
    _same_structure(ray_find_pairs(ds, 0.5, "exact"), find_pairs(shingle_matrix(texts), 0.5, "exact"))


def test_scan_on_ray_writes_the_local_summary(real_data, tmp_path):
    source = real_data / "mbpp" / "mbpp.jsonl"
    local = scan(str(source)).summary()
    ours = scan_on(str(source), engine="ray").summary()
    engine = ours.pop("engine")
    assert engine["name"] == "ray" and engine["seconds"] > 0 and "engine" not in local
    assert json.dumps(ours, sort_keys=True) == json.dumps(local, sort_keys=True)
    assert local["method"]["near_duplicates"] == "exact-all-pairs"


def test_bad_arguments_are_clear_errors():
    matrix = shingle_matrix(["a b c d", "a b c e"])
    for kwargs, word in (({"method": "fuzzy"}, "method"), ({"partitions": 0}, "partitions"),
                         ({"threshold": 1.5}, "Threshold")):
        args = {"threshold": 0.5, "method": "exact", **kwargs}
        with pytest.raises(AuditorError, match=word):
            ray_find_pairs(matrix, args.pop("threshold"), args.pop("method"), **args)
    with pytest.raises(AuditorError, match="shingle matrix or a Ray Dataset"):
        ray_find_pairs(["a b c"], 0.5)
    with pytest.raises(AuditorError, match="no 'body' column"):
        ray_find_pairs(ray.data.from_items([{"text": "a b c"}]), 0.5, text="body")
    with pytest.raises(AuditorError, match="engine"):
        scan_on("unused.jsonl", engine="spark")
