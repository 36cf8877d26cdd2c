"""dedup and clean copies of a folder of Parquet files whose schemas differ (one part file has an extra
column: ordinary schema evolution) are the rows as stored, in the union of the files' schemas: each
column in its stored type (nanosecond timestamps, uint64 past int64, dictionaries, large_string), the
extra column null in the files that lack it. A column whose types differ only by a lossless widening
(int32 and int64) is copied in the wider type, with a notice; a true type conflict is written anew from
the values read, with a notice naming the columns.

From a hostile review: such a folder's copy was rebuilt from Python values, so timestamp[ns] became
timestamp[us] (distinct values collapsed) and uint64, dictionary and large_string columns changed
type, with no notice."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

DISTINCT = [f"what is the value of item number {i} in the list of things" for i in range(10)]
QUESTIONS = DISTINCT[:6] + DISTINCT[:3] + DISTINCT[9:]      # rows 6-8 repeat rows 0-2: dedup drops them
NS = 1_700_000_000_123_456_789


def typed_part(rows: range) -> dict:
    """Columns of the stored types a rebuild from Python values loses, for the rows ``rows``."""
    return {
        "question": pa.array([QUESTIONS[i] for i in rows]).dictionary_encode(),
        "at": pa.array([NS + i for i in rows], pa.timestamp("ns")),
        "big": pa.array([2**64 - 1 - i for i in rows], pa.uint64()),
        "note": pa.array([f"note {i}" for i in rows], pa.large_string()),
    }


def evolved_folder(tmp_path):
    """part-0: rows 0-5; part-1: rows 6-9 (6-8 repeat 0-2's questions), with an extra column."""
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table(typed_part(range(6))), folder / "part-0.parquet")
    later = {**typed_part(range(6, 10)), "extra": pa.array([7, -8, 9, 10], pa.int16())}
    pq.write_table(pa.table(later), folder / "part-1.parquet")
    return folder


def expected(folder, dropped: list) -> pa.Table:
    """pyarrow's reading of the files, the first given the extra column as nulls, less ``dropped``."""
    first, second = (pq.read_table(folder / f"part-{k}.parquet") for k in (0, 1))
    first = first.append_column(second.schema.field("extra"), pa.nulls(first.num_rows, pa.int16()))
    both = pa.concat_tables([first, second])
    return both.take([i for i in range(both.num_rows) if i not in dropped])


def assert_same_rows(copy: pa.Table, truth: pa.Table) -> None:
    """The same schema and, column by column, the same values (a dictionary column by its values: the
    copy's batches may hold other dictionaries than pyarrow's reading)."""
    assert copy.schema.equals(truth.schema, check_metadata=False), (copy.schema, truth.schema)
    for name, field in zip(copy.column_names, copy.schema):
        plain = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        got, want = (t.column(name).cast(plain).combine_chunks() for t in (copy, truth))
        assert got.equals(want), (name, got, want)


def dropped_rows(report) -> list:
    data = json.loads(report.read_text())
    return sorted(d["row"] for d in data.get("dropped_rows", data.get("dropped", [])))


def test_a_dedup_copy_of_an_evolved_folder_keeps_every_stored_type(tmp_path, run_cli):
    folder = evolved_folder(tmp_path)
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "kept.parquet.manifest.json")
    assert dropped == [6, 7, 8]
    copy, truth = pq.read_table(out), expected(folder, dropped)
    assert_same_rows(copy, truth)
    assert len(set(copy.column("at").cast(pa.int64()).to_pylist())) == copy.num_rows      # nothing collapsed
    assert "change type" not in err


def test_a_clean_copy_of_an_evolved_folder_keeps_them_too(tmp_path, run_cli):
    folder = evolved_folder(tmp_path)
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"question": DISTINCT[4]}) + "\n", encoding="utf-8")
    out = tmp_path / "clean.parquet"
    rc, _, err = run_cli("clean", folder, "--against", train, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "clean.parquet.dropped.json")
    assert dropped == [4]
    copy, truth = pq.read_table(out), expected(folder, dropped)
    assert_same_rows(copy, truth)


def test_a_capped_copy_of_an_evolved_folder_is_its_first_rows_as_stored(tmp_path, run_cli):
    folder = evolved_folder(tmp_path)
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--max-rows", "8", "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "kept.parquet.manifest.json")
    assert dropped == [6, 7]
    truth = expected(folder, dropped).slice(0, 6)
    assert_same_rows(pq.read_table(out), truth)


def test_a_losslessly_widened_column_is_copied_in_the_wider_type_and_said(tmp_path, run_cli):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"question": DISTINCT[:3], "n": pa.array([1, 2, 3], pa.int32())}),
                   folder / "part-0.parquet")
    pq.write_table(pa.table({"question": DISTINCT[3:6], "n": pa.array([2**40, 5, 6], pa.int64())}),
                   folder / "part-1.parquet")
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    copy = pq.read_table(out)
    assert copy.schema.field("n").type == pa.int64()
    assert copy.column("n").to_pylist() == [1, 2, 3, 2**40, 5, 6]
    assert "column 'n'" in err and "int64" in err


def test_conflicting_column_types_are_written_anew_with_a_notice_naming_them(tmp_path, run_cli):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"question": DISTINCT[:3], "n": pa.array([1, 2, 3], pa.uint64())}),
                   folder / "part-0.parquet")
    pq.write_table(pa.table({"question": DISTINCT[3:6], "n": pa.array(["a", "b", "c"])}),
                   folder / "part-1.parquet")
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    assert pq.read_table(out).column("question").to_pylist() == DISTINCT[:6]
    notes = [line for line in err.splitlines() if "conflict" in line]
    assert len(notes) == 1 and "'n'" in notes[0] and "uint64" in notes[0] and "string" in notes[0], err
