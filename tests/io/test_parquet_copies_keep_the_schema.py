"""dedup and clean copies of local Parquet files to .parquet are the input's rows as stored, less the
dropped ones: the column types (nanosecond timestamps, unsigned and narrow integers, decimals,
dictionary-encoded text), a blank column name, as in the file. A folder of Parquet files of one
schema is copied file after file; files of different schemas are written anew, as before.

From the round-7 hostile review: the copies were rebuilt from Python values, so nanosecond timestamps
were cut to microseconds (1577836800000000001 ns read back as ...000000000), uint64 values past the
int64 range became a column of JSON text (with a notice calling it mixed types), int8 became int64,
decimal128(10, 2) decimal128(3, 2) and the blank column 'Unnamed: 0'. Ground truth: pyarrow's own
reading of the input, less the rows the manifest / report lists as dropped."""
from __future__ import annotations

import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import real_data

QUESTIONS = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:10]]
QUESTIONS = QUESTIONS + QUESTIONS[:3]          # rows 10-12 repeat rows 0-2: dedup and clean drop them
N = len(QUESTIONS)


def typed_table(offset: int = 0) -> pa.Table:
    return pa.table({
        "question": pa.array(QUESTIONS).dictionary_encode(),
        "answer": pa.array([str(i % 4) for i in range(N)]),
        "at": pa.array([1577836800000000001 + offset + i for i in range(N)], pa.timestamp("ns")),
        "big": pa.array([2**64 - 1 - i for i in range(N)], pa.uint64()),
        "small": pa.array([i - 5 for i in range(N)], pa.int8()),
        "price": pa.array([decimal.Decimal(f"{i}.25") for i in range(N)], pa.decimal128(10, 2)),
        "": pa.array([f"note {i}" for i in range(N)]),
    })


def dropped_rows(report_path, key: str = "dropped_rows") -> list:
    return sorted(d["row"] for d in json.loads(report_path.read_text())[key])


def test_a_dedup_copy_keeps_every_column_as_stored(tmp_path, run_cli):
    src = tmp_path / "typed.parquet"
    pq.write_table(typed_table(), src)
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", src, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "kept.parquet.manifest.json")
    assert dropped == [10, 11, 12]
    truth = pq.read_table(src).take([i for i in range(N) if i not in dropped])
    copy = pq.read_table(out)
    assert copy.schema.equals(truth.schema, check_metadata=False), (copy.schema, truth.schema)
    assert copy.equals(truth)


def test_a_clean_copy_keeps_them_too(tmp_path, run_cli):
    test, train = tmp_path / "test.parquet", tmp_path / "train.jsonl"
    pq.write_table(typed_table(), test)
    train.write_text("".join(json.dumps({"question": q}) + "\n" for q in QUESTIONS[4:6]), encoding="utf-8")
    out = tmp_path / "clean.parquet"
    rc, _, err = run_cli("clean", test, "--against", train, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "clean.parquet.dropped.json")
    assert dropped == [4, 5]
    truth = pq.read_table(test).take([i for i in range(N) if i not in dropped])
    assert pq.read_table(out).equals(truth)


def test_a_folder_of_one_schema_is_copied_file_after_file(tmp_path, run_cli):
    folder = tmp_path / "parts"
    folder.mkdir()
    first, second = typed_table(), typed_table(offset=1000)
    pq.write_table(first.slice(0, 7), folder / "part-0.parquet", row_group_size=3)
    pq.write_table(second.slice(7), folder / "part-1.parquet", row_group_size=4)
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "kept.parquet.manifest.json")
    both = pa.concat_tables([pq.read_table(folder / "part-0.parquet"), pq.read_table(folder / "part-1.parquet")])
    assert pq.read_table(out).equals(both.take([i for i in range(N) if i not in dropped]))


def test_files_of_other_schemas_are_written_anew(tmp_path, run_cli):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"question": QUESTIONS[:7], "answer": ["1"] * 7}), folder / "part-0.parquet")
    pq.write_table(pa.table({"question": QUESTIONS[7:], "answer": [2] * (N - 7)}), folder / "part-1.parquet")
    out = tmp_path / "kept.parquet"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    assert pq.read_table(out).column("question").to_pylist() == QUESTIONS[:10]


def test_a_copy_of_no_rows_keeps_the_schema(tmp_path, run_cli):
    test, train = tmp_path / "test.parquet", tmp_path / "train.jsonl"
    pq.write_table(typed_table(), test)
    train.write_text("".join(json.dumps({"question": q}) + "\n" for q in QUESTIONS), encoding="utf-8")
    out = tmp_path / "clean.parquet"
    rc, _, err = run_cli("clean", test, "--against", train, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    copy = pq.read_table(out)
    assert copy.num_rows == 0 and copy.schema.equals(pq.read_schema(test), check_metadata=False)
