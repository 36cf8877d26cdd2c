"""Copies that read identically to a person (zero-width spaces, fullwidth letters, Cyrillic
homoglyphs, decomposed accents, soft hyphens, bidi marks, a BOM) are found by every check exactly
as verbatim copies are: the leak check (identical and near), contamination, clean, and scan/dedup
(exact and near), with the same rows found, no more and no fewer.

The setting is the hostile review's: 30 GSM8K test questions planted in a training file (a slice
of GSM8K train), each altered one way. The reference is the same run with the questions planted
verbatim: every altered run must find exactly the rows the verbatim run finds.
"""
from __future__ import annotations

import pytest

import auditor
from auditor.clean import clean
from auditor.contamination import contamination
from auditor.dedup import dedup
from auditor.leakage import leak
from evasion_helpers import PLANTED, VARIANTS, gsm8k_slices, planted_files


@pytest.fixture(scope="module")
def gsm8k():
    return gsm8k_slices()


def _outcomes(tmp_path, gsm8k, name) -> dict:
    train_file, test_file, both_file = planted_files(tmp_path, gsm8k, name)
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
