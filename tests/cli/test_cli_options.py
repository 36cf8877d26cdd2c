"""Every CLI option and environment variable given absurd values: a usage error (exit 2) or a
stated warning, never a traceback; an unquoted glob expanded by the shell gets a hint."""
from __future__ import annotations

import json

import pytest

from auditor.cli import main


APPLE_ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in APPLE_ROWS).encode()


def _assert_refused(rc, err, fragment):
    assert rc == 2, err[-600:]
    assert "Traceback" not in err, err[-2000:]
    assert fragment in err, err[-600:]


def _opt_cases(f: str) -> dict:
    """case -> (argv, message fragment)."""
    return {
        "max-rows 0": (["scan", f, "--max-rows", "0"], "must be at least 1"),
        "max-rows negative": (["scan", f, "--max-rows=-5"], "must be at least 1"),
        "max-rows huge": (["scan", f, "--max-rows", "9" * 30], "too large"),
        "max-rows float": (["scan", f, "--max-rows", "1e5"], "not a whole number"),
        "max-rows nan": (["scan", f, "--max-rows", "nan"], "not a whole number"),
        "threshold nan": (["scan", f, "--threshold", "nan"], "outside (0, 1]"),
        "threshold inf": (["scan", f, "--threshold", "inf"], "outside (0, 1]"),
        "threshold 1e309": (["scan", f, "--threshold", "1e309"], "outside (0, 1]"),
        "threshold 0": (["scan", f, "--threshold", "0"], "outside (0, 1]"),
        "threshold negative": (["scan", f, "--threshold=-0.5"], "outside (0, 1]"),
        "threshold text": (["scan", f, "--threshold", "high"], "not a number"),
        "thresholds empty": (["scan", f, "--thresholds", ","], "give thresholds like"),
        "thresholds nan": (["scan", f, "--thresholds", "0.5,nan"], "outside (0, 1]"),
        "shingle huge": (["scan", f, "--shingle", "word:" + "9" * 30], "Bad shingle setting"),
        "shingle zero": (["scan", f, "--shingle", "char:0"], "Bad shingle setting"),
        "shingle unit": (["scan", f, "--shingle", "byte:3"], "Bad shingle setting"),
        "num-perm 1": (["scan", f, "--num-perm", "1"], "num_perm 1 is outside"),
        "num-perm huge": (["scan", f, "--num-perm", "9" * 30], "too large"),
        "seed huge": (["scan", f, "--seed", "9" * 30], "is outside 0 .. 2^32-1"),
        "seed negative": (["scan", f, "--seed=-1"], "is outside 0 .. 2^32-1"),
        "seed nan": (["scan", f, "--seed", "nan"], "invalid int value"),
        "method": (["scan", f, "--method", "fast"], "invalid choice"),
        "normalizer": (["scan", f, "--normalizer", "fancy"], "invalid choice"),
        "text role missing": (["scan", f, "--text", "nope"], "The text field 'nope' is in no record"),
        "ngram huge": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "10000000000"], "from 1 to 64"),
        "ngram 65": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "65"], "from 1 to 64"),
        "ngram 0": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "0"], "from 1 to 64"),
        "ngram float": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "1e3"], "from 1 to 64"),
        "ngram text": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "many"], "from 1 to 64"),
        "contamination max-rows huge": (["contamination", f, "--benchmark", "gsm8k", "--max-rows", "9" * 30],
                                        "too large"),
        "leak threshold nan": (["leak", f, f, "--threshold", "nan"], "outside (0, 1]"),
        "leak max-rows 0": (["leak", f, f, "--max-rows", "0"], "must be at least 1"),
        "matrix threshold": (["matrix", "-d", f"a:train={f}", "-d", f"b:test={f}", "--threshold", "2"],
                             "outside (0, 1]"),
        "matrix spec": (["matrix", "-d", "nonsense", "-d", f"b:test={f}"], "Bad dataset spec"),
        "matrix one dataset": (["matrix", "-d", f"a:train={f}"], "at least two"),
        "clean threshold": (["clean", f, "--against", f, "--out", "never.jsonl", "--threshold", "inf"],
                            "outside (0, 1]"),
    }


OPT_NAMES = sorted(_opt_cases("F"))


# (variable, value, the value then used): a bad value is a stated warning, never fatal or silent.
ENV_WARNINGS = [
    ("AUDITOR_THREADS", "many", "using"), ("AUDITOR_THREADS", "0", "using"), ("AUDITOR_THREADS", "-2", "using"),
    ("AUDITOR_THREADS", "99999999999999999999", "using 64"), ("AUDITOR_THREADS", "1.5", "using"),
    ("AUDITOR_MAX_BYTES", "lots", "using 1 GiB"), ("AUDITOR_MAX_BYTES", "0", "using 1 GiB"),
    ("AUDITOR_MAX_BYTES", "-5", "using 1 GiB"), ("AUDITOR_MAX_BYTES", "nan", "using 1 GiB"),
    ("AUDITOR_MAX_BYTES", "inf", "using 1 GiB"),
]


def cli_error(capsys, argv) -> str:
    """Run the CLI; it must exit 2 with one error line and no traceback. Returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("case", OPT_NAMES)
def test_absurd_option_values_are_usage_errors(tmp_path, run_cli, case):
    """From the hostile-input review."""
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    argv, fragment = _opt_cases(str(path))[case]
    rc, _, err = run_cli(*argv, "--quiet", cwd=tmp_path)
    _assert_refused(rc, err, fragment)
    assert not (tmp_path / "never.jsonl").exists()


def test_unquoted_glob_expanded_by_the_shell_gets_a_hint(tmp_path, run_cli):
    """From the hostile-input review: `auditor scan data/*.jsonl` unquoted: the shell passes several files;
    the error says to quote
    the glob or pass the directory, and the quoted glob then reads every file."""
    for name in ("a.jsonl", "b.jsonl", "c d.jsonl"):
        (tmp_path / name).write_bytes(JSONL)
    rc, _, err = run_cli("scan", "a.jsonl", "b.jsonl", "c d.jsonl", "--quiet", cwd=tmp_path)
    _assert_refused(rc, err, "unrecognized arguments: b.jsonl c d.jsonl")
    assert "Quote the glob" in err and "directory" in err, err
    rc, _, err = run_cli("scan", "a.jsonl", "--bogus", "--quiet", cwd=tmp_path)
    _assert_refused(rc, err, "unrecognized arguments: --bogus")
    assert "Quote the glob" not in err, err
    # named for the command given them, whose --help lists its options (a hostile review: "auditor:")
    assert "auditor scan: unrecognized" in err and "Run 'auditor scan --help'" in err, err
    rc, out, err = run_cli("scan", "*.jsonl", "--quiet", "--json", "-", cwd=tmp_path)
    source = json.loads(out)["input"]
    assert rc in (0, 1) and source["records"] == 3 * len(JSONL.splitlines()), err[-2000:]
    assert source["files"] == ["a.jsonl", "b.jsonl", "c d.jsonl"], source


@pytest.mark.slow
@pytest.mark.parametrize("name, value, used", ENV_WARNINGS)
def test_bad_environment_values_warn_and_run(run_cli, name, value, used):
    """From the hostile-input review."""
    rc, out, err = run_cli("scan", "example:humaneval", "--quiet", "--json", "-", env={name: value})
    assert rc == 0 and "Traceback" not in err, err[-1000:]
    assert f"warning: {name}={value!r}" in err and used in err, err
    assert json.loads(out)["kind"] == "scan"


@pytest.mark.parametrize("value, used", [("nan", "using 10"), ("-1", "using 10"), ("0", "using 10"),
                                         ("soon", "using 10"), ("inf", "using 600"), ("1e400", "using 600")])
@pytest.mark.slow
def test_bad_hub_timeout_warns_and_the_hub_error_is_clear(run_cli, tmp_path, value, used):
    # Nothing listens on port 9 of this machine: the hub does not answer, quickly.
    """From the hostile-input review."""
    env = {"AUDITOR_HUB_TIMEOUT": value, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0",
           "HF_HOME": str(tmp_path / "hf")}
    rc, _, err = run_cli("scan", "someone/something", "--quiet", env=env)
    _assert_refused(rc, err, "did not answer")
    assert f"warning: AUDITOR_HUB_TIMEOUT={value!r}" in err and used in err


def test_hub_timeout_is_read_when_used_not_at_import(monkeypatch):
    """From the hostile-input review."""
    from auditor.io import hub
    monkeypatch.setenv("AUDITOR_HUB_TIMEOUT", "3.5")
    assert hub.hub_timeout() == 3.5
    monkeypatch.setenv("AUDITOR_HUB_TIMEOUT", "never")
    with pytest.warns(UserWarning, match="AUDITOR_HUB_TIMEOUT='never'"):
        assert hub.hub_timeout() == 10.0


def test_a_threshold_too_small_to_keep_is_a_usage_error(capsys):
    """From the hostile-input sweep."""
    line = cli_error(capsys, ["scan", "example:gsm8k", "--threshold", "1e-300", "--quiet"])
    assert "rounds to 0 at 6 decimals" in line
