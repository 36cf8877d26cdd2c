"""Cheap requests never wait for expensive ones: expensive work takes one of a few slots
(ui/jobs.py), each waiting visitor sees their place in line and an estimate, a visitor can cancel
their job (waiting or running), one visitor cannot hold more than a few jobs, and the number
waiting is bounded. In-process, with threads standing for visitors; the app's own server is
measured under 50 visitors by bench/app_load.py."""
from __future__ import annotations

import threading
import time

import pytest

from auditor import AuditorError
from ui.jobs import JobCancelled, Jobs, ordinal


def hold(jobs: Jobs, kind: str, visitor: str, session: str, release: threading.Event, log: list,
         reports: list | None = None):
    """A job that runs until ``release`` is set, checking for a cancel as a real job's progress does."""
    def progress(fraction, text):
        (reports if reports is not None else []).append(text)
    try:
        with jobs.slot(kind, visitor, session, progress):
            log.append(("start", session))
            while not release.wait(0.02):
                jobs.check(session)
            log.append(("done", session))
    except JobCancelled:
        log.append(("cancelled", session))
    except AuditorError as exc:
        log.append(("refused", session, exc.message))


def started(thread_fn) -> threading.Thread:
    t = threading.Thread(target=thread_fn, daemon=True)
    t.start()
    return t


def wait_for(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_waiting_jobs_see_their_place_and_an_estimate_and_go_in_order():
    jobs = Jobs(slots=1, per_visitor=5, max_waiting=10)
    jobs.estimates["audit"] = 20.0
    release, log = threading.Event(), []
    first = started(lambda: hold(jobs, "audit", "a", "s1", release, log))
    wait_for(lambda: ("start", "s1") in log)
    reports2, reports3 = [], []
    second = started(lambda: hold(jobs, "audit", "b", "s2", release, log, reports2))
    wait_for(lambda: len(jobs.waiting) == 1)
    third = started(lambda: hold(jobs, "audit", "c", "s3", release, log, reports3))
    wait_for(lambda: reports2 and reports3)
    assert reports2[0].startswith("Waiting for a free worker: 1st in line (1 running), about 2")
    assert reports3[0].startswith("Waiting for a free worker: 2nd in line (1 running), about 4")
    ahead, eta = jobs.position(jobs.waiting[1])
    assert ahead == 1 and 35 < eta <= 40          # the running job's remaining ~20 s, then the 1st's 20 s
    release.set()
    for t in (first, second, third):
        t.join(5)
    assert [e for e in log if e[0] == "start"] == [("start", "s1"), ("start", "s2"), ("start", "s3")]
    assert jobs.busy() == {"running": 0, "waiting": 0, "slots": 1}


def test_a_visitor_cancels_a_waiting_and_a_running_job():
    jobs = Jobs(slots=1, per_visitor=5, max_waiting=10)
    release, log = threading.Event(), []
    running = started(lambda: hold(jobs, "audit", "a", "mine", release, log))
    wait_for(lambda: ("start", "mine") in log)
    waiting = started(lambda: hold(jobs, "audit", "b", "theirs", release, log))
    wait_for(lambda: len(jobs.waiting) == 1)
    assert jobs.cancel("theirs") == 1                     # waiting: out of the line at once
    waiting.join(2)
    assert ("cancelled", "theirs") in log and not waiting.is_alive()
    assert jobs.cancel("mine") == 1                       # running: stops at its next step
    running.join(2)
    assert ("cancelled", "mine") in log and ("done", "mine") not in log
    assert jobs.cancel("mine") == 0 and jobs.busy()["running"] == 0


def test_one_visitor_cannot_fill_the_line_and_the_line_is_bounded():
    jobs = Jobs(slots=1, per_visitor=2, max_waiting=3)
    release, log = threading.Event(), []
    threads = [started(lambda k=k: hold(jobs, "audit", "greedy", f"g{k}", release, log)) for k in range(2)]
    wait_for(lambda: len(jobs.running) + len(jobs.waiting) == 2)
    hold(jobs, "audit", "greedy", "g2", release, log)    # a third job of the same visitor: refused at once
    assert log[-1][0] == "refused" and "You already have 2 jobs running or waiting" in log[-1][2]
    others = [started(lambda k=k: hold(jobs, "audit", f"v{k}", f"o{k}", release, log)) for k in range(2)]
    wait_for(lambda: len(jobs.waiting) == 3)
    hold(jobs, "audit", "late", "late", release, log)    # the line is full: told to come back, with the wait
    assert log[-1][0] == "refused" and "The server is busy: 3 jobs are waiting for 1 workers" in log[-1][2]
    release.set()
    for t in threads + others:
        t.join(5)
    assert sum(e[0] == "done" for e in log) == 4


@pytest.mark.parametrize("n, text", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                     (21, "21st"), (112, "112th")])
def test_ordinals(n, text):
    assert ordinal(n) == text


def test_a_running_jobs_time_left_follows_its_progress():
    """From a browser review (session 52): behind two uploads' audits of about 50 s the line said
    "about 1 s", the kind's usual time (8 s) less their time so far. Once a running job's progress
    says 5% or more, its time left is its time so far scaled by what is left of the work."""
    jobs = Jobs(slots=1, per_visitor=5, max_waiting=10)
    jobs.estimates["audit"] = 8.0
    release, log = threading.Event(), []
    first = started(lambda: hold(jobs, "audit", "a", "s1", release, log))
    wait_for(lambda: ("start", "s1") in log)
    job = jobs.running[0]
    job.started = time.monotonic() - 20.0              # 20 s into its work ...
    _, usual = jobs.position(job)
    assert usual == pytest.approx(1.0)                 # ... past the usual 8 s: the old estimate
    jobs.check("s1", 0.25)                             # ... a quarter done: about 60 s left
    _, eta = jobs.position(job)
    assert eta == pytest.approx(60.0, rel=0.05)
    jobs.check("s1", 0.0)                              # a waiting job of the page reports 0: kept
    assert jobs.running[0].fraction == 0.25
    release.set()
    first.join(5)
