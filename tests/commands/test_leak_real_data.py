"""Leak figures between real splits (Spider train/dev, MBPP train/test, GSM8K train/test, LLM
rephrasings, a Hub repo of two configs) against the definitions' reference (tests/definitions.py)."""
from __future__ import annotations

import gzip
import io
import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

import real_data
from definitions import contained_hits, near_hits, norm_default, norm_python, norm_sql, read_jsonl, write_jsonl
from ground_truth import reference

pytestmark = pytest.mark.sweep      # a long sweep: run by CI and scripts/test.sh --all
REPHRASED = Path(__file__).resolve().parents[1] / "data" / "semantic"      # GSM8K test rows 0-59, rephrased


def mbpp_splits(real_data, tmp_path):
    """MBPP's train (tasks 601-974) and test (11-510) split out of the full file."""
    rows = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    train = [r for r in rows if 601 <= r["task_id"] <= 974]
    test = [r for r in rows if 11 <= r["task_id"] <= 510]
    write_jsonl(tmp_path / "mbpp_train.jsonl", train)
    write_jsonl(tmp_path / "mbpp_test.jsonl", test)
    return tmp_path / "mbpp_train.jsonl", tmp_path / "mbpp_test.jsonl", train, test


def cli_json(run_cli, *args) -> dict:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet")
    assert code == 0, err
    return json.loads(out)


def leak_reference(a_rows, b_rows, text_a, text_b, answer, answer_norm) -> tuple:
    ta = [norm_default(r[text_a]) for r in a_rows]
    tb = [norm_default(r[text_b]) for r in b_rows]
    a_texts = set(filter(None, ta))
    ident = {j for j, t in enumerate(tb) if t and t in a_texts}
    ans = both = set()
    if answer:
        aa = [answer_norm(r[answer]) for r in a_rows]
        ab = [answer_norm(r[answer]) for r in b_rows]
        a_answers, a_both = set(filter(None, aa)), set(zip(ta, aa))
        ans = {j for j, a in enumerate(ab) if a and a in a_answers}
        both = {j for j in range(len(b_rows)) if tb[j] and ab[j] and (tb[j], ab[j]) in a_both}
    near = near_hits([r[text_a] for r in a_rows], [r[text_b] for r in b_rows])
    # B texts inside an A text, counted when not identical or near already
    inside = set(contained_hits([r[text_a] for r in a_rows], [r[text_b] for r in b_rows])) - ident - near
    return ident, ans, both, near, inside


LEAK_KEYS = ("identical_text", "identical_answer", "identical_both", "near_duplicate", "contained", "any_leak",
             "answer_only", "text_leak")


def norm_plain(value: str) -> str:
    return " ".join(unicodedata.normalize("NFC", value).lower().split())


def duplicate_groups(values, fn) -> tuple[int, int]:
    """(groups, records) of values equal under ``fn``; blank values are missing."""
    counts = Counter(fn(v) for v in values if v is not None and v.strip())
    groups = [k for k, n in counts.items() if n >= 2]
    return len(groups), sum(counts[k] for k in groups)


def sql_code(value: str) -> str:
    """The code normaliser on SQL without comments (as Spider's queries are): lowercase outside
    quoted strings, whitespace collapsed."""
    parts = re.split(r"""("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')""", value)
    return " ".join("".join(p if k % 2 else p.lower() for k, p in enumerate(parts)).split())


@pytest.fixture(scope="module")
def spider():
    keep = ("question", "query", "db_id")
    train = [{k: r[k] for k in keep} for r in real_data.rows("spider/train_spider.jsonl")]
    dev = [{k: r[k] for k in keep} for r in real_data.rows("spider/dev.jsonl")]
    return train, dev


def leak_truth(a_rows, b_rows, threshold=0.7):
    """Every leak figure, from the definitions: B records whose default-normalised text / whole
    code-normalised query / both (the same A record) occur in A, whose text reaches ``threshold``
    Jaccard with an A text (word 3-shingles, exact all pairs), and the shared db_id values."""
    ka = [norm_plain(r["question"]) for r in a_rows]
    kb = [norm_plain(r["question"]) for r in b_rows]
    qa = [sql_code(r["query"]) for r in a_rows]
    qb = [sql_code(r["query"]) for r in b_rows]
    text = {i for i, k in enumerate(kb) if k in set(ka)}
    answer = {i for i, q in enumerate(qb) if q in set(qa)}
    both = {i for i, kq in enumerate(zip(kb, qb)) if kq in set(zip(ka, qa))}
    ref = reference([r["question"] for r in a_rows] + [r["question"] for r in b_rows], "word", 3, threshold)
    n_a = len(a_rows)
    near = {b - n_a for (a, b) in ref.record_pairs(threshold) if a < n_a <= b}
    inside = set(contained_hits([r["question"] for r in a_rows], [r["question"] for r in b_rows], threshold))
    inside -= text | near
    shared = sorted({r["db_id"] for r in a_rows} & {r["db_id"] for r in b_rows})
    return {"identical_text": len(text), "identical_answer": len(answer), "identical_both": len(both),
            "near_duplicate": len(near), "contained": len(inside),
            "any_leak": len(text | answer | both | near | inside), "text_leak": len(text | near | inside), "shared_groups": shared}


HUB_README = """---
configs:
- config_name: spider
  data_files:
  - split: train
    path: spider/train-*.parquet
  - split: validation
    path: spider/validation-00000-of-00001.parquet
- config_name: mbpp
  data_files:
  - split: train
    path: mbpp/train.parquet
  - split: test
    path: mbpp/test.parquet
---
# Spider and MBPP (fake Hub copy for tests)
"""


def test_leak_between_real_splits(real_data, run_cli, tmp_path):
    """Spider train vs dev, MBPP train vs test and GSM8K train vs test: each figure is the count of
    evaluation records the reference finds; shared db_ids are the set intersection."""
    mbpp_train, mbpp_test, train, test = mbpp_splits(real_data, tmp_path)
    cases = [(real_data / "spider/train_spider.jsonl", real_data / "spider/dev.jsonl", "question", "query", norm_sql),
             (mbpp_train, mbpp_test, "text", "code", norm_python),
             (real_data / "gsm8k/train.jsonl", real_data / "gsm8k/test.jsonl", "question", "answer", norm_default)]
    seen = []
    for a, b, text, answer, answer_norm in cases:
        a_rows, b_rows = read_jsonl(a), read_jsonl(b)
        ident, ans, both, near, inside = leak_reference(a_rows, b_rows, text, text, answer, answer_norm)
        summary = cli_json(run_cli, "leak", a, b)
        assert tuple(summary[k]["records"] for k in LEAK_KEYS) == (
            len(ident), len(ans), len(both), len(near), len(inside), len(ident | ans | near | inside),
            len(ans - ident - near - inside), len(ident | near | inside)), a.name
        assert summary["any_leak"]["fraction"] == pytest.approx(len(ident | ans | near | inside) / len(b_rows),
                                                                abs=1e-6)
        if "spider" in str(a):
            groups = sorted({r["db_id"] for r in a_rows} & {r["db_id"] for r in b_rows})
            assert summary["shared_groups"] == {"count": len(groups), "values": groups, "records": 0, "fraction": 0.0}
        seen.append(len(ident | near))
    assert seen[0] > 0 and seen[1] > 0          # Spider and MBPP do leak; the test would notice zeros


def test_leak_rephrased_gsm8k_is_not_lexical(real_data, run_cli, tmp_path):
    """LLM rephrasings of GSM8K test items (different words, same problems) against the originals:
    the reference finds no identical or near-duplicate text, and neither does the auditor, while
    the originals against themselves (a planted copy of each) all leak."""
    rephrased = [json.loads(x) for x in gzip.open(REPHRASED / "gsm8k_rephrased.jsonl.gz", "rt", encoding="utf-8")]
    originals = [json.loads(x) for x in gzip.open(REPHRASED / "gsm8k_questions.jsonl.gz", "rt", encoding="utf-8")]
    write_jsonl(tmp_path / "rephrased.jsonl", rephrased)
    write_jsonl(tmp_path / "originals.jsonl", originals)
    ident, _, _, near, _ = leak_reference(rephrased, originals, "text", "question", None, None)
    summary = cli_json(run_cli, "leak", tmp_path / "rephrased.jsonl", tmp_path / "originals.jsonl")
    assert (summary["a"]["roles"]["text"], summary["b"]["roles"]["text"]) == ("text", "question")
    assert (summary["identical_text"]["records"], summary["near_duplicate"]["records"]) == (len(ident), len(near)) \
        == (0, 0)
    mixed = rephrased[:30] + originals[30:]
    write_jsonl(tmp_path / "mixed.jsonl", [{"text": r.get("text") or r.get("question")} for r in mixed])
    summary = cli_json(run_cli, "leak", tmp_path / "mixed.jsonl", tmp_path / "originals.jsonl")
    assert summary["identical_text"]["records"] == 30 and summary["any_leak"]["records"] == 30


def test_hub_configs_and_splits_give_the_definitions_figures(spider, run_cli, tmp_path):
    """From the round-4 review (real data): A Hub repo of two configs: Spider (train in two shards,
    validation) and MBPP (train, test).
    Leak with no split named reads train against Spider's validation (no test split there) and
    MBPP's test; scan reads the named config and split; every figure is the definitions'."""
    import io
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hub_server import FakeHub

    def parquet(rows):
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), buf)
        return buf.getvalue()

    train, dev = spider
    mbpp = [{k: r[k] for k in ("text", "code", "task_id")} for r in real_data.rows("mbpp/mbpp.jsonl")]
    mbpp_train = [r for r in mbpp if r["task_id"] > 600]
    mbpp_test = [r for r in mbpp if 11 <= r["task_id"] <= 510]
    hub = FakeHub(tmp_path / "hub")
    hub.add_repo("acme/code-sql", {
        "spider/train-00000-of-00002.parquet": parquet(train[:3500]),
        "spider/train-00001-of-00002.parquet": parquet(train[3500:]),
        "spider/validation-00000-of-00001.parquet": parquet(dev),
        "mbpp/train.parquet": parquet(mbpp_train), "mbpp/test.parquet": parquet(mbpp_test)}, readme=HUB_README)
    env = {"HF_ENDPOINT": hub.start(), "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HOME": str(tmp_path / "home"), "HF_DATASETS_CACHE": str(tmp_path / "home"), "HF_TOKEN": ""}

    def cli(*args):
        code, out, err = run_cli(*args, "--json", "-", "--quiet", env=env, timeout=300)
        assert code == 0, err
        return json.loads(out)

    try:
        got = cli("leak", "acme/code-sql", "acme/code-sql", "--config-a", "spider", "--config-b", "spider")
        assert (got["a"]["split"], got["b"]["split"], got["b"]["records"]) == ("train", "validation", 1034)
        truth = leak_truth(train, dev)
        assert {k: got[k]["records"] for k in truth if k != "shared_groups"} == \
            {k: v for k, v in truth.items() if k != "shared_groups"}

        got = cli("leak", "acme/code-sql", "acme/code-sql", "--config-a", "mbpp", "--config-b", "mbpp")
        assert (got["a"]["split"], got["b"]["split"]) == ("train", "test")
        a_text = {norm_plain(r["text"]) for r in mbpp_train}
        ref = reference([r["text"] for r in mbpp_train + mbpp_test], "word", 3, 0.7)
        near = {b - len(mbpp_train) for (a, b) in ref.record_pairs(0.7) if a < len(mbpp_train) <= b}
        identical = {i for i, r in enumerate(mbpp_test) if norm_plain(r["text"]) in a_text}
        inside = set(contained_hits([r["text"] for r in mbpp_train], [r["text"] for r in mbpp_test]))
        assert (got["identical_text"]["records"], got["near_duplicate"]["records"]) == \
            (len(identical), len(near)) == (3, 16)
        assert got["text_leak"]["records"] == len(identical | near | inside)

        got = cli("scan", "acme/code-sql", "--config", "spider", "--split", "validation")
        assert (got["input"]["config"], got["input"]["split"], got["input"]["records"]) == ("spider", "validation", 1034)
        ref = reference([r["question"] for r in dev], "word", 3, 0.3)
        assert [(p["pairs"], p["clusters"]) for p in got["curve"]] == \
            [(ref.pair_count(t), ref.cluster_count(t)) for t in got["settings"]["thresholds"]]
        counts = Counter(r["db_id"] for r in dev)
        assert (got["concentration"]["groups"], got["concentration"]["largest"]["value"],
                got["concentration"]["largest"]["records"]) == (len(counts), *counts.most_common(1)[0])
        queries = [r["query"] for r in dev]
        assert (got["exact_duplicates"]["answer"]["groups"], got["exact_duplicates"]["answer"]["records"]) == \
            duplicate_groups(queries, sql_code)
    finally:
        hub.stop()
