"""A CSV cell written NaN (pandas' ``na_rep="NaN"``, a float NaN printed by numpy or Python) is a
missing value, read as a JSON file's NaN is: no value for role guessing, the schema (null) and the
degenerate check, and never one duplicate group. As text, every missing answer of a CSV was one
"NaN" exact-duplicate group and no record was degenerate, while the same rows as JSON had none and
flagged each; a column of them could be guessed as a role. "NULL" stays text (a real value too)."""
from __future__ import annotations

import json
import math
from collections import Counter

import pandas as pd
import pyarrow.parquet as pq
import pytest

import auditor
import real_data
from auditor.io.copies import write_rows

FIGURES = ("roles", "schema", "degenerate", "exact_duplicates", "near_duplicates", "curve")


def _rows() -> list[dict]:
    """gsm8k test's first 150 questions with their final answers; every third answer missing."""
    rows = real_data.rows("gsm8k/test.jsonl")[:150]
    return [{"question": r["question"], "answer": math.nan if i % 3 == 1 else r["answer"].split("####")[-1].strip()}
            for i, r in enumerate(rows)]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert "NaN" in path.read_text(encoding="utf-8")
    return path


@pytest.mark.parametrize("written", ["NaN", "nan"])
def test_a_csvs_nan_cells_give_the_figures_a_json_nan_gives(tmp_path, written):
    """From the round-6 hostile review: CSV "NaN" stayed text, a 50-record duplicate group."""
    rows = _rows()
    path = tmp_path / "gsm8k.csv"
    pd.DataFrame(rows).to_csv(path, index=False, na_rep=written)
    missing = int(pd.read_csv(path)["answer"].isna().sum())          # pandas reads those cells as missing
    assert missing == 50
    csv_summary = auditor.scan(str(path)).summary()
    json_summary = auditor.scan(str(_jsonl(tmp_path / "gsm8k.jsonl", rows))).summary()
    for figure in FIGURES:
        assert csv_summary[figure] == json_summary[figure], figure
    assert csv_summary["degenerate"]["by_role"]["answer"] == missing
    # the answer groups are those of the answers present (none of the missing ones: no "NaN" group)
    counts = Counter(r["answer"] for r in rows if isinstance(r["answer"], str))
    assert csv_summary["exact_duplicates"]["answer"]["records"] == sum(c for c in counts.values() if c > 1)
    assert csv_summary["input"]["notices"] == [f"gsm8k.csv: {missing} record(s) hold a cell written NaN (pandas' "
                                               "missing value), read as missing (null), as pandas reads it"]


def test_a_csv_column_of_nan_is_not_guessed_as_a_role(tmp_path):
    """From the round-6 hostile review: as a column of JSON NaN, or of blank cells, is not."""
    rows = [dict(r, answer=math.nan) for r in _rows()]
    path = tmp_path / "none.csv"
    pd.DataFrame(rows).to_csv(path, index=False, na_rep="NaN")
    for source in (path, _jsonl(tmp_path / "none.jsonl", rows)):
        summary = auditor.scan(str(source)).summary()
        assert summary["roles"]["answer"] is None, source
        assert summary["degenerate"]["records"] == 0


def test_null_cells_stay_text(tmp_path):
    """From the round-6 hostile review: "NULL" is kept as written (SQL's or JavaScript's null, and
    "NA" or "None", are real answers too); only NaN is pandas' and a float's written missing value."""
    path = tmp_path / "null.csv"
    pd.DataFrame(_rows()).to_csv(path, index=False, na_rep="NULL")
    table = auditor.load(str(path))
    assert sum(r["answer"] == "NULL" for r in table.rows) == 50 and not table.notices


def test_copies_of_nan_cells_write_null(tmp_path):
    """From the round-6 hostile review: a JSON Lines copy of the CSV writes null (NaN is no JSON every
    reader reads), a Parquet copy a text column with nulls, as pandas reads the CSV; a JSON NaN among
    texts is a null in Parquet too (the column was written as JSON text)."""
    rows = _rows()
    path = tmp_path / "gsm8k.csv"
    pd.DataFrame(rows).to_csv(path, index=False, na_rep="NaN")
    expected = pd.read_csv(path, dtype={"answer": str})
    table = auditor.load(str(path))
    assert write_rows(table.rows, tmp_path / "copy.jsonl") == []
    lines = (tmp_path / "copy.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["answer"] for line in lines] == [None if a is math.nan else a for a in
                                                              (r["answer"] for r in rows)]
    assert "NaN" not in "".join(lines)
    assert write_rows(table.rows, tmp_path / "copy.parquet") == []
    assert pq.read_table(tmp_path / "copy.parquet").to_pandas().equals(expected)
    from_json = auditor.load(str(_jsonl(tmp_path / "gsm8k.jsonl", rows))).rows
    notices = write_rows(from_json, tmp_path / "json.parquet")
    assert notices == ["column 'answer': its NaN values (missing) written as null"]
    assert pq.read_table(tmp_path / "json.parquet").to_pandas().equals(expected)
