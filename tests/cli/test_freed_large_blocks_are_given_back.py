"""Freed large blocks go back to the system in a process that pins glibc's mmap threshold
(``auditor.memory.pin_mmap_threshold``, which the CLI and the Space's job child call). Without
it, freeing one 20 MB block raised the threshold, and later 1 MiB arrays came from the heap,
whose freed pages the process kept: the peak of a scan of long records held them on top."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO

CHILD = """
import json, sys
import numpy as np
from auditor.memory import pin_mmap_threshold
pinned = pin_mmap_threshold() if sys.argv[1] == "pin" else False
def rss():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmRSS:"))
big = np.ones(20 << 20, dtype=np.uint8)
del big                                    # glibc raises a dynamic threshold to 20 MB here
before = rss()
arrays = [np.ones(1 << 20, dtype=np.uint8) for _ in range(100)]   # 100 MiB, touched
last = np.ones(1 << 20, dtype=np.uint8)    # allocated last: the heap's top stays in use
del arrays
print(json.dumps({"pinned": pinned, "kept": rss() - before}))
"""

def kept_after_freeing(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, cwd=REPO,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_freed_arrays_are_given_back_with_the_threshold_pinned():
    pinned = kept_after_freeing("pin")
    dynamic = kept_after_freeing("dynamic")
    if not pinned["pinned"]:
        pytest.fail("mallopt was not available: this test runs on glibc")
    assert pinned["kept"] < 8 << 20                   # 100 MiB freed: at most a few MiB still held
    assert dynamic["kept"] > 80 << 20                 # the same without the pin keeps most of it
