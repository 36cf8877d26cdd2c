"""The scan's report does not depend on record order or repetition, is byte-identical run to run,
and its progress is reported in order with every stage timed."""
from __future__ import annotations

import json
import random

import pytest

import auditor
from auditor import ScanSettings
from auditor.report import to_json


THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def counts(result) -> dict:
    """Everything in a scan that must not depend on record order."""
    s = result.summary()
    return {
        "curve": [(p.threshold, p.pairs, p.clusters) for p in result.curve],
        "near": {t: (n.pairs, n.clusters, n.identical_clusters, n.variant_clusters, n.records_in_clusters,
                     n.largest_cluster) for t in THRESHOLDS for n in [result.near_duplicates(t)]},
        "exact": {k: None if v is None else (v["groups"], v["records"]) for k, v in s["exact_duplicates"].items()},
        "by_norm": {f: {k: (v["groups"], v["records"]) for k, v in t.items()}
                    for f, t in s["exact_duplicates_by_normalizer"].items()},
        "degenerate": (s["degenerate"]["records"], s["degenerate"]["by_role"]),
        "schema": sorted((i["field"], i["kind"], i["records"]) for i in s["schema"]["issues"]),
        "concentration": {k: v for k, v in s["concentration"].items()},
        "roles": s["roles"],
        "distinct_texts": s["method"]["distinct_texts"],
    }


@pytest.fixture(scope="module")
def spider_dev_rows(real_data):
    with open(real_data / "spider" / "dev.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def spider_dev_scan(real_data):
    return auditor.scan(str(real_data / "spider" / "dev.jsonl"))


@pytest.mark.slow
def test_summary_json_is_deterministic(real_data, run_cli):
    path = str(real_data / "mbpp" / "mbpp.jsonl")
    first = to_json(auditor.scan(path).summary())
    second = to_json(auditor.scan(path).summary())
    assert first == second
    json.loads(first)
    lsh = [to_json(auditor.scan(path, settings=ScanSettings(method="lsh")).summary()) for _ in range(2)]
    assert lsh[0] == lsh[1]
    outs = []
    for seed in ("1", "4242"):
        rc, out, err = run_cli("scan", path, "--json", "-", "--quiet", env={"PYTHONHASHSEED": seed})
        assert rc == 0, err
        outs.append(out)
    assert outs[0] == outs[1]
    assert outs[0] == first
    rc, out_lsh, err = run_cli("scan", path, "--method", "lsh", "--json", "-", "--quiet",
                               env={"PYTHONHASHSEED": "99"})
    assert rc == 0, err
    assert out_lsh == lsh[0]


def test_permutation_keeps_counts(tmp_path, spider_dev_rows, spider_dev_scan):
    rows = list(spider_dev_rows)
    random.Random(7).shuffle(rows)
    permuted = auditor.scan(write_jsonl_str(tmp_path / "perm.jsonl", rows))
    assert counts(permuted) == counts(spider_dev_scan)
    assert permuted.fingerprint != spider_dev_scan.fingerprint       # order is part of the identity


def test_doubling_the_dataset(tmp_path, spider_dev_rows, spider_dev_scan):
    n = len(spider_dev_rows)
    doubled = auditor.scan(write_jsonl_str(tmp_path / "twice.jsonl", spider_dev_rows + spider_dev_rows))
    once = spider_dev_scan
    assert doubled.records == 2 * n
    for name in ("text", "answer", "text_and_answer", "record"):
        before, after = once.exact[name], doubled.exact[name]
        # every record with a value now sits in a group; each distinct value is one group
        needs = {"text": ("text",), "answer": ("answer",), "text_and_answer": ("text", "answer"),
                 "record": ()}[name]
        with_value = sum(1 for t, a in zip(once.fields.text, once.fields.answer)
                         if all(v is not None and v.strip() for v in [{"text": t, "answer": a}[r] for r in needs]))
        assert after.records == 2 * with_value, name
        assert after.groups == with_value - before.redundant, name
        assert after.redundant == with_value + before.redundant, name
    assert doubled.exact["record"].records == 2 * n
    # near duplicates: each old pair appears 4 times, plus one new pair per record and its copy
    nonempty = sum(1 for t in once.fields.text if t and t.split())
    for p1, p2 in zip(once.curve, doubled.curve):
        assert p2.pairs == 4 * p1.pairs + nonempty
        in_cluster = once.near_duplicates(p1.threshold).records_in_clusters
        assert p2.clusters == p1.clusters + (nonempty - in_cluster)
        assert doubled.near_duplicates(p1.threshold).records_in_clusters == 2 * nonempty
    c1, c2 = once.summary()["concentration"], doubled.summary()["concentration"]
    assert c2["hhi"] == c1["hhi"] and c2["groups"] == c1["groups"]
    assert c2["largest"]["records"] == 2 * c1["largest"]["records"]


def test_scan_reports_progress_in_order_and_times_every_stage():
    seen = []
    result = auditor.scan("example:humaneval", progress=lambda fraction, stage: seen.append((fraction, stage)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and seen[-1] == (1.0, "done")
    stages = [s for _, s in seen]
    for stage in ("loading", "reading fields", "searching near duplicates", "clustering"):
        assert stage in stages
    assert list(result.timings) == ["load", "roles", "exact", "shingles", "near_duplicates", "curve"]
    assert all(seconds >= 0 for seconds in result.timings.values())
