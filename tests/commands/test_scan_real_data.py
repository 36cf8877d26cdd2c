"""Scan figures on real benchmark splits (Spider, MBPP full and sanitized, GSM8K, HumanEval), in the
shapes users bring, against a reference written from the documented definitions alone
(tests/definitions.py, tests/ground_truth.py); no auditor function computes an expected figure."""
from __future__ import annotations

import gzip
import json
import unicodedata
from collections import Counter, defaultdict

import pandas as pd
import pytest

import auditor
import real_data
from auditor.audit import scan
from definitions import curve, duplicate_figures, norm_default, norm_python, norm_sql, read_jsonl
from ground_truth import reference

pytestmark = pytest.mark.sweep      # a long sweep: run by CI and scripts/test.sh --all
THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def cli_json(run_cli, *args) -> dict:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet")
    assert code == 0, err
    return json.loads(out)


def figures(d: dict) -> tuple:
    return d["groups"], d["records"], d["redundant"]


def check_scan(summary: dict, rows: list[dict], text: str, answer: str | None, answer_norm, group: str | None):
    texts = [r.get(text) or "" for r in rows]
    by = summary["exact_duplicates_by_normalizer"]
    assert figures(by["text"]["exact"]) == duplicate_figures(t if t.strip() else None for t in texts)
    assert figures(by["text"]["default"]) == duplicate_figures(map(norm_default, texts))
    if answer:
        answers = [r.get(answer) or "" for r in rows]
        assert figures(by["answer"]["exact"]) == duplicate_figures(a if a.strip() else None for a in answers)
        assert figures(by["answer"]["default"]) == duplicate_figures(map(norm_default, answers))
        keyed = [answer_norm(a) for a in answers]
        assert figures(summary["exact_duplicates"]["answer"]) == duplicate_figures(keyed)
        assert figures(summary["exact_duplicates"]["text_and_answer"]) == duplicate_figures(
            (t, a) if t and a else None for t, a in zip(map(norm_default, texts), keyed))
        assert summary["degenerate"]["by_role"]["answer"] == sum(not a.strip() for a in answers)
    whole = [json.dumps({k: norm_default(v) if isinstance(v, str) else v for k, v in r.items()}, sort_keys=True)
             for r in rows]
    assert figures(summary["exact_duplicates"]["record"]) == duplicate_figures(whole)
    assert summary["degenerate"]["by_role"]["text"] == sum(not t.strip() for t in texts)
    assert summary["schema"]["issues"] == []
    assert {f["name"]: f["present"] for f in summary["schema"]["fields"]} == dict(
        Counter(k for r in rows for k in r))

    expected = curve(texts)
    assert [(p["threshold"], p["pairs"], p["clusters"]) for p in summary["curve"]] == \
        [(t, *expected[t][:2]) for t in THRESHOLDS]
    for p in summary["curve"]:
        assert p["clusters_per_1000"] == pytest.approx(1000 * expected[p["threshold"]][1] / len(rows), abs=1e-4)
    near = summary["near_duplicates"]
    assert (near["pairs"], near["clusters"], near["records_in_clusters"], near["largest_cluster"]) == expected[0.7]
    assert near["identical_clusters"] + near["variant_clusters"] == near["clusters"]

    if group:
        counts = pd.DataFrame(rows)[group].value_counts()
        share = counts / len(rows)
        conc = summary["concentration"]
        assert conc["field"] == group and conc["groups"] == len(counts)
        assert conc["hhi"] == pytest.approx(float((share ** 2).sum()), abs=1e-6)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        assert [(g["value"], g["records"]) for g in conc["top"]] == ranked
        assert conc["largest"]["share"] == pytest.approx(ranked[0][1] / len(rows), abs=1e-4)
    return expected


def norm_plain(value: str) -> str:
    return " ".join(unicodedata.normalize("NFC", value).lower().split())


def duplicate_groups(values, fn) -> tuple[int, int]:
    """(groups, records) of values equal under ``fn``; blank values are missing."""
    counts = Counter(fn(v) for v in values if v is not None and v.strip())
    groups = [k for k, n in counts.items() if n >= 2]
    return len(groups), sum(counts[k] for k in groups)


@pytest.fixture(scope="module")
def spider():
    keep = ("question", "query", "db_id")
    train = [{k: r[k] for k in keep} for r in real_data.rows("spider/train_spider.jsonl")]
    dev = [{k: r[k] for k in keep} for r in real_data.rows("spider/dev.jsonl")]
    return train, dev


MBPP_THRESHOLDS = (0.9, 0.7, 0.5, 0.3)


@pytest.fixture(scope="module")
def mbpp_truth():
    rows = real_data.rows("mbpp/mbpp.jsonl")
    texts = [r["text"] for r in rows]
    ref = reference(texts, "word", 3, min(MBPP_THRESHOLDS))
    return rows, ref


def test_scan_spider_train_cli_matches_brute_force(real_data, run_cli):
    """Spider train through the CLI: every exact-duplicate figure per normaliser, the whole curve
    and the db_id concentration agree with the reference; roles are guessed and said so."""
    rows = read_jsonl(real_data / "spider/train_spider.jsonl")
    summary = cli_json(run_cli, "scan", real_data / "spider/train_spider.jsonl")
    assert summary["roles"]["text"] == "question" and summary["roles"]["answer"] == "query"
    assert summary["roles"]["group"] == "db_id"
    assert set(summary["roles"]["guessed"]) >= {"text", "answer", "group"}
    assert summary["settings"]["answer_normalizer"] == "code"
    expected = check_scan(summary, rows, "question", "query", norm_sql, "db_id")
    # Spider is known to repeat questions and (by design, two questions per query) SQL
    assert expected[0.7][0] > 50 and summary["exact_duplicates"]["answer"]["records"] > 5000

    # label conflicts: one normalised question asked of different databases
    conflicts = auditor.scan(str(real_data / "spider/train_spider.jsonl"), labels=["db_id"]).summary()["label_conflicts"]
    by_text = defaultdict(list)
    for i, r in enumerate(rows):
        by_text[norm_default(r["question"])].append(i)
    mixed = [g for g in by_text.values() if len({rows[i]["db_id"] for i in g}) > 1]
    assert (conflicts["groups"], conflicts["records"]) == (len(mixed), sum(map(len, mixed))) and mixed
    assert all(sorted(g) in [sorted(m) for m in mixed] for g in conflicts["examples"])


@pytest.mark.parametrize("rel,text,group", [("mbpp/mbpp.jsonl", "text", None),
                                            ("mbpp/sanitized-mbpp.jsonl", "prompt", "source_file")])
def test_scan_mbpp_library_matches_brute_force(real_data, rel, text, group):
    """MBPP full and sanitized through ``auditor.scan`` with guessed roles (text, code, and the
    sanitized set's notebook as group); re-thresholding at 0.5 agrees with brute force too."""
    rows = read_jsonl(real_data / rel)
    result = auditor.scan(str(real_data / rel))
    summary = result.summary()
    assert (summary["roles"]["text"], summary["roles"]["answer"], summary["roles"]["group"]) == (text, "code", group)
    assert summary["roles"]["id"] == "task_id"
    expected = check_scan(summary, rows, text, "code", norm_python, group)
    at_half = result.summary(0.5)["near_duplicates"]
    assert (at_half["pairs"], at_half["clusters"], at_half["records_in_clusters"],
            at_half["largest_cluster"]) == expected[0.5]


def test_scan_gsm8k_socratic_and_humaneval(real_data):
    """Sets with almost no redundancy: GSM8K socratic test and HumanEval (code answers)."""
    rows = read_jsonl(real_data / "gsm8k/test_socratic.jsonl")
    summary = auditor.scan(str(real_data / "gsm8k/test_socratic.jsonl")).summary()
    assert (summary["roles"]["text"], summary["roles"]["answer"]) == ("question", "answer")
    check_scan(summary, rows, "question", "answer", norm_default, None)
    rows = read_jsonl(real_data / "humaneval/HumanEval.jsonl")
    summary = auditor.scan(str(real_data / "humaneval/HumanEval.jsonl")).summary()
    assert (summary["roles"]["text"], summary["roles"]["answer"]) == ("prompt", "canonical_solution")
    check_scan(summary, rows, "prompt", "canonical_solution", norm_python, None)


@pytest.mark.parametrize("shape", ["csv", "csv_crlf", "jsonl_gz"])
def test_mbpp_scan_figures_in_user_shapes(mbpp_truth, tmp_path, shape):
    """From the round-4 review (real data): MBPP's code answers hold CRLF line ends and tabs: as CSV (quoted
    newlines, LF or CRLF
    records) and gzip'd JSONL every value reads back byte for byte, and every exact and
    near-duplicate figure equals the definitions'."""
    rows, ref = mbpp_truth
    frame = pd.DataFrame(rows)
    if shape == "csv":
        path = tmp_path / "mbpp.csv"
        frame.to_csv(path, index=False)
    elif shape == "csv_crlf":
        path = tmp_path / "mbpp.csv"
        frame.to_csv(path, index=False, lineterminator="\r\n")
    else:
        import gzip
        path = tmp_path / "mbpp.jsonl.gz"
        path.write_bytes(gzip.compress(real_data.content("mbpp/mbpp.jsonl")))
    table = auditor.load(str(path))
    assert [(r["text"], r["code"]) for r in table.rows] == [(r["text"], r["code"]) for r in rows]

    result = scan(str(path), text="text", answer="code", group=None)
    s = result.summary(0.7)
    texts, codes = [r["text"] for r in rows], [r["code"] for r in rows]
    by = s["exact_duplicates_by_normalizer"]
    assert (by["text"]["exact"]["groups"], by["text"]["exact"]["records"]) == duplicate_groups(texts, str) == (4, 8)
    assert (by["text"]["default"]["groups"], by["text"]["default"]["records"]) == duplicate_groups(texts, norm_plain)
    assert (by["answer"]["exact"]["groups"], by["answer"]["exact"]["records"]) == duplicate_groups(codes, str) == (0, 0)
    assert (by["answer"]["default"]["groups"], by["answer"]["default"]["records"]) == \
        duplicate_groups(codes, norm_plain) == (8, 16)
    for threshold in MBPP_THRESHOLDS:
        near = result.near_duplicates(threshold)
        clusters = ref.clusters(threshold)
        assert (near.pairs, near.clusters, near.records_in_clusters, near.largest_cluster) == \
            (ref.pair_count(threshold), len(clusters), sum(map(len, clusters)), max(map(len, clusters))), threshold


def test_spider_identical_and_variant_clusters_against_definitions(spider):
    """From the round-4 review (real data): Spider train with question/query/db_id: a cluster is identical
    when all three fields are equal
    (default normaliser) across its records, else a variant; the group concentration is the db_id
    counts. Both are checked at several thresholds against the reference."""
    train, _ = spider
    table = auditor.Table(rows=train, source="train_spider.jsonl")
    result = scan(table)
    assert (result.roles.text, result.roles.answer, result.roles.group) == ("question", "query", "db_id")
    ref = reference([r["question"] for r in train], "word", 3, 0.5)

    def evaluated(i):
        return tuple(norm_plain(train[i][k]) for k in ("question", "query", "db_id"))

    for threshold in (0.9, 0.7, 0.5):
        clusters = ref.clusters(threshold)
        identical = sum(len({evaluated(i) for i in c}) == 1 for c in clusters)
        near = result.near_duplicates(threshold)
        assert (near.clusters, near.identical_clusters, near.variant_clusters) == \
            (len(clusters), identical, len(clusters) - identical), threshold
    assert (result.near_duplicates(0.7).identical_clusters, result.near_duplicates(0.7).variant_clusters) == (9, 68)

    counts = Counter(r["db_id"] for r in train)
    conc = result.summary()["concentration"]
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert conc["groups"] == len(counts) == 140
    assert [(t["value"], t["records"]) for t in conc["top"]] == top[:10]
    assert conc["hhi"] == round(sum((n / len(train)) ** 2 for n in counts.values()), 6)
