"""The leak evidence cards say each match's kinds in the summary table's words, not evidence.csv's
codes, and leave out what another kind implies. From a browser review (session 52): a card read
'identical_both + identical_text + identical_answer + near_duplicate'."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ui.views import KIND_WORDS, kind_words, leak_evidence_html  # noqa: E402
from auditor.report.leak import MATCH_KINDS  # noqa: E402


@pytest.mark.parametrize("codes, words", [
    ("identical_both+identical_text+identical_answer+near_duplicate", "same text and answer"),
    ("identical_text+near_duplicate", "same text"),
    ("identical_answer+near_duplicate+reworded_both", "near-duplicate text · reworded, same answer"),
    ("identical_answer", "same answer"),
    ("contained+reworded_both", "text inside the A record · reworded, same answer"),
    ("", "–"),
])
def test_kinds_in_words(codes, words):
    assert kind_words(codes) == words


def test_every_kind_has_words_and_the_card_shows_them():
    assert set(KIND_WORDS) == set(MATCH_KINDS)
    html = leak_evidence_html([{"b_row": 1, "a_row": 2, "kind": "identical_both+identical_text", "text_jaccard": 1.0,
                                "b_text": "<b>x</b>", "a_text": "y"}])
    assert "same text and answer" in html and "identical_both" not in html and "<b>x</b>" not in html
