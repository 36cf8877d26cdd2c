"""Gradio names its copy of an upload by the bytes' hash, so visitors who send the same file at once
hand the app the same path. The first moves it into the upload store; the others used to find it
gone ("The uploaded file ... is gone. Upload it again": 7 of 24 upload audits failed so in
bench/app_load.py's 50 visitors). Each now gets the file the first one kept."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from auditor import AuditorError
from ui.uploads import UploadStore

TEXT = "".join(f'{{"question": "How many apples does person {i} have?", "answer": "{i}"}}\n' for i in range(2000))


def test_the_same_gradio_path_handed_over_again_after_its_move_is_the_kept_file(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=10_000_000, ttl=3600)
    arrived = tmp_path / "gradio" / "3f2a" / "train.jsonl"
    arrived.parent.mkdir(parents=True)
    arrived.write_text(TEXT, encoding="utf-8")
    first = store.keep(arrived, "train.jsonl", move=True)
    assert not arrived.exists()
    second = store.keep(arrived, "train.jsonl", move=True)        # the second visitor's event, moments later
    assert second.id == first.id and second.path == first.path
    assert Path(second.path).read_text(encoding="utf-8") == TEXT


def test_many_visitors_handing_over_one_path_at_once_all_get_the_kept_file(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=10_000_000, ttl=3600)
    arrived = tmp_path / "gradio" / "9c1e" / "train.jsonl"
    arrived.parent.mkdir(parents=True)
    arrived.write_text(TEXT * 20, encoding="utf-8")          # long enough that hashing overlaps the move
    gate = threading.Barrier(12)
    kept, errors = [], []

    def visitor():
        gate.wait()
        try:
            kept.append(store.keep(arrived, "train.jsonl", move=True))
        except AuditorError as exc:
            errors.append(exc.message)

    threads = [threading.Thread(target=visitor) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(kept) == 12
    assert len({k.id for k in kept}) == 1 and len({k.path for k in kept}) == 1
    assert Path(kept[0].path).read_text(encoding="utf-8") == TEXT * 20
    assert not arrived.exists()


def test_a_path_never_moved_in_is_still_gone(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=10_000_000, ttl=3600)
    with pytest.raises(AuditorError, match="is gone") as err:
        store.keep(tmp_path / "never-arrived.jsonl", "never-arrived.jsonl", move=True)
    assert err.value.code == "not_found"
    # A caller's own file (copied, never moved) that vanished is gone too, even under a moved file's path.
    arrived = tmp_path / "gradio" / "a.jsonl"
    arrived.parent.mkdir()
    arrived.write_text(TEXT, encoding="utf-8")
    store.keep(arrived, "a.jsonl", move=True)
    with pytest.raises(AuditorError, match="is gone"):
        store.keep(arrived, "a.jsonl", move=False)
