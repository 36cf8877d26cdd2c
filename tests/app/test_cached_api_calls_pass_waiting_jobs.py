"""A cached /audit_json answers while the API's expensive calls wait for a work slot, on a server of
its own with one slot. The three endpoints used to share one Gradio concurrency group of 16: with a
long dedup_file running and 16 leak_json calls waiting for the slot, a cached audit_json waited in
Gradio's queue until the long job was done (among bench/app_load.py's 50 visitors, cached audits
took p50 8.8 s, p95 15.8 s). They now wait in ui.jobs only, where cheap calls never wait."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from gradio_client.utils import Status

import real_data
from app_server import serve

# A long sweep (a server of its own, a 120,000-record audit): CI and test.sh --all.
pytestmark = [pytest.mark.slow, pytest.mark.sweep]
RECORDS = 120_000
CACHED = ("example:gsm8k", "main", "train", "", "", "", 0.7)
LEAK = ("example:gsm8k", "main", "train", None, "example:gsm8k", "socratic", "test", None, "", "", 0.7)


@pytest.fixture(scope="module")
def one_slot_server():
    yield from serve({"AUDITOR_JOB_SLOTS": "1", "AUDITOR_MAX_BYTES": "128M"})


def test_a_cached_audit_answers_while_sixteen_calls_wait_behind_a_long_one(one_slot_server, tmp_path):
    client = Client(one_slot_server.url, verbose=False, httpx_kwargs={"timeout": 600})
    expected = client.predict(*CACHED, api_name="/audit_json")          # now in the cache
    long_file = handle_file(str(real_data.edited_gsm8k(tmp_path / "long.jsonl", RECORDS, 3)))
    long_job = client.submit("", "", "", long_file, "", "", 0.7, "first",
                             api_name="/dedup_file")
    deadline = time.monotonic() + 120
    while long_job.status().code != Status.PROCESSING:                  # uploaded, and in its handler
        assert time.monotonic() < deadline and not long_job.done(), long_job.status()
        time.sleep(0.2)
    time.sleep(2)                                                       # it holds the one slot
    waiting = [client.submit(*LEAK, api_name="/leak_json") for _ in range(16)]
    time.sleep(2)                                                       # they wait for the slot
    assert client.predict(*CACHED, api_name="/audit_json") == expected
    # The cached answer came while the long job still ran and every leak check still waited.
    assert not long_job.done() and not any(job.done() for job in waiting)
    for job in waiting:
        job.cancel()
