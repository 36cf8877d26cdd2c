"""Expensive work (a fresh audit, a leakage or contamination check, a paraphrase search, a
deduplicated file) runs in a few slots; everything cheap (a cached result, a page load, a new
threshold, paging) never waits for them.

Gradio runs every event at once (its own queue is not the bottleneck); an event that has to compute
takes a slot here first. While it waits, its visitor sees their place and an estimate (the
progress line); a visitor may cancel a job, waiting or running; one visitor cannot hold more than
``PER_VISITOR`` jobs, and at most ``MAX_WAITING`` jobs wait at once (later ones are told to come
back, with the expected wait), so waiting jobs never take every thread of the server.

A job's body runs in a child process (``ui.workers.run``), so it shares neither the CPU time nor the
GIL of the server's threads; cancelling a running job kills that process at once, and so does its
deadline (``TIMEOUT`` seconds from the moment it got its slot: a child that hangs, on a lock held at
the fork or a read that never ends, would otherwise hold the slot for good). The deadline stops the
child only: what a handler does in the server before it forks counts against it, but is not stopped. In-process work
(no child) stops at its next progress step once cancelled: ``check`` raises ``JobCancelled``, a
BaseException, so no ``except Exception`` on the way swallows it.
"""
from __future__ import annotations

import heapq
import itertools
import os
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

from auditor import AuditorError
from auditor.env import env_float, env_int

SLOTS = env_int("AUDITOR_JOB_SLOTS", 2, 1, 64)                 # jobs computing at once (the free Space: 2 vCPU)
PER_VISITOR = env_int("AUDITOR_JOBS_PER_VISITOR", 4, 1, sys.maxsize)   # running + waiting, per visitor
MAX_WAITING = env_int("AUDITOR_MAX_WAITING", 64, 1, sys.maxsize)
# Seconds a job may compute once it has its slot (waiting is not counted). Twenty minutes is several
# times the slowest job measured within the Space's caps (a 50,000-record templated file: 338 s), and
# keeps a child that hangs from holding one of the two slots for good.
TIMEOUT = env_float("AUDITOR_JOB_TIMEOUT", 20 * 60.0, 0.0, 7 * 24 * 3600.0)
# First guesses of how long each kind of job takes (seconds); then a moving average of the measured.
GUESS = {"audit": 8.0, "leakage": 10.0, "contamination": 10.0, "paraphrases": 40.0, "dedup": 5.0}
POLL = 0.5


class JobCancelled(BaseException):
    """Raised inside a job its visitor cancelled (a BaseException: handlers' ``except Exception``
    must not turn it into an error message)."""


@dataclass(eq=False)
class Job:
    kind: str
    visitor: str           # who may hold at most PER_VISITOR jobs (an address)
    session: str           # the page that may cancel it
    queued: float = field(default_factory=time.monotonic)
    started: float | None = None
    cancelled: bool = False
    number: int = 0
    process: object = None     # the child computing the job's body (ui.workers), while there is one
    fraction: float = 0.0      # how far its work is, as its progress last said (``Jobs.check``)


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


class Jobs:
    def __init__(self, slots: int = SLOTS, per_visitor: int = PER_VISITOR, max_waiting: int = MAX_WAITING,
                 timeout: float = TIMEOUT):
        self.slots, self.per_visitor, self.max_waiting, self.timeout = slots, per_visitor, max_waiting, timeout
        self._cond = threading.Condition()
        self.running: list[Job] = []
        self.waiting: list[Job] = []
        self.estimates = dict(GUESS)
        self._numbers = itertools.count(1)
        self.peak_waiting = 0

    # ------------------------------------------------------------------ admission

    def _admit(self, kind: str, visitor: str, session: str) -> Job:
        with self._cond:
            held = sum(j.visitor == visitor for j in self.running + self.waiting)
            if held >= self.per_visitor:
                raise AuditorError("busy", f"You already have {held} jobs running or waiting on this server (at most "
                                   f"{self.per_visitor} per visitor).", "Wait for one to finish, or cancel it.")
            if len(self.waiting) >= self.max_waiting:
                wait = self._start_in(len(self.waiting))
                raise AuditorError("busy", f"The server is busy: {len(self.waiting)} jobs are waiting for "
                                   f"{self.slots} workers.", f"Try again in about {wait:,.0f} s; cached results "
                                   "(the bundled examples, anything audited recently) still answer at once.")
            job = Job(kind, visitor, session, number=next(self._numbers))
            self.waiting.append(job)
            self.peak_waiting = max(self.peak_waiting, len(self.waiting))
            return job

    def _start_in(self, ahead: int) -> float:
        """Seconds until a job with ``ahead`` waiting jobs before it gets a slot (estimated)."""
        now = time.monotonic()
        free = [self._left(j, now) for j in self.running]
        free += [0.0] * (self.slots - len(free))
        heapq.heapify(free)
        for j in self.waiting[:ahead]:
            heapq.heappush(free, heapq.heappop(free) + self.estimates.get(j.kind, 10.0))
        return free[0]

    def _left(self, job: Job, now: float) -> float:
        """Seconds a running job has left: from its progress once it has said 5% or more (its time so
        far, scaled), else its kind's usual time less its time so far. The usual time alone said
        "about 1 s" behind two uploads' audits of 50 s, a browser review found."""
        took = now - job.started
        if job.fraction >= 0.05:
            return max(took * (1 - job.fraction) / job.fraction, 1.0)
        return max(self.estimates.get(job.kind, 10.0) - took, 1.0)

    def position(self, job: Job) -> tuple[int, float]:
        """(jobs waiting ahead of ``job``, estimated seconds until it starts)."""
        with self._cond:
            ahead = self.waiting.index(job) if job in self.waiting else 0
            return ahead, self._start_in(ahead)

    # ------------------------------------------------------------------ running

    @contextmanager
    def slot(self, kind: str, visitor: str = "", session: str = "", progress=None):
        """Hold a slot for the body (waiting for one first, with the place and estimate reported
        through ``progress(fraction, text)``); the Job is given to the body for ``check``."""
        job = self._admit(kind, visitor or "?", session or "?")
        done = False
        outer = getattr(_CURRENT, "slot", None)
        try:
            self._wait(job, progress)
            _CURRENT.slot = (self, job)
            yield job
            done = True
        finally:
            _CURRENT.slot = outer
            with self._cond:
                if job in self.waiting:
                    self.waiting.remove(job)
                if job in self.running:
                    self.running.remove(job)
                    if done:
                        took = time.monotonic() - job.started
                        self.estimates[kind] = 0.7 * self.estimates.get(kind, took) + 0.3 * took
                self._cond.notify_all()

    def _wait(self, job: Job, progress) -> None:
        with self._cond:
            while True:
                if job.cancelled:
                    raise JobCancelled()
                if len(self.running) < self.slots and self.waiting and self.waiting[0] is job:
                    self.waiting.remove(job)
                    job.started = time.monotonic()
                    self.running.append(job)
                    self._cond.notify_all()
                    return
                ahead = self.waiting.index(job)
                eta = self._start_in(ahead)
                if progress is not None:
                    self._cond.release()
                    try:
                        progress(0.0, f"Waiting for a free worker: {ordinal(ahead + 1)} in line "
                                      f"({len(self.running)} running), about {eta:,.0f} s")
                    finally:
                        self._cond.acquire()
                self._cond.wait(POLL)

    def check(self, session: str, fraction: float | None = None) -> None:
        """Raise JobCancelled when a job of the page ``session`` was cancelled (called at each
        progress step of its work, with how far it is: what the line's estimates read)."""
        with self._cond:
            if any(j.cancelled and j.session == session for j in self.running + self.waiting):
                raise JobCancelled()
            if fraction:            # (a waiting job of the page reports 0: not its running one's)
                for j in self.running:
                    if j.session == session:
                        j.fraction = fraction

    def cancel(self, session: str) -> int:
        """Cancel every job of the page ``session``; returns how many there were."""
        with self._cond:
            mine = [j for j in self.running + self.waiting if j.session == session and not j.cancelled]
            for j in mine:
                j.cancelled = True
                if j.process is not None:
                    j.process.kill()       # at once: its handler sees the child gone and raises JobCancelled
            self._cond.notify_all()
            return len(mine)

    def attach(self, job: Job, process) -> None:
        """``process`` computes ``job`` from now (None: no longer); one cancelled meanwhile is killed."""
        with self._cond:
            job.process = process
            if process is not None and job.cancelled:
                process.kill()

    def busy(self) -> dict:
        with self._cond:
            return {"running": len(self.running), "waiting": len(self.waiting), "slots": self.slots}


_CURRENT = threading.local()     # the job the calling thread holds a slot for (``Jobs.slot``)


def current() -> tuple[Jobs, Job] | None:
    """(the work queue, the job) whose slot the calling thread holds (its body runs in a child), or None."""
    return getattr(_CURRENT, "slot", None)


def visitor_of(request) -> tuple[str, str]:
    """(visitor, session) of a Gradio request: the caller's address (behind a Space's proxy, the
    first address of X-Forwarded-For, which the proxy sets; AUDITOR_TRUST_PROXY=1 elsewhere) and
    the page's session."""
    try:
        host = request.client.host or "?"
        forwarded = request.headers.get("x-forwarded-for") or ""
    except AttributeError:
        return "?", "?"
    if forwarded and (os.environ.get("SPACE_ID") or os.environ.get("AUDITOR_TRUST_PROXY") == "1"):
        host = forwarded.split(",")[0].strip() or host
    return host, str(getattr(request, "session_hash", None) or "?")


class FormChoices:
    """How many times each page chose A anew (an upload, a bundled pick, a dataset's fields loaded),
    so a page's opening audit that ends after such a choice is not poured over it: an upload made
    while a share link's audit ran was replaced by the link's dataset when that audit ended, and *Run
    audit* then audited the link's data. The most recent ``SESSIONS`` pages are kept."""

    SESSIONS = 10_000

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: OrderedDict = OrderedDict()

    def chosen(self, session: str) -> None:
        with self._lock:
            self._counts[session] = self._counts.pop(session, 0) + 1
            while len(self._counts) > self.SESSIONS:
                self._counts.popitem(last=False)

    def count(self, session: str) -> int:
        with self._lock:
            return self._counts.get(session, 0)


JOBS = Jobs()
FORM_CHOICES = FormChoices()
