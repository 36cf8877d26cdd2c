"""A JSON or Parquet key with spaces around it (" pad ") can be named as a role as it is written:
role names were always stripped, so such a field could never be named ("The text field 'pad' is
in no record", the hint listing " pad "). A name typed with spaces around it still finds the
field without them. From the round-5 hostile review."""
from __future__ import annotations

import json

import auditor

QS = [f"question number {i} about apples pears and plums" for i in range(12)]


def test_a_padded_key_is_named_as_written(tmp_path, run_cli):
    rows = [{" pad ": q, "answer": str(i % 3), " topic": f"t{i % 2}", " level ": str(i % 4)}
            for i, q in enumerate(QS + QS[:2])]
    path = tmp_path / "padded.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # (one field per role: a label naming the group's field is refused, as any two roles on one field)
    result = auditor.scan(str(path), text=" pad ", group=" topic", labels=[" level "])
    assert (result.roles.text, result.roles.group, result.roles.labels) == (" pad ", " topic", (" level ",))
    summary = result.summary()
    assert summary["exact_duplicates"]["text"]["records"] == 4           # QS[0], QS[1] twice each
    assert summary["concentration"]["groups"] == 2
    rc, out, err = run_cli("scan", path, "--text", " pad ", "--quiet", "--json", "-")
    assert rc == 0, err
    assert json.loads(out)["roles"]["text"] == " pad "


def test_a_name_typed_with_spaces_still_finds_the_plain_field(tmp_path):
    rows = [{"question": q, "answer": "a"} for q in QS]
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = auditor.scan(str(path), text=" question ", answer="answer ")
    assert (result.roles.text, result.roles.answer) == ("question", "answer")
    # both present: the plain name wins, as before (a name is read without its spaces)
    both = [{"q": q, " q": "other words entirely", "answer": "a"} for q in QS]
    path.write_text("".join(json.dumps(r) + "\n" for r in both), encoding="utf-8")
    assert auditor.scan(str(path), text=" q").roles.text == "q"
