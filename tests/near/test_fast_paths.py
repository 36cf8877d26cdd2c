"""The engine's fast paths give exactly what the plain definitions give.

Each speed-up taken for large inputs (Arrow tokenisation, threaded key ranking, the
overlap filter, dense verification, compiled MinHash) is forced on here, at sizes where
the engine would not choose it on its own, and compared with an independent result:
Python's own ``str.lower().split()``, ``np.unique``, exact intersections, the pure-Python
reference in ground_truth.py, and the numpy signature loop.
"""
from __future__ import annotations

import json
import os
import random
import re

import numpy as np
import pytest
import scipy.sparse as sp

import ground_truth as gt
from ground_truth import read_field
from auditor import near, parallel, shingles
from auditor.shingles import ShingleSpec, shingle_matrix
from auditor.normalize import fold


def python_tokens(texts):
    """What word_tokens must return, from Python alone: ids in sorted word order."""
    words = [fold(t).split() if t else [] for t in texts]      # the normalised text's words (tests/normalize)
    vocabulary = {w: i for i, w in enumerate(sorted({w for ws in words for w in ws}))}
    return [vocabulary[w] for ws in words for w in ws], [len(ws) for ws in words]


ASCII_CASES = ["", None, "   ", " Leading and trailing ", "MiXeD CaSe words", "tabs\tand\nnewlines\r\nhere",
               "vertical\x0btab\x0cfeed", "seps\x1cfile\x1dgroup\x1erecord\x1funit", "nul\x00inside",
               "punct-uation, stays! attached?", "x"]
UNICODE_CASES = ["İstanbul ÇAĞRI straße ǅ", "ﬁne ligature ΣΑΣ", "nbsp\u00a0and\u2003em\u3000space",
                 "next\x85line", "emoji 😀 family 👨‍👩‍👧", "rtl עברית العربية", "zero\u200bwidth", "lone \ud800 surrogate"]


@pytest.fixture
def arrow_always(monkeypatch):
    monkeypatch.setattr(shingles, "ARROW_MIN_TEXTS", 0)
    monkeypatch.setattr(shingles, "ARROW_BATCH", 7)      # several batches, words shared across them


def test_arrow_tokens_equal_python_on_every_ascii_character(arrow_always):
    # Every ASCII character, alone, between words, and doubled: Python splits on \t\n\v\f\r, space
    # and \x1c-\x1f; Arrow's ASCII split must agree wherever it is used.
    texts = [f"a{chr(c)}b {chr(c)}C{chr(c)}{chr(c)}d" for c in range(128)] + [chr(c) for c in range(128)]
    ids, lengths = shingles.word_tokens(texts)
    want_ids, want_lengths = python_tokens(texts)
    assert ids.tolist() == want_ids and lengths.tolist() == want_lengths


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_arrow_tokens_equal_python_on_mixed_texts(arrow_always, seed):
    rng = random.Random(seed)
    alphabet = [chr(c) for c in range(128)] + list("éİßΣ\u2003\x85\u00a0😀ǅ")
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(400)]
    texts += ASCII_CASES + UNICODE_CASES
    rng.shuffle(texts)
    ids, lengths = shingles.word_tokens(texts)
    want_ids, want_lengths = python_tokens(texts)
    assert ids.tolist() == want_ids and lengths.tolist() == want_lengths


def test_arrow_and_python_paths_give_the_same_matrix(real_data, monkeypatch):
    texts = read_field(real_data, "gsm8k/test.jsonl", "question") + UNICODE_CASES + ASCII_CASES
    monkeypatch.setattr(shingles, "ARROW_MIN_TEXTS", 10 ** 9)
    python_matrix = shingle_matrix(texts)
    monkeypatch.setattr(shingles, "ARROW_MIN_TEXTS", 0)
    arrow_matrix = shingle_matrix(texts)
    assert python_matrix.shape == arrow_matrix.shape
    assert (python_matrix != arrow_matrix).nnz == 0


@pytest.mark.parametrize("case", ["random", "few-distinct", "all-equal", "two", "sorted"])
def test_threaded_key_ranks_equal_np_unique(monkeypatch, case):
    rng = np.random.default_rng(7)
    keys = {"random": rng.integers(-2 ** 62, 2 ** 62, 50_000),
            "few-distinct": rng.integers(0, 5, 50_000),
            "all-equal": np.full(50_000, 42),
            "two": np.array([9, 3]),
            "sorted": np.arange(50_000) // 3}[case].astype(np.int64)
    monkeypatch.setattr(shingles, "PARALLEL_MIN", 0)
    monkeypatch.setattr(parallel, "WORKERS", 3)
    uniq, inverse = np.unique(keys, return_inverse=True)
    count, codes = shingles.sorted_codes(keys)
    assert count == uniq.size
    assert np.array_equal(codes, inverse.reshape(-1))


def candidate_pairs(nodes, t):
    """Every pair sharing a prefix shingle, with the number shared (the exact search's raw candidates)."""
    prefixes = near.prefix_matrix(nodes, t)
    product = sp.triu(prefixes.astype(np.float32) @ prefixes.T, k=1).tocoo()      # counts (prefixes are bool)
    return prefixes, product.row.astype(np.int64), product.col.astype(np.int64), product.data


@pytest.mark.parametrize("rel,field,t", [("gsm8k/test.jsonl", "question", 0.3), ("spider/train_spider.jsonl", "query", 0.5),
                                         ("mbpp/mbpp.jsonl", "text", 0.7)])
def test_overlap_filter_never_drops_a_true_pair(real_data, rel, field, t):
    nodes = near.collapse_identical(shingle_matrix(read_field(real_data, rel, field)))[2]
    prefixes, a, b, shared = candidate_pairs(nodes, t)
    sizes = shingles.set_sizes(nodes)
    keep = near.CandidateFilter(prefixes, sizes, t)(a, b, shared)
    inter = np.asarray(nodes[a].multiply(nodes[b]).sum(axis=1)).reshape(-1)
    jaccard = inter / (sizes[a] + sizes[b] - inter)
    true_pair = jaccard >= t - 1e-9
    assert true_pair.sum() > 0 and (~keep).sum() > 0            # the case has pairs and the filter works
    assert not (true_pair & ~keep).any()
    # And the bound it uses really bounds the intersection.
    last = prefixes.indices[prefixes.indptr[1:] - 1]
    suffix = sizes - np.diff(prefixes.indptr)
    earlier = np.where(last[a] <= last[b], a, b)
    assert (shared + suffix[earlier] >= inter).all()


@pytest.fixture(scope="module")
def templated(real_data, copies=300, seed=5):
    """Real questions plus `copies` ~150-word texts sharing one template, each with a few edits."""
    rng = random.Random(seed)
    questions = read_field(real_data, "gsm8k/train.jsonl", "question", 1500)
    words = " ".join(questions[:8]).split()
    pool = " ".join(questions).split()
    template = []
    for _ in range(copies):
        copy = [rng.choice(pool) if rng.random() < 0.05 else w for w in words]
        template.append(" ".join(copy))
    texts = questions + template
    rng.shuffle(texts)
    return texts


@pytest.fixture(scope="module")
def template_reference(templated):
    return gt.reference(templated, "word", 3)


@pytest.fixture
def dense_calls(monkeypatch):
    """Records every template group the exact search scores densely (which it still does)."""
    calls, real = [], near.dense.process
    monkeypatch.setattr(near.dense, "process", lambda *a: calls.append(a[1].ids.size) or real(*a))
    return calls


def test_compiled_verification_equals_row_products(templated, monkeypatch):
    """The compiled merge of sorted shingle lists and scipy's row products give the same scores."""
    nodes = near.collapse_identical(shingle_matrix(templated))[2]
    rng = np.random.default_rng(3)
    a = rng.integers(0, nodes.shape[0], 200_000)
    b = rng.integers(0, nodes.shape[0], 200_000)
    monkeypatch.setattr(near.verifier, "COMPILED_MIN", 0)
    compiled = near.verify(nodes, a, b)
    monkeypatch.setattr(near.verifier, "COMPILED_MIN", 10 ** 15)
    row_products = near.verify(nodes, a, b)
    assert np.array_equal(compiled, row_products)
    assert (row_products >= 0.3).sum() > 1000


@pytest.mark.parametrize("workers", [1, 3])
def test_search_with_template_groups_and_threads_matches_reference(templated, template_reference, dense_calls,
                                                                   monkeypatch, workers):
    texts = templated
    monkeypatch.setattr(parallel, "WORKERS", workers)
    monkeypatch.setattr(near.prefix, "PRODUCT_BUDGET", 200_000)    # many blocks
    monkeypatch.setattr(near.verifier, "COMPILED_MIN", 0)         # the compiled merge on every block
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "exact")
    assert len(dense_calls) == 1 and dense_calls[0] >= 300     # the copies (and the questions they came from)
    got = gt.engine_record_pairs(pairs, 0.3)
    want = template_reference.record_pairs(0.3)
    assert len(want) > 40_000
    assert set(got) == set(want)
    assert max(abs(got[k] - want[k]) for k in want) < 1e-12


def test_compiled_minhash_equals_numpy(real_data):
    texts = read_field(real_data, "gsm8k/train.jsonl", "question", 3000) + ["one", "two words"]
    nodes = near.collapse_identical(shingle_matrix(texts))[2]
    for num_perm, seed in ((128, 1), (7, 99)):
        assert np.array_equal(near.minhash_signatures(nodes, num_perm, seed),
                              near.minhash_signatures_numpy(nodes, num_perm, seed))


def test_worker_count_is_bounded():
    assert 1 <= parallel.WORKERS <= 4 or str(parallel.WORKERS) == os.environ.get("AUDITOR_THREADS")
    assert list(parallel.thread_map(lambda x: x * x, range(5))) == [0, 1, 4, 9, 16]


def test_char_shingles_unchanged_by_thread_count(real_data, monkeypatch):
    texts = read_field(real_data, "spider/dev.jsonl", "question")
    monkeypatch.setattr(shingles, "PARALLEL_MIN", 0)
    threaded = shingle_matrix(texts, ShingleSpec("char", 5))
    monkeypatch.setattr(shingles, "PARALLEL_MIN", 10 ** 12)
    plain = shingle_matrix(texts, ShingleSpec("char", 5))
    assert (threaded != plain).nnz == 0


def test_incremental_curve_equals_full_labelling(real_data):
    from auditor.clusters import cluster_labels, curve
    texts = read_field(real_data, "spider/train_spider.jsonl", "question") + ["same text here"] * 3 + ["", None]
    pairs = near.find_pairs(shingle_matrix(texts), 0.3)
    thresholds = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
    counts = [point.clusters for point in curve(pairs, thresholds)]
    assert counts == [cluster_labels(pairs, t)[1].size for t in thresholds]
    assert counts[-1] > counts[0] > 0


def test_lsh_verification_matches_reference(templated, template_reference, monkeypatch):
    texts = templated
    monkeypatch.setattr(near.verifier, "COMPILED_MIN", 0)
    pairs = near.find_pairs(shingle_matrix(texts), 0.3, "lsh")
    assert pairs.method == "minhash-lsh" and pairs.complete
    want = template_reference.record_pairs(0.3)
    members = pairs.members()
    found = 0
    for node_a, node_b, j in zip(pairs.a.tolist(), pairs.b.tolist(), pairs.jaccard.tolist()):
        x, y = int(members[node_a][0]), int(members[node_b][0])
        key = (min(x, y), max(x, y))
        assert abs(want[key] - j) < 1e-12          # every reported pair is true, with its exact score
        found += 1
    assert found >= 0.99 * len(want)


def test_reports_identical_for_any_thread_count(templated, run_cli, tmp_path):
    """Threads change the order work finishes in, never the report: summary.json and REPORT.md
    are byte-identical with 1 and 3 threads on templated data (dense verification in play)."""
    path = tmp_path / "templated.jsonl"
    path.write_text("".join(json.dumps({"question": t}) + "\n" for t in templated), encoding="utf-8")
    outputs = []
    for threads in ("1", "3"):
        out = tmp_path / f"out{threads}"
        rc, _, err = run_cli("scan", path, "--text", "question", "--quiet", "--out-dir", out,
                             env={"AUDITOR_THREADS": threads})
        assert "Traceback" not in err and rc in (0, 1), err[-400:]
        outputs.append(((out / "summary.json").read_bytes(), (out / "REPORT.md").read_bytes()))
    assert outputs[0] == outputs[1]
    summary = json.loads(outputs[0][0])
    assert summary["curve"][-1]["pairs"] > 40_000


def test_bad_thread_setting_warns_and_runs(run_cli):
    rc, out, err = run_cli("scan", "example:humaneval", "--quiet", "--json", "-", env={"AUDITOR_THREADS": "many"})
    assert rc in (0, 1) and "Traceback" not in err
    assert "AUDITOR_THREADS='many'" in err and json.loads(out)["kind"] == "scan"


def per_word_tokens(text):
    """The contamination tokenizer's definition, word by word: lowercase, split on whitespace with
    each character of a script written without spaces (Thai, Lao, Myanmar, Khmer, kana, Han) a word
    of its own (``unspaced.words``), strip non-word characters and underscores from each word, drop
    empty words."""
    from auditor.unspaced import words
    return [t for t in (re.sub(r"[^\w]+|_", "", w) for w in words(fold(text).lower())) if t] if text else []


def test_contamination_tokenizer_equals_its_per_word_definition():
    from hypothesis import given, settings, strategies as st
    from auditor.contamination import tokenize

    every_char = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c <= 0xDFFF)
    assert tokenize(every_char) == per_word_tokens(every_char)
    assert tokenize(" ".join(every_char)) == per_word_tokens(" ".join(every_char))

    @settings(max_examples=400, deadline=None)
    @given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(list(" _-.,\t\n\x1c\x85\u00a0\u2003İß")),
                   max_size=60))
    def agree(text):
        assert tokenize(text) == per_word_tokens(text)
    agree()


def test_the_sample_order_equals_a_three_key_lexsort():
    """``sink.best_first`` (two stable sorts on j and a packed (a, b)) orders pairs as
    ``np.lexsort((b, a, -j))``: j descending, then a, then b, ties (the same pair twice) kept in
    their order. Many equal scores and repeated pairs, node numbers up to 2**31 - 1."""
    from auditor.near.sink import best_first
    rng = np.random.default_rng(11)
    for n, high in ((0, 10), (1, 10), (5_000, 40), (200_000, 2**31 - 1)):
        a = rng.integers(0, high, n)
        b = np.minimum(a + rng.integers(1, 50, n), 2**31 - 1)
        j = rng.integers(30, 101, n) / 100.0
        np.testing.assert_array_equal(best_first(a, b, j), np.lexsort((b, a, -j)))
