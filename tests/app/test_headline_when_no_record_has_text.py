"""From the round-4 hostile review: an upload whose text field is blank in every record (GSM8K
test's answers kept, its questions blanked: a broken export) was headed "No near duplicates", the
same words as a clean dataset, though nothing had been compared. The headline now says so: "No
text to compare" when no record has text, and how many records were left out when some have none;
GSM8K test itself keeps its verdict."""
from __future__ import annotations

import html
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import real_data  # noqa: E402
from ui import handlers  # noqa: E402

TEST = real_data.rows("gsm8k/test.jsonl")


def _headline(path: Path) -> str:
    view = handlers.run(f"upload:{path.name}", "", "", "question", "answer", "", [], 0.7, None, str(path), None,
                        f"upload:{path.name}", "http://space.example/")
    assert view["state"] is not None, view["status"]
    markup = view["headline"]["value"] if isinstance(view["headline"], dict) else view["headline"]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_no_record_with_text_is_not_a_clean_verdict(tmp_path):
    rows = [{"question": "  " if i % 2 else None, "answer": r["answer"]} for i, r in enumerate(TEST[:300])]
    text = _headline(_write(tmp_path / "blank.jsonl", rows))
    assert text.startswith("No text to compare"), text
    assert "No near duplicates" not in text
    assert "300 of 300 records have no text (missing, null or blank), so nothing was compared" in text


def test_some_records_without_text_are_counted(tmp_path):
    rows = [{"question": "" if i < 40 else r["question"], "answer": r["answer"]} for i, r in enumerate(TEST[:300])]
    text = _headline(_write(tmp_path / "some.jsonl", rows))
    assert "40 of 300 records have no text (missing, null or blank), so they were not compared" in text
    assert not text.startswith("No text to compare")


def test_gsm8k_test_keeps_its_verdict(tmp_path):
    text = _headline(_write(tmp_path / "test.jsonl", TEST))
    assert "no text" not in text
    assert re.match(r"(No near duplicates|Little duplication) ", text), text
