"""The CLI's contract: where reports go (stdout, --json, --out-dir), exit codes, usage errors
for bad options, --version and --help."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor import ScanSettings


BAD_OPTIONS = {
    "threshold 0": ["--threshold", "0"],
    "threshold 1.5": ["--threshold", "1.5"],
    "threshold nan": ["--threshold", "nan"],
    "threshold text": ["--threshold", "high"],
    "thresholds with 0": ["--thresholds", "0.9,0"],
    "shingle word:0": ["--shingle", "word:0"],
    "shingle unit": ["--shingle", "token:3"],
    "max-rows 0": ["--max-rows", "0"],
    "unknown option": ["--bogus"],
    "abbreviated option": ["--thresh", "0.5"],
    "misspelt option": ["--treshold", "0.5"],
    "bad method": ["--method", "fast"],
    "bad normalizer": ["--normalizer", "lower"],
    "num-perm 1 with lsh": ["--method", "lsh", "--num-perm", "1"],
    "negative seed with lsh": ["--method", "lsh", "--seed", "-1"],
    "seed beyond 64 bits with lsh": ["--method", "lsh", "--seed", str(2 ** 64)],
}


def test_cli_json_to_stdout(real_data, run_cli):
    path = real_data / "spider" / "dev.jsonl"
    rc, out, err = run_cli("scan", path, "--json", "-", "--quiet")
    assert rc == 0, err
    s = json.loads(out)
    assert s["kind"] == "scan"
    assert s["input"]["records"] == 1034
    assert s["input"]["source"] == "dev.jsonl"
    assert [p["clusters"] for p in s["curve"]] == [0, 1, 3, 11, 34, 61, 104]
    assert err == ""
    assert str(real_data) not in out                 # no path of this machine in the output


def test_cli_options_reach_the_engine(real_data, run_cli):
    path = real_data / "spider" / "dev.jsonl"
    rc, out, err = run_cli("scan", path, "--text", "question", "--answer", "query", "--group", "db_id",
                           "--threshold", "0.5", "--thresholds", "0.9,0.5", "--method", "lsh",
                           "--shingle", "word:3", "--max-rows", "600", "--json", "-", "--quiet")
    assert rc == 0, err
    s = json.loads(out)
    assert s["settings"]["threshold"] == 0.5
    assert s["settings"]["thresholds"] == [0.9, 0.5]
    assert s["method"]["near_duplicates"] == "minhash-lsh"
    assert s["input"]["records"] == 600 and s["input"]["truncated"] is True
    assert s["roles"]["guessed"] == []
    api = auditor.scan(str(path), text="question", answer="query", group="db_id", max_rows=600,
                       settings=ScanSettings(threshold=0.5, thresholds=(0.9, 0.5), method="lsh"))
    assert s["near_duplicates"]["clusters"] == api.near_duplicates().clusters
    assert [p["pairs"] for p in s["curve"]] == [p.pairs for p in api.curve]


def test_cli_out_dir(real_data, run_cli, tmp_path):
    out_dir = tmp_path / "report"
    rc, out, err = run_cli("scan", real_data / "mbpp" / "mbpp.jsonl", "--out-dir", out_dir)
    assert rc == 0, err
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["input"]["records"] == 974
    assert [p["clusters"] for p in summary["curve"]] == [4, 7, 25, 72, 124, 137, 94]
    report = (out_dir / "REPORT.md").read_text(encoding="utf-8")
    assert report.startswith("# Integrity audit: mbpp.jsonl")
    assert "## Threshold curve" in report
    assert "summary.json" in err and out == ""         # progress and "wrote" lines go to stderr
    assert str(real_data) not in report


def test_an_output_named_inside_a_new_out_dir_is_written(real_data, run_cli, tmp_path):
    """--evidence inside an --out-dir that does not exist yet: the folder is made before the first
    write (the evidence was written before the reports, and failed on the missing folder)."""
    out_dir = tmp_path / "new" / "report"
    rc, _, err = run_cli("leak", real_data / "gsm8k" / "train.jsonl", real_data / "gsm8k" / "test.jsonl",
                         "--out-dir", out_dir, "--evidence", out_dir / "leaks.csv", "--quiet")
    assert rc == 0, err
    assert (out_dir / "leaks.csv").read_bytes() == (out_dir / "evidence.csv").read_bytes()
    assert (out_dir / "leaks.csv").read_text(encoding="utf-8").startswith("b_row,a_row,")
    assert (out_dir / "summary.json").exists() and (out_dir / "REPORT.md").exists()


def test_cli_markdown_to_stdout_by_default(real_data, run_cli):
    rc, out, err = run_cli("scan", real_data / "humaneval" / "HumanEval.jsonl", "--quiet")
    assert rc == 0, err
    assert out.startswith("# Integrity audit: HumanEval.jsonl")
    assert err == ""


def test_cli_json_to_file(real_data, run_cli, tmp_path):
    target = tmp_path / "s.json"
    rc, out, err = run_cli("scan", real_data / "humaneval" / "HumanEval.jsonl", "--json", target, "--quiet")
    assert rc == 0, err
    assert json.loads(target.read_text())["input"]["records"] == 164
    assert out.startswith("# Integrity audit")           # the report still goes to stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BAD_OPTIONS))
def test_cli_bad_options(real_data, run_cli, name):
    args = ["scan", real_data / "humaneval" / "HumanEval.jsonl", *BAD_OPTIONS[name]]
    rc, out, err = run_cli(*args, "--quiet")
    assert rc == 2, (rc, err[-500:])
    assert "Traceback" not in err
    assert err.startswith("error: ")
    rc, out, err = run_cli(*args, "--json", "-", "--quiet")
    assert rc == 2 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "usage"


def test_cli_no_command_and_no_source(run_cli):
    for args in ([], ["scan"], ["frobnicate"]):
        rc, out, err = run_cli(*args)
        assert rc == 2, args
        assert "Traceback" not in err and "error: " in err


def test_cli_version_and_help(run_cli):
    rc, out, err = run_cli("--version")
    assert rc == 0 and out.strip() == f"auditor {auditor.__version__}"
    rc, out, err = run_cli("scan", "--help")
    assert rc == 0 and "--threshold" in out and "--out-dir" in out


def test_cli_json_equals_form(real_data, run_cli):
    """`--json=-` is the same option as `--json -`: errors must come out as JSON there too."""
    path = real_data / "humaneval" / "HumanEval.jsonl"
    rc, out, err = run_cli("scan", path, "--json=-", "--quiet")
    assert rc == 0 and json.loads(out)["input"]["records"] == 164
    rc, out, err = run_cli("scan", path, "--json=-", "--threshold", "0", "--quiet")
    assert rc == 2
    assert json.loads(out)["error"]["code"] == "usage"


def test_cli_unwritable_outputs(real_data, run_cli, tmp_path):
    """An output path that cannot be written is a usage error (exit 2), not a traceback."""
    path = real_data / "humaneval" / "HumanEval.jsonl"
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    for args in (["--out-dir", a_file], ["--json", tmp_path / "missing-dir" / "s.json"]):
        rc, out, err = run_cli("scan", path, *args, "--quiet")
        assert rc == 2, (args, err[-300:])
        assert "Traceback" not in err and err.startswith("error: ")


@pytest.mark.slow
def test_cli_lone_surrogate_in_data(run_cli, tmp_path):
    """`"\\ud800"` is valid JSON (Python's json reads it as a lone surrogate). Such records exist in
    scraped data; printing them in REPORT.md or summary.json must not end in a traceback."""
    path = tmp_path / "surrogate.jsonl"
    path.write_text('{"text": "hello \\ud800 there my friend", "db": "\\ud800"}\n'
                    '{"text": "hello \\ud800 there my friend", "db": "x"}\n'
                    '{"text": "something else entirely here", "db": "x"}\n', encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows[0]["db"] == "\ud800"
    for args in (["--group", "db", "--json", "-"], ["--group", "db"], ["--out-dir", tmp_path / "out"]):
        rc, out, err = run_cli("scan", path, *args, "--quiet")
        assert "Traceback" not in err, (args, err[-400:])
        assert rc == 0, (args, err[-400:])
