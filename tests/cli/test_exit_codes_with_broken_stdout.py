"""Exit 1 means a finding and nothing else: with stdout closed (``>&-``) or its reader gone, a run
whose report cannot be written ends with exit 2 and one line on stderr (no traceback), whatever it
found; a run that writes its report to files is not affected; an internal error is exit 3."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO

import auditor.cli as cli


def _run(args: str, tmp_path, closed: bool = True):
    """``python -m auditor ARGS`` with stdout closed (or open), through a shell as a CI job runs it."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = f"{sys.executable} -m auditor {args}" + (" >&-" if closed else " >/dev/null")
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    return proc.returncode, proc.stderr


def _assert_one_line(err: str):
    assert "Traceback" not in err, err[-1500:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: Cannot write the report to stdout: stdout is closed"), err


def test_scan_with_stdout_closed_is_exit_2_with_one_line(tmp_path):
    rc, err = _run("scan example:mbpp --split test --quiet", tmp_path)
    assert rc == 2
    _assert_one_line(err)


def test_leak_check_with_no_leak_and_stdout_closed_is_not_exit_1(tmp_path):
    # GSM8K's test split against HumanEval: no text of one is in the other (exit 0 with stdout open)
    args = "leak example:humaneval example:gsm8k --split-b test --fail-on-overlap --quiet"
    assert _run(args, tmp_path, closed=False)[0] == 0
    rc, err = _run(args, tmp_path)
    assert rc == 2
    _assert_one_line(err)


def test_json_file_written_and_exit_2_when_the_report_cannot_follow(tmp_path):
    rc, err = _run("scan example:mbpp --split test --json summary.json --quiet", tmp_path)
    assert rc == 2
    _assert_one_line(err)
    assert json.loads((tmp_path / "summary.json").read_text())["kind"] == "scan"


def test_reports_to_files_are_not_affected_by_a_closed_stdout(tmp_path):
    rc, err = _run("leak example:mbpp example:mbpp --split-a train --split-b test --fail-on-overlap "
                   "--out-dir found --quiet", tmp_path)
    assert rc == 1 and "Traceback" not in err           # 16 MBPP test texts are in its train split: a finding
    assert json.loads((tmp_path / "found" / "summary.json").read_text())["text_leak"]["records"] > 0
    rc, err = _run("leak example:humaneval example:gsm8k --split-b test --fail-on-overlap --out-dir clean "
                   "--quiet", tmp_path)
    assert rc == 0 and not err.strip()
    # and no file of the run took descriptor 1 (the closed stdout): the report is the report
    assert json.loads((tmp_path / "clean" / "summary.json").read_text())["kind"] == "leak"


def test_a_reader_that_closes_the_pipe_is_exit_2(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "scan", "example:gsm8k", "--split", "train",
                             "--json", "-", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=tmp_path)
    proc.stdout.close()                      # the reader goes away before the report is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 2
    assert "Traceback" not in err and "error: Cannot write the report to stdout" in err, err


def test_an_internal_error_is_exit_3_never_1(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("a bug")
    monkeypatch.setitem(cli.COMMANDS, "scan", broken)
    assert cli.main(["scan", "example:mbpp"]) == cli.INTERNAL_ERROR == 3
    err = capsys.readouterr().err
    assert "RuntimeError: a bug" in err and "internal error" in err
