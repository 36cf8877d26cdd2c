"""What the reader chose or skipped reaches the leak report, in both engines: a training folder
holding an unfinished Spark write (_temporary/ attempt files, no _SUCCESS) is read as its committed
part files, and summary.json and REPORT.md say what was left out (they said nothing).
"""
from __future__ import annotations

import pytest

from auditor.leakage import leak
from definitions import read_jsonl, write_jsonl


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
