"""The semantic pass reads texts through the one normalisation (normalize.fold) like every other
check: a GSM8K test question planted in a corpus with zero-width spaces, fullwidth letters,
Cyrillic homoglyphs, soft hyphens, bidi marks, joiners and a BOM, or decomposed accents, is
embedded as the question itself, so its best match is its own altered copy at the cosine of a
verbatim copy. Real data: the evasion tests' GSM8K slices (tests/evasion_helpers.py)."""
from __future__ import annotations

import pytest

import evasion_helpers
from auditor import semantic

pytestmark = pytest.mark.skipif(not semantic.available(), reason="the semantic extra is not installed")


@pytest.mark.slow
def test_every_altered_copy_scores_as_a_verbatim_copy():
    _, test, planted = evasion_helpers.gsm8k_slices()
    items = planted[:12]
    names = sorted(evasion_helpers.VARIANTS)
    for name in names:
        bench_form, copy_form = evasion_helpers.VARIANTS[name]
        questions = [bench_form(test[i]["question"]) for i in items]
        copies = [copy_form(test[i]["question"]) for i in items]
        assert all(c != q for c, q in zip(copies, questions)) or name == "verbatim"
        result = semantic.semantic_search(questions, copies, candidates=0)
        for row in range(len(items)):
            best_row, cosine = result.neighbours[row][0]
            assert best_row == row, name
            assert cosine >= semantic.COPY_COSINE, (name, row, cosine)
