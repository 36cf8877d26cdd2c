"""The "wrote PATH" lines on stderr are said once the run's outputs are in place as one set
(``io.outputs.written_together``), never for a set that a later output's failure undid.

From the round-9 review: ``_emit`` printed "wrote .../REPORT.md" and "wrote .../summary.json" as soon as
they were held, before --json was written; when --json failed, the set was discarded (exit 2) and
the lines named files that were never put in place."""
from __future__ import annotations

import os

import pytest

GSM8K_TEST = os.path.join(os.path.dirname(__file__), "..", "..", "auditor", "examples", "gsm8k", "main",
                          "test.jsonl.gz")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_no_wrote_line_when_a_later_output_fails(tmp_path, run_cli):
    rep = tmp_path / "rep"
    rc, _, err = run_cli("scan", GSM8K_TEST, "--out-dir", rep, "--json", "/dev/full", "--max-rows", "300")
    assert rc == 2, err
    assert "disk is full" in err and "Traceback" not in err, err
    assert not [line for line in err.splitlines() if line.startswith("wrote ")], err
    assert not rep.exists() or list(rep.iterdir()) == []


def test_wrote_lines_name_the_files_in_place(tmp_path, run_cli):
    rep, summary = tmp_path / "rep", tmp_path / "s.json"
    rc, _, err = run_cli("scan", GSM8K_TEST, "--out-dir", rep, "--json", summary, "--max-rows", "300")
    assert rc == 0, err
    wrote = [line.removeprefix("wrote ") for line in err.splitlines() if line.startswith("wrote ")]
    assert [os.path.basename(p) for p in wrote] == ["REPORT.md", "summary.json"]
    assert all(os.path.isfile(p) for p in wrote) and summary.is_file()
