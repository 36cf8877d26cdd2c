#!/usr/bin/env python
"""Where a command's memory goes, stage by stage: each of its ``Progress`` stages (load, roles,
exact, shingles, near_duplicates, ...) with the memory held after it and the peak within it, in MB
above the process once its libraries are imported, and the peak between the last stage and the
command's end (its report), as a markdown table.

    python bench/memory_stages.py scan FILE --text text
    python bench/memory_stages.py leak A B --text text

The arguments are the CLI's (``--quiet`` and an ``--out-dir`` in a temporary folder are added). The
peak of each stage is read by resetting the process's peak (``/proc/self/clear_refs``) when the
stage starts and reading VmHWM when it ends, so Linux only. Files to measure:
``bench/memory_per_byte.py``'s shapes (``write_shape``)."""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager

# The libraries any command loads, in the base, as bench/memory_per_byte.py imports them (what is
# imported first changes how much a process holds later: compare figures of one script).
import datasets  # noqa: F401
import numpy  # noqa: F401
import pyarrow.compute  # noqa: F401
import pyarrow.json  # noqa: F401
import scipy.sparse  # noqa: F401

import auditor.audit  # noqa: F401
import auditor.clean  # noqa: F401
import auditor.contamination  # noqa: F401
import auditor.dedup  # noqa: F401
import auditor.kernels  # noqa: F401
import auditor.leakage  # noqa: F401
from auditor import progress
from auditor.cli import main as cli_main

MB = 1 << 20

# Compiled code is part of the base, as in bench/memory_per_byte.py: the word merge's numba runtime
# (about 60 MB, once per process) loaded before the base is read.
auditor.kernels.load_word_merge()


def memory() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, MB."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line.split(":")[0]] = int(line.split()[1]) * 1024 / MB
    return found["VmRSS"], found["VmHWM"]


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def main() -> None:
    base = memory()[0]
    stage_of = progress.Progress.stage

    @contextmanager
    def measured(self, name, label=None, at=0.0):
        reset_peak()
        with stage_of(self, name, label, at) as run:
            yield run
        held, peak = memory()
        print(f"| {name} | {held - base:.0f} | {peak - base:.0f} |", flush=True)
        reset_peak()

    progress.Progress.stage = measured
    print(f"process with its libraries: {base:.0f} MB\n\n| stage | held MB | peak MB |\n|---|---:|---:|", flush=True)
    with tempfile.TemporaryDirectory(prefix="memory-stages-") as tmp:
        code = cli_main([*sys.argv[1:], "--out-dir", os.path.join(tmp, "out"), "--quiet"])
    held, peak = memory()
    print(f"| after the last stage (the report) | {held - base:.0f} | {peak - base:.0f} |")
    sys.exit(code)


if __name__ == "__main__":
    main()
