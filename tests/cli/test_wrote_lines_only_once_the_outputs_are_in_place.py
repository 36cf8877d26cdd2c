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



def test_no_kept_line_for_a_copy_that_did_not_go_in_place(tmp_path, monkeypatch, capsys, run_cli):
    """From the round-9 review: dedup's "kept N of M rows ... (manifest: M)" line was said before the
    run's set went in place, so a set refused at the last moment (a folder put at the manifest's
    name after the checks) left it naming a copy and a manifest that were never there."""
    from auditor import cli
    from auditor.io import outputs
    out, manifest = tmp_path / "kept.jsonl", tmp_path / "dropped.jsonl"
    check = outputs._check_final_name

    def folder_put_late(dir_fd, name, shown):
        if name == manifest.name and not os.path.exists(manifest):
            os.mkdir(name, dir_fd=dir_fd)
        check(dir_fd, name, shown)
    monkeypatch.setattr(outputs, "_check_final_name", folder_put_late)
    rc = cli.main(["dedup", GSM8K_TEST, "--out", str(out), "--manifest", str(manifest), "--max-rows", "300"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert not [line for line in err.splitlines() if line.startswith("kept ")], err
    assert not out.exists() and manifest.is_dir()
    manifest.rmdir()
    monkeypatch.undo()
    rc, _, err = run_cli("dedup", GSM8K_TEST, "--out", out, "--manifest", manifest, "--max-rows", "300")
    assert rc == 0, err
    kept = [line for line in err.splitlines() if line.startswith("kept ")]
    assert len(kept) == 1 and str(manifest) in kept[0] and out.is_file() and manifest.is_file()
    assert f"kept {sum(1 for _ in out.open()):,} of 300 rows" in kept[0]
