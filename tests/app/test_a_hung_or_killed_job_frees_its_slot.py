"""A job's child that hangs or is killed by the system frees its work slot, and its visitor is told
why, on app servers of their own with one slot. The child hangs for real: it reads a Hub dataset
from a hub that answered the dataset's info and then never answers again (the Hub's own deadline
set far beyond the job's). At the job's deadline (AUDITOR_JOB_TIMEOUT) the child is killed and the
caller gets a message naming the limit; a child killed with SIGKILL (as the kernel's out-of-memory
killer does) ends its job with worker_died's message. Either way the one slot then serves the next
job, and no child is left behind."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from gradio_client import Client

from app_server import TINY_TRAIN, serve

# Two app servers of their own (a few seconds each to start) and a job left to reach its deadline.
pytestmark = pytest.mark.slow
TINY = ("acme/tiny", "", "train", "question", "answer", "", 0.7)
HUNG = {"AUDITOR_JOB_SLOTS": "1", "AUDITOR_HUB_TIMEOUT": "600"}


@pytest.fixture(scope="module")
def deadline_server():
    # 10 s: far past a tiny audit (about a second here), short enough for a test to wait for.
    yield from serve({**HUNG, "AUDITOR_JOB_TIMEOUT": "10"})


@pytest.fixture(scope="module")
def default_server():
    yield from serve(HUNG)


def children(pid: int) -> list[int]:
    """The server's child processes (a job's, forked from it), read from /proc."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            if task.exists():    # a kernel without /proc/PID/task/TID/children: no "no children" by default
                raise
    return out


def without_children(pid: int) -> bool:
    deadline = time.monotonic() + 30         # (a reaped child leaves at once; this only bounds a failure)
    while children(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def the_next_job_runs(server, client) -> None:
    server.hub.hang_after_info = False       # the hub answers again; the one slot must be free for this
    summary = client.predict(*TINY, api_name="/audit_json")
    assert summary["input"]["records"] == len(TINY_TRAIN)


def test_a_hung_child_is_stopped_at_the_deadline_and_the_visitor_told_the_limit(deadline_server):
    client = Client(deadline_server.url, verbose=False, httpx_kwargs={"timeout": 600})
    deadline_server.hub.hang_after_info = True
    with pytest.raises(Exception) as info:
        client.predict(*TINY, api_name="/audit_json")
    message = str(info.value)
    assert "ran past this server's time limit for one job (10 s, AUDITOR_JOB_TIMEOUT) and was stopped" in message
    assert "Try a smaller dataset" in message and "Traceback" not in message
    # it got past the info and hung on the file itself (the child's read, not the server's)
    assert any(path.startswith("/api/datasets/acme/tiny") for _, path in deadline_server.hub.requests)
    assert without_children(deadline_server.proc.pid)
    the_next_job_runs(deadline_server, client)


def test_a_child_killed_by_the_system_frees_the_slot_and_the_visitor_is_told(default_server):
    client = Client(default_server.url, verbose=False, httpx_kwargs={"timeout": 600})
    default_server.hub.hang_after_info = True
    job = client.submit(*TINY, api_name="/audit_json")
    deadline = time.monotonic() + 120
    while not children(default_server.proc.pid):          # the job's child, hanging on the hub
        assert time.monotonic() < deadline and not job.done(), job.status()
        time.sleep(0.1)
    child = children(default_server.proc.pid)[0]
    os.kill(child, signal.SIGKILL)                          # what the out-of-memory killer sends
    with pytest.raises(Exception) as info:
        job.result()
    message = str(info.value)
    assert "The job's worker process was stopped by the system, most likely for running out of memory" in message
    assert "Try a smaller dataset" in message and "Traceback" not in message
    assert without_children(default_server.proc.pid)
    the_next_job_runs(default_server, client)
