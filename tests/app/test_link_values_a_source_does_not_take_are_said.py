"""A share link's values that its sources do not take are said in the status, as other values left
out are: a revision (rev, b_rev) with a bundled example or an uploaded file (a revision is a Hub
dataset's commit; the CLI refuses --revision for them), a config or split (config, split,
b_config, b_split) with an uploaded file (read whole). The page's own links never carry them.

From the round-7 hostile review: ?dataset=example:gsm8k&rev=0123abc audited the bundled set and said
"Audited" without a word about the revision, so a reader took the figures for that commit's."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import real_data  # noqa: E402
from ui import handlers, state  # noqa: E402

BASE = "http://space.example/"
LINK = {"dataset": "example:gsm8k", "config": "main", "split": "test", "text": "question", "answer": "answer",
        "threshold": "0.7"}


def status(out) -> str:
    return out["status"]["value"]


def test_a_revision_with_a_bundled_example_is_said():
    out = handlers.page_load({**LINK, "rev": "0123abc"}, BASE)
    text = status(out)
    assert text.startswith("Audited **example:gsm8k**"), text
    assert "rev=0123abc (" in text and "Hugging Face datasets only" in text
    assert out["state"]["source"].kind == "example"


def test_b_side_values_it_does_not_take_are_said():
    out = handlers.page_load({**LINK, "b": "example:gsm8k", "b_config": "socratic", "b_split": "test",
                              "b_rev": "v2"}, BASE)
    text = status(out)
    assert "b\\_rev=v2 (" in text and "Hugging Face datasets only" in text, text


def test_an_uploads_config_split_and_revision_are_said(tmp_path):
    rows = real_data.rows("gsm8k/test.jsonl")[:40]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    kept = state.kept_upload(str(path))
    out = handlers.page_load({"upload": kept.id, "config": "main", "split": "test", "rev": "abc1234",
                              "text": "question"}, BASE)
    text = status(out)
    assert text.startswith("Audited **mine.jsonl**"), text
    for key, value in (("config", "main"), ("split", "test"), ("rev", "abc1234")):
        assert f"{key}={value} (" in text, (key, text)


def test_a_hub_links_revision_is_not_called_left_out():
    assert not [k for k, _, _ in handlers.ignored_link_values({"dataset": "openai/gsm8k", "rev": "abc1234",
                                                              "config": "main", "split": "test"})]
