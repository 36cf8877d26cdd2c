"""The bounded engine: memory follows records, never the number of similar pairs.

``Pairs`` keeps exact counts per score, a maximum spanning forest and a bounded pair sample;
template groups are scored by dense blocks and never listed. Everything here is checked
against the independent pure-Python reference (tests/ground_truth.py) or plain counting,
with the engine's limits turned down so that compaction, truncated samples, dense groups and
the implied-edge test all run on small inputs.
"""
from __future__ import annotations

import json
import random
import resource
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components

import ground_truth as gt
from auditor import near
from auditor.clusters import cluster_labels, curve
from auditor.near import dense, result, sink as sink_mod
from auditor.shingles import shingle_matrix

THRESHOLDS = (0.9, 0.8, 0.75, 0.7, 0.6, 0.55, 0.5, 0.4, 0.35, 0.3)


def _template_mixture(real_data, seed=7):
    """Real GSM8K questions, 400 edited copies of a 60-word template (2-12% of words replaced),
    300 copies of a 30-word notice that differ in one unique word, and a few exact copies."""
    rng = random.Random(seed)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", 1200)
    pool = " ".join(questions).split()
    template = " ".join(questions[10:14]).split()[:60]
    edited = [" ".join(rng.choice(pool) if rng.random() < rng.uniform(0.02, 0.12) else w for w in template)
              for _ in range(400)]
    notice = ("please read this notice before you continue this site uses cookies to improve your "
              "experience and measure how visitors use our pages by continuing you agree").split()[:30]
    notices = [" ".join(notice) + f" token{i}" for i in range(300)]
    texts = questions + edited + notices + questions[:20]
    rng.shuffle(texts)
    return texts


@pytest.fixture(scope="module")
def mixture(real_data):
    texts = _template_mixture(real_data)
    return texts, gt.reference(texts, "word", 3)


@pytest.fixture
def small_limits(monkeypatch):
    """Limits small enough that every bounded mechanism runs on a few thousand records."""
    monkeypatch.setattr(dense, "HEAVY_DF", 64)
    monkeypatch.setattr(dense, "MIN_NODES", 64)
    monkeypatch.setattr(dense, "BLOCK_CELLS", 20_000)      # many dense blocks
    monkeypatch.setattr(dense, "EMIT_CAP", 500)            # the emit kernel resumes mid-block
    monkeypatch.setattr(sink_mod, "BUFFER_MIN", 2_000)     # many compactions
    monkeypatch.setattr(sink_mod, "COUNT_FLUSH", 5_000)
    monkeypatch.setattr(result, "STRATUM_CAP", 50)         # truncated pair sample
    monkeypatch.setattr(sink_mod, "STRATUM_CAP", 50)


def _reference_components(ref, threshold):
    return [tuple(c) for c in ref.clusters(threshold)]


def _engine_components(pairs, threshold):
    label, _ = cluster_labels(pairs, threshold)
    groups: dict = {}
    for record, lab in enumerate(label.tolist()):
        if lab >= 0:
            groups.setdefault(lab, []).append(record)
    return sorted(tuple(g) for g in groups.values())


@pytest.mark.parametrize("limits", ["default", "small"])
def test_counts_clusters_and_sample_match_the_reference(mixture, request, limits):
    if limits == "small":
        request.getfixturevalue("small_limits")
    texts, ref = mixture
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact")
    if limits == "small":
        assert pairs.dense_groups, "the template groups should take the dense path"
        assert not pairs.complete
    for t in THRESHOLDS:
        assert pairs.record_pairs(t) == ref.pair_count(t), f"pairs at {t}"
        assert _engine_components(pairs, t) == _reference_components(ref, t), f"clusters at {t}"
    assert [p.clusters for p in curve(pairs, list(THRESHOLDS))] == [ref.cluster_count(t) for t in THRESHOLDS]
    # The forest is a forest, and at most nodes - 1 edges whatever the number of pairs.
    assert pairs.forest_a.size < pairs.n_nodes
    # The sample shows each pair of distinct texts by their first records (and copies of one text
    # against its first record): its best pairs are the reference's best, with exact scores.
    first = {m[0]: i for i, m in enumerate(ref.members)}
    node = {r: i for i, m in enumerate(ref.members) for r in m}
    truth = ref.record_pairs(0.3)
    shown = [(a, b, j) for (a, b), j in truth.items() if a in first and (b in first or node[a] == node[b])]
    want = sorted(shown, key=lambda p: (-p[2], p[0], p[1]))[:40]
    sample = pairs.record_pair_sample(0.3, 40)
    assert [(a, b) for a, b, _ in sample] == [(a, b) for a, b, _ in want]
    assert [j for *_, j in sample] == pytest.approx([j for *_, j in want], abs=1e-12)


def test_template_records_one_cluster_every_pair_counted():
    """The issue's case at a test's size: one 30-word template + one unique word per record."""
    n = 3000
    template = " ".join(f"word{k}" for k in range(30))
    texts = [f"{template} w{i}x" for i in range(n)]
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact")
    # The records differ only by a private shingle: one class of nodes (near.classes), whose
    # pairs are counted without a single candidate.
    assert pairs.candidates == 0 and not pairs.dense_groups
    # 30 words + 1 -> 29 shingles, 28 shared: J = 28 / 30 for every pair.
    for t in (0.9, 0.7, 0.3):
        assert pairs.record_pairs(t) == n * (n - 1) // 2
    assert pairs.record_pairs(0.94) == 0
    assert [p.clusters for p in curve(pairs, [0.9, 0.5, 0.3])] == [1, 1, 1]
    assert pairs.forest_a.size == n - 1
    assert np.allclose(pairs.jaccard, 28 / 30) and pairs.jaccard.size <= result.STRATUM_CAP


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2 ** 31 - 1), st.floats(0.05, 1.0))
def test_forest_components_equal_full_graph_components(n, seed, t):
    """A random weighted graph fed to the sink in random batches: components of the forest's
    edges >= t equal those of all edges >= t (the maximum-spanning-forest property)."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(0, n * (n - 1) // 2 + 1))
    codes = rng.choice(n * n, size=min(m, n * n), replace=False)
    a, b = np.divmod(codes, n)
    keep = a < b
    a, b = a[keep], b[keep]
    # Few distinct scores, so ties are common.
    j = np.round(rng.choice([0.05, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0], size=a.size), 6)
    s = sink_mod.PairSink(np.ones(n, np.int64), 0.05)
    s.limit = 3
    for lo in range(0, a.size, 4):
        s.add(a[lo:lo + 4], b[lo:lo + 4], j[lo:lo + 4])
    pairs = s.result(n_records=n, node_of=np.arange(n), min_threshold=0.05)
    t = round(t, 6)
    full = j >= t - 1e-9
    want = connected_components(sp.coo_matrix((np.ones(int(full.sum())), (a[full], b[full])), shape=(n, n)),
                                directed=False)[1]
    k = pairs.forest_upto(t)
    got = connected_components(sp.coo_matrix((np.ones(k), (pairs.forest_a[:k], pairs.forest_b[:k])),
                                             shape=(n, n)), directed=False)[1]
    assert _same_partition(want, got)
    assert pairs.record_pairs(t) == int(full.sum())


def _same_partition(x, y) -> bool:
    pairs = set(zip(x.tolist(), y.tolist()))
    return len(pairs) == len(set(x.tolist())) == len(set(y.tolist()))


def test_gsm8k_curve_unchanged_and_complete(real_data):
    texts = gt.read_field(real_data, "gsm8k/train.jsonl", "question")
    pairs = near.find_pairs(shingle_matrix(texts), 0.3)
    assert pairs.complete and not pairs.dense_groups
    assert [p.clusters for p in curve(pairs, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])] == [1, 1, 1, 3, 10, 27, 41]


def test_template_scan_memory_stays_flat(tmp_path):
    """A whole `auditor scan` of 6,000 template records (18 million pairs) in a subprocess:
    exact pair count, one cluster, and peak memory far below what listing the pairs takes."""
    template = " ".join(f"word{k}" for k in range(30))      # 28 shared shingles + 1 unique: J = 28/30
    path = tmp_path / "template.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(6000):
            fh.write(json.dumps({"text": f"{template} unique{i}"}) + "\n")
    out = tmp_path / "summary.json"
    # VmHWM, the process's own peak: ru_maxrss would carry the parent's size at the fork (a full
    # test run's pytest, 1.6 GB) across the exec
    code = ("import re, sys\nfrom auditor.cli import main\nrc = main(sys.argv[1:])\n"
            "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\nsys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "scan", str(path), "--text", "text", "--json", str(out),
                           "--quiet"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    peak_mb = int(proc.stdout.strip().splitlines()[-1]) / 1024
    summary = json.loads(out.read_text())
    assert [c["pairs"] for c in summary["curve"]] == [6000 * 5999 // 2] * 7
    assert [c["clusters"] for c in summary["curve"]] == [1] * 7
    assert peak_mb < 1500, f"peak RSS {peak_mb:.0f} MB"


def test_leak_between_two_template_splits_keeps_a_few_matches_per_record(tmp_path):
    """A and B both made of one template: every cross pair is a near duplicate (n_a x n_b of
    them), yet each B record keeps only its best few A matches and the count stays exact."""
    from auditor.leakage import leak
    template = " ".join(f"word{k}" for k in range(30))
    n_a, n_b = 2500, 2000
    for name, n, tag in (("a.jsonl", n_a, "a"), ("b.jsonl", n_b, "b")):
        (tmp_path / name).write_text("".join(json.dumps({"text": f"{template} {tag}{i}"}) + "\n" for i in range(n)),
                                     encoding="utf-8")
    result = leak(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), text="text")
    assert result.counts["near_duplicate"] == n_b
    assert result.near.pairs == n_a * n_b
    assert result.near.a.size == n_b * 5
    # Each B record's matches are the lowest A rows (all scores tie at 28/30).
    best = result.matches[7]["near_duplicate"]
    assert best == [0, 1, 2, 3, 4]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 30), st.integers(0, 2 ** 31 - 1), st.integers(1, 4), st.integers(2, 9))
def test_sample_is_the_best_pairs_of_each_stratum(n, seed, cap, limit):
    """The kept sample equals, stratum by stratum, the best ``cap`` pairs by (score desc, a, b),
    whatever the batches and compactions; ``complete`` says whether any pair was left out."""
    import unittest.mock as mock
    rng = np.random.default_rng(seed)
    codes = np.unique(rng.integers(0, n * n, size=3 * n))
    a, b = np.divmod(codes, n)
    keep = a < b
    a, b = a[keep], b[keep]
    j = rng.choice([0.31, 0.312, 0.55, 0.552, 0.556, 0.9, 0.95, 0.953], size=a.size)
    perm = rng.permutation(a.size)
    a, b, j = a[perm], b[perm], j[perm]
    with mock.patch.object(sink_mod, "STRATUM_CAP", cap):
        s = sink_mod.PairSink(np.ones(n, np.int64), 0.3)
        s.limit = limit
        for lo in range(0, a.size, 3):
            s.add(a[lo:lo + 3], b[lo:lo + 3], j[lo:lo + 3])
        pairs = s.result(n_records=n, node_of=np.arange(n), min_threshold=0.3)
    want = []
    strata = np.floor(j * 100 + 1e-9).astype(int)
    for stratum in np.unique(strata):
        idx = np.flatnonzero(strata == stratum)
        want += sorted(zip((-j[idx]).tolist(), a[idx].tolist(), b[idx].tolist()))[:cap]
    want.sort()
    got = sorted(zip((-pairs.jaccard).tolist(), pairs.a.tolist(), pairs.b.tolist()))
    assert got == want
    assert pairs.complete == (len(want) == a.size)


def test_thresholds_beyond_six_decimals_are_answered_on_the_grid():
    texts = ["a b c d e f g h i j", "a b c d e f g h i k", "a b c d e f g x y z"]
    pairs = near.find_pairs(shingle_matrix(texts), 0.3333337, "exact")
    assert pairs.min_threshold == 0.333333
    assert pairs.node_pairs(0.7000003) == pairs.upto(0.7000003) == pairs.node_pairs(0.7)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 300), st.integers(1, 6), st.integers(1, 12), st.integers(1, 4), st.integers(1, 50),
       st.integers(0, 2 ** 31 - 1))
def test_lsh_candidates_stream_each_colliding_pair_once(n, values, bands, rows, batch, seed):
    """The LSH candidates, streamed band by band into a buffer of ``batch`` pairs, are exactly the
    node pairs that agree on some whole band (counted here with plain dicts), each once."""
    from auditor.near.lsh import lsh_candidate_batches
    rng = np.random.default_rng(seed)
    sig = rng.integers(0, values, size=(n, bands * rows)).astype(np.uint32)
    want = set()
    for band in range(bands):
        buckets: dict = {}
        for node in range(n):
            buckets.setdefault(tuple(sig[node, band * rows:(band + 1) * rows].tolist()), []).append(node)
        want |= {(a, b) for members in buckets.values() for i, a in enumerate(members) for b in members[i + 1:]}
    got = []
    for a, b in lsh_candidate_batches(sig, bands, rows, batch=batch):
        assert 0 < a.size <= batch and (a < b).all()
        got += list(zip(a.tolist(), b.tolist()))
    assert len(got) == len(set(got)) and set(got) == want


def test_lsh_search_on_templates_counts_what_it_catches(mixture):
    """MinHash-LSH on the template mixture (hundreds of copies per bucket, every band): the
    candidates stream in bounded batches, and what is caught is exact. Near-identical pairs
    (J >= 0.8, caught with probability ~1) are all there; lower, at most the reference."""
    texts, ref = mixture
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "lsh")
    assert pairs.method == "minhash-lsh"
    for t in (1.0, 0.9, 0.8):
        assert pairs.record_pairs(t) == ref.pair_count(t), f"pairs at {t}"
        assert _engine_components(pairs, t) == _reference_components(ref, t), f"clusters at {t}"
    for t in (0.7, 0.5, 0.3):
        assert pairs.record_pairs(t) <= ref.pair_count(t)
        assert pairs.record_pairs(t) >= 0.97 * ref.pair_count(t)


@pytest.mark.parametrize("limits", ["default", "small"])
def test_compiled_candidates_match_the_reference(mixture, request, limits, monkeypatch):
    """The compiled accumulation of prefix candidates (used for large joins) on a small input:
    the same pairs and clusters as the reference, dense groups (small limits) included; and
    across two datasets, the same matches as scipy's product."""
    from auditor.near import prefix
    if limits == "small":
        request.getfixturevalue("small_limits")
    texts, ref = mixture
    matrix = shingle_matrix(texts)
    monkeypatch.setattr(prefix, "COMPILED_WORK", 0)
    pairs = near.find_pairs(matrix, 0.3, "exact")
    for t in THRESHOLDS:
        assert pairs.record_pairs(t) == ref.pair_count(t), f"pairs at {t}"
        assert _engine_components(pairs, t) == _reference_components(ref, t), f"clusters at {t}"
    half = len(texts) // 2
    compiled = near.find_cross_pairs(matrix[:half], matrix[half:], 0.5, "exact")
    monkeypatch.setattr(prefix, "COMPILED_WORK", 10 ** 18)
    product = near.find_cross_pairs(matrix[:half], matrix[half:], 0.5, "exact")
    assert compiled.pairs == product.pairs > 0
    assert np.array_equal(compiled.a, product.a) and np.array_equal(compiled.b, product.b)
    assert np.array_equal(compiled.jaccard, product.jaccard)


def test_compiled_and_product_candidates_carry_the_same_bounds(mixture):
    """A review found that the compiled path's Jaccard bounds were bounded twice (50 times too
    small), so past the work budget nearly every candidate counted as implied by the forest and
    was only sampled. Both paths give the same candidates, and the same upper bound on each one's
    Jaccard, which holds for its true Jaccard."""
    from auditor.near.prefix import PrefixIndex, prefix_matrix
    from auditor.near.verifier import verify
    from auditor.shingles import set_sizes
    texts, _ = mixture
    nodes = shingle_matrix(texts)
    prefixes = prefix_matrix(nodes, 0.3)
    block = (0, nodes.shape[0])
    product = PrefixIndex(nodes, prefixes, 0.3, nodes.shape[0])
    compiled = PrefixIndex(nodes, prefixes, 0.3, nodes.shape[0])
    assert compiled.use_compiled(1e18)
    a, b, bound = product.bounded_candidates(block)
    ca, cb, cbound = compiled.bounded_candidates(block)
    order, corder = np.lexsort((b, a)), np.lexsort((cb, ca))
    assert a.size > 100
    assert np.array_equal(a[order], ca[corder]) and np.array_equal(b[order], cb[corder])
    assert np.allclose(bound[order], cbound[corder])
    scores = verify(nodes, a, b, sizes=set_sizes(nodes), min_threshold=0.0)
    assert np.all(scores <= bound + 1e-9)
