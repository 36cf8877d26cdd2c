"""From the round-4 hostile review: a JSON object naming one key twice.

Python (and jq, and the JavaScript engines) keep the last value, other readers the first or refuse:
{"question": TEST ITEM, "question": "x"} hid every planted GSM8K test question from leak and
contamination (0 found, exit 0), and dedup kept 1 of 200 distinct records (each read as "x").
Such a record is refused in every JSON reader, naming the file, the line or item and the key;
the bundled and vendored real sets, which name each key once, read as before."""
from __future__ import annotations

import json

import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.cli import main

TEST = real_data.rows("gsm8k/test.jsonl")[:200]


def _hidden(row: dict) -> str:
    """A record whose first 'question' is the GSM8K test item and whose second is a decoy."""
    return '{"question": %s, "answer": %s, "question": "x"}' % (json.dumps(row["question"]),
                                                                json.dumps(row["answer"]))


def _files(tmp_path) -> dict:
    """name -> (path, where the error must point)."""
    lines = [json.dumps({"question": r["question"], "answer": r["answer"]}) for r in TEST]
    lines[7] = _hidden(TEST[7])                              # line 8, item 7
    (tmp_path / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "train.json").write_text("[" + ",\n".join(lines) + "]", encoding="utf-8")
    nested = [json.dumps({"question": r["question"], "answer": r["answer"], "meta": {"source": "a"}})
              for r in TEST]
    nested[3] = nested[3][:-2] + ', "source": "b"}}'       # a repeat inside a nested object, line 4
    (tmp_path / "nested.jsonl").write_text("\n".join(nested) + "\n", encoding="utf-8")
    # the key spelt with an escape is the same key once read
    escaped = lines[:5] + ['{"question": "a b c d e", "q\\u0075estion": "x"}']
    (tmp_path / "escaped.jsonl").write_text("\n".join(escaped) + "\n", encoding="utf-8")
    columns = '{"question": %s, "question": %s}' % (json.dumps([r["question"] for r in TEST]),
                                                    json.dumps(["x"] * len(TEST)))
    (tmp_path / "columns.json").write_text(columns, encoding="utf-8")
    return {"jsonl": (tmp_path / "train.jsonl", "train.jsonl, line 8", "question"),
            "json list": (tmp_path / "train.json", "train.json", "question"),
            "nested object": (tmp_path / "nested.jsonl", "nested.jsonl, line 4", "source"),
            "escaped key": (tmp_path / "escaped.jsonl", "escaped.jsonl, line 6", "question"),
            "object of columns": (tmp_path / "columns.json", "columns.json", "question")}


@pytest.mark.parametrize("case", ["jsonl", "json list", "nested object", "escaped key", "object of columns"])
def test_a_key_named_twice_is_refused_by_every_json_reader(tmp_path, case):
    path, where, key = _files(tmp_path)[case]
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path))
    assert info.value.code == "bad_format"
    assert info.value.message.startswith(f"{where}: an object names the key {key!r} twice"), info.value.message
    assert "keep one value per key" in info.value.hint
    # the item-by-item JSON list reader (a row cap) refuses it too, naming the item
    if case == "json list":
        with pytest.raises(AuditorError, match=r"train\.json, item 7 of the list: an object names the key"):
            auditor.load(str(path), max_rows=50)


@pytest.mark.parametrize("argv", [
    ["leak", "{train}", "{test}", "--fail-on-overlap"],
    ["leak", "{test}", "{train}", "--json", "-"],
    ["contamination", "{train}", "--benchmark", "gsm8k", "--text", "question", "--fail-on-overlap"],
    ["dedup", "{train}", "--out", "{out}"],
    ["clean", "{test}", "--against", "{train}", "--out", "{out}"],
])
def test_every_command_exits_2_on_a_hidden_test_item(tmp_path, capsys, argv):
    """The planted file must never pass a CI gate (exit 0: nothing found) or lose records."""
    train = _files(tmp_path)["jsonl"][0]
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps(r) + "\n" for r in real_data.rows("gsm8k/test.jsonl")), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = [a.format(train=train, test=test, out=out) for a in argv] + ["--quiet"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "error: train.jsonl, line 8: an object names the key 'question' twice." in captured.err
    assert not out.exists()
    if "-" in args:
        assert json.loads(captured.out)["error"]["code"] == "bad_format"


def test_the_same_records_with_each_key_once_are_found(tmp_path):
    """The control: the 200 test items written plainly are all found (so the refusal above is what
    stands between a hidden copy and a silent pass)."""
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"question": r["question"], "answer": r["answer"]}) + "\n"
                             for r in TEST), encoding="utf-8")
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps(r) + "\n" for r in real_data.rows("gsm8k/test.jsonl")), encoding="utf-8")
    assert auditor.leak(str(train), str(test)).summary()["identical_text"]["records"] == 200


@pytest.mark.parametrize("rel", sorted(real_data.FILES))
def test_the_real_sets_read_as_before(tmp_path, rel):
    """No real file names a key twice: each reads whole, every record as the standard reader reads it."""
    path = tmp_path / rel.replace("/", "_")
    path.write_bytes(real_data.content(rel))
    table = auditor.load(str(path))
    expected = real_data.rows(rel)
    assert len(table.rows) == len(expected)
    assert [table.rows[i] for i in (0, len(expected) // 2, len(expected) - 1)] == [
        expected[i] for i in (0, len(expected) // 2, len(expected) - 1)]
