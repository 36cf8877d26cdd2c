"""A role named in another Unicode form than the data's key ("café" typed composed, the key
decomposed as macOS tools write it) is that key when it alone matches: it was "The text field
'café' is in no record", the hint listing a 'café' that looked the same. A blank key or one with
spaces around it is quoted in the hint, so it can be seen. From the round-5 hostile review."""
from __future__ import annotations

import json
import unicodedata

import pytest

import auditor

QS = [f"question number {i} about apples pears and plums" for i in range(12)]


def test_a_composed_name_finds_the_decomposed_key(tmp_path, run_cli):
    key = unicodedata.normalize("NFD", "café")
    typed = unicodedata.normalize("NFC", "café")
    assert key != typed
    path = tmp_path / "nfd.jsonl"
    path.write_text("".join(json.dumps({key: q, "réponse": "a"}, ensure_ascii=False) + "\n" for q in QS + QS[:1]),
                    encoding="utf-8")
    result = auditor.scan(str(path), text=typed, answer=unicodedata.normalize("NFD", "réponse"))
    assert (result.roles.text, result.roles.answer) == (key, "réponse")     # the data's own keys
    assert result.summary()["exact_duplicates"]["text"]["records"] == 2
    rc, out, err = run_cli("scan", path, "--text", typed, "--quiet", "--json", "-")
    assert rc == 0, err
    assert json.loads(out)["roles"]["text"] == key


def test_two_keys_that_differ_only_in_form_are_not_guessed_between(tmp_path):
    composed, decomposed = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    path = tmp_path / "both.jsonl"
    path.write_text("".join(json.dumps({composed: q, decomposed: "other words here"}) + "\n" for q in QS),
                    encoding="utf-8")
    assert auditor.scan(str(path), text=decomposed).roles.text == decomposed       # each as written
    assert auditor.scan(str(path), text=composed).roles.text == composed


def test_blank_and_padded_keys_are_quoted_in_the_hint(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text("".join(json.dumps({"": q, " x ": 1, "n": 2}) + "\n" for q in QS), encoding="utf-8")
    with pytest.raises(auditor.AuditorError) as caught:
        auditor.scan(str(path))
    assert caught.value.hint == "Name one with --text. Available fields: '', ' x ', n."
