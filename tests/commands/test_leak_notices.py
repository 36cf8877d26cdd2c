"""What the reader chose or skipped reaches the leak report, in both engines: a training folder
holding an unfinished Spark write (_temporary/ attempt files, no _SUCCESS) is read as its committed
part files, and summary.json and REPORT.md say what was left out (they said nothing).
"""
from __future__ import annotations

import json
import os

import pytest

import auditor
import real_data
from auditor.leakage import leak
from definitions import read_jsonl, write_jsonl

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="module")
def gsm_texts_and_answers():
    rows = real_data.rows("gsm8k/train.jsonl")[:60]
    return [r["question"] for r in rows], [r["answer"] for r in rows]


def write_jsonl_mkdir(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gsm_train200(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl")[:200]


@pytest.fixture()
def sides(real_data, tmp_path):
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:300]
    test = read_jsonl(real_data / "gsm8k/test.jsonl")[:40]
    rows = [{"question": r["question"], "answer": r["answer"]} for r in train]
    b_rows = [{"question": r["question"], "answer": r["answer"]} for r in test]
    a = tmp_path / "a"
    (a / "_temporary" / "0" / "attempt_1").mkdir(parents=True)
    write_jsonl(a / "part-00000.jsonl", rows[:150] + b_rows[:3])              # 3 test rows committed
    write_jsonl(a / "part-00001.jsonl", rows[150:])
    write_jsonl(a / "_temporary" / "0" / "attempt_1" / "part-00002.jsonl", b_rows[3:10])   # 7 more, unfinished
    b = tmp_path / "b.jsonl"
    write_jsonl(b, b_rows)
    return a, b


def test_a_readers_notice_is_whole_in_the_markdown_reports(gsm_texts_and_answers, tmp_path):
    """From the round-5 review: REPORT.md cut every notice at a table cell's 200 characters: the new readers'
    notices lost
    what to do (a Spark folder's "Check that the job completed.", a JSON of columns' "save it as one
    line of JSONL"), in the scan's and the contamination scan's reports."""
    from auditor.contamination import contamination
    qs, ans = gsm_texts_and_answers
    folder = tmp_path / "spark"
    write_jsonl_mkdir(folder / "part-00000.jsonl", [{"question": q, "answer": a} for q, a in zip(qs[:20], ans[:20])])
    write_jsonl_mkdir(folder / "part-00001.jsonl", [{"question": q, "answer": a} for q, a in zip(qs[20:30], ans[20:30])])
    write_jsonl_mkdir(folder / "_temporary" / "0" / "task_1" / "part-00002.jsonl", [{"question": qs[40], "answer": ans[40]}])
    result = auditor.scan(str(folder))
    assert len(result.table.rows) == 30 and result.fields.text == qs[:30]     # the committed parts alone
    report = result.markdown()
    note = next(line for line in report.splitlines() if line.startswith("> Note:") and "temporary" in line)
    assert note.endswith("only the committed part files are read. Check that the job completed.")
    # the contamination scan's report of the same corpus
    bench = write_jsonl_mkdir(tmp_path / "bench.jsonl", [{"question": qs[3]}, {"question": "An unrelated item."}])
    cr = contamination(str(folder), str(bench), ngram=8)
    assert cr.summary()["contaminated"]["records"] == 1      # qs[3] is in a committed part
    note = next(line for line in cr.markdown().splitlines() if line.startswith("> Note (corpus):") and "temporary" in line)
    assert note.endswith("Check that the job completed.")
    # a JSON object of columns beside one value for the whole file
    columns = tmp_path / "columns.json"
    columns.write_text(json.dumps({"question": qs[:12], "answer": ans[:12], "version": "1.0"}), encoding="utf-8")
    result = auditor.scan(str(columns))
    assert result.fields.text == qs[:12]
    assert any(line.startswith("> Note:") and line.endswith("save it as one line of JSONL.")
               for line in result.markdown().splitlines())


@pytest.mark.sweep
def test_nested_shards_notices_are_named_alike_in_both_engines(gsm_train200, tmp_path):
    """From the review of the late round-5 commits."""
    ray = pytest.importorskip("ray")
    import pyarrow as pa
    import pyarrow.parquet as pq
    from auditor.distributed.leak import ray_leak
    from auditor.leakage import leak
    a = tmp_path / "a"
    (a / "sub").mkdir(parents=True)
    questions = [r["question"].replace(";", ",").replace("\n", " ") for r in gsm_train200[:30]]
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


def test_the_leak_report_names_what_the_reader_skipped(sides):
    a, b = sides
    result = leak(str(a), str(b))
    summary = result.summary()
    assert summary["identical_text"]["records"] == 3                 # the committed rows only
    assert summary["a"]["records"] == 303
    notices = summary["a"].get("notices", [])
    assert len(notices) == 1 and "_temporary/" in notices[0] and "_SUCCESS" in notices[0]
    assert "notices" not in summary["b"]
    markdown = result.markdown()
    assert "> Note (A):" in markdown and "_temporary/" in markdown


@pytest.mark.slow
def test_the_ray_leak_says_the_same(sides):
    ray = pytest.importorskip("ray")
    from auditor.distributed.leak import ray_leak
    a, b = sides
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray_leak(str(a), str(b), quiet=True).summary()
    finally:
        ray.shutdown()
    local = leak(str(a), str(b)).summary()
    remote.pop("engine", None)
    assert remote == local
    assert len(remote["a"]["notices"]) == 1 and "_temporary/" in remote["a"]["notices"][0]
