"""Leakage, contamination, overlap matrices and clean splits, on real benchmark data."""
import csv
import io
import json
import random

import pyarrow.parquet as pq
import pytest

import auditor
from auditor.clean import clean
from auditor.contamination import BENCHMARKS, choose_n, contamination, tokenize
from auditor.leakage import leak
from auditor.matrix import overlap_matrix


def _records(summary, key):
    return summary[key]["records"]


def _lines(path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


# --------------------------------------------------------------------------- leakage

def test_gsm8k_train_vs_test_is_clean(real_data):
    s = leak(str(real_data / "gsm8k/train.jsonl"), str(real_data / "gsm8k/test.jsonl")).summary()
    assert s["kind"] == "leak"
    assert (_records(s, "identical_text"), _records(s, "identical_answer"), _records(s, "identical_both"),
            _records(s, "near_duplicate")) == (0, 0, 0, 0)
    assert s["a"]["records"] == 7473 and s["b"]["records"] == 1319
    for key in ("schema_version", "a", "b", "settings", "method", "shared_groups", "pairs_sample"):
        assert key in s


def test_three_injected_test_rows_are_found(real_data, tmp_path):
    test_lines = _lines(real_data / "gsm8k/test.jsonl")
    train = tmp_path / "train_plus_3.jsonl"
    train.write_text("\n".join(test_lines[:3] + _lines(real_data / "gsm8k/train.jsonl")) + "\n", encoding="utf-8")
    result = leak(str(train), str(real_data / "gsm8k/test.jsonl"))
    s = result.summary()
    assert _records(s, "identical_both") == 3 and _records(s, "near_duplicate") == 3
    assert result.leaked_b_rows == [0, 1, 2]
    assert {(p["b"], p["a"]) for p in s["pairs_sample"]} == {(0, 0), (1, 1), (2, 2)}
    assert all(p["match"] == "identical_both" for p in s["pairs_sample"])
    evidence = list(csv.DictReader(io.StringIO(result.evidence_csv())))
    assert [int(r["b_row"]) for r in evidence] == [0, 1, 2]
    assert all("identical_both" in r["b_kinds"] and "near_duplicate" in r["b_kinds"] for r in evidence)
    assert all(r["kind"] == r["b_kinds"] and r["a_row"] == r["b_row"] == r["a_rows"] for r in evidence)
    assert len(result.clean_b_rows()) == 1319 - 3


def test_gsm8k_test_vs_socratic_shares_questions_not_answers(real_data):
    s = leak(str(real_data / "gsm8k/test.jsonl"), str(real_data / "gsm8k/test_socratic.jsonl")).summary()
    assert _records(s, "identical_text") == 1319
    assert s["identical_text"]["fraction"] == 1.0
    assert _records(s, "identical_both") == 0


def test_spider_train_vs_dev(real_data):
    result = leak(str(real_data / "spider/train_spider.jsonl"), str(real_data / "spider/dev.jsonl"),
                  text="question", answer="query", group="db_id")
    s = result.summary()
    assert _records(s, "identical_text") == 6
    assert s["shared_groups"] == {"count": 0, "values": []}
    # Both sides independently: the identical questions are exactly the shared normalised texts.
    train = {" ".join(json.loads(l)["question"].lower().split()) for l in _lines(real_data / "spider/train_spider.jsonl")}
    dev = [" ".join(json.loads(l)["question"].lower().split()) for l in _lines(real_data / "spider/dev.jsonl")]
    assert _records(s, "identical_text") == sum(q in train for q in dev)
    # Identical both can never exceed either identical count.
    assert _records(s, "identical_both") <= min(_records(s, "identical_text"), _records(s, "identical_answer"))
    assert "answerable from memory" in result.markdown()


def _shingles(text):
    words = text.lower().split()
    return {tuple(words[i:i + 3]) for i in range(max(len(words) - 2, 1))}


def test_evidence_jaccard_is_each_pairs_own(real_data):
    # Spider dev questions whose SQL equals a train query but whose wording differs ("How many
    # airlines do we have?" / "How many airlines are there?"): matched by answer, not near duplicates.
    result = leak(str(real_data / "spider/train_spider.jsonl"), str(real_data / "spider/dev.jsonl"),
                  text="question", answer="query", threshold=0.5)
    train_rows = [json.loads(l) for l in _lines(real_data / "spider/train_spider.jsonl")]
    train = [r["question"] for r in train_rows]
    evidence = list(csv.DictReader(io.StringIO(result.evidence_csv())))
    answer_only = [r for r in evidence if r["b_kinds"] == "identical_answer"]
    near = [r for r in evidence if "near_duplicate" in r["b_kinds"]]
    assert len(answer_only) >= 3 and near
    for r in answer_only:
        # the pair's own text similarity, under the threshold (never a 1.0 borrowed from the answer)
        assert float(r["text_jaccard"]) < 0.5 and r["kind"] == "identical_answer"
        assert r["a_answer"] == train_rows[int(r["a_row"])]["query"] and r["a_text"] == train[int(r["a_row"])]
        b = _shingles(r["b_text"])
        for a_row in map(int, r["a_rows"].split()):
            a = _shingles(train[a_row])
            assert len(a & b) / len(a | b) < 0.5     # independently: the texts are not near duplicates
    for r in near:
        assert 0.5 <= float(r["text_jaccard"]) <= 1.0
    sample = {p["b"]: p for p in result.summary()["pairs_sample"]}
    assert all(sample[int(r["b_row"])]["jaccard"] is None for r in answer_only if int(r["b_row"]) in sample)
    assert "| identical_answer | – |" in result.markdown()


def test_per_side_fields_and_shared_groups(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"q": f"question number {i} about apples", "src": f"s{i % 3}"})
                           for i in range(20)) + "\n")
    b.write_text("\n".join(json.dumps({"prompt": f"question number {i} about apples", "origin": f"s{i}"})
                           for i in range(15, 25)) + "\n")
    s = leak(str(a), str(b), text="q", group="src", text_b="prompt", group_b="origin").summary()
    assert _records(s, "identical_text") == 5
    assert s["shared_groups"]["values"] == []   # s15.. vs s0..s2
    s = leak(str(a), str(b), text="q", group="src", text_b="prompt", group_b="origin", threshold=0.5).summary()
    assert s["shared_groups"]["count"] == 0


def test_leak_cli_fail_on_overlap(run_cli, real_data, tmp_path):
    rc, out, err = run_cli("leak", str(real_data / "gsm8k/train.jsonl"), str(real_data / "gsm8k/test.jsonl"),
                           "--fail-on-overlap", "--json", "-", "--quiet")
    assert rc == 0 and json.loads(out)["near_duplicate"]["records"] == 0
    rc, out, err = run_cli("leak", str(real_data / "spider/train_spider.jsonl"),
                           str(real_data / "spider/dev.jsonl"), "--text", "question", "--answer", "query",
                           "--fail-on-overlap", "--out-dir", str(tmp_path / "o"), "--quiet")
    assert rc == 1
    assert (tmp_path / "o/summary.json").exists() and (tmp_path / "o/evidence.csv").exists()
    rc, out, err = run_cli("leak", str(real_data / "gsm8k/train.jsonl"), "missing.jsonl", "--fail-on-overlap")
    assert rc == 2 and "missing.jsonl" in err and "Traceback" not in err


# --------------------------------------------------------------------------- contamination

def test_gsm8k_test_in_train_13grams(real_data):
    s = contamination(str(real_data / "gsm8k/train.jsonl"), "gsm8k", ngram=13).summary()
    assert s["kind"] == "contamination" and s["settings"]["ngram"] == 13
    assert [item["benchmark_row"] for item in s["items"]] == [581, 602, 632]
    assert s["contaminated"]["records"] == 3 and s["benchmark"]["records"] == 1319
    for item in s["items"]:
        assert item["longest_span"] >= 13 and item["matched_ngrams"] >= 1 and item["corpus_rows"]
    assert "Paraphrase" in s["caveat"] or "paraphrase" in s["caveat"]


def test_contamination_spans_agree_with_a_plain_python_check(real_data):
    """Independent reference: every 13-token window of each flagged item, looked up in a set."""
    bench = [json.loads(l)["question"] for l in _lines(real_data / "gsm8k/test.jsonl")]
    corpus = [json.loads(l)["question"] for l in _lines(real_data / "gsm8k/train.jsonl")]
    grams = set()
    for text in corpus:
        t = tokenize(text)
        grams.update(tuple(t[i:i + 13]) for i in range(len(t) - 12))
    expected = [i for i, text in enumerate(bench)
                if any(tuple(tokenize(text)[k:k + 13]) in grams for k in range(len(tokenize(text)) - 12))]
    s = contamination(corpus, "gsm8k", ngram=13).summary()
    assert [item["benchmark_row"] for item in s["items"]] == expected


def test_humaneval_prompts_injected_are_all_found(real_data):
    prompts = [json.loads(l)["prompt"] for l in _lines(real_data / "humaneval/HumanEval.jsonl")]
    filler = [json.loads(l)["answer"] for l in _lines(real_data / "gsm8k/train.jsonl")]
    rng = random.Random(3)
    corpus = filler[:]
    for p in prompts:
        corpus.insert(rng.randrange(len(corpus)), "some preamble words " + p + " and a trailing note")
    s = contamination(corpus, "humaneval").summary()
    assert s["contaminated"]["records"] + s["too_short"]["records"] == 164
    assert s["contaminated"]["records"] == 164
    clean_run = contamination(filler, "humaneval").summary()
    assert clean_run["contaminated"]["records"] == 0


def test_auto_ngram_and_too_short_items(tmp_path):
    assert choose_n([20] * 100) == 13 and choose_n([3] * 100) == 8 and choose_n([10] * 100) == 10
    bench = tmp_path / "bench.jsonl"
    bench.write_text("\n".join(json.dumps({"text": t}) for t in [
        "one two three", "alpha beta gamma delta epsilon zeta eta theta iota kappa",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron"]) + "\n")
    s = contamination(["xx alpha beta gamma delta epsilon zeta eta theta iota kappa yy"], str(bench)).summary()
    assert s["settings"]["ngram"] == 8
    assert s["too_short"]["records"] == 1 and s["too_short"]["rows"] == [0]
    assert [i["benchmark_row"] for i in s["items"]] == [1, 2]
    assert s["items"][0]["longest_span"] == 10


def test_bundled_benchmarks_load_offline():
    for name in BENCHMARKS:
        s = contamination(["nothing to see here at all today"], name).summary()
        assert s["benchmark"]["records"] > 0 and s["contaminated"]["records"] == 0


def test_contamination_streams_a_gzip_corpus(real_data, tmp_path):
    import gzip
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for line in _lines(real_data / "gsm8k/train.jsonl"):
            fh.write(line + "\n")
    s = contamination(str(path), "gsm8k", ngram=13).summary()
    assert [item["benchmark_row"] for item in s["items"]] == [581, 602, 632]
    assert s["corpus"]["records"] == 7473


def test_contamination_cli(run_cli, real_data):
    rc, out, err = run_cli("contamination", str(real_data / "gsm8k/train.jsonl"), "--benchmark", "gsm8k",
                           "--ngram", "13", "--json", "-", "--quiet", "--fail-on-overlap")
    assert rc == 1 and json.loads(out)["contaminated"]["records"] == 3
    rc, out, err = run_cli("contamination", str(real_data / "gsm8k/train.jsonl"), "--benchmark", "gsm8k",
                           "--ngram", "zero")
    assert rc == 2 and "n-gram" in err


# --------------------------------------------------------------------------- matrices and clean

def test_overlap_matrix(real_data):
    result = overlap_matrix([f"gsm8k:train={real_data / 'gsm8k/train.jsonl'}",
                             f"gsm8k:test={real_data / 'gsm8k/test.jsonl'}",
                             f"socratic:test={real_data / 'gsm8k/test_socratic.jsonl'}"], near=True)
    s = result.summary()
    split = s["split_matrix"]
    assert split["gsm8k/test"]["socratic/test"] == {"count": 1319, "fraction": 1.0}
    assert split["gsm8k/train"]["gsm8k/test"]["count"] == 0
    assert s["dataset_matrix"]["socratic"]["gsm8k"]["count"] == 1319
    assert s["dataset_matrix"]["gsm8k"]["gsm8k"]["count"] == 0     # train and test share nothing
    assert s["near"]["split_matrix"]["gsm8k/test"]["socratic/test"]["count"] == 1319
    assert [row["records"] for row in s["comparison"]] == [7473, 1319, 1319]
    assert s["comparison"][0]["near_clusters"] == 1


def test_matrix_diagonal_counts_internal_duplicates(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("\n".join(json.dumps({"text": t}) for t in ["x y z", "x  Y z", "p q r", "s t u"]) + "\n")
    b = tmp_path / "b.jsonl"
    b.write_text("\n".join(json.dumps({"text": t}) for t in ["p q r", "new one here"]) + "\n")
    s = overlap_matrix([f"d:train={a}", f"d:test={b}"], compare=False).summary()
    assert s["split_matrix"]["d/train"]["d/train"]["count"] == 2
    assert s["split_matrix"]["d/test"]["d/train"]["count"] == 1
    assert s["dataset_matrix"]["d"]["d"]["count"] == 2     # "p q r" in both splits


def test_clean_split_drops_leaks_keeps_original_rows(real_data, tmp_path):
    test_lines = _lines(real_data / "gsm8k/test.jsonl")
    train = tmp_path / "train.jsonl"
    train.write_text("\n".join(test_lines[5:8] + _lines(real_data / "gsm8k/train.jsonl")[:500]) + "\n")
    test = tmp_path / "test.jsonl"
    test.write_text("\n".join(test_lines[:50] + test_lines[:2]) + "\n")   # two internal repeats
    result = clean(str(test), [str(train)], dedup=True)
    assert [d["row"] for d in result.dropped] == [5, 6, 7, 50, 51]
    assert {d["reason"] for d in result.dropped} == {"identical_text", "internal_duplicate"}
    assert result.kept == [json.loads(l) for l in test_lines[:50] if l not in test_lines[5:8]]


def test_clean_reads_test_once_for_every_training_side(real_data, tmp_path, monkeypatch):
    from auditor import prepare as prepare_mod
    test_lines = _lines(real_data / "gsm8k/test.jsonl")
    test, train_a, train_b = tmp_path / "test.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    test.write_text("\n".join(test_lines[:40]) + "\n")
    train_a.write_text("\n".join(test_lines[3:5] + test_lines[100:300]) + "\n")
    train_b.write_text("\n".join(test_lines[10:11] + test_lines[300:400]) + "\n")
    loaded = []
    real_load = prepare_mod.load
    monkeypatch.setattr(prepare_mod, "load", lambda source, *a, **k: loaded.append(source) or real_load(source, *a, **k))
    result = clean(str(test), [str(train_a), str(train_b)])
    assert sorted(map(str, loaded)) == sorted([str(test), str(train_a), str(train_b)])      # TEST once
    assert [(d["row"], d["against"]) for d in result.dropped] == [(3, "a.jsonl"), (4, "a.jsonl"), (10, "b.jsonl")]


def test_leak_takes_an_audited_side_as_it_is(real_data):
    train, test = str(real_data / "gsm8k/train.jsonl"), str(real_data / "gsm8k/test_socratic.jsonl")
    audited = auditor.scan(str(real_data / "gsm8k/test.jsonl"))
    from_side = leak(audited.side, test).summary()
    assert from_side == leak(str(real_data / "gsm8k/test.jsonl"), test).summary()
    assert from_side["a"]["fingerprint"] == audited.fingerprint
    assert from_side["identical_text"]["records"] == 1319          # socratic test repeats every question
    assert leak(train, test).summary()["identical_text"]["records"] == 0


def test_contamination_report_module_formats_as_the_result_does(real_data):
    # auditor.report.contamination is where contamination reports are formatted; until the result
    # class delegates to it, both must agree byte for byte.
    from auditor.report import contamination as report
    corpus = [json.loads(l)["question"] for l in _lines(real_data / "gsm8k/test.jsonl")[:30]]
    result = contamination(corpus, "gsm8k", ngram=13)
    assert len(result.items) >= 30
    assert report.summary(result) == result.summary() and report.markdown(result) == result.markdown()


def test_clean_cli_writes_each_format(run_cli, real_data, tmp_path):
    for suffix in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"dev.clean.{suffix}"
        rc, _, err = run_cli("clean", str(real_data / "spider/dev.jsonl"), "--against",
                             str(real_data / "spider/train_spider.jsonl"), "--text", "question", "--near",
                             "--out", str(out))
        assert rc == 0, err
        if suffix == "parquet":
            assert pq.read_table(out).num_rows == 1034 - 7
        else:
            assert len(auditor.load(str(out)).rows) == 1034 - 7
        report = json.loads((tmp_path / f"dev.clean.{suffix}.dropped.json").read_text())
        assert report["dropped"] == 7 and report["kept"] == 1027


def test_leak_settings_object_and_keywords_agree(real_data):
    from auditor.settings import LeakSettings
    from auditor.settings import NearSettings
    a, b = str(real_data / "gsm8k/test.jsonl"), str(real_data / "gsm8k/test_socratic.jsonl")
    by_keywords = leak(a, b, threshold=0.8, method="lsh").summary()
    assert by_keywords == leak(a, b, settings=LeakSettings(near=NearSettings(threshold=0.8, method="lsh"))).summary()
    assert by_keywords["settings"]["threshold"] == 0.8 and by_keywords["method"]["near_duplicates"] == "minhash-lsh"
    with pytest.raises(auditor.AuditorError) as info:
        leak(a, b, method="fast")
    assert info.value.code == "usage" and "fast" in info.value.message


def test_leak_rejects_bad_threshold(real_data):
    with pytest.raises(auditor.AuditorError) as info:
        leak(str(real_data / "gsm8k/test.jsonl"), str(real_data / "gsm8k/test.jsonl"), threshold=0)
    assert info.value.code == "usage"


def test_a_source_compared_with_itself_is_said_plainly(run_cli, real_data, tmp_path):
    """HumanEval has only a test split, so A (train by default) falls back to it and B reads it
    too: every record matches itself. The CLI says so on stderr and in REPORT.md; a real pair of
    splits (GSM8K train -> test) carries no such note."""
    code, out, err = run_cli("leak", "example:humaneval", "example:humaneval", "--out-dir", tmp_path / "self", "--quiet")
    assert code == 0 and "warning: A and B hold the same records" in err
    report = (tmp_path / "self/REPORT.md").read_text(encoding="utf-8")
    summary = json.loads((tmp_path / "self/summary.json").read_text(encoding="utf-8"))
    assert "> Note: A and B hold the same records" in report
    assert summary["a"]["fingerprint"] == summary["b"]["fingerprint"] and summary["identical_text"]["fraction"] == 1.0
    # The same rows in a second file are the same records too.
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes((real_data / "gsm8k/test.jsonl").read_bytes())
    code, out, err = run_cli("leak", copy, real_data / "gsm8k/test.jsonl", "--quiet")
    assert code == 0 and "warning: A and B hold the same records" in err
    code, out, err = run_cli("leak", real_data / "gsm8k/train.jsonl", real_data / "gsm8k/test.jsonl", "--quiet")
    assert code == 0 and "same records" not in err + out
