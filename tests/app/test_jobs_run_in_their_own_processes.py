"""An expensive job's body runs in a child process (ui/workers.py), not a thread of the server: its
progress reaches the caller, cancelling kills the child at once and frees the slot, a child that
dies or runs past its deadline ends with a clear AuditorError (never a hang), no child is left
unreaped, and what comes back equals the in-process result on the bundled data."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import auditor  # noqa: E402
from auditor import AuditorError  # noqa: E402
from ui import handlers, state, workers  # noqa: E402
from ui.jobs import JobCancelled, Jobs  # noqa: E402

BASE = "http://space.example/"


def reaped(pid: int) -> bool:
    """True when ``pid`` is no process at all (a zombie still is one until its parent reaps it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def pid_and_steps(progress=None):
    for i in range(3):
        progress(i / 3, f"step {i}")
    return os.getpid()


def sleeper(progress=None):
    progress(0.1, f"pid {os.getpid()}")
    time.sleep(120)


def exits(code):
    os._exit(code)


def killed():
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_body_runs_in_another_process_and_its_progress_reaches_the_caller():
    jobs, steps = Jobs(slots=1), []
    with jobs.slot("audit", "v", "s"):
        pid = workers.run(pid_and_steps, progress=lambda f, text: steps.append((f, text)))
    assert pid != os.getpid() and reaped(pid)
    assert steps == [(0.0, "step 0"), (1 / 3, "step 1"), (2 / 3, "step 2")]
    assert jobs.busy()["running"] == 0
    assert workers.run(pid_and_steps, progress=lambda f, text: None) == os.getpid()   # no slot: in-process


def test_a_cancelled_running_job_is_killed_and_its_slot_freed():
    jobs, pids, outcome = Jobs(slots=1), [], []

    def visitor():
        try:
            with jobs.slot("audit", "v", "mine"):
                workers.run(sleeper, progress=lambda f, text: pids.append(int(text.split()[1])))
        except JobCancelled:
            outcome.append(time.monotonic())

    thread = threading.Thread(target=visitor, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not pids:
        assert time.monotonic() < deadline, "the child never reported"
        time.sleep(0.01)
    assert not reaped(pids[0])
    cancelled_at = time.monotonic()
    assert jobs.cancel("mine") == 1
    thread.join(5)
    assert outcome and outcome[0] - cancelled_at < 2.0      # killed, not left to finish its 120 s
    assert reaped(pids[0])
    assert jobs.busy() == {"running": 0, "waiting": 0, "slots": 1}


@pytest.mark.parametrize("body, text", [((exits, 3), "ended unexpectedly (exit code 3)"),
                                        ((killed,), "stopped by the system, most likely for running out of memory")])
def test_a_child_that_dies_ends_with_a_clear_message_and_frees_the_slot(body, text):
    jobs = Jobs(slots=1)
    with pytest.raises(AuditorError) as caught:
        with jobs.slot("audit", "v", "s"):
            workers.run(*body)
    assert caught.value.code == "worker_died" and text in caught.value.message and caught.value.hint
    assert jobs.busy()["running"] == 0
    with jobs.slot("audit", "v", "s"):                       # the slot serves the next job
        assert workers.run(pid_and_steps, progress=lambda f, text: None) != os.getpid()


def test_a_child_past_its_deadline_is_killed_with_a_message_naming_the_limit():
    jobs, pids = Jobs(slots=1, timeout=1.5), []
    with pytest.raises(AuditorError) as caught:
        with jobs.slot("audit", "v", "s"):
            workers.run(sleeper, progress=lambda f, text: pids.append(int(text.split()[1])))   # 120 s asleep
    assert caught.value.code == "job_timeout" and caught.value.hint
    assert "time limit for one job (1.5 s, AUDITOR_JOB_TIMEOUT)" in caught.value.message
    assert pids and reaped(pids[0]) and jobs.busy()["running"] == 0
    with jobs.slot("audit", "v", "s"):                       # the slot serves the next job
        assert workers.run(pid_and_steps, progress=lambda f, text: None) != os.getpid()


def test_an_error_in_the_child_arrives_as_itself():
    with pytest.raises(AuditorError) as caught:
        with Jobs().slot("audit", "v", "s"):
            workers.run(auditor.scan, "example:no_such_set")
    assert caught.value.code == "not_found"


def test_an_audit_computed_in_a_child_equals_the_in_process_audit():
    kwargs = dict(config="main", split="test", text="question", answer="answer",
                  settings=auditor.ScanSettings(threshold=0.7))
    here = auditor.scan("example:gsm8k", **kwargs)
    steps = []
    with Jobs().slot("audit", "v", "s"):
        there = workers.run(auditor.scan, "example:gsm8k", **kwargs, progress=lambda f, text: steps.append(f))
    assert steps and steps == sorted(steps)
    assert there.summary() == here.summary()
    for name in ("a", "b", "jaccard"):
        assert np.array_equal(getattr(there.pairs, name), getattr(here.pairs, name))


def test_a_leak_check_in_a_child_equals_the_in_process_check():
    # A: GSM8K's test split; B: its Socratic config's test split (the same questions, other answers)
    view = handlers.run("example:gsm8k", "main", "test", "question", "answer", "", [], 0.7, None, None, None,
                        "example:gsm8k", BASE)
    st = view["state"]
    jobs = Jobs()
    args = (st, "example:gsm8k", "socratic", "test", "", None, False, "gsm8k", None)
    here = handlers.leak_check(*args)
    there = handlers.leak_check(*args, progress=lambda f, text: None, slot=lambda: jobs.slot("leakage", "v", "s"))
    assert "Checked leakage and contamination." in there["leak_status"]["value"]
    for key in ("leak_tally", "contam_tally", "leak"):
        assert there["state"][key] == here["state"][key]
    for kind in ("leak", "contam"):     # the evidence lists the child made, kept in this process for the page
        rows = state.EVIDENCE.get(there["state"]["evidence"][kind]["id"])
        assert rows and rows == state.EVIDENCE.get(here["state"]["evidence"][kind]["id"])
    assert there["state"]["leak_tally"]["text_leak"] > 1000 and there["state"]["contam_tally"]["copied"] > 1000


@pytest.mark.slow
def test_a_paraphrase_search_in_a_child_equals_the_in_process_search():
    from auditor import semantic    # the test command installs the semantic extra: missing, this fails
    rows = auditor.load("example:gsm8k", "main", "test").rows
    items, corpus = [r["question"] for r in rows[:20]], [r["question"] for r in rows[10:210]]
    here = semantic.semantic_search(items, corpus, k=3, candidates=3)
    with Jobs().slot("paraphrases", "v", "s"):      # the child opens its own model session (see semantic_model)
        there = workers.run(semantic.semantic_search, items, corpus, k=3, candidates=3)
    assert [[r for r, _ in n] for n in there.neighbours] == [[r for r, _ in n] for n in here.neighbours]
    assert np.allclose([c for n in there.neighbours for _, c in n], [c for n in here.neighbours for _, c in n],
                       atol=1e-5)
    flagged = [it["benchmark_row"] for it in there.flagged()]
    assert flagged == [it["benchmark_row"] for it in here.flagged()] and set(range(10, 20)) <= set(flagged)


def test_the_cooperative_cancel_at_a_progress_step_also_kills_the_child():
    pids = []

    def cancelled_at_first_step(fraction, text):
        pids.append(int(text.split()[1]))
        raise JobCancelled()

    with pytest.raises(JobCancelled):
        with Jobs().slot("audit", "v", "s"):
            workers.run(sleeper, progress=cancelled_at_first_step)
    assert pids and reaped(pids[0])
