"""``clean``: a copy of the evaluation split without the records that leak from training, the
original rows kept as written, checked against the definitions."""
from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import auditor
from auditor.clean import clean
from definitions import all_pairs, at_least, contained_hits, near_hits, norm_default, read_jsonl, write_jsonl


def _lines(path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def mbpp_splits(real_data, tmp_path):
    """MBPP's train (tasks 601-974) and test (11-510) split out of the full file."""
    rows = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    train = [r for r in rows if 601 <= r["task_id"] <= 974]
    test = [r for r in rows if 11 <= r["task_id"] <= 510]
    write_jsonl(tmp_path / "mbpp_train.jsonl", train)
    write_jsonl(tmp_path / "mbpp_test.jsonl", test)
    return tmp_path / "mbpp_train.jsonl", tmp_path / "mbpp_test.jsonl", train, test


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
    return ident, ans, both, near


def _norm(value):
    """The default normaliser, written again: NFC, lowercase, whitespace collapsed; blank is missing."""
    if value is None or not str(value).strip():
        return None
    return " ".join(unicodedata.normalize("NFC", str(value)).lower().split())


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


@pytest.mark.slow
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


def near_copies_kept_apart(texts, dropped: set, t: float = 0.7) -> set:
    """Rows ``clean --near --dedup`` drops as TEST's own near copies: in each component of the pairs
    at Jaccard >= t (every pair scored, tests/definitions.py), every row but the lowest one not
    dropped already."""
    r, c, inter, union = all_pairs(texts)
    keep = at_least(inter, union, t)
    parent = list(range(len(texts)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in zip(r[keep].tolist(), c[keep].tolist()):
        parent[find(a)] = find(b)
    members: dict = {}
    for row in range(len(texts)):
        members.setdefault(find(row), []).append(row)
    out = set()
    for rows in members.values():
        left = [row for row in rows if row not in dropped]
        if len(rows) >= 2 and left:
            out |= set(left[1:])
    return out


@pytest.mark.sweep
def test_clean_drops_exactly_the_leaked_rows(real_data, run_cli, tmp_path):
    """``clean``: dropped = B rows whose normalised text is an A text, plus (--near) rows with an A
    text at Jaccard >= 0.7 or inside an A text (containment >= 0.7, tests/definitions.py), plus
    (--dedup) later copies of a B text, and with --near as well the near copies within B (every row of
    a cluster but the lowest one not dropped already: a review found --near --dedup left 50 near
    pairs in Spider train); the kept file is the other rows unchanged and in order;
    by_reason counts reasons by kind."""
    mbpp_train, mbpp_test, train, test = mbpp_splits(real_data, tmp_path)
    cases = [(real_data / "spider/train_spider.jsonl", real_data / "spider/dev.jsonl", "question"),
             (mbpp_train, mbpp_test, "text")]
    for a, b, text in cases:
        a_rows, b_rows = read_jsonl(a), read_jsonl(b)
        ident, _, _, near = leak_reference(a_rows, b_rows, text, text, None, None)
        inside = set(contained_hits([r[text] for r in a_rows], [r[text] for r in b_rows])) - ident - near
        first: dict = {}
        copies = set()
        for j, r in enumerate(b_rows):
            key = norm_default(r[text])
            if key in first:
                copies.add(j)
            first.setdefault(key, j)
        leaked = ident | near | inside | copies
        near_copies = near_copies_kept_apart([r[text] for r in b_rows], leaked)
        for flags, expected in [((), ident), (("--near",), ident | near | inside),
                                (("--near", "--dedup"), leaked | near_copies)]:
            out = tmp_path / f"clean_{b.stem}{''.join(flags)}.jsonl"
            code, _, err = run_cli("clean", b, "--against", a, *flags, "--out", out, "--quiet")
            assert code == 0, err
            report = json.loads(out.with_name(out.name + ".dropped.json").read_text())
            assert {d["row"] for d in report["dropped_rows"]} == expected, (b, flags)
            assert read_jsonl(out) == [r for j, r in enumerate(b_rows) if j not in expected]
            assert report["kept"] + report["dropped"] == report["records"] == len(b_rows)
            kinds = Counter("identical_text" if j in ident else "near_duplicate" if j in near
                            else "contained" if j in inside else "internal_duplicate" if j in copies
                            else "internal_near_duplicate" for j in expected)
            assert report["by_reason"] == dict(sorted(kinds.items())), (b, flags)
        assert near - ident                      # --near adds rows here; the comparison is not vacuous
        assert near_copies                       # and --near --dedup its own near copies
    # the output is never the input
    code, _, err = run_cli("clean", mbpp_test, "--against", mbpp_train, "--out", mbpp_test, "--quiet")
    assert code == 2 and "Traceback" not in err
    assert read_jsonl(mbpp_test) == test


def test_clean_names_internal_duplicates_with_another_answer(real_data, run_cli, tmp_path):
    """From the review of turn selectors and the dedup manifest: clean --dedup drops a test question asked
    twice whatever its answers: a copy with another
    answer is named ('differs') and counted in a note; an exact copy and one with no answer are not
    counted."""
    test = read_jsonl(real_data / "gsm8k/test.jsonl")[:20]
    rows = [*test, dict(test[2]), {**test[3], "answer": "#### 999"}, {**test[4], "answer": None}]
    write_jsonl(tmp_path / "test.jsonl", rows)
    write_jsonl(tmp_path / "train.jsonl", read_jsonl(real_data / "gsm8k/train.jsonl")[:40])
    out = tmp_path / "clean.jsonl"
    code, _, err = run_cli("clean", tmp_path / "test.jsonl", "--against", tmp_path / "train.jsonl", "--dedup",
                           "--out", out)
    assert code == 0, err
    report = json.loads(Path(f"{out}.dropped.json").read_text())
    first = {}
    expected = {}
    for i, r in enumerate(rows):
        key = _norm(r["question"])
        if key in first:
            expected[i] = [] if _norm(r["answer"]) == _norm(rows[first[key]]["answer"]) else ["answer"]
        first.setdefault(key, i)
    assert {d["row"]: d["differs"] for d in report["dropped_rows"]} == expected
    held = sum(1 for i, x in expected.items() if x and _norm(rows[i]["answer"]) is not None)
    assert held == 1 and report["notices"][0].startswith(f"{held} internal duplicate(s)")
    assert re.search(r"note: 1 internal duplicate\(s\) dropped hold another answer", err)
