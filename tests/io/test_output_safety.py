"""Outputs never destroy inputs, never replace each other, and are never left half-written
(auditor/io/outputs.py: check_outputs and atomic_write, used by every CLI command, report.write_outputs,
clean.write_rows and the app's downloads).

Data: small JSONL files made in tmp_path.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from auditor import AuditorError
from auditor import cli
from auditor.io.copies import write_rows
from auditor.io.outputs import TEMP_SUFFIX, atomic_write, check_outputs, write_text
from auditor.report import write_outputs

REPO = Path(__file__).resolve().parents[2]
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
PREVIOUS = b"previous complete file\n"


def rows(n: int, offset: int = 0) -> list[dict]:
    return [{"text": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(8)) + f" item {i + offset}",
             "answer": str(i), "meta": {"k": [i, "x"]}} for i in range(n)]


def jsonl(path: Path, items: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """Inputs of every kind, in tmp_path, which is also the current folder."""
    jsonl(tmp_path / "test.jsonl", rows(6) + rows(2))
    jsonl(tmp_path / "train.jsonl", rows(3) + rows(4, offset=100))
    jsonl(tmp_path / "d" / "train.jsonl", rows(5))
    jsonl(tmp_path / "d" / "test.jsonl", rows(3))
    (tmp_path / "d" / "deeper").mkdir()
    jsonl(tmp_path / "g" / "a.jsonl", rows(4))
    (tmp_path / "o.jsonl.dropped.json").write_text(json.dumps(rows(4)), encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to("test.jsonl")
    os.link(tmp_path / "test.jsonl", tmp_path / "hard.jsonl")
    (tmp_path / "sub").mkdir()
    (tmp_path / "dirout.jsonl").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def snapshot(root: Path) -> dict:
    """Every file and link under root -> its content hash (links: their target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def run_main(argv, capsys):
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


CLEAN = ["clean", "test.jsonl", "--against", "train.jsonl", "--quiet"]
SAME = "same file as the input"
# (case, arguments ({tmp} is the tmp folder), a fragment of the message)
REFUSED = [
    ("clean_out_is_the_test_split", CLEAN + ["--out", "test.jsonl"], SAME),
    ("clean_out_is_the_training_file", CLEAN + ["--out", "train.jsonl"], SAME),
    ("clean_out_absolute_spelling", CLEAN + ["--out", "{tmp}/test.jsonl"], SAME),
    ("clean_out_other_relative_spelling", CLEAN + ["--out", "./sub/../test.jsonl"], SAME),
    ("clean_out_symlink_to_input", CLEAN + ["--out", "link.jsonl"], SAME),
    ("clean_out_hard_link_of_input", CLEAN + ["--out", "hard.jsonl"], SAME),
    ("clean_input_given_as_symlink", ["clean", "link.jsonl", "--against", "train.jsonl", "--out", "test.jsonl"], SAME),
    ("clean_report_is_the_test_split", CLEAN + ["--out", "o.jsonl", "--report", "test.jsonl"], SAME),
    ("clean_report_is_out", CLEAN + ["--out", "o.csv", "--report", "o.csv"], "are the same file"),
    ("clean_report_is_out_other_spelling", CLEAN + ["--out", "o.csv", "--report", "{tmp}/sub/../o.csv"],
     "are the same file"),
    ("clean_default_report_is_an_input", ["clean", "o.jsonl.dropped.json", "--against", "train.jsonl",
                                          "--out", "o.jsonl"], SAME),
    ("clean_out_in_input_folder", ["clean", "test.jsonl", "--against", "d", "--out", "d/clean.jsonl"],
     "inside the input folder"),
    ("clean_out_in_input_subfolder", ["clean", "test.jsonl", "--against", "d", "--out", "d/deeper/x.parquet"],
     "inside the input folder"),
    ("clean_out_replaces_a_file_of_input_folder", ["clean", "test.jsonl", "--against", "d",
                                                   "--out", "{tmp}/d/train.jsonl"], "inside the input folder"),
    ("clean_out_matches_input_glob", ["clean", "test.jsonl", "--against", "g/*.jsonl", "--out", "g/new.jsonl"],
     "matches the input pattern"),
    ("clean_out_matches_recursive_glob", ["clean", "test.jsonl", "--against", "g/**/*.jsonl",
                                          "--out", "{tmp}/g/new.jsonl"], "matches the input pattern"),
    ("clean_out_in_missing_folder", CLEAN + ["--out", "nowhere/x.jsonl"], "does not exist"),
    ("clean_out_is_a_folder", CLEAN + ["--out", "dirout.jsonl"], "is a folder"),
    ("clean_out_under_a_file", CLEAN + ["--out", "train.jsonl/x.jsonl"], "is a file, not a folder"),
    ("scan_json_is_the_source", ["scan", "test.jsonl", "--json", "test.jsonl"], SAME),
    ("scan_json_hard_link_source_symlink", ["scan", "{tmp}/link.jsonl", "--json", "hard.jsonl"], SAME),
    ("scan_out_dir_is_the_input_folder", ["scan", "d", "--out-dir", "d"], "inside the input folder"),
    ("scan_out_dir_inside_input_folder", ["scan", "d", "--out-dir", "d/reports"], "inside the input folder"),
    ("scan_json_in_input_folder", ["scan", "d", "--json", "d/summary.json"], "inside the input folder"),
    ("scan_json_is_out_dir_summary", ["scan", "test.jsonl", "--out-dir", "out", "--json", "out/summary.json"],
     "are the same file"),
    ("scan_out_dir_is_a_file", ["scan", "test.jsonl", "--out-dir", "train.jsonl"], "not a folder"),
    ("scan_json_is_a_folder", ["scan", "test.jsonl", "--json", "sub"], "is a folder"),
    ("scan_json_in_missing_folder", ["scan", "test.jsonl", "--json", "nowhere/s.json"], "does not exist"),
    ("leak_evidence_is_a", ["leak", "train.jsonl", "test.jsonl", "--evidence", "train.jsonl"], SAME),
    ("leak_evidence_is_b_by_hard_link", ["leak", "train.jsonl", "test.jsonl", "--evidence", "hard.jsonl"], SAME),
    ("leak_json_is_evidence", ["leak", "train.jsonl", "test.jsonl", "--evidence", "e.csv", "--json", "e.csv"],
     "are the same file"),
    ("leak_evidence_is_out_dir_evidence", ["leak", "train.jsonl", "test.jsonl", "--evidence", "out/evidence.csv",
                                           "--out-dir", "out"], "are the same file"),
    ("contamination_json_is_the_benchmark", ["contamination", "test.jsonl", "--benchmark", "train.jsonl",
                                             "--json", "train.jsonl"], SAME),
    ("matrix_json_is_a_source", ["matrix", "-d", "a:train=train.jsonl", "-d", "a:test=test.jsonl",
                                 "--json", "test.jsonl"], SAME),
    # --engine ray keeps a .json result per shard in --shard-dir: refused where the next run would
    # read them as data (checked before Ray starts, so these run without one).
    ("ray_contamination_shard_dir_in_corpus", ["contamination", "d", "--benchmark", "test.jsonl", "--engine", "ray",
                                               "--shard-dir", "d/shards"], "inside the input folder"),
    ("ray_contamination_shard_dir_matches_glob", ["contamination", "g/**/*.json*", "--benchmark", "test.jsonl",
                                                  "--engine", "ray", "--shard-dir", "g/results"],
     "matches the input pattern"),
    ("ray_contamination_shard_dir_is_a_file", ["contamination", "d", "--benchmark", "test.jsonl", "--engine", "ray",
                                               "--shard-dir", "train.jsonl"], "not a folder"),
    ("ray_contamination_shard_dir_in_benchmark_folder", ["contamination", "train.jsonl", "--benchmark", "d",
                                                        "--engine", "ray", "--shard-dir", "d/s"],
     "inside the input folder"),
    ("ray_contamination_shard_dir_in_file_uri_corpus", ["contamination", "file://{tmp}/d", "--benchmark",
                                                        "test.jsonl", "--engine", "ray", "--shard-dir", "d/s"],
     "inside the input folder"),
    ("ray_leak_shard_dir_in_a", ["leak", "d", "test.jsonl", "--engine", "ray", "--shard-dir", "{tmp}/d/deeper/s"],
     "inside the input folder"),
    ("ray_leak_shard_dir_in_b", ["leak", "train.jsonl", "g", "--engine", "ray", "--shard-dir", "g/s"],
     "inside the input folder"),
    ("ray_clean_shard_dir_in_training_folder", ["clean", "test.jsonl", "--against", "d", "--engine", "ray",
                                                "--out", "o.jsonl", "--shard-dir", "d/s"], "inside the input folder"),
]


@pytest.mark.parametrize("argv, fragment", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused_outputs_change_nothing(layout, capsys, argv, fragment):
    before = snapshot(layout)
    code, out, err = run_main([a.replace("{tmp}", str(layout)) for a in argv], capsys)
    assert code == 2, err
    assert err.startswith("error: ") and fragment in err, err
    assert "Traceback" not in err
    assert snapshot(layout) == before


def test_refusal_is_an_output_path_error_in_json(layout, capsys):
    code, out, err = run_main(["scan", "d", "--out-dir", "d", "--json", "-", "--quiet"], capsys)
    assert code == 2
    assert json.loads(out)["error"]["code"] == "output_path"


# (case, arguments, files that must exist afterwards)
ALLOWED = [
    ("clean_next_to_the_input", CLEAN + ["--out", "clean.jsonl"], ["clean.jsonl", "clean.jsonl.dropped.json"]),
    ("clean_parquet_and_report_elsewhere", CLEAN + ["--out", "sub/c.parquet", "--report", "sub/r.json"],
     ["sub/c.parquet", "sub/r.json"]),
    ("clean_csv_beside_input_folder", ["clean", "test.jsonl", "--against", "d", "--out", "d.csv", "--quiet"],
     ["d.csv"]),
    ("scan_notes_inside_input_folder", ["scan", "d", "--json", "d/notes.md", "--quiet"], ["d/notes.md"]),
    ("scan_new_nested_out_dir", ["scan", "test.jsonl", "--out-dir", "new/deep", "--quiet"],
     ["new/deep/summary.json", "new/deep/REPORT.md"]),
    ("scan_glob_output_not_matched", ["scan", "g/*.jsonl", "--json", "g/summary.json", "--quiet"], ["g/summary.json"]),
    ("scan_json_to_dev_null", ["scan", "test.jsonl", "--json", "/dev/null", "--quiet"], []),
    ("leak_two_outputs_to_dev_null", ["leak", "train.jsonl", "test.jsonl", "--evidence", "/dev/null",
                                      "--json", "/dev/null", "--quiet"], []),
    ("leak_evidence_and_out_dir", ["leak", "train.jsonl", "test.jsonl", "--evidence", "ev.csv", "--out-dir", "out",
                                   "--quiet"], ["ev.csv", "out/evidence.csv", "out/summary.json", "out/REPORT.md"]),
    ("scan_json_stdout", ["scan", "test.jsonl", "--json", "-", "--quiet"], []),
]


@pytest.mark.parametrize("argv, made", [c[1:] for c in ALLOWED], ids=[c[0] for c in ALLOWED])
def test_allowed_outputs_are_written(layout, capsys, argv, made):
    inputs = {k: v for k, v in snapshot(layout).items()}
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    after = snapshot(layout)
    assert {k: after.get(k) for k in inputs} == inputs          # every input untouched
    for rel in made:
        assert (layout / rel).is_file() and (layout / rel).stat().st_size > 0, rel
    assert not [k for k in after if k.endswith(TEMP_SUFFIX)]


def test_check_outputs_skips_hub_ids_examples_and_stdout(tmp_path):
    check_outputs(["openai/gsm8k", "example:gsm8k", object()], [("--json", "-"), ("--out", None),
                                                                ("--json", str(tmp_path / "s.json"))])


# --------------------------------------------------------------------------- write failures: clear errors

def run_cli_to(args, stdout, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "auditor", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, cwd=cwd, env=env, timeout=120)


# (case, arguments, stdout to /dev/full?, a fragment of the message)
WRITE_FAILURES = [
    ("json_to_dev_full", ["scan", "test.jsonl", "--json", "/dev/full", "--quiet"], False, "disk is full"),
    ("evidence_to_dev_full", ["leak", "train.jsonl", "test.jsonl", "--evidence", "/dev/full", "--quiet"], False,
     "disk is full"),
    ("report_to_dev_full", CLEAN + ["--out", "c.jsonl", "--report", "/dev/full"], False, "disk is full"),
    ("report_on_stdout_full", ["scan", "test.jsonl", "--quiet"], True, "disk is full"),
    ("json_dash_on_stdout_full", ["scan", "test.jsonl", "--json", "-", "--quiet"], True, "disk is full"),
    ("evidence_into_folder", ["leak", "train.jsonl", "test.jsonl", "--evidence", "sub", "--quiet"], False,
     "is a folder"),
    ("report_in_missing_folder", CLEAN + ["--out", "c.jsonl", "--report", "missing/r.json"], False,
     "does not exist"),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv, full, fragment", [c[1:] for c in WRITE_FAILURES], ids=[c[0] for c in WRITE_FAILURES])
def test_write_failures_are_clear_errors(layout, argv, full, fragment):
    with open("/dev/full" if full else os.devnull, "w") as stdout:
        proc = run_cli_to(argv, stdout, layout)
    assert proc.returncode == 2, proc.stderr[-1000:]
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.startswith("error: ") and fragment in proc.stderr, proc.stderr
    assert not [p for p in layout.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


def test_dev_stdout_still_works(layout):
    proc = run_cli_to(["scan", "test.jsonl", "--json", "/dev/stdout", "--quiet"], subprocess.PIPE, layout)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout[:proc.stdout.index("\n}\n") + 2])["input"]["records"] == 8


# --------------------------------------------------------------------------- torn writes

class FailingFile:
    """A file object that writes LIMIT bytes, then raises ``exc``: a disk filling up, or Ctrl-C,
    in the middle of a write."""

    LIMIT = 100

    def __init__(self, real, exc):
        self.real, self.exc, self.written = real, exc, 0

    def write(self, data):
        room = self.LIMIT - self.written
        if len(data) > room:
            self.real.write(data[:room])
            self.real.flush()
            self.written += room
            raise self.exc
        self.written += len(data)
        return self.real.write(data)

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.real.__exit__(*exc)


@pytest.fixture
def fail_writes(monkeypatch):
    """fail_writes(exc, on_call=0): the on_call-th file opened by atomic_write fails mid-way."""
    opened = []

    def install(exc, on_call=0):
        real_fdopen = os.fdopen

        def fdopen(fd, *args, **kwargs):
            f = real_fdopen(fd, *args, **kwargs)
            opened.append(f)
            return FailingFile(f, exc) if len(opened) - 1 == on_call else f
        monkeypatch.setattr(os, "fdopen", fdopen)
        return opened
    return install


DISK_FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
BIG = rows(2000)
# (case, file name, writer)
WRITERS = [
    ("clean_jsonl", "out.jsonl", lambda p: write_rows(BIG, p)),
    ("clean_csv", "out.csv", lambda p: write_rows(BIG, p)),
    ("clean_parquet", "out.parquet", lambda p: write_rows(BIG, p)),
    ("summary_json", "summary.json", lambda p: write_text(p, json.dumps(BIG))),
    ("binary", "blob.bin", lambda p: _write_binary(p)),
]


def _write_binary(path):
    with atomic_write(path, "wb") as fh:
        for _ in range(100):
            fh.write(b"x" * 1000)


@pytest.mark.parametrize("exc", [DISK_FULL, KeyboardInterrupt(), SystemExit(143)], ids=["disk_full", "ctrl_c", "exit"])
@pytest.mark.parametrize("existing", [True, False], ids=["replacing", "new"])
@pytest.mark.parametrize("name, writer", [c[1:] for c in WRITERS], ids=[c[0] for c in WRITERS])
def test_torn_write_keeps_the_previous_file_and_no_temporary(tmp_path, fail_writes, name, writer, exc, existing):
    target = tmp_path / name
    if existing:
        target.write_bytes(PREVIOUS)
    opened = fail_writes(exc)
    expected = AuditorError if isinstance(exc, OSError) else type(exc)
    with pytest.raises(expected) as info:
        writer(target)
    assert opened, "the writer did not go through atomic_write"
    if expected is AuditorError:
        assert info.value.code == "output_path" and "disk is full" in info.value.message
    assert sorted(os.listdir(tmp_path)) == ([name] if existing else [])
    if existing:
        assert target.read_bytes() == PREVIOUS


@pytest.mark.parametrize("name, writer", [c[1:] for c in WRITERS], ids=[c[0] for c in WRITERS])
def test_complete_write_replaces_the_file(tmp_path, name, writer):
    target = tmp_path / name
    target.write_bytes(PREVIOUS)
    target.chmod(0o640)
    writer(target)
    assert target.read_bytes() != PREVIOUS and target.stat().st_size > 1000
    assert target.stat().st_mode & 0o777 == 0o640          # the mode of the file replaced is kept
    assert os.listdir(tmp_path) == [name]
    if name.endswith((".jsonl", ".csv", ".parquet")):
        import auditor
        assert len(auditor.load(str(target)).rows) == len(BIG)


def test_new_file_gets_the_usual_mode_and_symlinks_are_never_written_through(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    write_text(tmp_path / "new.txt", "y")
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    real = tmp_path / "real.json"
    real.write_bytes(PREVIOUS)
    (tmp_path / "link.json").symlink_to("real.json")
    # a link is never followed to a file (tests/io/test_outputs_never_follow_links.py)
    with pytest.raises(AuditorError) as caught:
        write_text(tmp_path / "link.json", "{}")
    assert caught.value.code == "output_path" and "symbolic link" in caught.value.message
    assert (tmp_path / "link.json").is_symlink() and real.read_bytes() == PREVIOUS


# (case, which file fails (0 = first written), files present afterwards)
OUT_DIR_FAILURES = [
    ("report_fails", 0, []),
    ("extra_fails", 1, ["REPORT.md"]),
    ("summary_fails", 2, ["REPORT.md", "evidence.csv"]),
]


@pytest.mark.parametrize("on_call, present", [c[1:] for c in OUT_DIR_FAILURES], ids=[c[0] for c in OUT_DIR_FAILURES])
def test_out_dir_summary_is_written_last(tmp_path, fail_writes, on_call, present):
    """An out-dir holding a summary.json is complete: it is written last."""
    fail_writes(DISK_FULL, on_call)
    with pytest.raises(AuditorError):
        write_outputs(tmp_path / "out", {"kind": "scan", "rows": BIG}, "# report\n" * 1000, {"evidence.csv": "a,b\n" * 1000})
    assert sorted(os.listdir(tmp_path / "out")) == sorted(present)


def test_out_dir_keeps_the_previous_complete_summary(tmp_path, fail_writes):
    out = tmp_path / "out"
    write_outputs(out, {"run": 1}, "# first\n")
    first = (out / "summary.json").read_bytes()
    fail_writes(DISK_FULL, 1)
    with pytest.raises(AuditorError):
        write_outputs(out, {"run": 2, "rows": BIG}, "# second\n")
    assert (out / "summary.json").read_bytes() == first
    assert sorted(os.listdir(out)) == ["REPORT.md", "summary.json"]


def test_atomic_write_refuses_bad_targets(tmp_path):
    for target, fragment in ((tmp_path, "is a folder"), (tmp_path / "missing" / "x.json", "does not exist"),
                             (Path("/dev/full"), "disk is full")):
        with pytest.raises(AuditorError) as info:
            write_text(target, "x" * 10000)
        assert info.value.code == "output_path" and fragment in info.value.message, info.value.message
    write_text("/dev/null", "fine")


# --------------------------------------------------------------------------- signals in the CLI

SLOW_CLEAN = textwrap.dedent("""
    import json, sys, time, types
    import auditor.io.copies as copies_module
    calls = [0]
    def dumps(obj, **kwargs):   # the 50th row: say so, then wait to be signalled mid-write
        calls[0] += 1
        if calls[0] == 50:
            print("writing", flush=True)
            time.sleep(60)
        return json.dumps(obj, **kwargs)
    copies_module.json = types.SimpleNamespace(dumps=dumps)
    from auditor.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("sig, code, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
                         ids=["sigterm", "sigint"])
def test_signal_mid_write_keeps_the_previous_file(tmp_path, sig, code, word):
    jsonl(tmp_path / "test.jsonl", rows(300))
    jsonl(tmp_path / "train.jsonl", rows(5, offset=1000))
    out = tmp_path / "clean.jsonl"
    out.write_bytes(PREVIOUS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    # SIGINT as at a terminal: a test run started in the background (`cmd &` in a script) inherits
    # SIGINT ignored, and Python then keeps ignoring it.
    proc = subprocess.Popen([sys.executable, "-c", SLOW_CLEAN, "clean", "test.jsonl", "--against", "train.jsonl",
                             "--out", "clean.jsonl", "--quiet"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "writing", proc.stderr.read() if proc.poll() is not None else ""
        temps = [p for p in os.listdir(tmp_path) if p.endswith(TEMP_SUFFIX)]
        assert len(temps) == 1                     # the new file is being written beside the old one
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert word in err and "Traceback" not in err
    assert out.read_bytes() == PREVIOUS
    assert sorted(os.listdir(tmp_path)) == ["clean.jsonl", "test.jsonl", "train.jsonl"]
