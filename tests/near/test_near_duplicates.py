"""Near-duplicate search on real data: published curves, an independent reference, the
threshold cache, identical/variant classification and a degenerate giant cluster."""
from __future__ import annotations

import json
import math
import time

import pytest

import auditor
import ground_truth as gt
from ground_truth import engine_members, engine_record_pairs, read_field
from auditor import AuditorError, ScanSettings, ShingleSpec
from auditor.clusters import cluster_labels

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)

# Published cluster curves (clusters at 0.9 .. 0.3), word 3-shingles, default preparation. Spider
# train's queries are not in the published tables: their curve is the one tests/ground_truth.py gives.
PUBLISHED = {
    "gsm8k-train": ("gsm8k/train.jsonl", "question", (1, 1, 1, 3, 10, 27, 41)),
    "spider-train": ("spider/train_spider.jsonl", "question", (33, 47, 77, 145, 259, 434, 606)),
    "spider-dev": ("spider/dev.jsonl", "question", (0, 1, 3, 11, 34, 61, 104)),
    "mbpp": ("mbpp/mbpp.jsonl", "text", (4, 7, 25, 72, 124, 137, 94)),
    "spider-train-query": ("spider/train_spider.jsonl", "query", (2969, 2920, 2813, 2651, 2348, 2055, 1593)),
}

_SCANS: dict = {}


def scan_cached(real_data, rel: str, field: str, method: str = "auto", max_rows=None,
                shingle: ShingleSpec = ShingleSpec(), answer=None):
    key = (rel, field, method, max_rows, shingle, answer)
    if key not in _SCANS:
        _SCANS[key] = auditor.scan(str(real_data / rel), text=field, answer=answer, max_rows=max_rows,
                                   settings=ScanSettings(method=method, shingle=shingle))
    return _SCANS[key]


def engine_clusters(pairs, threshold: float) -> list:
    label, _ = cluster_labels(pairs, threshold)
    comps: dict = {}
    for record, c in enumerate(label.tolist()):
        if c >= 0:
            comps.setdefault(c, []).append(record)
    return sorted(tuple(sorted(c)) for c in comps.values())


def assert_same_pairs(got: dict, want: dict, context: str) -> None:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    assert not missing and not extra, (f"{context}: {len(missing)} pairs missing (e.g. {missing[:5]}), "
                                       f"{len(extra)} extra (e.g. {extra[:5]})")
    bad = [(k, got[k], want[k]) for k in want if abs(got[k] - want[k]) > 1e-9]
    assert not bad, f"{context}: Jaccard differs on {len(bad)} pairs, e.g. {bad[:5]}"


# --------------------------------------------------------------------------- (a) published curves

@pytest.mark.parametrize("method", ["auto", "lsh"])
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_published_cluster_curve(real_data, name, method):
    rel, field, expected = PUBLISHED[name]
    result = scan_cached(real_data, rel, field, method)
    assert [p.threshold for p in result.curve] == list(THRESHOLDS)
    assert tuple(p.clusters for p in result.curve) == expected
    # The per-threshold API agrees with the curve.
    assert tuple(result.near_duplicates(t).clusters for t in THRESHOLDS) == expected
    assert result.summary()["curve"][2]["clusters"] == expected[2]
    if method == "auto":
        assert result.pairs.method == "exact-all-pairs"      # a few thousand texts: exact search
    else:
        assert result.pairs.method == "minhash-lsh"


@pytest.mark.parametrize("method", ["auto", "lsh"])
def test_gsm8k_train_single_pair_at_0_7(real_data, method):
    result = scan_cached(real_data, "gsm8k/train.jsonl", "question", method)
    near = result.near_duplicates(0.7)
    assert near.pairs == 1
    assert near.clusters == 1
    assert near.pairs_sample == [{"a": 2483, "b": 6691, "jaccard": 0.9333}]
    pairs = engine_record_pairs(result.pairs, 0.7)
    assert list(pairs) == [(2483, 6691)]
    assert pairs[(2483, 6691)] == pytest.approx(0.9333, abs=5e-5)
    # Independently: the two questions' shingle sets.
    texts = result.fields.text
    a, b = gt.word_shingles(texts[2483]), gt.word_shingles(texts[6691])
    assert pairs[(2483, 6691)] == pytest.approx(gt.jaccard(a, b), abs=1e-12)


@pytest.mark.parametrize("method", ["auto", "lsh"])
def test_spider_train_99_pairs_at_0_7(real_data, method):
    result = scan_cached(real_data, "spider/train_spider.jsonl", "question", method)
    assert result.near_duplicates(0.7).pairs == 99
    assert result.curve[2].pairs == 99
    assert len(engine_record_pairs(result.pairs, 0.7)) == 99


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_reference_reproduces_published_curve(real_data, name):
    """The reference itself is checked against the published numbers, and the engine's
    default path against the reference pair by pair."""
    rel, field, expected = PUBLISHED[name]
    ref = gt.reference(read_field(real_data, rel, field))
    assert tuple(ref.cluster_count(t) for t in THRESHOLDS) == expected
    result = scan_cached(real_data, rel, field, "auto")
    assert [p.pairs for p in result.curve] == [ref.pair_count(t) for t in THRESHOLDS]
    assert_same_pairs(engine_record_pairs(result.pairs, 0.3), ref.record_pairs(0.3), f"{name} J>=0.3")


# --------------------------------------------------------------------------- (b) against the reference

UNTUNED = {
    "gsm8k-test-question": ("gsm8k/test.jsonl", "question", None, ShingleSpec("word", 3)),
    "gsm8k-test-answer": ("gsm8k/test.jsonl", "answer", None, ShingleSpec("word", 3)),
    "mbpp-code": ("mbpp/mbpp.jsonl", "code", None, ShingleSpec("word", 3)),
    "humaneval-prompt": ("humaneval/HumanEval.jsonl", "prompt", None, ShingleSpec("word", 3)),
    "humaneval-solution": ("humaneval/HumanEval.jsonl", "canonical_solution", None, ShingleSpec("word", 3)),
    # answer named explicitly: left blank, the guess lands on the dict-valued `sql` field (see
    # roles/test_role_guessing.py::test_guessed_answer_skips_object_valued_fields).
    "spider-dev-query": ("spider/dev.jsonl", "query", None, ShingleSpec("word", 3)),
    "gsm8k-train-answer-3000": ("gsm8k/train.jsonl", "answer", 3000, ShingleSpec("word", 3)),
    "spider-dev-question-word2": ("spider/dev.jsonl", "question", None, ShingleSpec("word", 2)),
    "spider-dev-question-char5": ("spider/dev.jsonl", "question", None, ShingleSpec("char", 5)),
    "mbpp-text-char5": ("mbpp/mbpp.jsonl", "text", None, ShingleSpec("char", 5)),
    # long windows: too many distinct tokens to pack into one int64, the tuple-ranking path
    "spider-dev-question-char10": ("spider/dev.jsonl", "question", None, ShingleSpec("char", 10)),
    "mbpp-text-word7": ("mbpp/mbpp.jsonl", "text", None, ShingleSpec("word", 7)),
    "gsm8k-test-question-char4-600": ("gsm8k/test.jsonl", "question", 600, ShingleSpec("char", 4)),
}
_REFS: dict = {}


def reference_for(real_data, name):
    if name not in _REFS:
        rel, field, max_rows, spec = UNTUNED[name]
        _REFS[name] = gt.reference(read_field(real_data, rel, field, max_rows), spec.unit, spec.size)
    return _REFS[name]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["exact", "lsh"])
@pytest.mark.parametrize("name", list(UNTUNED))
def test_engine_matches_reference(real_data, name, method):
    rel, field, max_rows, spec = UNTUNED[name]
    ref = reference_for(real_data, name)
    answer = None
    if rel == "spider/dev.jsonl":      # name the answer: the guess would reach the dict field `sql`
        answer = "question" if field == "query" else "query"
    result = scan_cached(real_data, rel, field, method, max_rows, spec, answer=answer)
    assert result.records == ref.n_records
    # Records with identical shingle sets collapse to the same nodes as in the reference.
    assert result.pairs.n_nodes == len(ref.members)
    assert sorted(engine_members(result.pairs).values()) == sorted(ref.members)
    checked = THRESHOLDS if method == "exact" else tuple(t for t in THRESHOLDS if t >= 0.5)
    if method == "exact":
        assert_same_pairs(engine_record_pairs(result.pairs, 0.3), ref.record_pairs(0.3), f"{name} exact J>=0.3")
    for t in checked:
        want = ref.record_pairs(t)
        got = {k: j for k, j in engine_record_pairs(result.pairs, 0.3 if method == "exact" else 0.5).items()
               if j >= t - 1e-9}
        assert_same_pairs(got, want, f"{name} {method} J>={t}")
        assert result.near_duplicates(t).pairs == len(want) == ref.pair_count(t)
        assert engine_clusters(result.pairs, t) == ref.clusters(t), f"{name} {method} clusters at {t}"
        assert result.near_duplicates(t).clusters == ref.cluster_count(t)
    curve = {p.threshold: (p.pairs, p.clusters) for p in result.curve}
    for t in checked:
        assert curve[t] == (ref.pair_count(t), ref.cluster_count(t)), f"{name} {method} curve at {t}"


def test_reference_cases_are_not_trivial(real_data):
    """Guard: the comparison above must exercise pairs, clusters and collapsed identical texts."""
    refs = {name: reference_for(real_data, name) for name in UNTUNED}
    assert sum(len(r.record_pairs(0.3)) for r in refs.values()) > 1000
    assert sum(r.cluster_count(0.5) for r in refs.values()) > 100
    assert any(len(m) > 1 for r in refs.values() for m in r.members)
    assert refs["spider-dev-question-char5"].cluster_count(0.7) > 0


# --------------------------------------------------------------------------- (c) re-thresholding

@pytest.mark.parametrize("method", ["exact", "lsh"])
def test_rethreshold_from_cache_equals_fresh_scan(real_data, method):
    path = str(real_data / "spider" / "dev.jsonl")
    cached = auditor.scan(path, text="question", settings=ScanSettings(method=method))
    fresh_same_range = auditor.scan(path, text="question", settings=ScanSettings(method=method, threshold=0.55))
    fresh_narrow = auditor.scan(path, text="question",
                                settings=ScanSettings(method=method, threshold=0.55, thresholds=(0.55,)))
    from_cache = cached.near_duplicates(0.55)
    assert from_cache.clusters > 0 and from_cache.pairs > 0
    assert from_cache == fresh_same_range.near_duplicates()
    assert from_cache == fresh_narrow.near_duplicates()
    assert cached.summary(0.55)["near_duplicates"] == fresh_narrow.summary()["near_duplicates"]
    ref = gt.reference(cached.fields.text, min_threshold=0.55)
    assert from_cache.pairs == ref.pair_count(0.55)
    assert from_cache.clusters == ref.cluster_count(0.55)


def test_threshold_below_searched_minimum_is_a_usage_error(real_data):
    result = auditor.scan(str(real_data / "spider" / "dev.jsonl"), text="question",
                          settings=ScanSettings(threshold=0.7, thresholds=(0.9, 0.7)))
    assert result.near_duplicates(0.7).clusters == 3
    for bad in (0.5, 0.69, 1.5):
        with pytest.raises(AuditorError) as info:
            result.near_duplicates(bad)
        assert info.value.code == "usage"
        assert str(bad) in info.value.message
    with pytest.raises(AuditorError) as info:
        result.summary(0.3)
    assert info.value.code == "usage"


# --------------------------------------------------------------------------- (d) identical vs variant

def test_identical_and_variant_clusters(tmp_path):
    rows = [
        # cluster A: same text and answer once normalised (case, spaces) -> identical
        {"q": "What is the capital of France today please", "a": "Paris", "g": "geo"},
        {"q": "what is the   CAPITAL of France today please", "a": " paris", "g": "geo"},
        # cluster B: same text, different answer -> variant
        {"q": "How many legs does a spider have in total", "a": "8", "g": "bio"},
        {"q": "How many legs does a spider have in total", "a": "eight", "g": "bio"},
        # cluster C: one word differs at the end (J = 11/13), same answer -> variant
        {"q": "The quick brown fox jumps over the lazy dog near the river bank today", "a": "x", "g": "t"},
        {"q": "The quick brown fox jumps over the lazy dog near the river bank tomorrow", "a": "x", "g": "t"},
        # cluster D: same text and answer, different group -> variant
        {"q": "Name the largest planet in our solar system", "a": "Jupiter", "g": "astro"},
        {"q": "Name the largest planet in our solar system", "a": "Jupiter", "g": "space"},
        # cluster E: three identical records -> identical
        {"q": "Translate hello into French", "a": "bonjour", "g": "lang"},
        {"q": "Translate hello into French", "a": "bonjour", "g": "lang"},
        {"q": "translate hello into french", "a": "Bonjour", "g": "lang"},
        # loners
        {"q": "Completely unrelated sentence about cooking pasta at home", "a": "boil", "g": "food"},
        {"q": "", "a": "empty text takes no part", "g": "food"},
    ]
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for method in ("exact", "lsh"):
        result = auditor.scan(str(path), text="q", answer="a", group="g", settings=ScanSettings(method=method))
        near = result.near_duplicates(0.7)
        assert near.clusters == 5
        assert near.identical_clusters == 2
        assert near.variant_clusters == 3
        assert near.records_in_clusters == 11
        assert near.largest_cluster == 3
        assert near.giant_cluster is not None        # 3 of 13 records is over 5%
        assert engine_clusters(result.pairs, 0.7) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9, 10)]
        assert engine_record_pairs(result.pairs, 0.7)[(4, 5)] == pytest.approx(11 / 13)
        assert near.pairs == 1 + 1 + 1 + 1 + 3
        # Above 11/13 the fox pair drops out; the rest are Jaccard 1.
        assert result.near_duplicates(0.9).clusters == 4
        assert result.near_duplicates(0.9).variant_clusters == 2


# --------------------------------------------------------------------------- (e) one text 5,000 times

def test_giant_cluster_of_copies(tmp_path, real_data):
    base = read_field(real_data, "gsm8k/test.jsonl", "question")
    copied = base[0]
    words = copied.split()
    variants = [" ".join(words[:-1] + [f"extra{i}"]) for i in range(5)]           # near the copies
    variants += [" ".join(words[:len(words) // 2] + [f"tail{i}", "x", "y"]) for i in range(5)]  # partly
    distinct = variants + base[1:91]
    assert len(set(distinct)) == 100 and copied not in distinct
    texts = [copied] * 5000 + distinct
    order = list(range(len(texts)))
    # Interleave: the distinct texts sit among the copies, not only at the end.
    order = order[:2500] + order[5000:5050] + order[2500:5000] + order[5050:]
    texts = [texts[i] for i in order]
    path = tmp_path / "copies.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")

    ref = gt.reference([copied] + distinct)            # one copy; weight it below
    weight = [5000] + [1] * len(distinct)

    def expected_pairs(t):
        total = math.comb(5000, 2)
        for (x, y), (inter, union) in ref.node_pairs.items():
            if inter / union >= t - 1e-12:
                total += weight[ref.members[x][0]] * weight[ref.members[y][0]]
        return total

    giant_extra = [c for c in ref.clusters(0.7) if 0 in c]
    giant_size = 5000 + (len(giant_extra[0]) - 1 if giant_extra else 0)
    assert expected_pairs(0.7) > math.comb(5000, 2)      # the variants do join the copies

    for method in ("auto", "lsh"):
        start = time.perf_counter()
        result = auditor.scan(str(path), text="text", settings=ScanSettings(method=method))
        elapsed = time.perf_counter() - start
        assert elapsed < 10, f"{method}: {elapsed:.1f}s for 5,100 records"
        assert result.records == 5100
        assert result.pairs.n_nodes == 101
        near = result.near_duplicates(0.7)
        assert near.pairs == expected_pairs(0.7)
        assert near.largest_cluster == giant_size
        summary = result.summary()
        giant = summary["near_duplicates"]["giant_cluster"]
        assert giant is not None
        assert giant["records"] == giant_size
        assert giant["share"] == round(giant_size / 5100, 4)
        assert giant["sample_rows"] == sorted(giant["sample_rows"])
        assert all(texts[i] == copied or texts[i] in variants for i in giant["sample_rows"])
        assert "Giant cluster" in result.markdown()
        for point in result.curve:
            if point.threshold >= 0.5:
                assert point.pairs == expected_pairs(point.threshold), point
        assert summary["exact_duplicates"]["text"]["records"] == 5000
        assert summary["exact_duplicates"]["text"]["groups"] == 1
