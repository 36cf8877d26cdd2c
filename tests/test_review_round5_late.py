"""Review of the late round-5 commits (helper): what a guess or a retired manifest did wrong.

- an instruction/context layout beside a "question" (a reading-comprehension set written with a
  template instruction) was audited on instruction+context, not on its question: every question
  asked of one passage an exact duplicate;
- two equal nested texts beside a short top-level string (a language code) guessed that string
  as the text (every record one exact duplicate) where the guess was refused before;
- a guessed Alpaca layout whose input holds numbers made the contamination corpus text refused;
- a manifest given as a symlink: retiring it removed the link and left the previous run's
  manifest at its target (atomic_write replaces a symlink's target);
- the Ray leak named a nested shard's reader notices "sub/x.csv: ..." where the local leak says
  "x.csv: ..." (summary.json differed between engines).

Expected figures come from plain Python over the rows built here.
"""
from __future__ import annotations

import json
import os

import pytest

import auditor
from auditor.errors import AuditorError
from auditor.roles import resolve_roles, resolve_text_spec
from definitions import read_jsonl, write_jsonl

TEMPLATE = "Answer the question using the passage."


@pytest.fixture(scope="module")
def gsm(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl")[:200]


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def test_a_question_beside_an_instruction_and_context_stays_the_text(gsm, tmp_path):
    # 40 passages, 3 distinct questions each (GSM8K questions as questions, answers as passages)
    rows = [{"instruction": TEMPLATE, "context": gsm[p]["answer"], "question": gsm[40 + 3 * p + k]["question"],
             "answer": str(k)} for p in range(40) for k in range(3)]
    rows.append(dict(rows[5]))                      # one planted exact copy
    path = tmp_path / "rc.jsonl"
    write_jsonl(path, rows)
    summary = auditor.scan(str(path)).summary()
    assert summary["roles"]["text"] == "question"
    groups: dict = {}
    for i, r in enumerate(rows):
        groups.setdefault(norm(r["question"]), []).append(i)
    expected = [g for g in groups.values() if len(g) > 1]
    exact = summary["exact_duplicates"]["text"]
    assert exact["groups"] == len(expected) == 1 and exact["records"] == 2


def test_a_short_top_level_string_does_not_settle_two_nested_texts(gsm):
    rows = [{"q": {"text": r["question"]}, "p": {"text": r["answer"]}, "lang": "en"} for r in gsm[:30]]
    with pytest.raises(AuditorError) as info:
        resolve_roles(rows)
    assert "q.text" in info.value.message and "p.text" in info.value.message
    # a long top-level story still settles it (the commit's case)
    story = [{"story": r["question"] + " " + r["answer"], "q": {"text": r["question"][:40]},
              "p": {"text": r["answer"][:40]}} for r in gsm[:30]]
    assert resolve_roles(story).text == "story"


def test_a_guessed_layout_with_numeric_inputs_keeps_the_whole_record_as_corpus_text(gsm):
    rows = [{"instruction": r["question"], "input": i, "output": r["answer"]} for i, r in enumerate(gsm[:50])]
    assert resolve_text_spec(rows) == ",".join(["instruction", "input", "output"])


def test_a_symlinked_manifest_is_replaced_at_its_target(tmp_path, run_cli):
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
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == os.path.join("keep", "m.json")
    doc = json.loads(target.read_text(encoding="utf-8"))
    seen, dropped = set(), []
    for i, r in enumerate(rows):
        (dropped.append(i) if norm(r["text"]) in seen else seen.add(norm(r["text"])))
    assert sorted(d["row"] for d in doc["dropped_rows"]) == dropped == [6, 7]


def test_nested_shards_notices_are_named_alike_in_both_engines(gsm, tmp_path):
    ray = pytest.importorskip("ray")
    import pyarrow as pa
    import pyarrow.parquet as pq
    from auditor.distributed.leak import ray_leak
    from auditor.leakage import leak
    a = tmp_path / "a"
    (a / "sub").mkdir(parents=True)
    questions = [r["question"].replace(";", ",").replace("\n", " ") for r in gsm[:30]]
    (a / "sub" / "x.csv").write_text("question;answer\n" + "".join(f"{q};{i}\n" for i, q in enumerate(questions[:20])),
                                     encoding="utf-8")
    table = pa.Table.from_arrays([pa.array(questions[20:]), pa.array(["1"] * 10), pa.array(["z"] * 10)],
                                 names=["question", "answer", "answer"])
    pq.write_table(table, a / "sub" / "p.parquet")
    b = tmp_path / "b.jsonl"
    write_jsonl(b, [{"question": q, "answer": "0"} for q in questions[18:24]])
    local = leak(str(a), str(b)).summary()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray_leak(str(a), str(b), quiet=True).summary()
    finally:
        ray.shutdown()
    notices = remote["a"]["notices"]
    # ground truth: each file of the folder named by its own name, as the local loader names it
    assert len(notices) == 2
    assert notices[0].startswith("p.parquet: repeated column names") and notices[1].startswith("x.csv: ")
    remote.pop("engine", None)
    assert remote == local


def test_a_manifest_through_stdout_redirected_to_a_file_lands_in_that_file(tmp_path):
    # --manifest naming stdout (here a link to /dev/stdout), the shell sending stdout to log.txt:
    # the manifest is written into log.txt. Retiring through the link removed log.txt (the
    # manifest then went to a file named "log.txt (deleted)"), or removed the link itself.
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
