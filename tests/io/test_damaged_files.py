"""Files cut or damaged at every kind of boundary, in every format: a clear AuditorError (exit 2,
a specific message, no traceback) in the library and the CLI, never a silent success."""
from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
from auditor import AuditorError
from auditor.cli import main


APPLE_ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in APPLE_ROWS).encode()


def _parquet(rows) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=100)
    return buf.getvalue()


def _csv(rows) -> bytes:
    return ("text,answer\n" + "".join(f"{r['text']},{r['answer']}\n" for r in rows)).encode()


def _files() -> dict[str, bytes]:
    """name -> bytes of every damaged file (the name's extension says what it claims to be)."""
    gz = gzip.compress(JSONL)
    parquet = _parquet(APPLE_ROWS)
    json_list = json.dumps(APPLE_ROWS).encode()
    corrupt = bytearray(gz)
    corrupt[len(corrupt) // 2: len(corrupt) // 2 + 16] = b"\xff" * 16
    return {
        # gzip cut or damaged at every kind of boundary
        "gz_cut_half.jsonl.gz": gz[: len(gz) // 2],
        "gz_cut_before_trailer.jsonl.gz": gz[:-4],
        "gz_cut_in_header.jsonl.gz": gz[:5],
        "gz_corrupt_middle.jsonl.gz": bytes(corrupt),
        "not_gzip.jsonl.gz": JSONL,
        "gz_empty_file.jsonl.gz": b"",
        # Parquet cut or damaged
        "parquet_cut_half.parquet": parquet[: len(parquet) // 2],
        "parquet_cut_footer.parquet": parquet[:-3],
        "parquet_magic_only.parquet": parquet[:4],
        "parquet_empty.parquet": b"",
        "parquet_garbage.parquet": bytes(range(256)) * 8,
        # JSONL
        "jsonl_cut_mid_line.jsonl": JSONL[: len(JSONL) // 2 + 7],
        "jsonl_bad_line.jsonl": b"\n".join(JSONL.split(b"\n")[:3] + [b"{not json}"] + JSONL.split(b"\n")[3:]),
        "jsonl_list_line.jsonl": b'[1, 2, 3]\n',
        "jsonl_nul.jsonl": JSONL[:50] + b"\x00" + JSONL[50:],
        "jsonl_bad_utf8.jsonl": JSONL[:60] + b"\xff\xfe\xfd" + JSONL[60:],
        "jsonl_utf16.jsonl": JSONL.decode().encode("utf-16"),
        "jsonl_utf16_no_bom.jsonl": JSONL.decode().encode("utf-16-le"),
        "jsonl_deep.jsonl": b'{"text": "a b c", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "jsonl_blank.jsonl": b"\n \n\t\n",
        "jsonl_empty.jsonl": b"",
        "jsonl_is_parquet.jsonl": parquet,
        "jsonl_is_gzip.jsonl": gz,
        "jsonl_huge_int.jsonl": b'{"text": 1' + b"0" * 5000 + b"}\n",
        # JSON
        "json_cut.json": json_list[: len(json_list) // 2],
        "json_cut_after_item.json": json_list[: json_list.index(b"}, {") + 1],
        "json_deep.json": b"[" * 100_000 + b"]" * 100_000,
        "json_scalar.json": b"42",
        "json_numbers.json": b"[1, 2, 3]",
        "json_empty.json": b"",
        "json_nul.json": json_list[:30] + b"\x00" + json_list[30:],
        "json_bad_utf8.json": json_list[:40] + b"\xc3\x28" + json_list[40:],
        # CSV / TSV
        "csv_unterminated_quote.csv": b'text,answer\n"an open quote,1\nmore,2\n',
        "csv_ragged.csv": _csv(APPLE_ROWS[:5]) + b"one,two,three\n",
        "csv_header_only.csv": b"text,answer\n",
        "csv_empty.csv": b"",
        "csv_nul.csv": b"text,answer\nhello\x00 world,1\n",
        "csv_bad_utf8.csv": b"text,answer\nhello \xff world,1\n",
        "csv_utf16.csv": "text,answer\nhello world,1\n".encode("utf-16"),
        "tsv_ragged.tsv": b"text\tanswer\na\tb\tc\n",
        # not a data format
        "notes.txt": b"just text\n",
    }


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("damaged")
    for name, data in _files().items():
        (folder / name).write_bytes(data)
    (folder / "empty_dir").mkdir()
    return folder


# file -> (error code, a fragment of the message that says what is wrong)
FILE_CASES = {
    "gz_cut_half.jsonl.gz": ("bad_format", "the gzip stream ends early"),
    "gz_cut_before_trailer.jsonl.gz": ("bad_format", "the gzip stream ends early"),
    "gz_cut_in_header.jsonl.gz": ("bad_format", "the gzip stream ends early"),
    "gz_corrupt_middle.jsonl.gz": ("bad_format", "not a valid gzip file"),
    "not_gzip.jsonl.gz": ("bad_format", "not a valid gzip file"),
    "gz_empty_file.jsonl.gz": ("empty_input", "no records found"),
    "parquet_cut_half.parquet": ("bad_format", "not a readable Parquet file"),
    "parquet_cut_footer.parquet": ("bad_format", "not a readable Parquet file"),
    "parquet_magic_only.parquet": ("bad_format", "not a readable Parquet file"),
    "parquet_empty.parquet": ("bad_format", "not a readable Parquet file"),
    "parquet_garbage.parquet": ("bad_format", "not a readable Parquet file"),
    "jsonl_cut_mid_line.jsonl": ("bad_format", "not valid JSON"),
    "jsonl_bad_line.jsonl": ("bad_format", "line 4: not valid JSON"),
    "jsonl_list_line.jsonl": ("bad_format", "line 1: a JSON list, not an object"),
    "jsonl_nul.jsonl": ("bad_format", "byte 50 is a NUL byte"),
    "jsonl_bad_utf8.jsonl": ("bad_format", "not valid UTF-8 (byte 60, line 1)"),
    "jsonl_utf16.jsonl": ("bad_format", "UTF-16"),
    "jsonl_utf16_no_bom.jsonl": ("bad_format", "NUL byte"),
    "jsonl_deep.jsonl": ("bad_format", "nested too deeply"),
    "jsonl_blank.jsonl": ("empty_input", "no records found"),
    "jsonl_empty.jsonl": ("empty_input", "no records found"),
    "jsonl_is_parquet.jsonl": ("bad_format", "a Parquet file"),
    "jsonl_is_gzip.jsonl": ("bad_format", "gzip-compressed"),
    "jsonl_huge_int.jsonl": ("bad_format", "line 1: a whole number of more than 4,300 digits"),
    "json_cut.json": ("bad_format", "looks cut short"),
    "json_cut_after_item.json": ("bad_format", "looks cut short"),
    "json_deep.json": ("bad_format", "nested too deeply"),
    "json_scalar.json": ("bad_format", "holds a number, not records"),
    "json_numbers.json": ("bad_format", "item 0 of the list is a number"),
    "json_empty.json": ("empty_input", "no records found"),
    "json_nul.json": ("bad_format", "byte 30 is a NUL byte"),
    "json_bad_utf8.json": ("bad_format", "not valid UTF-8"),
    "csv_unterminated_quote.csv": ("bad_format", "line 2: a quoted value opened there is never closed"),
    "csv_ragged.csv": ("bad_format", "line 7: 3 values but the header has 2 columns"),
    "csv_header_only.csv": ("empty_input", "no records found"),
    "csv_empty.csv": ("empty_input", "no records found"),
    "csv_nul.csv": ("bad_format", "NUL byte"),
    "csv_bad_utf8.csv": ("bad_format", "not valid UTF-8 (byte 18, line 2)"),
    "csv_utf16.csv": ("bad_format", "UTF-16"),
    "tsv_ragged.tsv": ("bad_format", "line 2: 3 values but the header has 2 columns"),
    "notes.txt": ("bad_format", "unsupported file type"),
    "empty_dir": ("not_found", "holds no JSONL, JSON, CSV or Parquet files"),
}


def _assert_refused(rc, err, fragment):
    assert rc == 2, err[-600:]
    assert "Traceback" not in err, err[-2000:]
    assert fragment in err, err[-600:]


def cli_error(capsys, argv) -> str:
    """Run the CLI; it must exit 2 with one error line and no traceback. Returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_damaged_file_is_a_clear_error_in_the_library(damaged, name):
    """From the hostile-input review."""
    code, fragment = FILE_CASES[name]
    for cap in (None, 10_000):           # the same with a row cap the file never reaches
        with pytest.raises(AuditorError) as info:
            auditor.load(str(damaged / name), max_rows=cap)
        assert info.value.code == code and fragment in info.value.message, (cap, info.value.message)
        assert name.split(".")[0] in info.value.message or name == "empty_dir"   # it names the file


@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_damaged_file_is_a_clear_error_in_the_cli(damaged, run_cli, name):
    """From the hostile-input review."""
    rc, _, err = run_cli("scan", damaged / name, "--quiet", "--json", "-")
    _assert_refused(rc, err, FILE_CASES[name][1])


def test_cut_files_say_they_look_cut_short(damaged):
    """From the hostile-input review."""
    with pytest.raises(AuditorError) as info:
        auditor.load(str(damaged / "jsonl_cut_mid_line.jsonl"))
    assert "cut short" in info.value.hint
    for name in ("json_cut.json", "json_cut_after_item.json"):
        for cap in (None, 10_000):
            with pytest.raises(AuditorError) as info:
                auditor.load(str(damaged / name), max_rows=cap)
            assert "cut short" in info.value.message


def test_a_row_cap_reached_before_the_damage_reads_only_good_rows(damaged, tmp_path):
    # Reading stops at the cap: damage further on is never reached, for every format that streams.
    """From the hostile-input review."""
    big = "".join(json.dumps({"text": f"row {i} " + "words " * 30}) + "\n" for i in range(20_000)).encode()
    (tmp_path / "cut_late.jsonl.gz").write_bytes(gzip.compress(big)[:-2000])
    (tmp_path / "cut_late.csv").write_bytes(_csv(APPLE_ROWS) + b'"never closed,1\n')
    for path in (damaged / "jsonl_cut_mid_line.jsonl", damaged / "json_cut.json", damaged / "jsonl_bad_line.jsonl",
                 tmp_path / "cut_late.jsonl.gz", tmp_path / "cut_late.csv"):
        table = auditor.load(str(path), max_rows=1)
        assert len(table.rows) == 1 and table.truncated, path.name
        with pytest.raises(AuditorError):
            auditor.load(str(path))


def test_twice_gzipped_and_lone_cr_files_say_what_they_are(tmp_path, capsys):
    """From the hostile-input sweep."""
    body = b'{"text": "one two three"}\n{"text": "four five six"}\n'
    twice = tmp_path / "twice.jsonl.gz"
    twice.write_bytes(gzip.compress(gzip.compress(body)))
    assert "gzip-compressed twice" in cli_error(capsys, ["scan", str(twice), "--quiet"])
    old_mac = tmp_path / "old_mac.jsonl"
    old_mac.write_bytes(body.replace(b"\n", b"\r"))
    with pytest.raises(AuditorError) as info:
        auditor.load(str(old_mac))
    assert "carriage return" in info.value.hint and "cut short" not in info.value.hint


@pytest.mark.parametrize("codec", ["xz", "bz2"])
def test_every_stream_of_a_bz2_or_xz_file_is_read_or_refused(real_data, tmp_path, capsys, codec):
    """From a hostile review (session 52): Python's bz2 and lzma readers take whatever follows a stream
    and does not decompress as trailing data and stop there, so a file whose second stream was damaged
    read as its first half, exit 0 (dedup wrote half the records, leak --fail-on-overlap passed). Two
    good streams (and xz's null padding) read whole, on the local reader and the Ray engine's shard
    reader; a damaged second stream, or junk after the first, is a clear error on both."""
    import bz2
    import lzma
    from pyarrow import fs
    from auditor.io.shards import Shard, open_shard, record_batches
    compress = {"xz": lzma.compress, "bz2": bz2.compress}[codec]
    rows = [json.loads(line) for line in (real_data / "gsm8k/test.jsonl").read_text(encoding="utf-8").splitlines()]
    first = "".join(json.dumps(r) + "\n" for r in rows[:300]).encode()
    second = "".join(json.dumps(r) + "\n" for r in rows[300:600]).encode()
    padding = b"\0" * 8 if codec == "xz" else b""
    damaged = bytearray(compress(second))
    damaged[0] ^= 0xFF
    files = {"good": compress(first) + padding + compress(second) + padding,
             "damaged": compress(first) + bytes(damaged), "junk": compress(first) + b"not a stream at all\n"}

    def shard_rows(path: Path) -> list:
        shard = Shard(0, str(path), path.name, "jsonl", path.stat().st_size)
        with open_shard(fs.LocalFileSystem(), shard) as f:
            return [r for batch in record_batches(f, shard) for r in batch]

    for name, data in files.items():
        path = tmp_path / f"{name}.jsonl.{codec}"
        path.write_bytes(data)
        if name == "good":
            assert auditor.load(str(path)).rows == rows[:600]
            assert shard_rows(path) == rows[:600]
            continue
        kind = {"xz": "xz", "bz2": "bzip2"}[codec]
        with pytest.raises(AuditorError, match=f"not a valid {kind} file"):
            auditor.load(str(path))
        with pytest.raises(Exception) as raised:
            shard_rows(path)
        assert path.name in str(raised.value) or isinstance(raised.value, (OSError, lzma.LZMAError))
        out = tmp_path / f"{name}.dedup.jsonl"
        line = cli_error(capsys, ["dedup", str(path), "--out", str(out), "--quiet"])
        assert path.name in line and not out.exists()


def test_a_parquet_value_python_cannot_hold_is_named_not_called_damage(tmp_path, capsys):
    """From a hostile review (session 52): a readable Parquet file with a date32 of 2^31 - 1 days, or a
    timestamp of 2^62 microseconds, in a column that is no role, was refused as "not a readable
    Parquet file ... may be truncated". The column is named, and the file is not called damaged."""
    texts = ["the quick brown fox", "lazy dog sleeps here", "third record text"]
    for name, column in (("date.parquet", pa.array([2 ** 31 - 1, 0, 1], type=pa.date32())),
                         ("ts.parquet", pa.array([2 ** 62, 0, 1], type=pa.timestamp("us")))):
        pq.write_table(pa.table({"text": texts, "when": column}), tmp_path / name)
        assert pq.read_table(tmp_path / name).num_rows == 3                  # pyarrow reads it
        line = cli_error(capsys, ["scan", str(tmp_path / name), "--text", "text"])
        assert f"{name}: column 'when' holds a value Python cannot read" in line
        assert "truncated" not in line
