"""Hostile inputs, as a reviewer would try them: every CLI option and environment variable given
absurd values, every input format cut or damaged at every kind of boundary, sources of kinds that
are not supported. Each gives a clear AuditorError (exit 2, a specific message, no traceback) or,
for a bad environment value, a stated warning; never a traceback, never a silent success. Reading
is bounded: a gzip bomb and a single huge line are refused after at most the byte budget
(AUDITOR_MAX_BYTES), with the reading process's peak RSS measured. Only data made here (and the
bundled examples) is used."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import auditor
from auditor import AuditorError, ScanSettings, ShingleSpec
from conftest import REPO

ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
MB = 1 << 20


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
    parquet = _parquet(ROWS)
    json_list = json.dumps(ROWS).encode()
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
        "csv_ragged.csv": _csv(ROWS[:5]) + b"one,two,three\n",
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
    "jsonl_huge_int.jsonl": ("bad_format", "line 1: not valid JSON"),
    "json_cut.json": ("bad_format", "looks cut short"),
    "json_cut_after_item.json": ("bad_format", "looks cut short"),
    "json_deep.json": ("bad_format", "nested too deeply"),
    "json_scalar.json": ("bad_format", "holds a int, not records"),
    "json_numbers.json": ("bad_format", "item 0 of the list is a int"),
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

# Sources of kinds that are not supported: said so, with the kinds that are.
URL_SOURCES = ["http://example.org/data.jsonl", "https://example.org/datasets/owner/name",
               "file:///data/train.jsonl", "s3://bucket/data.parquet", "hf://datasets/owner/name"]


def _assert_refused(rc, err, fragment):
    assert rc == 2, err[-600:]
    assert "Traceback" not in err, err[-2000:]
    assert fragment in err, err[-600:]


# --------------------------------------------------------------------------- damaged files

@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_damaged_file_is_a_clear_error_in_the_library(damaged, name):
    code, fragment = FILE_CASES[name]
    for cap in (None, 10_000):           # the same with a row cap the file never reaches
        with pytest.raises(AuditorError) as info:
            auditor.load(str(damaged / name), max_rows=cap)
        assert info.value.code == code and fragment in info.value.message, (cap, info.value.message)
        assert name.split(".")[0] in info.value.message or name == "empty_dir"   # it names the file


@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_damaged_file_is_a_clear_error_in_the_cli(damaged, run_cli, name):
    rc, _, err = run_cli("scan", damaged / name, "--quiet", "--json", "-")
    _assert_refused(rc, err, FILE_CASES[name][1])


def test_cut_files_say_they_look_cut_short(damaged):
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
    big = "".join(json.dumps({"text": f"row {i} " + "words " * 30}) + "\n" for i in range(20_000)).encode()
    (tmp_path / "cut_late.jsonl.gz").write_bytes(gzip.compress(big)[:-2000])
    (tmp_path / "cut_late.csv").write_bytes(_csv(ROWS) + b'"never closed,1\n')
    for path in (damaged / "jsonl_cut_mid_line.jsonl", damaged / "json_cut.json", damaged / "jsonl_bad_line.jsonl",
                 tmp_path / "cut_late.jsonl.gz", tmp_path / "cut_late.csv"):
        table = auditor.load(str(path), max_rows=1)
        assert len(table.rows) == 1 and table.truncated, path.name
        with pytest.raises(AuditorError):
            auditor.load(str(path))


@pytest.mark.parametrize("source", URL_SOURCES)
def test_url_sources_are_refused_with_the_supported_kinds(run_cli, source):
    with pytest.raises(AuditorError) as info:
        auditor.load(source)
    assert info.value.code == "usage" and "sources are not supported" in info.value.message
    assert "Hugging Face dataset id" in info.value.hint and "JSONL" in info.value.hint
    rc, _, err = run_cli("scan", source, "--quiet")
    _assert_refused(rc, err, "sources are not supported")


def test_url_of_a_hub_dataset_suggests_its_id():
    with pytest.raises(AuditorError) as info:
        auditor.load("https://example.org/datasets/owner/name")
    assert "'owner/name'" in info.value.hint


# --------------------------------------------------------------------------- odd but valid files

def test_csv_cell_longer_than_the_csv_module_default_is_read(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text('text,answer\n"' + "word " * 60_000 + '",1\nshort text here,2\n', encoding="utf-8")
    table = auditor.load(str(path))
    assert len(table.rows) == 2 and len(table.rows[0]["text"]) == 300_000


def test_csv_with_repeated_column_names_keeps_both_and_says_so(tmp_path, run_cli):
    path = tmp_path / "dup.csv"
    path.write_text("text,text,answer\nfirst text here,second text here,1\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [{"text": "first text here", "text.1": "second text here", "answer": "1"}]
    assert any("text.1" in n for n in table.notices)
    rc, out, err = run_cli("scan", path, "--quiet", "--json", "-")
    assert rc == 0, err
    assert any("text.1" in n for n in json.loads(out)["input"]["notices"])


def test_byte_order_marks_are_accepted(tmp_path):
    for name, data in (("bom.jsonl", JSONL), ("bom.csv", _csv(ROWS)), ("bom.json", json.dumps(ROWS).encode())):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + data)
        for cap in (None, 5):
            table = auditor.load(str(path), max_rows=cap)
            assert table.rows[0]["text"] == ROWS[0]["text"] and "text" in table.columns, name


# --------------------------------------------------------------------------- CLI options

def _opt_cases(f: str) -> dict:
    """case -> (argv, message fragment)."""
    return {
        "max-rows 0": (["scan", f, "--max-rows", "0"], "must be at least 1"),
        "max-rows negative": (["scan", f, "--max-rows=-5"], "must be at least 1"),
        "max-rows huge": (["scan", f, "--max-rows", "9" * 30], "too large"),
        "max-rows float": (["scan", f, "--max-rows", "1e5"], "not a whole number"),
        "max-rows nan": (["scan", f, "--max-rows", "nan"], "not a whole number"),
        "threshold nan": (["scan", f, "--threshold", "nan"], "outside (0, 1]"),
        "threshold inf": (["scan", f, "--threshold", "inf"], "outside (0, 1]"),
        "threshold 1e309": (["scan", f, "--threshold", "1e309"], "outside (0, 1]"),
        "threshold 0": (["scan", f, "--threshold", "0"], "outside (0, 1]"),
        "threshold negative": (["scan", f, "--threshold=-0.5"], "outside (0, 1]"),
        "threshold text": (["scan", f, "--threshold", "high"], "not a number"),
        "thresholds empty": (["scan", f, "--thresholds", ","], "give thresholds like"),
        "thresholds nan": (["scan", f, "--thresholds", "0.5,nan"], "outside (0, 1]"),
        "shingle huge": (["scan", f, "--shingle", "word:" + "9" * 30], "Bad shingle setting"),
        "shingle zero": (["scan", f, "--shingle", "char:0"], "Bad shingle setting"),
        "shingle unit": (["scan", f, "--shingle", "byte:3"], "Bad shingle setting"),
        "num-perm 1": (["scan", f, "--num-perm", "1"], "num_perm 1 is outside"),
        "num-perm huge": (["scan", f, "--num-perm", "9" * 30], "too large"),
        "seed huge": (["scan", f, "--seed", "9" * 30], "is outside 0 .. 2^32-1"),
        "seed negative": (["scan", f, "--seed=-1"], "is outside 0 .. 2^32-1"),
        "seed nan": (["scan", f, "--seed", "nan"], "invalid int value"),
        "method": (["scan", f, "--method", "fast"], "invalid choice"),
        "normalizer": (["scan", f, "--normalizer", "fancy"], "invalid choice"),
        "text role missing": (["scan", f, "--text", "nope"], "The text field 'nope' is in no record"),
        "ngram huge": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "10000000000"], "from 1 to 64"),
        "ngram 65": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "65"], "from 1 to 64"),
        "ngram 0": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "0"], "from 1 to 64"),
        "ngram float": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "1e3"], "from 1 to 64"),
        "ngram text": (["contamination", f, "--benchmark", "gsm8k", "--ngram", "many"], "from 1 to 64"),
        "contamination max-rows huge": (["contamination", f, "--benchmark", "gsm8k", "--max-rows", "9" * 30],
                                        "too large"),
        "leak threshold nan": (["leak", f, f, "--threshold", "nan"], "outside (0, 1]"),
        "leak max-rows 0": (["leak", f, f, "--max-rows", "0"], "must be at least 1"),
        "matrix threshold": (["matrix", "-d", f"a:train={f}", "-d", f"b:test={f}", "--threshold", "2"],
                             "outside (0, 1]"),
        "matrix spec": (["matrix", "-d", "nonsense", "-d", f"b:test={f}"], "Bad dataset spec"),
        "matrix one dataset": (["matrix", "-d", f"a:train={f}"], "at least two"),
        "clean threshold": (["clean", f, "--against", f, "--out", "never.jsonl", "--threshold", "inf"],
                            "outside (0, 1]"),
    }


OPT_NAMES = sorted(_opt_cases("F"))


@pytest.mark.parametrize("case", OPT_NAMES)
def test_absurd_option_values_are_usage_errors(tmp_path, run_cli, case):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    argv, fragment = _opt_cases(str(path))[case]
    rc, _, err = run_cli(*argv, "--quiet", cwd=tmp_path)
    _assert_refused(rc, err, fragment)
    assert not (tmp_path / "never.jsonl").exists()


def test_unquoted_glob_expanded_by_the_shell_gets_a_hint(tmp_path, run_cli):
    """`auditor scan data/*.jsonl` unquoted: the shell passes several files; the error says to quote
    the glob or pass the directory, and the quoted glob then reads every file."""
    for name in ("a.jsonl", "b.jsonl", "c d.jsonl"):
        (tmp_path / name).write_bytes(JSONL)
    rc, _, err = run_cli("scan", "a.jsonl", "b.jsonl", "c d.jsonl", "--quiet", cwd=tmp_path)
    _assert_refused(rc, err, "unrecognized arguments: b.jsonl c d.jsonl")
    assert "Quote the glob" in err and "directory" in err, err
    rc, _, err = run_cli("scan", "a.jsonl", "--bogus", "--quiet", cwd=tmp_path)
    _assert_refused(rc, err, "unrecognized arguments: --bogus")
    assert "Quote the glob" not in err, err
    rc, out, err = run_cli("scan", "*.jsonl", "--quiet", "--json", "-", cwd=tmp_path)
    source = json.loads(out)["input"]
    assert rc in (0, 1) and source["records"] == 3 * len(JSONL.splitlines()), err[-2000:]
    assert source["files"] == ["a.jsonl", "b.jsonl", "c d.jsonl"], source


# --------------------------------------------------------------------------- environment variables

# (variable, value, the value then used): a bad value is a stated warning, never fatal or silent.
ENV_WARNINGS = [
    ("AUDITOR_THREADS", "many", "using"), ("AUDITOR_THREADS", "0", "using"), ("AUDITOR_THREADS", "-2", "using"),
    ("AUDITOR_THREADS", "99999999999999999999", "using 64"), ("AUDITOR_THREADS", "1.5", "using"),
    ("AUDITOR_MAX_BYTES", "lots", "using 1 GiB"), ("AUDITOR_MAX_BYTES", "0", "using 1 GiB"),
    ("AUDITOR_MAX_BYTES", "-5", "using 1 GiB"), ("AUDITOR_MAX_BYTES", "nan", "using 1 GiB"),
    ("AUDITOR_MAX_BYTES", "inf", "using 1 GiB"),
]


@pytest.mark.parametrize("name, value, used", ENV_WARNINGS)
def test_bad_environment_values_warn_and_run(run_cli, name, value, used):
    rc, out, err = run_cli("scan", "example:humaneval", "--quiet", "--json", "-", env={name: value})
    assert rc == 0 and "Traceback" not in err, err[-1000:]
    assert f"warning: {name}={value!r}" in err and used in err, err
    assert json.loads(out)["kind"] == "scan"


@pytest.mark.parametrize("value, used", [("nan", "using 10"), ("-1", "using 10"), ("0", "using 10"),
                                         ("soon", "using 10"), ("inf", "using 600"), ("1e400", "using 600")])
def test_bad_hub_timeout_warns_and_the_hub_error_is_clear(run_cli, tmp_path, value, used):
    # Nothing listens on port 9 of this machine: the hub does not answer, quickly.
    env = {"AUDITOR_HUB_TIMEOUT": value, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0",
           "HF_HOME": str(tmp_path / "hf")}
    rc, _, err = run_cli("scan", "someone/something", "--quiet", env=env)
    _assert_refused(rc, err, "did not answer")
    assert f"warning: AUDITOR_HUB_TIMEOUT={value!r}" in err and used in err


def test_hub_timeout_is_read_when_used_not_at_import(monkeypatch):
    from auditor.io import hub
    monkeypatch.setenv("AUDITOR_HUB_TIMEOUT", "3.5")
    assert hub.hub_timeout() == 3.5
    monkeypatch.setenv("AUDITOR_HUB_TIMEOUT", "never")
    with pytest.warns(UserWarning, match="AUDITOR_HUB_TIMEOUT='never'"):
        assert hub.hub_timeout() == 10.0


def test_max_bytes_sizes_and_threads(monkeypatch):
    from auditor import parallel
    from auditor.io import budget, sources
    for raw, value in (("64M", 64 * MB), ("2G", 2 << 30), ("1GiB", 1 << 30), ("512k", 512 << 10), ("12345", 12345)):
        monkeypatch.setenv("AUDITOR_MAX_BYTES", raw)
        assert budget.max_bytes() == value
    monkeypatch.setenv("AUDITOR_THREADS", "3")
    assert parallel._workers() == 3
    monkeypatch.setenv("AUDITOR_THREADS", "100000")
    with pytest.warns(UserWarning, match="using 64"):
        assert parallel._workers() == 64


def test_a_tiny_byte_limit_is_a_clear_error(run_cli, tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    rc, _, err = run_cli("scan", path, "--quiet", env={"AUDITOR_MAX_BYTES": "1000"})
    _assert_refused(rc, err, "AUDITOR_MAX_BYTES")
    assert "--max-rows" in err            # no row cap was given: a row cap is a way out
    rc, _, err = run_cli("scan", path, "--quiet", "--max-rows", "250", env={"AUDITOR_MAX_BYTES": "1000"})
    _assert_refused(rc, err, "AUDITOR_MAX_BYTES")
    assert "row cap (250 rows) was not reached" in err and "cap the rows read" not in err


def test_out_of_memory_hint_never_suggests_the_row_cap_already_given():
    from auditor import cli

    def boom(args):
        raise MemoryError

    old = cli.COMMANDS["scan"]
    cli.COMMANDS["scan"] = boom
    try:
        import contextlib
        import io
        for argv, wanted, unwanted in ((["scan", "x.jsonl"], "cap the rows read with --max-rows", "lower"),
                                       (["scan", "x.jsonl", "--max-rows", "5"], "lower --max-rows", "cap the rows")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                assert cli.main(argv) == 2
            assert wanted in err.getvalue() and unwanted not in err.getvalue()
    finally:
        cli.COMMANDS["scan"] = old


# --------------------------------------------------------------------------- the Python API

def test_library_takes_paths(tmp_path):
    from auditor.clean import clean
    from auditor.contamination import contamination
    from auditor.leakage import leak
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    assert len(auditor.load(path).rows) == 300
    assert auditor.scan(path).records == 300
    assert leak(path, path).summary()["b"]["records"] == 300
    assert contamination(path, "gsm8k").corpus_records == 300
    assert len(clean(path, path).kept) == 0 and len(clean(path, [path]).kept) == 0


@pytest.mark.parametrize("kwargs, fragment", [
    ({"text": 5}, "text role must be a field name"),
    ({"answer": ["answer"]}, "answer role must be a field name"),
    ({"labels": 5}, "labels role must be a list of field names"),
    ({"labels": [1]}, "labels role must be a field name"),
    ({"max_rows": True}, "max_rows must be a positive whole number"),
    ({"max_rows": 2.5}, "max_rows must be a positive whole number"),
    ({"max_rows": 10 ** 30}, "more than any source can hold"),
    ({"settings": ScanSettings(shingle="word:0")}, "Bad shingle setting"),
    ({"settings": ScanSettings(shingle=3)}, "Bad shingle setting"),
    ({"settings": ScanSettings(shingle=ShingleSpec("word", 0))}, "Bad shingle setting"),
    ({"settings": ScanSettings(threshold="0.7")}, "is not a number"),
    ({"settings": ScanSettings(threshold=float("nan"))}, "outside (0, 1]"),
    ({"settings": ScanSettings(thresholds=0.5)}, "thresholds must be a list"),
    ({"settings": ScanSettings(thresholds=(0.5, None))}, "is not a number"),
    ({"settings": ScanSettings(method="fast")}, "Unknown method"),
    ({"settings": ScanSettings(num_perm=True)}, "num_perm"),
    ({"settings": ScanSettings(normalizer=["default"])}, "normaliser is named by a string"),
])
def test_library_arguments_of_the_wrong_kind_are_usage_errors(tmp_path, kwargs, fragment):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    with pytest.raises(AuditorError) as info:
        auditor.scan(path, **kwargs)
    assert info.value.code == "usage" and fragment in info.value.message, info.value.message


@pytest.mark.parametrize("source", [None, 42, b"bytes", ["a.jsonl"], ""])
def test_library_source_of_the_wrong_kind_is_a_usage_error(source):
    with pytest.raises(AuditorError) as info:
        auditor.load(source)
    assert info.value.code == "usage" and "No dataset given" in info.value.message


def test_shingle_spec_as_a_string_is_parsed(tmp_path):
    from auditor.leakage import leak
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    assert auditor.scan(path, settings=ScanSettings(shingle="char:5")).settings.shingle == ShingleSpec("char", 5)
    assert leak(path, path, shingle="word:2").summary()["settings"]["shingle"] == {"unit": "word", "size": 2}


@pytest.mark.parametrize("call, fragment", [
    (lambda p: import_module("auditor.leakage").leak(p, p, threshold="0.5"), "is not a number"),
    (lambda p: import_module("auditor.leakage").leak(p, p, max_rows=0), "max_rows"),
    (lambda p: import_module("auditor.contamination").contamination(p, "gsm8k", max_rows=-1), "max_rows"),
    (lambda p: import_module("auditor.contamination").contamination(p, "gsm8k", ngram=10 ** 10), "from 1 to 64"),
    (lambda p: import_module("auditor.contamination").contamination(p, "gsm8k", ngram=True), "from 1 to 64"),
    (lambda p: import_module("auditor.clean").clean(p, p, threshold=2), "outside (0, 1]"),
    (lambda p: import_module("auditor.matrix").overlap_matrix([f"a:x={p}", f"b:y={p}"], threshold=0),
     "outside (0, 1]"),
])
def test_cross_dataset_api_checks_its_arguments(tmp_path, call, fragment):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    with pytest.raises(AuditorError) as info:
        call(path)
    assert info.value.code == "usage" and fragment in info.value.message


# --------------------------------------------------------------------------- bounded reading

def test_a_row_cap_stops_reading_for_every_format(tmp_path, monkeypatch):
    """Files far beyond the byte budget: read whole they are refused; with a small row cap only
    their first rows are read, so the budget is never reached (JSONL, JSON list, CSV, Parquet)."""
    from auditor.io import budget, sources
    rows = [{"text": f"row {i} " + "filler words " * 20, "answer": str(i)} for i in range(20_000)]
    files = {"big.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode(),
             "big.jsonl.gz": gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), 1),
             "big.json": json.dumps(rows).encode(), "big.csv": _csv(rows), "big.parquet": _parquet(rows)}
    monkeypatch.setattr(budget, "MAX_BYTES", 1_000_000)
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(AuditorError) as info:
            auditor.load(str(path))
        assert info.value.code == "too_large" and "AUDITOR_MAX_BYTES" in info.value.message, name
        table = auditor.load(str(path), max_rows=10)
        assert len(table.rows) == 10 and table.truncated and table.rows[9]["answer"] == "9", name


def _bomb(path: Path, head: bytes, block: bytes, times: int, tail: bytes = b"") -> int:
    """A gzip file of ``times`` copies of one compressed member: tiny on disk, huge decompressed."""
    member = gzip.compress(block, 9)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(times):
            fh.write(member)
        if tail:
            fh.write(gzip.compress(tail))
    return len(head) + len(block) * times + len(tail)


CHILD = """
import resource, sys, time
import auditor
started = time.perf_counter()
try:
    auditor.load(sys.argv[1], max_rows=None if sys.argv[2] == '-' else int(sys.argv[2]))
    print('LOADED')
except auditor.AuditorError as exc:
    print(exc.code, exc.message)
try:    # this process's own peak (ru_maxrss would include the parent's pages from before exec)
    peak = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:'))
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print('PEAK_KB', peak)
print('SECONDS', time.perf_counter() - started)
"""

CAP = 64 * MB


def _load_in_child(path: Path, max_rows="-") -> tuple[str, float, float]:
    env = {**os.environ, "AUDITOR_MAX_BYTES": "64M",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(max_rows)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    peak = int(next(x for x in lines if x.startswith("PEAK_KB")).split()[1]) * 1024
    seconds = float(next(x for x in lines if x.startswith("SECONDS")).split()[1])
    return lines[0], peak, seconds


# name -> (head, repeated block, copies, tail, what the refusal says, peak RSS allowed): each
# decompresses to about 1 GiB, 16 times the 64 MiB budget.
BOMBS = {
    "blank_lines.jsonl.gz": (b"", b"\n" * (16 * MB), 64, b"", "reading limit of 64 MiB", CAP // 2),
    "empty_objects.jsonl.gz": (b"", b"{}\n" * (5 * MB), 64, b"", "reading limit of 64 MiB", CAP // 2),
    "json_list.json.gz": (b"[", b'{"t": 1},' * (2 * MB), 55, b'{"t": 1}]', "reading limit of 64 MiB", CAP // 2),
    "records.jsonl.gz": (b"", b'{"text": "a b c d"}\n' * MB, 50, b"", "reading limit of 64 MiB", CAP + 48 * MB),
    "records.csv.gz": (b"text\n", b"a b c\n" * (3 * MB), 55, b"", "reading limit of 64 MiB", CAP + 48 * MB),
    "one_line.jsonl.gz": (b'{"text": "', b"a" * (16 * MB), 64, b"", "line 1: longer than 4 MiB", CAP // 2),
    "one_cell.csv.gz": (b'text\n"', b"a" * (16 * MB), 64, b"", "line 2: longer than 4 MiB", CAP // 2),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_gzip_bombs_and_huge_lines_are_refused_within_the_budget(tmp_path, name):
    head, block, copies, tail, fragment, allowed = BOMBS[name]
    path = tmp_path / name
    size = _bomb(path, head, block, copies, tail)
    assert size >= 15 * CAP and path.stat().st_size < 4 * MB
    first, peak, seconds = _load_in_child(path)
    assert first.startswith("too_large") and fragment in first and "AUDITOR_MAX_BYTES" in first, first
    # Refused while streaming: memory stays within the budget (records cost about what the
    # budget charges for them; blank lines, empty objects and one long line cost next to nothing).
    assert peak < allowed, f"peak RSS {peak / MB:.0f} MiB for {name} (budget 64 MiB)"
    assert seconds < 60


def test_a_row_cap_reads_a_bomb_only_as_far_as_it_needs(tmp_path):
    path = tmp_path / "records.jsonl.gz"
    _bomb(path, b"", b'{"text": "a b c d"}\n' * MB, 50)
    first, peak, _ = _load_in_child(path, 1000)
    assert first == "LOADED" and peak < 48 * MB


def test_a_hub_id_never_reads_a_local_folder_of_that_name(tmp_path):
    """kind="hub" (what the app passes) reads the Hub only, even when a folder of the same name
    exists and the Hub is offline: the existing and the missing name get the same answer."""
    code = ("import auditor\n"
            "for name in ('auditor/examples', 'auditor/nothere'):\n"
            "    try:\n"
            "        print('READ', len(auditor.load(name, kind='hub').rows))\n"
            "    except auditor.AuditorError as exc:\n"
            "        print(exc.code, exc.message.replace(repr(name), 'NAME'))\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "HF_DATASETS_CACHE": str(tmp_path / "ds"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300)
    answers = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(answers) == 2, proc.stderr[-2000:]
    assert answers[0] == answers[1] and not answers[0].startswith("READ"), answers


# --------------------------------------------------------------------------- the app

APP_CHILD = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, os.getcwd())
import app, auditor
from auditor import AuditorError

def outcome(fn, *args):
    try:
        value = fn(*args)
        return {"ok": getattr(value, "kind", None) or getattr(value, "max_rows", None)}
    except AuditorError as exc:
        return {"code": exc.code, "message": exc.message}

ids, max_rows, thresholds = json.loads(sys.argv[1])
out = {"ids": {d: outcome(app.resolve_source, d) for d in ids},
       "max_rows": {json.dumps(m): outcome(app.make_request, "example:gsm8k", "", "", "", "", "", [], 0.7, m)
                    for m in max_rows},
       "thresholds": {t: outcome(app.make_request, "example:gsm8k", "", "", "", "", "", [], t, None)
                      for t in thresholds},
       "row_cap": app.ROW_CAP}
result = auditor.scan("example:humaneval")
size = app.result_bytes(result)
cache = app.ResultCache(int(2.5 * size), size=100)
for key in range(6):
    cache.put(key, result)
tiny = app.ResultCache(1, size=100)
tiny.put("a", result)
tiny.put("b", result)
out["cache"] = {"size": size, "kept": list(cache._items), "bytes": cache.bytes,
                "tiny_kept": list(tiny._items), "tiny_b": tiny.get("b") is result}
print(json.dumps(out))
"""

# (existing path, missing path) relative to the repository, where the app runs
PATH_PAIRS = [("auditor", "auditorzz"), ("auditor/examples", "auditor/nothere"), ("app.py", "nothere.py"),
              ("README.md", "NOPE.md"), ("tests/conftest.py", "tests/nothere.py"), ("./app.py", "./nothere.py"),
              (f"../{REPO.name}", "../nothere-at-all"), ("auditor/..", "nothere/.."),
              ("auditor/examples/README.md", "auditor/examples/NOPE.md")]
APP_MAX_ROWS = {"1e309": "cap", "inf": "cap", "1e30": "cap", 10 ** 400: "cap", "nan": "not a whole number",
                "-1e309": "at least 1", "2.5": "not a whole number", "-3": "at least 1", "many": "not a whole number",
                True: "not a whole number", "25": 25}
APP_THRESHOLDS = ["1e309", "nan", "-inf", "0", "2", "high", "0x1p-2"]


@pytest.fixture(scope="module")
def app_answers():
    """The app's answers, from a separate process (importing app.py sets environment variables of
    its own, which must not leak into this test session)."""
    ids = [p for pair in PATH_PAIRS for p in pair]
    arg = json.dumps([ids, list(APP_MAX_ROWS), APP_THRESHOLDS])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", APP_CHILD, arg], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("existing, missing", PATH_PAIRS)
def test_app_treats_existing_and_missing_server_paths_alike(app_answers, existing, missing):
    """No existence oracle: whether an id is refused, or sent to the hub only, depends on its text
    alone, never on whether a path of that name exists on the server."""
    assert (REPO / existing).exists() and not (REPO / missing).exists()
    answers = [app_answers["ids"][d] for d in (existing, missing)]
    for answer, dataset in zip(answers, (existing, missing)):
        if "message" in answer:
            answer["message"] = answer["message"].replace(repr(dataset), "NAME")
    assert answers[0] == answers[1]
    assert answers[0] in ({"ok": "hub"}, {"code": "not_found", "message": "NAME is not a Hugging Face dataset id."})


@pytest.mark.parametrize("max_rows", list(APP_MAX_ROWS), ids=[str(m)[:12] for m in APP_MAX_ROWS])
def test_app_share_link_row_caps(app_answers, max_rows):
    expected, got = APP_MAX_ROWS[max_rows], app_answers["max_rows"][json.dumps(max_rows)]
    if expected == "cap":            # beyond what the app reads: the app's own cap, which the page states
        assert got == {"ok": app_answers["row_cap"]}
    elif isinstance(expected, int):
        assert got == {"ok": expected}
    else:
        assert got["code"] == "usage" and expected in got["message"]


@pytest.mark.parametrize("threshold", APP_THRESHOLDS)
def test_app_share_link_thresholds(app_answers, threshold):
    got = app_answers["thresholds"][threshold]
    assert got["code"] == "usage" and "Threshold" in got["message"]


def test_app_cache_is_bounded_by_bytes(app_answers):
    cache = app_answers["cache"]
    assert cache["size"] > 0
    assert cache["kept"] == [4, 5] and cache["bytes"] <= 2.5 * cache["size"]
    assert cache["tiny_kept"] == ["b"] and cache["tiny_b"]    # the newest result is always kept
