"""A job's body in a child process: ``run(fn, ...)`` inside a ``jobs.JOBS.slot`` forks the server,
runs ``fn`` in the child and returns what it returns, so the work shares neither the server's CPU
time slices nor its GIL with the cheap events (a cached result, a page load, a new threshold).

Why fork (not a forkserver or a pool): a job reads what the server holds (the cached audit of A,
up to the cache's 2 GiB; the paraphrase model's warm static vectors), which a forked child shares
copy-on-write; a forkserver's child would be sent it pickled, every job. What crosses back is the
result, pickled through a pipe: an audit (its table and fields: ~4 MB for GSM8K's 7,473 records),
a leak check's page parts, a semantic search's scores. The child runs only the job: it lets go of
the server's sockets, takes no lock another thread may hold at the fork (``parallel.fork_safe``),
never collects the server's objects (``gc.freeze``) and ends with ``os._exit`` (no atexit handler
of the server runs in it).

Progress steps travel from the child to the handler's thread, which reports them (and, through the
page's callback, checks for a cancel); cancelling kills the child (``Jobs.cancel``). A child that
dies (killed for memory, a crash) ends the job with a clear AuditorError; the slot is freed either
way, and the child is always reaped. A child still computing at its job's deadline
(``jobs.TIMEOUT`` after the job got its slot) is killed, and the job ends with a message naming
the limit. Outside a slot (the pre-audit at start-up, the library's own tests), ``run`` calls
``fn`` in-process.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import stat
import time
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler

from auditor import AuditorError
from auditor.env import env_int
from auditor.memory import arrow_pool_returns_memory, pin_mmap_threshold

from . import jobs

_FORK = multiprocessing.get_context("fork")
# A child computes at this niceness: the kernel gives the server's threads (cheap events) the cores
# first, the jobs every cycle left over (a process of its own frees the GIL, not the CPU; at nice 10
# a job weighs a tenth of the server while both want a core). On a machine shared with other busy
# processes (tests beside other runs) that is a tenth of theirs too: tests/app_server.py sets 0.
NICE = env_int("AUDITOR_JOB_NICE", 10, 0, 19)


def run(fn, *args, progress=None, **kwargs):
    """``fn(*args, **kwargs)`` (with ``progress=``, a relay to ``progress``, when one is given) in a
    child process when the calling thread holds a job's slot, else in-process."""
    held = jobs.current()
    if held is None:
        return fn(*args, **kwargs, **({"progress": progress} if progress is not None else {}))
    queue, job = held
    reader, writer = _FORK.Pipe(duplex=False)
    child = _FORK.Process(target=_child, args=(writer, fn, args, kwargs, progress is not None),
                          name=f"auditor-{job.kind}", daemon=True)
    child.start()
    writer.close()
    answered = False
    try:
        queue.attach(job, child)
        deadline = (job.started or time.monotonic()) + queue.timeout
        while True:
            ready = wait([reader, child.sentinel], timeout=max(deadline - time.monotonic(), 0.0))
            if not ready:
                raise overran(queue.timeout)     # (killed below)
            if reader not in ready and not reader.poll():
                break                   # ended without a word
            try:
                kind, *value = reader.recv()
            except EOFError:
                break
            if kind == "progress":
                if time.monotonic() >= deadline:
                    raise overran(queue.timeout)
                progress(*value)       # (the page's callback raises JobCancelled once cancelled)
                continue
            answered = True
            if kind == "done":
                return value[0]
            raise value[0]
        child.join()
        if job.cancelled:
            raise jobs.JobCancelled()
        raise died(child.exitcode)
    finally:
        queue.attach(job, None)
        if answered:
            child.join(5)              # it has answered and is exiting
        if child.is_alive():
            child.kill()               # cancelled, past its deadline, or its caller failed: it stops at once
        child.join()                   # reaped: no zombie
        reader.close()


def overran(limit: float) -> AuditorError:
    """The visitor's message for a job stopped at its deadline (``jobs.Jobs.timeout``)."""
    return AuditorError("job_timeout", f"The job ran past this server's time limit for one job ({duration(limit)}, "
                        "AUDITOR_JOB_TIMEOUT) and was stopped; nothing was kept.",
                        "Try a smaller dataset (set Max rows), or run the CLI, which has no such limit.")


def duration(seconds: float) -> str:
    """``1200`` -> "20 min", ``90`` -> "1 min 30 s", ``2.5`` -> "2.5 s"."""
    if seconds < 60:
        return f"{seconds:g} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return " ".join(f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min"), (rest, "s")) if n)


def died(code) -> AuditorError:
    """The visitor's message for a child that ended without an answer (exit code ``code``)."""
    if code == -signal.SIGKILL:
        return AuditorError("worker_died", "The job's worker process was stopped by the system, most likely "
                            "for running out of memory.", "Try a smaller dataset (set Max rows), or run the "
                            "CLI on a machine with more memory.")
    how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return AuditorError("worker_died", f"The job's worker process ended unexpectedly ({how}); nothing was kept.",
                        "Try again; if it happens again, the CLI runs the same check and shows the error.")


def _child(conn, fn, args, kwargs, relay: bool) -> None:
    """The child: the server's sockets closed, the default signal handlers, ``fn`` run, its value
    (or its error) sent back."""
    # The server's objects are the child's to read, never to collect: a collection walking them
    # would write to every page of the server's heap (the cached results), and copy it into the child.
    gc.freeze()
    pin_mmap_threshold()        # the job's freed large blocks go back to the system (auditor.memory)
    arrow_pool_returns_memory()
    keep = conn.fileno()
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
        fd = int(name)
        try:
            if fd > 2 and fd not in (keep, null) and stat.S_ISSOCK(os.fstat(fd).st_mode):
                # A visitor's connection must close when the server closes it: the child lets go of
                # the socket, but keeps the number (on /dev/null), so the server's socket objects,
                # copied into the child and freed there, close that and never a file the job opened.
                os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        os.nice(NICE)
    except OSError:
        pass
    try:
        if relay:
            kwargs = {**kwargs, "progress": lambda fraction, text: conn.send(("progress", fraction, text))}
        value = fn(*args, **kwargs)
        message = ("done", value)
    except BaseException as exc:  # noqa: BLE001 - every error goes back to the handler
        message = ("error", exc)
    try:
        # Protocol 5: a buffer kept in a temporary file (auditor.io.spill) is pickled straight from
        # its map, not copied into bytes first.
        conn.send_bytes(ForkingPickler.dumps(message, protocol=5))
    except Exception as exc:  # noqa: BLE001 - an unpicklable value or error
        conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}"[:500])))
