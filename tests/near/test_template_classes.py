"""Dense template groups with swapped words: records that only private shingles tell apart
(an id word, a swapped slot word, an edit) are searched once per class (``near.classes``).

Everything is checked against the independent all-pairs reference (tests/ground_truth.py):
pair counts at every threshold, every cluster's membership, the best pairs, on shapes where
the classes do the work (a class whose own Jaccard is below a threshold but that joins a
neighbour there; one that joins nothing; classes beside real questions and dense groups)."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ground_truth as gt
from auditor import near
from auditor.clusters import cluster_labels, curve
from auditor.near import classes as classes_mod, dense, result, sink as sink_mod
from auditor.shingles import shingle_matrix

THRESHOLDS = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3)


def template_swaps(n: int, seed: int, words: int = 27, swap_share: float = 1 / 3, choices: int = 3,
                   base: list | None = None) -> list[str]:
    """``n`` copies of one notice plus a unique id word, a share with one word swapped."""
    rng = random.Random(seed)
    base = base or ("please read this notice before you continue this site uses cookies to improve your "
                    "experience and measure how visitors use our pages by continuing you agree").split()[:words]
    out = []
    for i in range(n):
        text = list(base)
        if rng.random() < swap_share:
            text[rng.randrange(len(text))] = f"slot{rng.randrange(choices)}"
        out.append(" ".join(text) + f" id{i}x")
    return out


def components(pairs, threshold) -> list:
    label, _ = cluster_labels(pairs, threshold)
    groups: dict = {}
    for record, lab in enumerate(label.tolist()):
        if lab >= 0:
            groups.setdefault(lab, []).append(record)
    return sorted(tuple(g) for g in groups.values())


def assert_matches_reference(texts, pairs, ref, thresholds=THRESHOLDS) -> None:
    for t in thresholds:
        assert pairs.record_pairs(t) == ref.pair_count(t), t
        assert components(pairs, t) == [tuple(c) for c in ref.clusters(t)], t
    points = curve(pairs, list(thresholds))
    n = len(texts)
    for p in points:
        clusters = ref.clusters(p.threshold)
        assert p.clusters == len(clusters)
        assert p.clusters_per_1000 == round(1000 * len(clusters) / n, 4)


def best_pairs(ref, threshold, limit):
    """The reference's best record pairs as the sample shows them (each pair of distinct texts by
    their first records, copies of one text against its first record): Jaccard desc, then (a, b)."""
    first = {m[0] for m in ref.members}
    node = {r: i for i, m in enumerate(ref.members) for r in m}
    shown = [(a, b, j) for (a, b), j in ref.record_pairs(threshold).items()
             if a in first and (b in first or node[a] == node[b])]
    return sorted(shown, key=lambda p: (-p[2], p[0], p[1]))[:limit]


@pytest.mark.slow
def test_notice_with_swaps_counts_clusters_and_best_pairs_match_the_reference():
    texts = template_swaps(900, seed=3)
    matrix = shingle_matrix(texts)
    pairs = near.find_pairs(matrix, 0.3, "exact")
    # The search ran over classes: one per swap (27 positions x 3 words at most) and the notice.
    assert pairs.n_nodes == 900 and pairs.candidates < 82 * 81 // 2 + 1
    ref = gt.reference(texts)
    assert_matches_reference(texts, pairs, ref)
    for t in (0.9, 0.5, 0.3):
        want = best_pairs(ref, t, 50)
        got = pairs.record_pair_sample(t, 50)
        assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in want]
        assert [j for *_, j in got] == pytest.approx([j for *_, j in want], abs=1e-12)


def test_a_class_below_its_own_jaccard_joins_through_a_neighbour_or_stays_apart():
    """Short notices with three id words: two copies score 3/9 with each other (below 0.4), but
    each scores higher with the notice itself, so at 0.4 they cluster through it; a second
    notice with no plain copy stays apart at 0.4 and forms one cluster at 0.3."""
    first = [f"alpha beta gamma delta epsilon u{i} v{i} w{i}" for i in range(40)] + ["alpha beta gamma delta epsilon"]
    second = [f"one two three four five p{i} q{i} r{i}" for i in range(30)]
    texts = first + second
    random.Random(1).shuffle(texts)
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact")
    ref = gt.reference(texts)
    assert_matches_reference(texts, pairs, ref)
    assert len(ref.clusters(0.4)) == 1 and len(ref.clusters(0.3)) == 2       # the shape is what it says


def test_classes_beside_real_questions_edited_templates_and_copies(real_data, monkeypatch):
    """Swapped notices, a 60-word template with edits (a dense group), real GSM8K questions and
    exact copies, with the engine's limits turned down (dense blocks, compactions, a truncated
    sample): every count and cluster equals the reference's."""
    monkeypatch.setattr(dense, "HEAVY_DF", 64)
    monkeypatch.setattr(dense, "MIN_NODES", 64)
    monkeypatch.setattr(dense, "BLOCK_CELLS", 20_000)
    monkeypatch.setattr(dense, "EMIT_CAP", 500)
    monkeypatch.setattr(sink_mod, "BUFFER_MIN", 2_000)
    monkeypatch.setattr(sink_mod, "COUNT_FLUSH", 5_000)
    for module in (result, sink_mod, classes_mod):
        monkeypatch.setattr(module, "STRATUM_CAP", 50)
    rng = random.Random(5)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", 800)
    pool = " ".join(questions).split()
    template = " ".join(questions[20:24]).split()[:60]
    edited = [" ".join(rng.choice(pool) if rng.random() < rng.uniform(0.02, 0.12) else w for w in template)
              for _ in range(300)]
    texts = questions + edited + template_swaps(700, seed=9) + questions[:15] + template_swaps(5, seed=9)
    rng.shuffle(texts)
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact")
    assert pairs.dense_groups, "the edited template should still take the dense path"
    ref = gt.reference(texts)
    assert_matches_reference(texts, pairs, ref)
    # With a truncated sample the best pairs are still the reference's best.
    for t in (0.9, 0.6):
        want = best_pairs(ref, t, 40)
        assert [(a, b) for a, b, _ in pairs.record_pair_sample(t, 40)] == [(a, b) for a, b, _ in want]


def test_lsh_over_classes_finds_the_template_pairs():
    texts = template_swaps(600, seed=11) + template_swaps(200, seed=12, base="a b c d e f g h i j k l".split())
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "lsh")
    ref = gt.reference(texts)
    # Classes of a few dozen representatives: the LSH catches every pair of them at these scores.
    assert_matches_reference(texts, pairs, ref, (0.9, 0.7, 0.5, 0.3))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 31 - 1), st.integers(2, 6), st.integers(1, 4))
def test_random_slot_texts_match_the_reference(seed, slots, private_words):
    """Random texts over a small vocabulary with private id words: many classes, classes whose
    own Jaccard falls anywhere, identical copies among them."""
    rng = random.Random(seed)
    vocab = [f"w{k}" for k in range(slots + 3)]
    texts = []
    for i in range(rng.randint(20, 120)):
        words = [rng.choice(vocab[:slots]) if rng.random() < 0.2 else vocab[k % len(vocab)] for k in range(8)]
        ids = [f"x{i}y{k}" for k in range(rng.randint(0, private_words))]
        texts.append(" ".join(words + ids))
    texts += texts[:rng.randint(0, 5)]
    t_min = 0.3
    pairs = near.find_pairs(shingle_matrix(texts), t_min, "exact")
    ref = gt.reference(texts, min_threshold=t_min)
    assert_matches_reference(texts, pairs, ref, (1.0, 0.8, 0.6, 0.5, 0.4, 0.3))


def test_classes_stay_out_of_sets_they_would_barely_shrink(real_data):
    """Real question sets keep the node-level search (and so the same candidates and report)."""
    for rel, field in (("gsm8k/train.jsonl", "question"), ("mbpp/mbpp.jsonl", "text")):
        matrix = shingle_matrix(gt.read_field(real_data, rel, field))
        _, weight, nodes = near.collapse_identical(matrix)
        assert near.node_classes(nodes, weight) is None
    # And a template set does take them.
    _, weight, nodes = near.collapse_identical(shingle_matrix(template_swaps(500, seed=2)))
    found = near.node_classes(nodes, weight)
    assert found is not None and found.n_classes <= 82 and int(found.count.sum()) == 500
    assert np.all(found.rep == np.sort(found.rep))
