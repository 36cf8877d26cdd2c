"""A copy and its manifest written again over a previous run's: a run killed between the two writes
must never leave the new copy beside the old manifest (a manifest that looks complete and describes
another copy). The new copy takes its place only once its manifest is complete (round 8: a failed
manifest left the new copy behind), and the old manifest is removed just before it does; a run
that fails or is killed before that leaves the old pair as it was.

The "kill" is a KeyboardInterrupt (what Ctrl-C raises) from the manifest's write, after the copy is
complete; the files are checked against what each run should write, computed here.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

import auditor
import auditor.io.outputs as outputs
from auditor.decontaminate import decontaminate
from auditor.errors import AuditorError
from definitions import read_jsonl, write_jsonl


@pytest.fixture()
def corpus(real_data, tmp_path):
    """400 GSM8K training solutions with 3 GSM8K test questions (items 10, 20, 30) and 2 HumanEval
    prompts (items 0, 1) planted: each benchmark drops its own planted rows."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    humaneval = read_jsonl(real_data / "humaneval/HumanEval.jsonl")
    rows = [{"id": i, "text": train[i]["answer"]} for i in range(400)]
    for row, item in ((50, 10), (150, 20), (250, 30)):
        rows[row]["text"] = test[item]["question"]
    for row, item in ((70, 0), (170, 1)):
        rows[row]["text"] = humaneval[item]["prompt"]
    path = tmp_path / "corpus.jsonl"
    write_jsonl(path, rows)
    return path, rows


def kill_at(monkeypatch, target):
    """Make writing ``target`` raise KeyboardInterrupt, as a Ctrl-C at that moment would (in every
    loaded module that calls ``outputs.write_text`` by name)."""
    real = outputs.write_text

    def write_text(path, text, **kwargs):
        if str(path) == str(target):
            raise KeyboardInterrupt("killed before the manifest")
        return real(path, text, **kwargs)
    for module in [m for name, m in list(sys.modules.items()) if name.startswith("auditor")]:
        if getattr(module, "write_text", None) is real:
            monkeypatch.setattr(module, "write_text", write_text)


def lines(path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_a_symlinked_manifest_is_refused_and_its_target_kept(tmp_path, run_cli):
    """From the review of the late round-5 commits."""
    rows = [{"id": i, "text": f"record number {i} says something about apples and pears"} for i in range(6)]
    rows += [dict(rows[1], id=100), dict(rows[4], id=101)]
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    (tmp_path / "keep").mkdir()
    target = tmp_path / "keep" / "m.json"
    target.write_text('{"previous": "run"}\n', encoding="utf-8")
    link = tmp_path / "m.json"
    os.symlink(os.path.join("keep", "m.json"), link)
    out = tmp_path / "out.jsonl"
    code, _, err = run_cli("dedup", str(src), "--out", str(out), "--manifest", str(link), "--quiet")
    # outputs are never written through a link (a planted one had its target overwritten): refused
    # before the work, the link and its target as they were, no copy written
    assert code == 2 and "symbolic link" in err and "Traceback" not in err, err
    assert link.is_symlink() and os.readlink(link) == os.path.join("keep", "m.json")
    assert target.read_text(encoding="utf-8") == '{"previous": "run"}\n' and not out.exists()


def test_a_manifest_through_stdout_redirected_to_a_file_lands_in_that_file(tmp_path):
    # --manifest naming stdout (here a link to /dev/stdout), the shell sending stdout to log.txt:
    # the manifest is written into log.txt. Retiring through the link removed log.txt (the
    # manifest then went to a file named "log.txt (deleted)"), or removed the link itself.
    """From the review of the late round-5 commits."""
    import subprocess
    import sys
    from conftest import REPO
    rows = [{"text": f"line {i} of a small file with several words in it"} for i in range(5)]
    rows.append(dict(rows[2]))
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    link = tmp_path / "stdout.json"
    os.symlink("/dev/stdout", link)
    log = tmp_path / "log.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.run([sys.executable, "-m", "auditor", "dedup", str(src), "--out", str(tmp_path / "o.jsonl"),
                               "--manifest", str(link), "--quiet"], stdout=fh, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "log.txt", "o.jsonl", "stdout.json"]
    assert os.path.islink(link) and os.readlink(link) == "/dev/stdout"
    doc = json.loads(log.read_text(encoding="utf-8"))
    assert [d["row"] for d in doc["dropped_rows"]] == [5]


def test_decontaminate_killed_before_its_manifest_leaves_no_stale_manifest(corpus, tmp_path, monkeypatch):
    path, rows = corpus
    out, manifest = tmp_path / "clean.jsonl", tmp_path / "clean.jsonl.dropped.json"
    first = decontaminate(str(path), "gsm8k", str(out))
    assert sorted(first.dropped_rows.tolist()) == [50, 150, 250]            # the planted rows, nothing else
    assert json.loads(manifest.read_text(encoding="utf-8"))["kept"] == lines(out) == len(rows) - 3
    kill_at(monkeypatch, manifest)
    with pytest.raises(KeyboardInterrupt):
        decontaminate(str(path), "humaneval", str(out))
    # the previous pair stays (GSM8K's three rows out, its manifest saying so): the new copy never took its place
    kept = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == [r["id"] for r in rows if r["id"] not in (50, 150, 250)]
    assert json.loads(manifest.read_text(encoding="utf-8"))["dropped_rows"] == [50, 150, 250]
    monkeypatch.undo()
    decontaminate(str(path), "humaneval", str(out))                        # a full run writes the pair again
    assert json.loads(manifest.read_text(encoding="utf-8"))["dropped_rows"] == [70, 170]


def test_a_run_failing_before_the_copy_keeps_the_old_pair(corpus, tmp_path):
    path, rows = corpus
    out, manifest = tmp_path / "clean.jsonl", tmp_path / "clean.jsonl.dropped.json"
    decontaminate(str(path), "gsm8k", str(out))
    before = (out.read_bytes(), manifest.read_bytes())
    with pytest.raises(AuditorError):
        decontaminate(str(path), "gsm8k", str(out), corpus_text="no_such_field")
    assert (out.read_bytes(), manifest.read_bytes()) == before


def test_dedup_killed_before_its_manifest_leaves_no_stale_manifest(real_data, tmp_path, monkeypatch):
    import auditor
    from auditor.dedup import dedup, write_dedup
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:300]
    rows = [{"question": r["question"], "answer": r["answer"]} for r in train]
    rows += [dict(rows[5]), dict(rows[9]), dict(rows[9])]                   # 3 exact copies planted
    path = tmp_path / "train.jsonl"
    write_jsonl(path, rows)
    out, manifest = tmp_path / "train.dedup.jsonl", tmp_path / "train.dedup.jsonl.manifest.json"
    result = auditor.scan(str(path), text="question", answer="answer")
    write_dedup(result, dedup(result, keep="first"), str(out))
    assert lines(out) == 300 and json.loads(manifest.read_text(encoding="utf-8"))["dropped"] == 3
    # again with fewer records (the file now holds one copy less): killed before the manifest
    write_jsonl(path, rows[:-1])
    result = auditor.scan(str(path), text="question", answer="answer")
    kill_at(monkeypatch, manifest)
    with pytest.raises(KeyboardInterrupt):
        write_dedup(result, dedup(result, keep="first"), str(out))
    assert lines(out) == 300 and json.loads(manifest.read_text(encoding="utf-8"))["dropped"] == 3   # the old pair


@pytest.mark.sweep
def test_ray_decontaminate_killed_before_its_manifest(corpus, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from auditor.distributed.decontaminate import ray_decontaminate
    path, rows = corpus
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "part-0.jsonl", rows[:200])
    write_jsonl(folder / "part-1.jsonl", rows[200:])
    out, manifest = tmp_path / "clean", tmp_path / "clean.dropped.json"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ray_decontaminate(str(folder), "gsm8k", str(out), quiet=True)
        assert json.loads(manifest.read_text(encoding="utf-8"))["dropped_rows"] == [50, 150, 250]
        kill_at(monkeypatch, manifest)
        with pytest.raises(KeyboardInterrupt):
            ray_decontaminate(str(folder), "humaneval", str(out), quiet=True)
    finally:
        ray.shutdown()
    kept = [json.loads(line)["id"] for part in ("part-0.jsonl", "part-1.jsonl")
            for line in (out / part).read_text(encoding="utf-8").splitlines()]
    assert kept == [r["id"] for r in rows if r["id"] not in (70, 170)]
    assert not manifest.exists()


def test_clean_killed_before_its_report_leaves_no_stale_report(real_data, tmp_path):
    """``auditor clean`` writes the kept rows, then OUT.dropped.json, and puts both in place together:
    a SIGKILL before the report is written (its write made to wait here) leaves the previous pair."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from conftest import REPO
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:200]
    test = read_jsonl(real_data / "gsm8k/test.jsonl")[:50]
    test_path, train_path = tmp_path / "test.jsonl", tmp_path / "train.jsonl"
    write_jsonl(test_path, [{"question": r["question"], "answer": r["answer"]} for r in test])
    write_jsonl(train_path, [{"question": r["question"], "answer": r["answer"]} for r in train + test[:5]])
    out, report = tmp_path / "test.clean.jsonl", tmp_path / "test.clean.jsonl.dropped.json"
    args = [sys.executable, "-m", "auditor", "clean", str(test_path), "--against", str(train_path), "--out", str(out),
            "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert subprocess.run(args, env=env, capture_output=True, timeout=120).returncode == 0
    assert lines(out) == 45 and json.loads(report.read_text(encoding="utf-8"))["kept"] == 45
    # A second run against a train set holding 10 test rows; its report's write waits for a signal.
    write_jsonl(train_path, [{"question": r["question"], "answer": r["answer"]} for r in train + test[:10]])
    gate = tmp_path / "gate"
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, time, auditor.io.outputs as o\n"
        "real = o.write_text\n"
        "def write_text(path, text, **kw):\n"
        f"    if str(path).endswith('.dropped.json'):\n"
        f"        open({str(gate)!r}, 'w').close()\n"
        "        time.sleep(60)\n"
        "    return real(path, text, **kw)\n"
        "o.write_text = write_text\n", encoding="utf-8")
    proc = subprocess.Popen(args, env={**env, "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)])},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if gate.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert gate.exists(), "the run never reached its report"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert lines(out) == 45 and json.loads(report.read_text(encoding="utf-8"))["kept"] == 45
