"""A batch of the Ray leak's A records (``distributed.leak.near_batch``, what each task runs) finds
exactly the pairs of the Python-set definition: every (A, B) pair at Jaccard >= t with its score, and
every contained pair, on GSM8K questions with edited copies planted, and on text of one-letter words
(every other record one repeated text), where nearly every B record is an A record's candidate.

From a hostile review (session 52): one product per batch of candidates held 15 GB for 8 MB of
one-letter words a side; the batch now makes, filters (size, and the overlap B's prefix leaves in
reach) and verifies its candidates a stretch of rows at a time. Run with the default stretch and
with stretches of about 40 candidates, with the compiled merge and with scipy's row products. No
Ray is started: the batch is a plain function."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import ground_truth as gt
from ground_truth import read_field
from auditor.distributed import leak as ray_leak_module
from auditor.near import contained, verifier
from auditor.settings import ShingleSpec

THRESHOLD = 0.7


def reference(a_texts, b_texts, threshold: float):
    """({(a, b): Jaccard} at >= threshold, {(a, b): containment}) from Python sets, decided exactly."""
    sets_a, sets_b = gt.shingle_sets(a_texts), gt.shingle_sets(b_texts)
    near, inside = {}, {}
    for j, sb in enumerate(sets_b):
        need = math.ceil(threshold * len(sb) - 1e-9)
        for i, sa in enumerate(sets_a):
            inter = len(sa & sb)
            if not inter:
                continue
            if gt._reaches(inter, len(sa | sb), threshold):
                near[(i, j)] = inter / len(sa | sb)
            if need >= contained.MIN_SHARED and inter >= need and threshold * len(sa) + 1e-9 >= len(sb):
                inside[(i, j)] = inter / len(sb)
    return near, inside


@pytest.fixture(scope="module")
def gsm8k_sides(real_data):
    """B: 300 GSM8K test questions; A: 600 train questions, 40 B questions with a word changed, 30
    verbatim, 20 inside a longer text (a passage before, the answer after)."""
    train = read_field(real_data, "gsm8k/train.jsonl", "question", 600)
    test = read_field(real_data, "gsm8k/test.jsonl", "question", 300)
    a = list(train)
    a += [q.replace(" the ", " a ", 1) for q in test[:40]]
    a += test[100:130]
    a += [f"{train[k]} Now the question. {q} Think step by step and answer." for k, q in enumerate(test[200:220])]
    return a, test


@pytest.fixture(scope="module")
def letter_sides():
    """Text of one-letter words: 400 A and 300 B records of 120 letters, every other record one
    repeated text, with 30 B records copied into A with a few letters changed and 22 with letters
    added (A holds every shingle of B's record: the overlap bound is reached exactly)."""
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"

    def side(repeated, n):
        return [repeated if k % 2 else " ".join(rng.choices(letters, k=120)) for k in range(n)]
    b = side(" ".join(rng.choices(letters, k=120)), 300)
    a = side(" ".join(rng.choices(letters, k=120)), 400)
    for k in range(30):
        words = b[2 * k].split()
        for at in rng.sample(range(len(words)), 3):
            words[at] = rng.choice(letters)
        a[2 * k] = " ".join(words)
    for k in range(30, 52):       # B inside A with 40-61 letters more: Jaccard on both sides of t,
        a[2 * k] = b[2 * k] + " " + " ".join(rng.choices(letters, k=10 + k))   # the overlap bound exact
    return a, b


@pytest.mark.parametrize("stretch", ["default", "small"])
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("sides", ["gsm8k_sides", "letter_sides"])
def test_batch_finds_the_pairs_python_sets_find(request, monkeypatch, sides, compiled, stretch):
    a_texts, b_texts = request.getfixturevalue(sides)
    if stretch == "small":
        monkeypatch.setattr(ray_leak_module, "CANDIDATE_CHUNK", 40)
        monkeypatch.setattr(contained, "CANDIDATE_CHUNK", 40)
    monkeypatch.setattr(verifier, "COMPILED_MIN", 0 if compiled else 10 ** 15)
    index = ray_leak_module.build_near_index(b_texts, ShingleSpec(), THRESHOLD)
    ((a, b, jaccard), scored), ((ca, cb, cs), _) = ray_leak_module.near_batch(index, a_texts)
    want_near, want_inside = reference(a_texts, b_texts, THRESHOLD)
    got_near = {(int(x), int(y)): float(s) for x, y, s in zip(a, b, jaccard)}
    assert got_near.keys() == want_near.keys()
    assert all(abs(got_near[k] - want_near[k]) < 1e-12 for k in want_near)
    assert list(zip(a.tolist(), b.tolist())) == sorted(got_near)          # by A row, then B row
    got_inside = {(int(x), int(y)): float(s) for x, y, s in zip(ca, cb, cs)}
    assert got_inside.keys() == want_inside.keys()
    assert all(abs(got_inside[k] - want_inside[k]) < 1e-12 for k in want_inside)
    if sides == "gsm8k_sides":
        assert len(want_near) >= 70 and len(want_inside) >= 15
    else:
        assert len(want_near) >= 30
        # The overlap B's prefixes leave in reach drops nearly every candidate before its merge.
        assert scored < 10 * len(want_near)


def test_index_prefixes_are_each_rows_rarest_shingles(letter_sides):
    """B's prefixes (ranked within rows, no loop over rows): each row's first |b| - ceil(t|b|) + 1
    shingles in the order of (B's count, column), and what is left after them."""
    _, b_texts = letter_sides
    index = ray_leak_module.build_near_index(b_texts, ShingleSpec(), THRESHOLD)
    matrix = index.matrix
    df = np.bincount(matrix.indices, minlength=matrix.shape[1])
    by_row = index.prefix_t.T.tocsr()
    for i in range(matrix.shape[0]):
        row = matrix.indices[matrix.indptr[i]:matrix.indptr[i + 1]].tolist()
        length = len(row) - math.ceil(THRESHOLD * len(row) - 1e-9) + 1
        want = sorted(sorted(row, key=lambda c: (df[c], c))[:length])
        assert sorted(by_row.indices[by_row.indptr[i]:by_row.indptr[i + 1]].tolist()) == want
        assert index.after_prefix[i] == len(row) - length
