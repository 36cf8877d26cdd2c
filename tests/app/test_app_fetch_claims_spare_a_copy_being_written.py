"""From the session-48 review: a Hub copy's claim for room (``state._claim``, run in the job's child
while it fetches) removed the oldest download folders to make room, sparing only its own output
folder and the fetch folders: another visitor's copy, still fetching its files and about to write its
Parquet file into its own output folder, lost that folder (and its write failed) to a later copy's
claim. The output folder of every copy being made is now spared, and its bytes counted, as its fetch
folder's are: a claim that would need it gone is told to come back (busy)."""
from __future__ import annotations

import os

import pytest


def test_a_claim_never_removes_the_output_of_another_copy_being_made(tmp_path, monkeypatch):
    from auditor import AuditorError
    from ui import state
    monkeypatch.setattr(state, "FILES_DIR", tmp_path)
    monkeypatch.setattr(state, "FILES_BYTES", 10_000)
    first_out = state.new_folder("first-out")
    (first_out / "pairs.csv").write_bytes(b"x" * 1_000)       # what the first visitor's audit left there
    os.utime(first_out, (1_000, 1_000))                        # the oldest folder
    second_out = state.new_folder("second-out")
    with state.copy_fetch(first_out) as first:
        first.claim(2_000)                                      # the first copy fetches its files ...
        with state.copy_fetch(second_out) as second:
            # 1,000 + 2,000 + 7,500 bytes: room only were the first copy's output folder removed
            with pytest.raises(AuditorError) as busy:
                second.claim(7_500)
            assert busy.value.code == "busy", busy.value.message
            assert first_out.exists() and (first_out / "pairs.csv").stat().st_size == 1_000
            second.claim(6_500)                                 # fits beside the first copy's folders
        # ... and writes its copy where it was to go
        assert first_out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first-out", "second-out"]


def test_a_claim_still_removes_a_finished_download(tmp_path, monkeypatch):
    """A folder no copy is being made into (a finished download, which Gradio has copied) makes room."""
    from ui import state
    monkeypatch.setattr(state, "FILES_DIR", tmp_path)
    monkeypatch.setattr(state, "FILES_BYTES", 10_000)
    done = state.new_folder("done")
    (done / "pairs.csv").write_bytes(b"x" * 4_000)
    os.utime(done, (1_000, 1_000))
    out = state.new_folder("out")
    with state.copy_fetch(out) as fetch:
        fetch.claim(8_000)
        assert not done.exists() and out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
