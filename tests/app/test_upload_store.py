"""Uploaded files are kept so their links work for a colleague: under an id derived from the file
(128 bits, with a key only the server holds: not guessable, not listable), for a stated time after
their last use and within a stated disk budget, the least recently used going first; an expired or
removed file says so. Gradio's own cache is held within its budget too."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from auditor import AuditorError
from ui.uploads import ID, UploadStore, trim_cache


def file(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_ids_come_from_the_file_and_a_server_key(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=10_000, ttl=3600)
    a = store.keep(file(tmp_path / "a.jsonl", '{"text": "one"}\n'), "a.jsonl", move=False)
    again = store.keep(file(tmp_path / "copy.jsonl", '{"text": "one"}\n'), "a.jsonl", move=False)
    other_name = store.keep(file(tmp_path / "b.jsonl", '{"text": "one"}\n'), "b.jsonl", move=False)
    assert ID.match(a.id) and a.id == again.id != other_name.id          # the same file: the same id
    # Another server (another key) gives the same file another id: knowing a file is not enough.
    elsewhere = UploadStore(tmp_path / "other", max_bytes=10_000, ttl=3600)
    assert elsewhere.keep(file(tmp_path / "c.jsonl", '{"text": "one"}\n'), "a.jsonl", move=False).id != a.id
    assert Path(a.path).name == "a.jsonl" and Path(a.path).read_text() == '{"text": "one"}\n'
    # The key and folders are the server's only.
    assert oct(os.stat(tmp_path / "store").st_mode)[-3:] == "700"
    assert oct(os.stat(tmp_path / "store" / "key").st_mode)[-3:] == "600"
    for bad in ("", "../../etc/passwd", "g" * 32, a.id[:-1], a.id + "0"):
        with pytest.raises(AuditorError, match="not one this server makes"):
            store.get(bad)
    with pytest.raises(AuditorError, match="not on this server") as err:
        store.get("0" * 32)
    assert err.value.code == "not_found"


def test_moving_a_file_in_leaves_nothing_behind(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=10_000, ttl=3600)
    arrived = file(tmp_path / "gradio-cache-copy.csv", "a,b\n1,2\n")
    kept = store.keep(arrived, "data.csv", move=True)
    assert not arrived.exists() and Path(kept.path).name == "data.csv"
    duplicate = file(tmp_path / "again.csv", "a,b\n1,2\n")
    assert store.keep(duplicate, "data.csv", move=True).id == kept.id and not duplicate.exists()


def test_a_file_expires_after_its_last_use_and_says_so(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=10_000, ttl=3600)
    kept = store.keep(file(tmp_path / "a.jsonl", "x\n"), "a.jsonl", move=False)
    assert store.get(kept.id).expires > time.time() + 3500
    meta = tmp_path / "store" / "files" / kept.id / ".meta"
    data = json.loads(meta.read_text())
    data["used"] = time.time() - 3601                     # last used more than the stated time ago
    meta.write_text(json.dumps(data))
    with pytest.raises(AuditorError, match="has expired: files are kept 0.0416667 days after their last use"):
        store.get(kept.id)
    assert not (tmp_path / "store" / "files" / kept.id).exists()
    with pytest.raises(AuditorError) as again:            # and it keeps saying so
        store.get(kept.id)
    assert again.value.code == "expired"


def test_the_least_recently_used_go_first_to_keep_the_budget(tmp_path):
    store = UploadStore(tmp_path / "store", max_bytes=250, ttl=3600)
    first = store.keep(file(tmp_path / "1.txt.jsonl", "a" * 100), "1.jsonl", move=False)
    second = store.keep(file(tmp_path / "2.jsonl", "b" * 100), "2.jsonl", move=False)
    time.sleep(0.01)
    store.get(first.id)                                   # used again: now the second is the oldest
    third = store.keep(file(tmp_path / "3.jsonl", "c" * 100), "3.jsonl", move=False)
    assert store.get(first.id) and store.get(third.id)
    with pytest.raises(AuditorError, match="was removed on .* to make room: this server keeps 250 bytes of uploads"):
        store.get(second.id)
    total = sum(p.stat().st_size for p in (tmp_path / "store" / "files").rglob("*") if p.is_file() and p.name != ".meta")
    assert total <= 250
    with pytest.raises(AuditorError, match="more than the 250 bytes this server keeps") as big:
        store.keep(file(tmp_path / "big.jsonl", "d" * 300), "big.jsonl", move=True)
    assert big.value.code == "too_large" and not (tmp_path / "big.jsonl").exists()


def test_gradio_s_cache_is_held_within_its_budget_oldest_first(tmp_path):
    cache = tmp_path / "gradio"
    old = time.time() - 1000
    for k in range(5):
        path = cache / f"h{k}" / f"f{k}.bin"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"x" * 100)
        os.utime(path, (old + k, old + k))
    fresh = cache / "new" / "arriving.bin"
    fresh.parent.mkdir()
    fresh.write_bytes(b"y" * 100)                          # just arrived: left alone whatever the budget
    removed = trim_cache(cache, max_bytes=250)
    left = sorted(p.name for p in cache.rglob("*.bin"))
    assert removed == 400 and left == ["arriving.bin", "f4.bin"]
