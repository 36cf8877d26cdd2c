"""REPORT.md goes to stdout by default, so control characters from the data (texts, groups, field,
file and dataset names) are shown as code points, ⟨U+001B⟩, never written raw for a terminal to
act on (ESC[2J clears it). From a hostile review: Markdown and HTML were escaped, ESC and BEL not."""
from __future__ import annotations

import json
import re

import pytest

RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
TEXT = "line one \x1b[31mred\x1b[0m bell\x07 text and more words"


@pytest.fixture
def files(tmp_path):
    rows = [{"question": TEXT, "answer": "a", "grp": "g\x1b[1m"}] * 2 + [
        {"question": "another question entirely here", "answer": "b", "grp": "h"}]
    data = tmp_path / "x\x1b[31m.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    keyed = tmp_path / "keyed.jsonl"
    keyed.write_text("".join(json.dumps({"question\x1b[31m": TEXT}) + "\n" for _ in range(3)), encoding="utf-8")
    return data, keyed


@pytest.mark.parametrize("command", [
    ["scan", "{data}", "--group", "grp"], ["scan", "{keyed}"], ["leak", "{data}", "{data}", "--group", "grp"],
    ["matrix", "-d", "n\x1b[2J={data}", "-d", "k={keyed}"], ["contamination", "{data}", "--benchmark", "gsm8k"]])
def test_reports_on_stdout_show_control_characters_as_code_points(files, run_cli, command):
    data, keyed = files
    rc, out, err = run_cli(*[a.format(data=data, keyed=keyed) for a in command], "--quiet")
    assert rc == 0, err
    assert not RAW_CONTROL.findall(out), sorted(set(RAW_CONTROL.findall(out)))
    assert "⟨U+001B⟩" in out
