"""A run writes its outputs as one set: when one of them cannot be written (here /dev/full, a
full disk that even root meets; a read-only folder or a path turned into a folder fail the same
way), none of the others is left new behind, and a previous run's files stay as they were.

From the round-8 hostile review: dedup --out with a --manifest that failed, and clean --out with a
--report that failed, exited 2 but left the new data copy behind, without the file describing it;
contamination --decontaminate left its copy and manifest when --json failed, scan and leak their
REPORT.md and summary.json."""
from __future__ import annotations

import os
import shutil

import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")

# (command, the output that fails): {test} and {train} bundled GSM8K files, {out} an empty folder
CASES = [
    (["dedup", "{test}", "--out", "{out}/d.jsonl"], "--manifest"),
    (["dedup", "{test}", "--out", "{out}/d.jsonl"], "--json"),
    (["dedup", "{test}", "--out", "{out}/d.parquet", "--manifest", "{out}/m.csv"], "--json"),
    (["clean", "{test}", "--against", "{train}", "--out", "{out}/c.jsonl"], "--report"),
    (["clean", "{test}", "--against", "{train}", "--out", "{out}/c.csv"], "--report"),
    (["contamination", "{train}", "--benchmark", "gsm8k", "--decontaminate", "{out}/x.jsonl"], "--json"),
    (["contamination", "{train}", "--benchmark", "gsm8k", "--decontaminate", "{out}/x.jsonl"], "--manifest"),
    (["contamination", "{train}", "--benchmark", "gsm8k", "--decontaminate", "{out}/x.jsonl",
      "--out-dir", "{out}/rep"], "--json"),
    (["scan", "{test}", "--out-dir", "{out}/rep"], "--json"),
    (["leak", "{train}", "{test}", "--evidence", "{out}/e.csv", "--out-dir", "{out}/rep"], "--json"),
]


@pytest.fixture
def files(tmp_path):
    main = os.path.join(os.path.dirname(__file__), "..", "..", "auditor", "examples", "gsm8k", "main")
    out = tmp_path / "out"
    out.mkdir()
    return os.path.join(main, "test.jsonl.gz"), os.path.join(main, "train.jsonl.gz"), out


def _files_in(folder) -> dict:
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(folder) for f in names}


@pytest.mark.parametrize("command,failing", CASES, ids=[f"{c[0]} {f}" for c, f in CASES])
def test_a_failed_output_leaves_nothing_new(files, run_cli, command, failing):
    test, train, out = files
    argv = [a.format(test=test, train=train, out=out) for a in command]
    rc, stdout, err = run_cli(*argv, failing, "/dev/full", "--quiet", cwd=out)
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and "disk is full" in err, err
    left = [(d, f) for d, _, names in os.walk(out) for f in names]
    assert left == [], left                     # (an --out-dir folder made by the checks may stay, empty)


def test_a_failed_manifest_keeps_the_previous_pair(files, run_cli):
    test, train, out = files
    rc, _, err = run_cli("dedup", test, "--out", out / "d.jsonl", "--max-rows", "200", "--quiet")
    assert rc == 0, err
    before = _files_in(out)
    assert sorted(before) == ["d.jsonl", "d.jsonl.manifest.json"]
    rc, _, err = run_cli("dedup", test, "--out", out / "d.jsonl", "--json", "/dev/full", "--quiet")
    assert rc == 2, err
    assert _files_in(out) == before                 # the 200-row copy and its manifest, untouched
    shutil.rmtree(out)
