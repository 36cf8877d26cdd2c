"""From the round-4 hostile review: field and file names that REPORT.md sets in code spans
(`Fields compared`, `Text fields checked`, the decontaminated copy's names) were escaped as table
cells are. A code span takes no backslash escapes, so a name showed its escapes (`task\\_id`,
`question\\|\\<script\\>`), and a backtick in a column name ended the span early: the rest of the
sentence was split into other spans. Rendered with a CommonMark renderer (markdown-it-py), each name
now reads exactly as written, as one code span, and never as markup."""
from __future__ import annotations

import html
import json
import re

import markdown_it
import pytest

import real_data
from auditor.cli import main

TEST = real_data.rows("gsm8k/test.jsonl")[:100]
NAMES = ["canonical_solution", "q`` <b>x</b> ``", "`tick", "a|b <script>alert(1)</script> *em*",
         "line\nbreak"]
RENDER = markdown_it.MarkdownIt("commonmark").enable("table").render


def _codes(markdown: str, marker: str) -> list[str]:
    """The texts of the code spans in the first rendered paragraph holding ``marker``."""
    para = next(p for p in RENDER(markdown).split("</p>") if marker in p)
    assert "<b>" not in para and "<script>" not in para and "<em>" not in para, para
    return [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", para, flags=re.S)]


@pytest.mark.parametrize("name", NAMES)
def test_leak_and_contamination_name_the_field_as_written(tmp_path, capsys, name):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({name: r["question"], "answer": r["answer"]}) + "\n" for r in TEST),
                    encoding="utf-8")
    shown = name.replace("\n", " ")
    assert main(["leak", str(path), str(path), "--text", name, "--out-dir", str(tmp_path / "leak"), "--quiet"]) == 0
    report = (tmp_path / "leak" / "REPORT.md").read_text(encoding="utf-8")
    assert _codes(report, "Fields compared") == [shown, "answer", shown, "answer"]
    out = tmp_path / "clean.jsonl"
    assert main(["contamination", str(path), "--benchmark", "gsm8k", "--text", name, "--decontaminate", str(out),
                 "--out-dir", str(tmp_path / "cont"), "--quiet"]) == 0
    report = (tmp_path / "cont" / "REPORT.md").read_text(encoding="utf-8")
    assert _codes(report, "Text fields checked") == [shown, "question"]
    # the 100 GSM8K test questions are all found, and the copy keeps none of them
    assert json.loads((tmp_path / "cont" / "summary.json").read_text())["contaminated"]["records"] == 100
    assert _codes(report, "holds 0 of the corpus") == ["clean.jsonl", "clean.jsonl.dropped.json"]
    capsys.readouterr()
