"""Sources that cannot be read (missing, empty, of kinds not supported, URLs, the wrong Python
type): one clear error with a hint, in the library, the CLI's entry point and a CLI process."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
from auditor import AuditorError
from conftest import REPO


ROWS = [
    {"question": "What is one plus one", "answer": "2", "code": "007"},
    {"question": "Name the capital of Italy", "answer": "Rome", "code": "010"},
    {"question": "How many days are in a week", "answer": "7", "code": "0"},
    {"question": "Spell the word cat, please", "answer": "c-a-t", "code": "00"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


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


SUBPROCESS_CASES = ["empty file", "invalid utf-8", "corrupt jsonl line", "ragged csv", "fake gz",
                    "truncated parquet", "binary named jsonl", "missing text field", "glob matching nothing",
                    "unknown split", "unknown config", "dict-valued text"]


APPLE_ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in APPLE_ROWS).encode()


# Sources of kinds that are not supported: said so, with the kinds that are.
URL_SOURCES = ["http://example.org/data.jsonl", "https://example.org/datasets/owner/name",
               "file:///data/train.jsonl", "s3://bucket/data.parquet", "hf://datasets/owner/name"]


def _assert_refused(rc, err, fragment):
    assert rc == 2, err[-600:]
    assert "Traceback" not in err, err[-2000:]
    assert fragment in err, err[-600:]


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


@pytest.mark.slow
@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_input_cli_process(bad_inputs, run_cli, name):
    source, options, code, fragments = bad_inputs[name]
    rc, out, err = run_cli(*_cli_args(source, options, "--json", "-"))
    assert rc == 2, (rc, err[-400:])
    _check_json_error(out, err, code, fragments)


@pytest.mark.slow
@pytest.mark.parametrize("source", URL_SOURCES)
def test_url_sources_are_refused_with_the_supported_kinds(run_cli, source):
    """From the hostile-input review."""
    with pytest.raises(AuditorError) as info:
        auditor.load(source)
    assert info.value.code == "usage" and "sources are not supported" in info.value.message
    assert "Hugging Face dataset id" in info.value.hint and "JSONL" in info.value.hint
    rc, _, err = run_cli("scan", source, "--quiet")
    _assert_refused(rc, err, "sources are not supported")


def test_url_of_a_hub_dataset_suggests_its_id():
    """From the hostile-input review."""
    with pytest.raises(AuditorError) as info:
        auditor.load("https://example.org/datasets/owner/name")
    assert "'owner/name'" in info.value.hint


def test_library_takes_paths(tmp_path):
    """From the hostile-input review."""
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


@pytest.mark.parametrize("source", [None, 42, b"bytes", ["a.jsonl"], ""])
def test_library_source_of_the_wrong_kind_is_a_usage_error(source):
    """From the hostile-input review."""
    with pytest.raises(AuditorError) as info:
        auditor.load(source)
    assert info.value.code == "usage" and "No dataset given" in info.value.message


def test_a_hub_id_never_reads_a_local_folder_of_that_name(tmp_path):
    """From the hostile-input review: kind="hub" (what the app passes) reads the Hub only, even when a folder
    of the same name
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
