"""Killing a run once it has saved some near-duplicate pieces (``near.pieces.HOLD_AFTER_ENV`` makes
it wait there): what the local and the Ray resume tests share."""
from __future__ import annotations

import time


def kill_after_saved(proc, shard_dir, count: int) -> None:
    """Waits until ``count`` pieces are saved in ``shard_dir`` (the run must still be alive, held),
    then SIGKILLs ``proc``: no handler runs, nothing is tidied."""
    try:
        for _ in range(3000):
            saved = sorted(shard_dir.glob("near-*.json")) if shard_dir.exists() else []
            if len(saved) >= count or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
    finally:
        proc.kill()
        proc.wait(timeout=60)
