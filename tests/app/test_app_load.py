"""The app under load, through gradio_client against the one running server.

Concurrent ``/audit_json`` callers each get their own, correct result (the same summary.json
as ``auditor.scan`` computed here); more callers than the queue runs at once are queued, not
refused; a cancelled audit leaves the server answering; the same audit is byte-identical twice;
the server's memory stays bounded.
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.utils import Status

import auditor
from auditor.report import to_json

pytestmark = pytest.mark.sweep      # a long sweep: run by CI and scripts/test.sh --all

pytest_plugins = ["app_server"]

# The app caps every read at AUDITOR_MAX_ROWS (default 200,000); the cap is part of summary.json.
ROW_CAP = int(os.environ.get("AUDITOR_MAX_ROWS", "200000"))
RSS_LIMIT_KB = 3 * 1024 * 1024   # 3 GB

# (dataset, config, split, text, answer, group, threshold): what /audit_json takes.
EIGHT = [
    ("example:gsm8k", "main", "train", "question", "answer", "", 0.75),
    ("example:gsm8k", "main", "test", "", "", "", 0.75),
    ("example:gsm8k", "socratic", "test", "question", "answer", "", 0.6),
    ("example:humaneval", "", "test", "", "", "", 0.75),
    ("example:mbpp", "full", "train", "", "", "", 0.75),
    ("example:mbpp", "sanitized", "test", "", "", "", 0.6),
    ("example:mbpp", "full", "validation", "", "", "", 0.75),
    ("example:mbpp", "sanitized", "validation", "", "", "", 0.9),
]
NINE = [
    ("example:gsm8k", "main", "train", "", "", "", 0.85),
    ("example:gsm8k", "main", "test", "question", "answer", "", 0.85),
    ("example:gsm8k", "socratic", "test", "", "", "", 0.85),
    ("example:humaneval", "", "test", "prompt", "canonical_solution", "", 0.85),
    ("example:mbpp", "full", "train", "", "", "", 0.85),
    ("example:mbpp", "full", "test", "", "", "", 0.85),
    ("example:mbpp", "full", "validation", "", "", "", 0.85),
    ("example:mbpp", "sanitized", "train", "", "", "", 0.85),
    ("example:mbpp", "sanitized", "test", "", "", "", 0.85),
]


def canon(summary: dict) -> str:
    return json.dumps(summary, sort_keys=True, ensure_ascii=False)


@lru_cache(maxsize=None)
def expected(dataset, config, split, text, answer, group, threshold) -> str:
    """summary.json of the same audit, computed in this process by the library (as the app calls it)."""
    result = auditor.scan(dataset, config=config or None, split=split or None, text=text or None,
                          answer=answer or None, group=group or None,
                          settings=auditor.ScanSettings(threshold=threshold), max_rows=ROW_CAP, kind="example")
    return canon(json.loads(to_json(result.summary(threshold))))


def check(job: tuple, summary: dict) -> None:
    dataset, config, split, _, _, _, threshold = job
    assert isinstance(summary, dict), summary
    assert summary["input"]["source"] == dataset
    assert summary["input"]["split"] == split
    if config:
        assert summary["input"]["config"] == config
    assert summary["near_duplicates"]["threshold"] == threshold
    assert canon(summary) == expected(*job), f"wrong result for {job}"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


@pytest.fixture(scope="module")
def app_pid(app_server) -> int:
    return app_server.proc.pid


@pytest.fixture(scope="module")
def rss_before(app_pid) -> int:
    return rss_kb(app_pid)


def call(app_url: str, job: tuple) -> dict:
    return Client(app_url, verbose=False).predict(*job, api_name="/audit_json")


def test_eight_concurrent_callers_get_their_own_results(app_url, rss_before):
    assert rss_before < RSS_LIMIT_KB
    for job in EIGHT:   # the expected results first, so the eight calls really overlap
        expected(*job)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(EIGHT)) as pool:
        results = list(pool.map(lambda job: call(app_url, job), EIGHT))
    assert time.monotonic() - started < 60
    for job, summary in zip(EIGHT, results):
        check(job, summary)
    assert len({r["input"]["fingerprint"] for r in results}) == len(EIGHT)


def test_a_ninth_concurrent_caller_is_queued_not_refused(client):
    for job in NINE:
        expected(*job)
    jobs = [client.submit(*job, api_name="/audit_json") for job in NINE]
    results = [j.result(timeout=90) for j in jobs]   # raises if any was refused or failed
    for job, handle, summary in zip(NINE, jobs, results):
        assert handle.done()
        check(job, summary)


def test_a_cancelled_audit_leaves_the_server_answering(client):
    # The biggest bundled input, with roles no other test uses: not in the app's cache.
    big = ("example:gsm8k", "main", "train", "answer", "question", "", 0.55)
    job = client.submit(*big, api_name="/audit_json")
    assert job.cancel() is True
    deadline = time.monotonic() + 30
    while not job.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.done(), "the cancelled job never ended"
    assert job.status().code == Status.CANCELLED
    small = ("example:mbpp", "sanitized", "validation", "", "", "", 0.8)
    expected(*small)
    started = time.monotonic()
    summary = client.predict(*small, api_name="/audit_json")
    assert time.monotonic() - started < 15, "the server answered slowly after a cancel"
    check(small, summary)
    # The big audit itself still works afterwards, with the right result.
    check(big, client.predict(*big, api_name="/audit_json"))


def test_the_same_audit_twice_is_byte_identical(client):
    job = ("example:mbpp", "full", "test", "", "", "", 0.7)
    first = client.predict(*job, api_name="/audit_json")
    # Push it out of the app's result cache (8 entries), so the second answer is computed anew.
    for k in range(9):
        client.predict("example:mbpp", "full", "validation", "", "", "", round(0.91 + k * 0.01, 2),
                       api_name="/audit_json")
    second = client.predict(*job, api_name="/audit_json")
    assert canon(first) == canon(second)
    assert canon(first) == expected(*job)


def test_memory_stays_bounded(app_pid, rss_before):
    after = rss_kb(app_pid)
    assert after < RSS_LIMIT_KB, f"app RSS {after / 1024:.0f} MB after the load (before: {rss_before / 1024:.0f} MB)"
