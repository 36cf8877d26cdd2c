"""Property-based tests: normalisers, Jaccard and clusters behave as algebra says they must."""
import itertools
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import normalize
from auditor.clusters import curve
from auditor.exact import duplicate_groups, key_ids
from auditor.normalize import normalized
from auditor.near import find_pairs
from auditor.normalize import fold
from auditor.shingles import ShingleSpec, shingle_matrix

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "Ünï", "e\u0301", "👍", "שלום", "\u200b", "x\x00y"]
texts_strategy = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join),
                          min_size=1, max_size=25)
any_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)


@given(any_text)
def test_normalizers_are_idempotent(text):
    for name in ("exact", "default", "code"):
        fn = normalize.get(name)
        assert fn(fn(text)) == fn(text)


@given(any_text)
def test_default_normalizer_ignores_case_and_spacing(text):
    assert normalize.default(text) == normalize.default("  " + text.replace(" ", "\t \n") + "\n")
    ascii_text = text.encode("ascii", "ignore").decode()
    assert normalize.default(ascii_text.upper()) == normalize.default(ascii_text)


def _reference_pairs(texts, threshold):
    """Plain-Python Jaccard over 3-word shingle sets (the documented preparation)."""
    sets = []
    for t in texts:
        w = fold(t).split()          # the normalised text (normalize.fold, tested in tests/normalize)
        sets.append({tuple(w[i:i + 3]) for i in range(len(w) - 2)} if len(w) >= 3 else ({tuple(w)} if w else set()))
    out = {}
    for i, j in itertools.combinations(range(len(texts)), 2):
        if sets[i] and sets[j]:
            jac = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
            if jac >= threshold - 1e-9:
                out[(i, j)] = jac
    return out


def _engine_record_pairs(texts, threshold, method):
    pairs = find_pairs(shingle_matrix(texts, ShingleSpec()), threshold, method)
    return pairs, pairs.record_pairs(threshold)


@settings(max_examples=60, deadline=None)
@given(texts_strategy, st.sampled_from([0.3, 0.5, 0.7, 1.0]))
def test_pair_count_matches_plain_python(texts, threshold):
    expected = _reference_pairs(texts, threshold)
    for method in ("exact", "lsh"):
        _, got = _engine_record_pairs(texts, threshold, method)
        if method == "exact":
            assert got == len(expected)
        else:
            assert got <= len(expected)   # LSH may miss, never invents: every pair is verified


@settings(max_examples=40, deadline=None)
@given(texts_strategy, st.randoms(use_true_random=False))
def test_permuting_records_keeps_counts(texts, rnd):
    order = list(range(len(texts)))
    rnd.shuffle(order)
    shuffled = [texts[i] for i in order]
    a = find_pairs(shingle_matrix(texts), 0.3, "exact")
    b = find_pairs(shingle_matrix(shuffled), 0.3, "exact")
    assert [(p.pairs, p.clusters) for p in curve(a, [0.9, 0.5, 0.3])] == \
           [(p.pairs, p.clusters) for p in curve(b, [0.9, 0.5, 0.3])]
    ga = duplicate_groups(key_ids(normalized(texts, "default")), "default")
    gb = duplicate_groups(key_ids(normalized(shuffled, "default")), "default")
    assert (ga.groups, ga.records) == (gb.groups, gb.records)


@settings(max_examples=40, deadline=None)
@given(texts_strategy)
def test_duplicating_the_dataset_doubles_exact_duplicates(texts):
    values = normalized(texts, "default")
    once = duplicate_groups(key_ids(values), "default")
    twice = duplicate_groups(key_ids(values + values), "default")
    non_empty = [v for v in values if v is not None]
    assert twice.groups == len(set(non_empty))          # every distinct value now repeats
    assert twice.records == 2 * len(non_empty)
    # Records that were already duplicated stay in groups twice as large.
    assert once.records * 2 <= twice.records


def test_unicode_edge_cases_are_stable():
    texts = ["cafe\u0301 au lait today", "café au lait today", "שלום עולם טוב מאוד", "a\u200bb c d e",
             "emoji 👍 emoji 👍 emoji", "nul\x00byte in the text", "", "   "]
    first = find_pairs(shingle_matrix(texts), 0.3, "exact")
    for _ in range(3):
        again = find_pairs(shingle_matrix(list(texts)), 0.3, "exact")
        assert np.array_equal(first.a, again.a) and np.array_equal(first.jaccard, again.jaccard)
    # NFC makes the two spellings of "café" one value under the default normaliser.
    assert normalize.default(texts[0]) == normalize.default(texts[1])
    # Empty and blank texts take no part in near-duplicate search.
    assert first.node_of[6] == -1 and first.node_of[7] == -1


def test_lsh_and_exact_agree_on_random_edits():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(300)]
    base = [[rng.choice(vocab) for _ in range(30)] for _ in range(200)]
    texts = []
    for words in base:
        texts.append(" ".join(words))
        edited = [rng.choice(vocab) if rng.random() < 0.05 else w for w in words]
        texts.append(" ".join(edited))
    exact = find_pairs(shingle_matrix(texts), 0.5, "exact")
    lsh = find_pairs(shingle_matrix(texts), 0.5, "lsh")
    assert exact.record_pairs(0.5) == lsh.record_pairs(0.5) > 150
