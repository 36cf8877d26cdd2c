"""Leak's contained matches: GSM8K test questions copied inside longer GSM8K training texts (a prompt
template around the question, the question followed by its worked answer in one field, a passage
before it) are found, exactly the B rows the definition names (|S_a & S_b| / |S_b| >= t, word
3-shingles, ceil(t |S_b|) >= 11; tests/definitions.py), at two thresholds; the gate, clean and the
evidence count them as text leaks; the bundled real splits gain only what the definition holds."""
from __future__ import annotations

import csv
import io
import json

import pytest

from definitions import contained_hits, near_hits, norm_default, read_jsonl, shingles, write_jsonl
from auditor.leakage import leak
from auditor.near.contained import MIN_SHARED

INSTRUCTION = ("### Instruction: Solve the following grade school math word problem step by step, showing each "
               "intermediate calculation clearly, and then give the final numeric answer on its own line after "
               "four hash marks. ### Input:")        # 33 words before the question
LAYOUTS = ("template", "with_answer", "passage")
PLANTED = 30                  # GSM8K test rows 0, 10, 20, ... planted, one layout each in turn
N_A, N_B = 2000, 400


def planted_text(layout: str, question: str, answer: str, other: str) -> str:
    if layout == "template":
        return f"{INSTRUCTION} {question} ### Response:"
    if layout == "with_answer":
        return f"{question}\n{answer}"
    return f"Read the passage and answer the question. Passage: {other} Question: {question}"


@pytest.fixture(scope="module")
def planted(real_data, tmp_path_factory):
    """GSM8K train's first 2,000 rows with 30 test questions planted inside rows 50, 110, ...
    (the rest untouched), and GSM8K test's first 400 rows as B."""
    train, test = read_jsonl(real_data / "gsm8k/train.jsonl")[:N_A], read_jsonl(real_data / "gsm8k/test.jsonl")[:N_B]
    a = [{"text": r["question"]} for r in train]
    for k in range(PLANTED):
        item = test[10 * k]
        a[50 + 60 * k] = {"text": planted_text(LAYOUTS[k % 3], item["question"], item["answer"],
                                               train[50 + 60 * k]["question"])}
    b = [{"question": r["question"]} for r in test]
    folder = tmp_path_factory.mktemp("contained")
    write_jsonl(folder / "train.jsonl", a)
    write_jsonl(folder / "test.jsonl", b)
    return folder / "train.jsonl", folder / "test.jsonl", [r["text"] for r in a], [r["question"] for r in b]


def definition(texts_a, texts_b, t):
    """(contained B rows beyond identical and near ones -> best containment, identical or near rows)."""
    keys_a = {norm_default(x) for x in texts_a}
    text_hits = {j for j, x in enumerate(texts_b) if norm_default(x) in keys_a} | near_hits(texts_a, texts_b, t)
    inside = contained_hits(texts_a, texts_b, t)
    return {j: c for j, c in inside.items() if j not in text_hits}, text_hits


@pytest.mark.parametrize("threshold", [0.7, 0.5])
def test_contained_rows_are_the_definitions(planted, threshold):
    """Exactly the definition's B rows, each with its best containment and an A row reaching it;
    every planted question is among them at 0.7, where Jaccard finds almost none."""
    path_a, path_b, texts_a, texts_b = planted
    want, text_hits = definition(texts_a, texts_b, threshold)
    result = leak(path_a, path_b, threshold=threshold)
    got = {b: m for b, m in result.matches.items() if m.get("contained")}
    assert set(got) == set(want)
    assert result.counts["contained"] == len(want)
    inside = contained_hits(texts_a, texts_b, threshold)
    for b, m in got.items():
        assert m["containment"] == pytest.approx(float(want[b]), abs=1e-12)
        assert not m.get("near_duplicate") and not m.get("identical_text")
        s_b = set(shingles(texts_b[b]))
        for a in m["contained"]:      # each listed A row contains it at >= t, best first
            assert len(s_b & set(shingles(texts_a[a]))) / len(s_b) >= threshold - 1e-12
        assert len(s_b & set(shingles(texts_a[m["contained"][0]]))) / len(s_b) == float(inside[b])
    planted_rows = {10 * k for k in range(PLANTED)}
    if threshold == 0.7:
        assert planted_rows <= set(want) | text_hits
        assert len(planted_rows & set(want)) >= 25          # Jaccard alone misses most of them
    summary = result.summary()
    assert summary["contained"]["records"] == len(want)
    assert summary["text_leak"]["records"] == len(set(want) | text_hits)
    assert set(result.text_leak_rows) == set(want) | text_hits
    kept = result.clean_b_rows(near=True)
    assert len(kept) == N_B - len(set(want) | text_hits)


def test_gate_report_and_evidence_count_contained(planted, run_cli, tmp_path):
    """--fail-on-overlap exits 1 on the templated file; REPORT.md has the row; evidence.csv lists
    each contained B row with its containment."""
    path_a, path_b, texts_a, texts_b = planted
    want, _ = definition(texts_a, texts_b, 0.7)
    code, out, err = run_cli("leak", path_a, path_b, "--fail-on-overlap", "--out-dir", tmp_path / "out",
                             "--quiet", timeout=300)
    assert code == 1 and "Traceback" not in err, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["contained"]["records"] == len(want)
    # summary.json says how contained matches were decided, the smallest overlap counted included
    assert summary["method"]["contained"]["min_shared_shingles"] == MIN_SHARED
    assert summary["method"]["contained"]["rule"].startswith("|A & B| / |B| >= threshold")
    report = (tmp_path / "out" / "REPORT.md").read_text(encoding="utf-8")
    assert f"| text inside an A record (≥ 70% of its shingles; not counted above) | {len(want)} |" in report
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "evidence.csv").read_text(encoding="utf-8"))))
    contained = {int(r["b_row"]): r for r in rows if r["b_kinds"] == "contained"}
    assert set(contained) == set(want)
    for b, r in contained.items():
        assert r["kind"] == "contained"
        assert float(r["text_containment"]) == pytest.approx(float(want[b]), abs=1e-6)


def test_without_planting_the_gate_passes(planted, run_cli):
    """The unplanted training rows against the same B: nothing contained beyond the definition's."""
    path_a, path_b, texts_a, texts_b = planted
    clean_a = path_a.parent / "unplanted.jsonl"
    rows = [{"text": t} for t in texts_a if not t.startswith(("###", "Read the passage"))]
    write_jsonl(clean_a, rows)
    want, text_hits = definition([r["text"] for r in rows], texts_b, 0.7)
    result = leak(clean_a, path_b)
    assert {b for b, m in result.matches.items() if m.get("contained")} == set(want)


@pytest.mark.parametrize("a, b, field", [("gsm8k/train.jsonl", "gsm8k/test.jsonl", "question"),
                                         ("spider/train_spider.jsonl", "spider/dev.jsonl", "question")])
def test_bundled_splits_gain_only_the_definitions(real_data, a, b, field):
    """GSM8K train -> test and Spider train -> dev: the contained rows are the definition's (none:
    same-template siblings of one length, GSM8K test row 602 and a training question sharing 17 of
    its 23 shingles, are left to the near-duplicate check by the length condition)."""
    texts_a = [r[field] for r in read_jsonl(real_data / a)]
    texts_b = [r[field] for r in read_jsonl(real_data / b)]
    want, _ = definition(texts_a, texts_b, 0.7)
    result = leak(real_data / a, real_data / b)
    assert {r for r, m in result.matches.items() if m.get("contained")} == set(want)
    assert result.counts["contained"] == len(want)


def test_short_texts_are_never_contained(tmp_path):
    """A B text needing fewer than MIN_SHARED shared shingles is not matched, even copied whole
    inside an A text; one word more and it is."""
    short = " ".join(f"s{i}" for i in range(14))             # 12 shingles: ceil(0.7 * 12) = 9 < 11
    long = " ".join(f"w{i}" for i in range(17))              # 15 shingles: ceil(0.7 * 15) = 11
    assert MIN_SHARED == 11
    filler = " ".join(f"f{i}" for i in range(40))
    write_jsonl(tmp_path / "a.jsonl", [{"text": f"{filler} {short} {filler}"}, {"text": f"{filler} {long} x"}])
    write_jsonl(tmp_path / "b.jsonl", [{"text": short}, {"text": long}])
    result = leak(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert {b: m.get("contained") for b, m in result.matches.items()} == {1: [1]}
    assert result.matches[1]["containment"] == 1.0


def test_clean_near_drops_contained_rows(planted):
    """``clean --near`` drops every contained B row, by that reason, and keeps it without --near."""
    from auditor.clean import clean
    path_a, path_b, texts_a, texts_b = planted
    want, text_hits = definition(texts_a, texts_b, 0.7)
    result = clean(str(path_b), [str(path_a)], near=True)
    reasons = {d["row"]: d["reason"] for d in result.dropped}
    assert set(reasons) == set(want) | text_hits
    assert {r for r, why in reasons.items() if why.startswith("contained (containment ")} == set(want)
    assert result.summary()["by_reason"].get("contained") == len(want)
    assert not set(want) & {d["row"] for d in clean(str(path_b), [str(path_a)]).dropped}
