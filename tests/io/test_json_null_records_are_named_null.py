"""A JSON null where a record belongs is named "null" in the error, as JSON names it (it was
"a JSON NoneType", Python's name), in each JSON reader."""
from __future__ import annotations

import pytest

import auditor
from auditor import AuditorError


RECORD = '{"question": "What is one plus one", "answer": "2"}'


@pytest.mark.parametrize("name,text,options,message", [
    ("rows.jsonl", f"{RECORD}\nnull\n", {}, "rows.jsonl, line 2: a JSON null, not an object."),
    ("list.json", f"[{RECORD}, null]", {}, "list.json: item 1 of the list is a null, not an object."),
    ("list.json", f"[{RECORD}, null]", {"max_rows": 5}, "list.json: item 1 of the list is a null, not an object."),
    ("null.json", "null", {}, "null.json: the JSON holds a null, not records."),
])
def test_a_null_record_is_called_null(tmp_path, name, text, options, message):
    """From the round-4 hostile review."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(AuditorError) as info:
        auditor.load(str(tmp_path / name), **options)
    assert info.value.code == "bad_format" and info.value.message == message
