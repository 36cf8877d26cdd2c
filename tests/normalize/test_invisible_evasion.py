"""Copies that read identically to a person (zero-width spaces, fullwidth letters, Cyrillic
homoglyphs, decomposed accents, soft hyphens, bidi marks, a BOM) are found by every check exactly
as verbatim copies are: the leak check (identical and near), contamination, clean, and scan/dedup
(exact and near), with the same rows found, no more and no fewer.

The setting is the hostile review's: 30 GSM8K test questions planted in a training file (a slice
of GSM8K train), each altered one way. The reference is the same run with the questions planted
verbatim: every altered run must find exactly the rows the verbatim run finds.
"""
from __future__ import annotations

import json
import unicodedata

import pytest

import real_data
from auditor.clean import clean
from auditor.contamination import contamination
from auditor.dedup import dedup
from auditor.leakage import leak
import auditor

PLANTED = 30
TRAIN_ROWS = 1500
TEST_ROWS = 400

HOMOGLYPHS = str.maketrans("aoecpAOECP", "аоеср" "АОЕСР")      # Cyrillic a, o, e, c, p (and capitals)


def _inside(text: str, mark: str, every: int = 3) -> str:
    """``mark`` after every ``every``-th character that is not whitespace (inside words)."""
    out, count = [], 0
    for ch in text:
        out.append(ch)
        if not ch.isspace():
            count += 1
            if count % every == 0:
                out.append(mark)
    return "".join(out)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _accented(text: str) -> str:
    """The question with accented letters (composed, NFC): what the NFD case decomposes."""
    return text.replace("e", "é").replace("a", "à").replace("o", "ö")


# name -> (how the benchmark's question is written, how the planted copy is written)
VARIANTS = {
    "verbatim": (str, str),
    "zero_width_inside": (str, lambda t: _inside(t, "\u200b")),
    "zero_width_end": (str, lambda t: t + "\u200b\u200b\u200b"),
    "fullwidth": (str, _fullwidth),
    "cyrillic": (str, lambda t: t.translate(HOMOGLYPHS)),
    "soft_hyphen": (str, lambda t: _inside(t, "\u00ad", 4)),
    "bidi_marks": (str, lambda t: _inside(t, "\u200e", 5)),
    "joiners_and_bom": (str, lambda t: "\ufeff" + _inside(t, "\u200d", 6)),
    "nfd": (_accented, lambda t: unicodedata.normalize("NFD", _accented(t))),
}


@pytest.fixture(scope="module")
def gsm8k():
    train = real_data.rows("gsm8k/train.jsonl")[:TRAIN_ROWS]
    test = real_data.rows("gsm8k/test.jsonl")[:TEST_ROWS]
    # planted: ASCII questions of at least 20 words (an n-gram scan checks them), spread over the test slice
    eligible = [i for i, r in enumerate(test) if r["question"].isascii() and len(r["question"].split()) >= 20]
    planted = eligible[::len(eligible) // PLANTED][:PLANTED]
    assert len(planted) == PLANTED
    return train, test, planted


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _files(tmp_path, gsm8k, name):
    bench_form, copy_form = VARIANTS[name]
    train, test, planted = gsm8k
    bench = [dict(r, question=bench_form(r["question"])) for r in test]
    copies = [{"question": copy_form(test[i]["question"]), "answer": test[i]["answer"]} for i in planted]
    folder = tmp_path / name
    folder.mkdir()
    train_file = _write(folder / "train.jsonl", train + copies)
    test_file = _write(folder / "test.jsonl", bench)
    # one dataset holding both the questions and their altered copies (scan, dedup)
    both_file = _write(folder / "both.jsonl", train + [bench[i] for i in planted] + copies)
    return train_file, test_file, both_file


def _outcomes(tmp_path, gsm8k, name) -> dict:
    train_file, test_file, both_file = _files(tmp_path, gsm8k, name)
    leaked = leak(train_file, test_file, text="question", answer="answer")
    found = {kind: sorted(b for b, m in leaked.matches.items() if m.get(kind))
             for kind in ("identical_text", "identical_both", "near_duplicate")}
    found["leak_pairs"] = sorted((b, m["near_duplicate"][0]) for b, m in leaked.matches.items()
                                 if m.get("near_duplicate"))
    scanned = contamination(train_file, test_file, corpus_text="question", benchmark_text="question")
    found["contamination"] = sorted((it["benchmark_row"], tuple(it["corpus_rows"])) for it in scanned.items)
    found["contamination_longest"] = sorted(it["longest_span"] for it in scanned.items)
    cleaned = clean(test_file, [train_file], near=True, text="question", answer="answer")
    found["clean_dropped"] = sorted((d["row"], d["reason"]) for d in cleaned.dropped)
    result = auditor.scan(both_file, text="question", answer="answer")
    exact = result.exact["text"]
    found["scan_exact"] = (exact.groups, exact.records)
    near = result.near_duplicates(0.7)
    found["scan_near"] = (near.pairs, near.clusters, near.records_in_clusters)
    deduped = dedup(result, 0.7)
    found["dedup_dropped"] = sorted(d["row"] for d in deduped.dropped)
    return found


@pytest.fixture(scope="module")
def verbatim(tmp_path_factory, gsm8k):
    return _outcomes(tmp_path_factory.mktemp("verbatim"), gsm8k, "verbatim")


def test_verbatim_copies_are_found_by_every_check(verbatim, gsm8k):
    """The reference itself: every planted question is found by each check."""
    _, _, planted = gsm8k
    assert set(planted) <= set(verbatim["identical_text"])
    assert set(planted) <= set(verbatim["identical_both"])
    assert set(planted) <= set(verbatim["near_duplicate"])
    assert set(planted) <= {b for b, _ in verbatim["contamination"]}
    assert set(planted) <= {row for row, _ in verbatim["clean_dropped"]}
    assert len(verbatim["dedup_dropped"]) >= PLANTED
    assert verbatim["scan_exact"][0] >= PLANTED


@pytest.mark.parametrize("name", [n for n in VARIANTS if n != "verbatim"])
def test_altered_copies_are_found_as_verbatim_ones_are(tmp_path, gsm8k, verbatim, name):
    found = _outcomes(tmp_path, gsm8k, name)
    for check, expected in verbatim.items():
        assert found[check] == expected, f"{name}: {check} differs from the verbatim copies'"
