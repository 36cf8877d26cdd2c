"""Loading every supported source, every way a source can be bad, and the CLI contract."""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
from auditor import AuditorError, ScanSettings

ROWS = [
    {"question": "What is one plus one", "answer": "2", "code": "007"},
    {"question": "Name the capital of Italy", "answer": "Rome", "code": "010"},
    {"question": "How many days are in a week", "answer": "7", "code": "0"},
    {"question": "Spell the word cat, please", "answer": "c-a-t", "code": "00"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows, delimiter=",") -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_parquet(path: Path, rows) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def gzipped(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def make_format(tmp_path: Path, fmt: str) -> Path:
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "d.jsonl", ROWS)
    if fmt == "ndjson":
        return write_jsonl(tmp_path / "d.ndjson", ROWS)
    if fmt == "json-list":
        p = tmp_path / "d.json"
        p.write_text(json.dumps(ROWS, indent=1), encoding="utf-8")
        return p
    if fmt == "json-columns":
        p = tmp_path / "d.json"
        p.write_text(json.dumps({k: [r[k] for r in ROWS] for k in ROWS[0]}), encoding="utf-8")
        return p
    if fmt == "json-data-key":
        p = tmp_path / "d.json"
        p.write_text(json.dumps({"data": ROWS}), encoding="utf-8")
        return p
    if fmt == "csv":
        return write_csv(tmp_path / "d.csv", ROWS)
    if fmt == "tsv":
        return write_csv(tmp_path / "d.tsv", ROWS, delimiter="\t")
    if fmt == "parquet":
        return write_parquet(tmp_path / "d.parquet", ROWS)
    raise ValueError(fmt)


FORMATS = ["jsonl", "ndjson", "json-list", "json-columns", "json-data-key", "csv", "tsv", "parquet"]


# --------------------------------------------------------------------------- loading

@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_load_each_format(tmp_path, fmt, gz):
    path = make_format(tmp_path, fmt)
    if gz:
        path = gzipped(path)
    table = auditor.load(str(path))
    assert table.rows == ROWS
    assert table.columns == ["question", "answer", "code"]
    assert table.files == (path.name,)
    assert table.source == path.name                     # never a directory of this machine
    assert table.truncated is False
    result = auditor.scan(str(path))
    assert result.roles.text == "question" and result.roles.answer == "answer"
    assert result.records == 4


def test_csv_values_stay_strings(tmp_path):
    path = tmp_path / "codes.csv"
    path.write_text("id,text,flag,amount\n007,hello there,true,1.50\n010,second row,,2\n", encoding="utf-8")
    rows = auditor.load(str(path)).rows
    assert rows == [{"id": "007", "text": "hello there", "flag": "true", "amount": "1.50"},
                    {"id": "010", "text": "second row", "flag": "", "amount": "2"}]
    result = auditor.scan(str(path), text="text", id="id")
    assert result.fields.ids == ["007", "010"]


def test_jsonl_types_are_kept_and_numbers_become_text(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [{"text": "a b c", "n": 7, "x": 0.25},
                                              {"text": "d e f", "n": 8, "x": 1.0}])
    assert auditor.load(str(path)).rows[0] == {"text": "a b c", "n": 7, "x": 0.25}
    result = auditor.scan(str(path), text="text", answer="n", group="x")
    assert result.fields.answer == ["7", "8"]
    assert result.fields.group == ["0.25", "1"]      # a whole float is its int (pandas widens ints to floats)


def test_utf8_bom_is_accepted(tmp_path):
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes("\ufeff".encode() + "".join(json.dumps(r) + "\n" for r in ROWS).encode())
    assert auditor.load(str(jsonl)).rows == ROWS
    csv_path = tmp_path / "bom.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + write_csv(tmp_path / "plain.csv", ROWS).read_bytes())
    rows = auditor.load(str(csv_path)).rows
    assert list(rows[0]) == ["question", "answer", "code"]     # no BOM glued to the first column name
    assert rows == ROWS


def test_crlf_and_blank_lines(tmp_path):
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(("\r\n".join(json.dumps(r) for r in ROWS) + "\r\n\r\n\n").encode())
    assert auditor.load(str(path)).rows == ROWS


def test_unicode_line_separator_inside_a_string(tmp_path):
    rows = [{"text": "first\u2028still first"}, {"text": "second"}]
    path = write_jsonl(tmp_path / "ls.jsonl", rows)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert auditor.load(str(path)).rows == rows


def test_directory_glob_and_mixed_formats(tmp_path):
    d = tmp_path / "parts"
    d.mkdir()
    write_jsonl(d / "a.jsonl", ROWS[:2])
    write_csv(d / "b.csv", ROWS[2:])
    (d / "README.txt").write_text("not data")
    (d / ".hidden.jsonl").write_text("garbage")
    table = auditor.load(str(d))
    assert table.rows == ROWS
    assert table.files == ("a.jsonl", "b.csv")
    assert table.source == "parts"
    globbed = auditor.load(str(d / "*.jsonl"))
    assert globbed.rows == ROWS[:2]
    assert auditor.load(str(d / "*.*")).rows == ROWS


def test_directory_with_split_files(tmp_path):
    d = tmp_path / "splits"
    d.mkdir()
    write_jsonl(d / "train.jsonl", ROWS[:3])
    write_jsonl(d / "test.jsonl", ROWS[3:])
    test = auditor.load(str(d), split="test")
    assert test.rows == ROWS[3:] and test.split == "test"
    assert set(test.splits) == {"train", "test"}
    default = auditor.load(str(d))
    assert default.rows == ROWS[:3] and default.split == "train"
    assert any("split not given" in n and "train" in n for n in default.notices)
    result = auditor.scan(str(d))
    assert "split not given" in result.markdown()
    with pytest.raises(AuditorError) as info:
        auditor.load(str(d), split="validation")
    assert info.value.code == "bad_split"
    assert "validation" in info.value.message
    assert "test" in info.value.hint and "train" in info.value.hint


def test_sharded_split_files(tmp_path):
    d = tmp_path / "shards"
    d.mkdir()
    write_parquet(d / "train-00000-of-00002.parquet", ROWS[:1])
    write_parquet(d / "train-00001-of-00002.parquet", ROWS[1:3])
    write_parquet(d / "test-00000-of-00001.parquet", ROWS[3:])
    assert auditor.load(str(d), split="train").rows == ROWS[:3]
    assert auditor.load(str(d), split="test").rows == ROWS[3:]


@pytest.mark.parametrize("config, split, n", [
    (None, None, 7473), ("main", "train", 7473), ("main", "test", 1319), ("socratic", None, 1319),
    ("socratic", "test", 1319),
])
def test_example_gsm8k(config, split, n):
    table = auditor.load("example:gsm8k", config=config, split=split)
    assert len(table.rows) == n
    assert table.source == "example:gsm8k"
    assert set(table.configs) == {"main", "socratic"}
    assert set(table.rows[0]) >= {"question", "answer"}


def test_example_gsm8k_matches_the_real_files():
    """The bundled split, written back as JSONL, is byte for byte the original test.jsonl of
    openai/grade-school-math @3101c7d5 (the first 16 hex digits of its sha256)."""
    rows = auditor.load("example:gsm8k", split="test").rows
    data = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    assert hashlib.sha256(data).hexdigest()[:16] == "3730d312f6e34405"


def test_example_humaneval():
    table = auditor.load("example:humaneval")
    assert len(table.rows) == 164
    assert table.rows[0]["task_id"] == "HumanEval/0"


def test_example_mbpp_configs():
    full = {s: len(auditor.load("example:mbpp", config="full", split=s).rows)
            for s in ("train", "test", "validation", "prompt")}
    assert full == {"train": 374, "test": 500, "validation": 90, "prompt": 10}
    sanitized = auditor.load("example:mbpp", config="sanitized")
    total = sum(len(auditor.load("example:mbpp", config="sanitized", split=s).rows) for s in sanitized.splits)
    assert total == 427
    assert set(sanitized.splits) == {"train", "test", "validation", "prompt"}


def test_example_scan_end_to_end():
    result = auditor.scan("example:humaneval")
    s = result.summary()
    assert s["input"]["records"] == 164
    assert s["roles"]["text"] == "prompt"
    assert s["input"]["source"] == "example:humaneval"


# --------------------------------------------------------------------------- row cap

@pytest.mark.parametrize("fmt", ["jsonl", "json-list", "csv", "parquet"])
def test_max_rows_truncation_is_reported(tmp_path, fmt):
    path = make_format(tmp_path, fmt)
    capped = auditor.load(str(path), max_rows=3)
    assert capped.rows == ROWS[:3]
    assert capped.truncated is True and capped.row_cap == 3
    exact_fit = auditor.load(str(path), max_rows=4)         # the cap equals the size: nothing cut
    assert exact_fit.rows == ROWS and exact_fit.truncated is False
    assert auditor.load(str(path), max_rows=100).truncated is False


def test_max_rows_in_summary_and_report(real_data):
    result = auditor.scan(str(real_data / "gsm8k" / "train.jsonl"), max_rows=500)
    assert result.records == 500
    assert result.table.truncated is True
    s = result.summary()
    assert s["input"]["truncated"] is True and s["input"]["row_cap"] == 500
    md = result.markdown()
    assert "Row cap" in md and "500" in md
    full = auditor.scan(str(real_data / "humaneval" / "HumanEval.jsonl"), max_rows=164)
    assert full.summary()["input"]["truncated"] is False
    assert "Row cap" not in full.markdown()


def test_max_rows_across_files_and_examples(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    write_jsonl(d / "a.jsonl", ROWS[:2])
    write_jsonl(d / "b.jsonl", ROWS[2:])
    assert auditor.load(str(d), max_rows=2).truncated is True
    assert auditor.load(str(d), max_rows=3).rows == ROWS[:3]
    assert auditor.load(str(d), max_rows=4).truncated is False
    ex = auditor.load("example:gsm8k", split="test", max_rows=10)
    assert len(ex.rows) == 10 and ex.truncated is True


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10"])
def test_bad_max_rows(tmp_path, bad):
    path = make_format(tmp_path, "jsonl")
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path), max_rows=bad)
    assert info.value.code == "usage"


# --------------------------------------------------------------------------- bad inputs

def _bad_inputs(tmp: Path) -> dict:
    """name -> (source, options, expected code, fragments the message + hint must contain)."""
    cases = {}

    def case(name, source, code, *fragments, **options):
        cases[name] = (str(source), options, code, fragments)

    (tmp / "empty.jsonl").write_bytes(b"")
    case("empty file", tmp / "empty.jsonl", "empty_input", "empty.jsonl")
    (tmp / "blank.jsonl").write_text("  \n\n\t \n")
    case("whitespace-only file", tmp / "blank.jsonl", "empty_input", "blank.jsonl")
    (tmp / "blank.json").write_text(" \n ")
    case("whitespace-only json", tmp / "blank.json", "empty_input", "blank.json")
    (tmp / "latin1.jsonl").write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    case("invalid utf-8", tmp / "latin1.jsonl", "bad_format", "latin1.jsonl", "UTF-8", "line 2")
    lines = [json.dumps({"text": f"row {i}"}) for i in range(6)]
    lines[3] = '{"text": "row 3", oops}'
    (tmp / "corrupt.jsonl").write_text("\n".join(lines) + "\n")
    case("corrupt jsonl line", tmp / "corrupt.jsonl", "bad_format", "corrupt.jsonl", "line 4")
    (tmp / "notobj.jsonl").write_text('{"text": "ok"}\n[1, 2]\n')
    case("jsonl row not an object", tmp / "notobj.jsonl", "bad_format", "notobj.jsonl", "line 2", "list")
    (tmp / "ints.json").write_text("[1, 2, 3]")
    case("json list of scalars", tmp / "ints.json", "bad_format", "ints.json", "item 0")
    (tmp / "scalar.json").write_text("42")
    case("json scalar", tmp / "scalar.json", "bad_format", "scalar.json")
    (tmp / "broken.json").write_text('[{"text": "a"}, {"text": ')
    case("truncated json", tmp / "broken.json", "bad_format", "broken.json")
    (tmp / "ragged.csv").write_text("text,label\nhello,1\nworld,2,extra\nagain,3\n")
    case("ragged csv", tmp / "ragged.csv", "bad_format", "ragged.csv", "line 3")
    (tmp / "header.csv").write_text("text,label\n")
    case("csv header only", tmp / "header.csv", "empty_input", "header.csv")
    (tmp / "fake.jsonl.gz").write_text('{"text": "not compressed"}\n')
    case("fake gz", tmp / "fake.jsonl.gz", "bad_format", "fake.jsonl.gz", "gzip")
    good_gz = gzip.compress(("\n".join(lines[:3]) + "\n").encode() * 50)
    (tmp / "cut.jsonl.gz").write_bytes(good_gz[: len(good_gz) // 2])
    case("truncated gz", tmp / "cut.jsonl.gz", "bad_format", "cut.jsonl.gz")
    write_parquet(tmp / "whole.parquet", ROWS * 50)
    data = (tmp / "whole.parquet").read_bytes()
    (tmp / "cut.parquet").write_bytes(data[: len(data) // 2])
    case("truncated parquet", tmp / "cut.parquet", "bad_format", "cut.parquet", "Parquet")
    (tmp / "noise.parquet").write_text("this is not parquet at all")
    case("text named parquet", tmp / "noise.parquet", "bad_format", "noise.parquet")
    (tmp / "image.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    case("binary named jsonl", tmp / "image.jsonl", "bad_format", "image.jsonl")
    (tmp / "notes.txt").write_text("hello")
    case("unsupported suffix", tmp / "notes.txt", "bad_format", "notes.txt")
    write_jsonl(tmp / "fields.jsonl", [{"question": "q one", "answer": "a"}, {"question": "q two"}])
    case("missing text field", tmp / "fields.jsonl", "missing_field", "'prompt'", "question", "answer",
         text="prompt")
    case("missing group field", tmp / "fields.jsonl", "missing_field", "'db'", "question", group="db")
    case("glob matching nothing", tmp / "nothing-*.jsonl", "not_found", "nothing-*.jsonl")
    case("missing file", tmp / "absent.jsonl", "not_found", "absent.jsonl")
    (tmp / "emptydir").mkdir()
    case("directory without data", tmp / "emptydir", "not_found", "emptydir")
    case("unknown example", "example:nope", "not_found", "nope", "example:gsm8k")
    case("unknown split", "example:gsm8k", "bad_split", "validation", "train", "test", split="validation")
    case("unknown config", "example:mbpp", "bad_config", "weird", "full", "sanitized", config="weird")
    write_jsonl(tmp / "nested.jsonl", [{"question": "plain"}, {"question": {"stem": "deep", "id": 1}}])
    case("dict-valued text", tmp / "nested.jsonl", "bad_value", "'question'", "record 1", "question.stem",
         text="question")
    return cases


def _case_names() -> list:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        return list(_bad_inputs(Path(d)))


CASES = _case_names()


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    return _bad_inputs(tmp_path_factory.mktemp("bad"))


@pytest.mark.parametrize("name", CASES)
def test_bad_input_api(bad_inputs, name):
    source, options, code, fragments = bad_inputs[name]
    with pytest.raises(AuditorError) as info:
        auditor.scan(source, **options)
    err = info.value
    assert err.code == code, (err.code, err.message)
    text = f"{err.message}\n{err.hint}"
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    assert err.hint, "every error carries a hint"
    if not source.startswith("example:") and "*" not in source:      # a pattern is echoed as typed
        assert str(Path(source).parent) not in text, "messages name files, not this machine's directories"


def _cli_args(source, options, *extra) -> list:
    args = ["scan", source, *extra]
    for key, value in options.items():
        args += [f"--{key}", value]
    return [str(a) for a in args]


def _check_json_error(out: str, err: str, code: str, fragments) -> None:
    assert "Traceback" not in err
    payload = json.loads(out)
    assert set(payload) == {"error"}
    assert set(payload["error"]) == {"code", "message", "hint"}
    assert payload["error"]["code"] == code
    for fragment in fragments:
        assert fragment in payload["error"]["message"] + payload["error"]["hint"]
    assert f"error: {payload['error']['message']}" in err


@pytest.mark.parametrize("name", CASES)
def test_bad_input_cli_entry_point(bad_inputs, capsys, name):
    """Every bad input through the CLI's entry point (in-process: the subprocess test below
    covers one case per error code, since each process start costs half a second)."""
    from auditor.cli import main
    source, options, code, fragments = bad_inputs[name]
    assert main(_cli_args(source, options, "--json", "-")) == 2
    out, err = capsys.readouterr()
    _check_json_error(out, err, code, fragments)
    message = json.loads(out)["error"]["message"]
    assert main(_cli_args(source, options, "--quiet")) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {message}\nhint: ")


SUBPROCESS_CASES = ["empty file", "invalid utf-8", "corrupt jsonl line", "ragged csv", "fake gz",
                    "truncated parquet", "binary named jsonl", "missing text field", "glob matching nothing",
                    "unknown split", "unknown config", "dict-valued text"]


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_input_cli_process(bad_inputs, run_cli, name):
    source, options, code, fragments = bad_inputs[name]
    rc, out, err = run_cli(*_cli_args(source, options, "--json", "-"))
    assert rc == 2, (rc, err[-400:])
    _check_json_error(out, err, code, fragments)


# --------------------------------------------------------------------------- CLI

def test_cli_json_to_stdout(real_data, run_cli):
    path = real_data / "spider" / "dev.jsonl"
    rc, out, err = run_cli("scan", path, "--json", "-", "--quiet")
    assert rc == 0, err
    s = json.loads(out)
    assert s["kind"] == "scan"
    assert s["input"]["records"] == 1034
    assert s["input"]["source"] == "dev.jsonl"
    assert [p["clusters"] for p in s["curve"]] == [0, 1, 3, 11, 34, 61, 104]
    assert err == ""
    assert str(real_data) not in out                 # no path of this machine in the output


def test_cli_options_reach_the_engine(real_data, run_cli):
    path = real_data / "spider" / "dev.jsonl"
    rc, out, err = run_cli("scan", path, "--text", "question", "--answer", "query", "--group", "db_id",
                           "--threshold", "0.5", "--thresholds", "0.9,0.5", "--method", "lsh",
                           "--shingle", "word:3", "--max-rows", "600", "--json", "-", "--quiet")
    assert rc == 0, err
    s = json.loads(out)
    assert s["settings"]["threshold"] == 0.5
    assert s["settings"]["thresholds"] == [0.9, 0.5]
    assert s["method"]["near_duplicates"] == "minhash-lsh"
    assert s["input"]["records"] == 600 and s["input"]["truncated"] is True
    assert s["roles"]["guessed"] == []
    api = auditor.scan(str(path), text="question", answer="query", group="db_id", max_rows=600,
                       settings=ScanSettings(threshold=0.5, thresholds=(0.9, 0.5), method="lsh"))
    assert s["near_duplicates"]["clusters"] == api.near_duplicates().clusters
    assert [p["pairs"] for p in s["curve"]] == [p.pairs for p in api.curve]


def test_cli_out_dir(real_data, run_cli, tmp_path):
    out_dir = tmp_path / "report"
    rc, out, err = run_cli("scan", real_data / "mbpp" / "mbpp.jsonl", "--out-dir", out_dir)
    assert rc == 0, err
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["input"]["records"] == 974
    assert [p["clusters"] for p in summary["curve"]] == [4, 7, 25, 72, 124, 137, 94]
    report = (out_dir / "REPORT.md").read_text(encoding="utf-8")
    assert report.startswith("# Integrity audit: mbpp.jsonl")
    assert "## Threshold curve" in report
    assert "summary.json" in err and out == ""         # progress and "wrote" lines go to stderr
    assert str(real_data) not in report


def test_an_output_named_inside_a_new_out_dir_is_written(real_data, run_cli, tmp_path):
    """--evidence inside an --out-dir that does not exist yet: the folder is made before the first
    write (the evidence was written before the reports, and failed on the missing folder)."""
    out_dir = tmp_path / "new" / "report"
    rc, _, err = run_cli("leak", real_data / "gsm8k" / "train.jsonl", real_data / "gsm8k" / "test.jsonl",
                         "--out-dir", out_dir, "--evidence", out_dir / "leaks.csv", "--quiet")
    assert rc == 0, err
    assert (out_dir / "leaks.csv").read_bytes() == (out_dir / "evidence.csv").read_bytes()
    assert (out_dir / "leaks.csv").read_text(encoding="utf-8").startswith("b_row,a_row,")
    assert (out_dir / "summary.json").exists() and (out_dir / "REPORT.md").exists()


def test_cli_markdown_to_stdout_by_default(real_data, run_cli):
    rc, out, err = run_cli("scan", real_data / "humaneval" / "HumanEval.jsonl", "--quiet")
    assert rc == 0, err
    assert out.startswith("# Integrity audit: HumanEval.jsonl")
    assert err == ""


def test_cli_json_to_file(real_data, run_cli, tmp_path):
    target = tmp_path / "s.json"
    rc, out, err = run_cli("scan", real_data / "humaneval" / "HumanEval.jsonl", "--json", target, "--quiet")
    assert rc == 0, err
    assert json.loads(target.read_text())["input"]["records"] == 164
    assert out.startswith("# Integrity audit")           # the report still goes to stdout


BAD_OPTIONS = {
    "threshold 0": ["--threshold", "0"],
    "threshold 1.5": ["--threshold", "1.5"],
    "threshold nan": ["--threshold", "nan"],
    "threshold text": ["--threshold", "high"],
    "thresholds with 0": ["--thresholds", "0.9,0"],
    "shingle word:0": ["--shingle", "word:0"],
    "shingle unit": ["--shingle", "token:3"],
    "max-rows 0": ["--max-rows", "0"],
    "unknown option": ["--bogus"],
    "abbreviated option": ["--thresh", "0.5"],
    "misspelt option": ["--treshold", "0.5"],
    "bad method": ["--method", "fast"],
    "bad normalizer": ["--normalizer", "lower"],
    "num-perm 1 with lsh": ["--method", "lsh", "--num-perm", "1"],
    "negative seed with lsh": ["--method", "lsh", "--seed", "-1"],
    "seed beyond 64 bits with lsh": ["--method", "lsh", "--seed", str(2 ** 64)],
}


@pytest.mark.parametrize("name", list(BAD_OPTIONS))
def test_cli_bad_options(real_data, run_cli, name):
    args = ["scan", real_data / "humaneval" / "HumanEval.jsonl", *BAD_OPTIONS[name]]
    rc, out, err = run_cli(*args, "--quiet")
    assert rc == 2, (rc, err[-500:])
    assert "Traceback" not in err
    assert err.startswith("error: ")
    rc, out, err = run_cli(*args, "--json", "-", "--quiet")
    assert rc == 2 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "usage"


def test_cli_no_command_and_no_source(run_cli):
    for args in ([], ["scan"], ["frobnicate"]):
        rc, out, err = run_cli(*args)
        assert rc == 2, args
        assert "Traceback" not in err and "error: " in err


def test_cli_version_and_help(run_cli):
    rc, out, err = run_cli("--version")
    assert rc == 0 and out.strip() == f"auditor {auditor.__version__}"
    rc, out, err = run_cli("scan", "--help")
    assert rc == 0 and "--threshold" in out and "--out-dir" in out


def test_cli_json_equals_form(real_data, run_cli):
    """`--json=-` is the same option as `--json -`: errors must come out as JSON there too."""
    path = real_data / "humaneval" / "HumanEval.jsonl"
    rc, out, err = run_cli("scan", path, "--json=-", "--quiet")
    assert rc == 0 and json.loads(out)["input"]["records"] == 164
    rc, out, err = run_cli("scan", path, "--json=-", "--threshold", "0", "--quiet")
    assert rc == 2
    assert json.loads(out)["error"]["code"] == "usage"


def test_cli_unwritable_outputs(real_data, run_cli, tmp_path):
    """An output path that cannot be written is a usage error (exit 2), not a traceback."""
    path = real_data / "humaneval" / "HumanEval.jsonl"
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    for args in (["--out-dir", a_file], ["--json", tmp_path / "missing-dir" / "s.json"]):
        rc, out, err = run_cli("scan", path, *args, "--quiet")
        assert rc == 2, (args, err[-300:])
        assert "Traceback" not in err and err.startswith("error: ")


def test_cli_lone_surrogate_in_data(run_cli, tmp_path):
    """`"\\ud800"` is valid JSON (Python's json reads it as a lone surrogate). Such records exist in
    scraped data; printing them in REPORT.md or summary.json must not end in a traceback."""
    path = tmp_path / "surrogate.jsonl"
    path.write_text('{"text": "hello \\ud800 there my friend", "db": "\\ud800"}\n'
                    '{"text": "hello \\ud800 there my friend", "db": "x"}\n'
                    '{"text": "something else entirely here", "db": "x"}\n', encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows[0]["db"] == "\ud800"
    for args in (["--group", "db", "--json", "-"], ["--group", "db"], ["--out-dir", tmp_path / "out"]):
        rc, out, err = run_cli("scan", path, *args, "--quiet")
        assert "Traceback" not in err, (args, err[-400:])
        assert rc == 0, (args, err[-400:])
