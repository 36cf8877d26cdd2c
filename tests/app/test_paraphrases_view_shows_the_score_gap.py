"""The Paraphrases view draws the margin scores as the library computes them: the histogram's
bars are the best-match margins, the threshold is a line, and the gap between the scores (where
the planted rephrases part from the other items) is a shaded band that the caption names. Real
data: MMLU sociology questions and 30 of their rephrases among 40 unrelated-topic records
(GSM8K rephrases), tests/data/semantic."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from auditor import semantic  # noqa: E402
from ui import views  # noqa: E402
import real_data  # noqa: E402

texts = real_data.semantic_texts
pytestmark = pytest.mark.skipif(not semantic.available(), reason="the semantic extra is not installed")


def test_histogram_threshold_and_gap():
    questions = texts("sociology_questions.jsonl.gz", "question")
    rephrases = texts("sociology_rephrased.jsonl.gz", "text")[:30]
    others = texts("gsm8k_rephrased.jsonl.gz", "text")[:40]
    sr = semantic.semantic_search(questions, others + rephrases)
    gap = sr.gap()
    assert gap and gap["high"] > gap["low"]
    fig = views.paraphrase_figure(sr.distribution(), 0.45, gap)
    margins = [m for m in sr.margin if m is not None]
    assert list(fig.data[0].y) == np.histogram(np.clip(margins, 0, 1), bins=np.linspace(0, 1, 21))[0].tolist()
    line, = [s for s in fig.layout.shapes if s.type == "line"]
    band, = [s for s in fig.layout.shapes if s.type == "rect"]
    assert line.x0 == 0.45 and (band.x0, band.x1) == (gap["low"], gap["high"])
    caption = views.paraphrase_markdown(sr, 0.45, len(sr.flagged(0.45)), "sociology", "A", [])
    assert f"the scores part between {gap['low']:.3f} and {gap['high']:.3f}" in caption
    # the items above the gap are the rephrased ones (rows 0-29 have a rephrase at corpus row 40 + i)
    above = {b for b, m in enumerate(sr.margin) if m is not None and m > gap["low"]}
    assert len(above & set(range(30))) >= 25 and len(above - set(range(30))) <= 2
