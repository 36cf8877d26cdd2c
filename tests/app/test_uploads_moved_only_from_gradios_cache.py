"""The app moves an upload into its store only when the file is Gradio's own copy (its upload
folder); a path handed to the Python API is the caller's file and is copied, never taken away.

Found when the space branch landed: a dedup through ui.api with a test's own file moved that file
into the store, and the next test found its data gone."""
from __future__ import annotations

import json

from gradio.utils import get_upload_folder

from ui import api, state


def test_a_callers_file_stays_where_it_was(tmp_path):
    path = tmp_path / "data.jsonl"
    rows = [{"question": f"How many apples does person {i} have?", "answer": str(i)} for i in range(30)]
    rows += rows[:5]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = path.read_bytes()
    deduplicated, manifest = api.dedup_file(file=str(path), text="question", answer="answer", keep="first")
    assert path.read_bytes() == before                            # still there, unchanged
    assert len(json.loads(open(manifest, encoding="utf-8").read())["dropped_rows"]) == 5
    assert not state.in_gradio_cache(path)


def test_gradios_copy_is_moved_into_the_store(tmp_path, monkeypatch):
    folder = tmp_path / "gradio-cache"
    (folder / "abc123").mkdir(parents=True)
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    assert get_upload_folder() == str(folder)
    copy = folder / "abc123" / "data.jsonl"
    copy.write_text('{"text": "one record"}\n', encoding="utf-8")
    assert state.in_gradio_cache(copy)
    kept = state.kept_upload(str(copy), move=True)
    assert not copy.exists() and open(kept.path, encoding="utf-8").read() == '{"text": "one record"}\n'
