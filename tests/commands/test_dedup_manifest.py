"""The dedup manifest's ``differs`` and its note on dropped rows whose answer, group or label is
not the kept one's, in the library, the CLI and the Space's API; a review file that is a device."""
from __future__ import annotations

import csv
import json
import os
import sys
import unicodedata
from pathlib import Path

import pytest

import auditor
from auditor.cli import main
from definitions import read_jsonl, write_jsonl


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def cli_error(capsys, argv) -> str:
    """Run the CLI; it must exit 2 with one error line and no traceback. Returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def _summary(run_cli, *args, env=None) -> tuple[int, dict, str]:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet", timeout=300, env=env)
    assert "Traceback" not in err
    return code, json.loads(out), err


def _norm(value):
    """The default normaliser, written again: NFC, lowercase, whitespace collapsed; blank is missing."""
    if value is None or not str(value).strip():
        return None
    return " ".join(unicodedata.normalize("NFC", str(value)).lower().split())


FIELDS = {"text": "question", "answer": "answer", "group": "src", "label:lvl": "lvl"}


@pytest.fixture(scope="module")
def conflicts(real_data, tmp_path_factory):
    """GSM8K questions repeated with every shape of missing value (null, "", "  ", absent), case
    and spacing variants, other answers, groups and labels."""
    t = read_jsonl(real_data / "gsm8k/test.jsonl")
    q = [r["question"] for r in t]
    rows = [
        {"question": q[0], "answer": "42", "src": "a", "lvl": "1"}, {"question": q[0], "answer": "", "src": "a"},
        {"question": q[0], "src": "a", "lvl": "1"},
        {"question": q[1], "answer": None, "src": None, "lvl": None}, {"question": q[1], "answer": "  ", "src": ""},
        {"question": "  " + q[1].upper(), "answer": "7", "src": "b", "lvl": "2"},
        {"question": q[2], "answer": "Yes", "src": "S", "lvl": "1"}, {"question": q[2], "answer": " yes ", "src": "s"},
        {"question": q[3], "answer": "5", "src": "a"}, {"question": q[3], "answer": "6", "src": "a"},
        {"question": q[3], "answer": "6", "src": "b", "lvl": "3"},
        *({"question": q[i], "answer": str(i), "src": "z"} for i in range(4, 30)),
    ]
    folder = tmp_path_factory.mktemp("conflicts")
    write_jsonl(folder / "data.jsonl", rows)
    return folder, rows


def _expected(rows, dropped) -> tuple[list, dict, int]:
    """Per dropped row the fields whose normalised values differ; the note's counts (only rows
    that hold a value there); and how many rows the note names."""
    differs, counts, named = [], {}, 0
    for d in dropped:
        a, b = rows[d["row"]], rows[d["kept_row"]]
        differs.append([name for name, f in FIELDS.items() if _norm(a.get(f)) != _norm(b.get(f))])
        held = [n for n in differs[-1] if n != "text" and _norm(a.get(FIELDS[n])) is not None]
        for n in held:
            counts[n] = counts.get(n, 0) + 1
        named += bool(held)
    return differs, counts, named


def test_a_review_file_that_is_a_device_is_refused_before_it_is_read(tmp_path, capsys):
    # /dev/zero as a review used to be read whole (size 0 passes the size check) until memory ran out.
    """From the hostile-input sweep."""
    data = write_jsonl_str(tmp_path / "d.jsonl", [{"text": "one two three four"}, {"text": "one two three four"}])
    line = cli_error(capsys, ["dedup", data, "--review", os.devnull, "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert line == "error: Cannot read the review file 'null': it is not a regular file (a pipe, socket or device)."


@pytest.mark.parametrize("keep", ["first", "longest", "most_common_answer"])
def test_differs_and_the_note_match_the_rows(conflicts, run_cli, keep):
    """From the review of turn selectors and the dedup manifest: Every dropped row's 'differs' equals the
    fields whose normalised values differ from the
    kept row's (null, "", blank and absent alike); the note counts the rows that hold another
    value (not those with none), in the JSON and CSV manifests alike; under most_common_answer it
    does not advise most_common_answer."""
    import auditor
    from auditor.dedup import dedup
    folder, rows = conflicts
    out = folder / f"out-{keep}.jsonl"
    code, summary, err = _summary(run_cli, "dedup", folder / "data.jsonl", "--text", "question", "--answer", "answer",
                                  "--group", "src", "--label", "lvl", "--keep", keep, "--out", out,
                                  "--manifest", folder / f"m-{keep}.csv")
    assert code == 0, err
    listed = list(csv.DictReader(open(folder / f"m-{keep}.csv", newline="", encoding="utf-8")))
    dropped = [{"row": int(r["row"]), "kept_row": int(r["kept_row"]), "differs": r["differs"]} for r in listed]
    differs, counts, named = _expected(rows, dropped)
    assert [d["differs"] for d in dropped] == [";".join(x) for x in differs]
    assert [d["differs"] for d in summary["dropped_rows"]] == differs
    assert any("answer" in x for x in differs) and (keep != "first" or any(not x for x in differs))
    notes = [n for n in summary["notices"] if "dropped row(s) differ" in n]
    assert notes == [n for n in notes if n.startswith(f"{named:,} dropped row(s)")] and len(notes) == 1
    assert all(f"{name} ({n:,})" in notes[0] for name, n in counts.items())
    assert ("keep most_common_answer" in notes[0]) == (keep != "most_common_answer")
    # A row with no answer beside a kept answer: named in differs, not counted as another answer.
    result = auditor.scan(str(folder / "data.jsonl"), text="question", answer="answer", group="src", labels="lvl")
    d = dedup(result, keep=keep)
    assert [list(x["differs"]) for x in d.dropped] == differs
    # Marks: row 8 is not a duplicate of 9 nor 10; what 10 differs in is then judged against 9 (or 8).
    marked = dedup(result, keep=keep, not_duplicates=[(8, 9), (8, 10)])
    again, _, _ = _expected(rows, marked.dropped)
    assert [list(x["differs"]) for x in marked.dropped] == again and 8 in marked.kept_rows


def test_the_api_manifest_names_the_differences(conflicts):
    """From the review of turn selectors and the dedup manifest: The Space's API endpoint writes the same
    'differs' as the library, from the file uploaded."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from ui import api
    folder, rows = conflicts
    _, manifest = api.dedup_file(file=str(folder / "data.jsonl"), text="question", answer="answer", keep="first")
    doc = json.loads(Path(manifest).read_text(encoding="utf-8"))
    expected = [[n for n in x if n in ("text", "answer")] for x in _expected(rows, doc["dropped_rows"])[0]]
    assert [d["differs"] for d in doc["dropped_rows"]] == expected


def test_evaluated_key_is_equality_in_every_evaluated_field(conflicts):
    """From the review of turn selectors and the dedup manifest: The scan's record key (identical clusters,
    the dropped rows' reason) equals the
    per-field keys dedup reads: two records share it exactly when every normalised field is equal."""
    import auditor
    folder, rows = conflicts
    result = auditor.scan(str(folder / "data.jsonl"), text="question", answer="answer", group="src", labels="lvl")
    assert list(result.evaluated_keys) == list(FIELDS)
    values = [tuple(_norm(r.get(f)) for f in FIELDS.values()) for r in rows]
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (result.evaluated_key[i] == result.evaluated_key[j]) == (values[i] == values[j])
