"""A hostile-input sweep of the local engine: files a user may really have (wide or unnamed
headers, a semicolon .csv, repeated Parquet columns, notebook checkpoints beside the data, a
FIFO, lone surrogates on the way out) and options that used to be ignored (a local --split for a
corpus, --config for a local file). Each gets a correct result or one clear error (exit 2)."""
import csv
import gzip
import io
import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
from auditor import AuditorError
from auditor.cli import main
from auditor.contamination import contamination
from auditor.leakage import leak
from auditor.schema import check_schema


def write_jsonl(path, rows):
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


# --------------------------------------------------------------------------- column names

def test_repeated_and_blank_csv_headers_are_named_as_pandas_names_them(tmp_path):
    header = ["a", "a", "a.1", "a", "", " ", "text"]
    path = tmp_path / "odd_header.csv"
    path.write_text(",".join(header) + "\n" + ",".join(str(i) for i in range(len(header))) + "\n", encoding="utf-8")
    table = auditor.load(str(path))
    expected = list(pd.read_csv(path, dtype=str).columns)     # pandas: the reference naming
    # (pandas keeps a blank-but-spaced name as it is; here every blank name is "Unnamed: i")
    expected[5] = "Unnamed: 5"
    assert list(table.rows[0]) == expected
    assert list(table.rows[0].values()) == [str(i) for i in range(len(header))]
    assert any("without a name" in n for n in table.notices)
    assert any("repeated column names" in n for n in table.notices)
    # An unnamed column can be given as a role by the name it is read under.
    assert auditor.scan(str(path), text="Unnamed: 4").roles.text == "Unnamed: 4"


def test_a_wide_header_of_one_repeated_name_reads_in_linear_time(tmp_path):
    # 20,000 columns all called "a": renaming tried a.1, a.2 ... from 1 for each (minutes); now
    # each name continues where it stopped.
    n = 20_000
    path = tmp_path / "wide.csv"
    path.write_text(",".join(["a"] * n) + "\n" + ",".join(map(str, range(n))) + "\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert list(table.rows[0]) == list(pd.read_csv(path, dtype=str).columns)
    assert table.rows[0]["a.19999"] == "19999"
    notice = next(n for n in table.notices if "repeated" in n)
    assert notice.endswith("a.10 and 19,989 more") and len(notice) < 300


def test_parquet_columns_with_one_name_are_both_kept(tmp_path):
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["first a", "first b"]), pa.array(["second a", "second b"]),
                                         pa.array(["x", "y"])], names=["question", "question", ""]), path)
    table = auditor.load(str(path))
    assert table.rows == [{"question": "first a", "question.1": "second a", "Unnamed: 2": "x"},
                          {"question": "first b", "question.1": "second b", "Unnamed: 2": "y"}]
    assert any("question.1" in n for n in table.notices)


def test_schema_of_many_fields_each_in_one_record(tmp_path):
    # Every record has its own field: 20,000 "missing" issues, each sampled without a pass over
    # every record per field (that was 20,000 x 20,000).
    n = 20_000
    rows = [{"text": f"record {i}", f"k{i}": i} for i in range(n)] + [{"text": "last"}]
    schema = check_schema(rows)
    missing = {i.field: i for i in schema.issues if i.kind == "missing"}
    assert len(missing) == n
    for i in (0, 1, 3, 7, n - 1):
        expected = [r for r, row in enumerate(rows) if f"k{i}" not in row][:5]
        assert missing[f"k{i}"].rows_sample == expected and missing[f"k{i}"].records == n


# --------------------------------------------------------------------------- delimiters

@pytest.mark.parametrize("name, text, delimiter", [
    ("semicolon.csv", "question;answer\nwhat is one plus one;2\n\"a;b\";3\n", ";"),
    ("tabs.csv", "question\tanswer\nwhat is one plus one\t2\n", "\t"),
    ("commas.tsv", "question,answer\nwhat is one plus one,2\n", ","),
])
def test_a_csv_with_another_delimiter_is_read_by_it_and_says_so(tmp_path, name, text, delimiter):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == list(csv.DictReader(io.StringIO(text), delimiter=delimiter))
    assert len(table.notices) == 1 and "-separated" in table.notices[0]


def test_a_one_column_csv_with_semicolons_in_its_values_stays_one_column(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("text\nhello; world\nplain\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [{"text": "hello; world"}, {"text": "plain"}] and not table.notices


def test_lines_of_only_spaces_before_a_csv_header_are_skipped(tmp_path):
    path = tmp_path / "spaces_first.csv"
    path.write_text("   \n\t\nquestion,answer\nwhat is one plus one,2\n", encoding="utf-8")
    assert auditor.load(str(path)).rows == [{"question": "what is one plus one", "answer": "2"}]


# --------------------------------------------------------------------------- paths

def test_hidden_files_and_folders_of_a_directory_are_skipped(tmp_path):
    data = tmp_path / "data"
    (data / ".ipynb_checkpoints").mkdir(parents=True)
    (data / ".git").mkdir()
    rows = [{"text": f"a real record number {i}"} for i in range(3)]
    write_jsonl(data / "train.jsonl", rows)
    write_jsonl(data / ".ipynb_checkpoints" / "train-checkpoint.jsonl", rows)   # would double every record
    write_jsonl(data / ".git" / "stray.jsonl", [{"text": "not data"}])
    write_jsonl(data / ".hidden.jsonl", [{"text": "not data"}])
    table = auditor.load(str(data))
    assert table.files == ("train.jsonl",) and table.rows == rows
    only_hidden = tmp_path / "only_hidden"
    (only_hidden / ".cache").mkdir(parents=True)
    write_jsonl(only_hidden / ".cache" / "x.jsonl", rows)
    with pytest.raises(AuditorError) as info:
        auditor.load(str(only_hidden))
    assert info.value.code == "not_found" and "hidden" in info.value.hint


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_a_device_and_a_dangling_link_are_named_for_what_they_are(tmp_path, capsys):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    line = cli_error(capsys, ["scan", str(fifo), "--quiet"])     # never opened: it would block
    assert line == "error: 'pipe.jsonl' is not a regular file (a pipe, socket or device)."
    device = tmp_path / "zeros.jsonl"
    device.symlink_to(os.devnull)
    assert "is not a regular file" in cli_error(capsys, ["scan", str(device), "--quiet"])
    dangling = tmp_path / "gone.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    with pytest.raises(AuditorError) as info:
        auditor.load(str(dangling))
    assert info.value.code == "not_found" and "symbolic link" in info.value.message


# --------------------------------------------------------------------------- options that were ignored

def split_dir(tmp_path, ext="jsonl"):
    corpus = tmp_path / f"corpus_{ext}"
    corpus.mkdir()
    # no three words in a row shared between the splits
    train = [{"text": f"apples and oranges grow number {i} trainside"} for i in range(3)]
    test = [{"text": f"pears with plums ripen {i} testside"} for i in range(2)]
    for name, rows in (("train", train), ("test", test)):
        if ext == "jsonl":
            write_jsonl(corpus / f"{name}.jsonl", rows)
        else:
            (corpus / f"{name}.csv").write_text("text\n" + "".join(r["text"] + "\n" for r in rows), encoding="utf-8")
    return str(corpus), train, test


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_a_local_corpus_split_is_the_split_read(tmp_path, ext):
    corpus, train, test = split_dir(tmp_path, ext)
    bench = write_jsonl(tmp_path / "bench.jsonl", [{"text": test[1]["text"]}, {"text": train[0]["text"]}])
    only_test = contamination(corpus, bench, corpus_split="test", ngram=3).summary()
    assert only_test["corpus"]["records"] == len(test) and only_test["corpus"]["split"] == "test"
    assert [i["benchmark_row"] for i in only_test["items"]] == [0]        # the train item is not in test
    # No split: the train split, as scan reads it, and said (read whole, test would find itself).
    default = contamination(corpus, bench, ngram=3).summary()
    assert default["corpus"]["records"] == len(train) and default["corpus"]["split"] == "train"
    assert default["corpus"]["notices"] == ["split not given: using 'train' (available: test, train)"]
    assert [i["benchmark_row"] for i in default["items"]] == [1]          # the test item is not in train
    with pytest.raises(AuditorError) as info:
        contamination(corpus, bench, corpus_split="validation", ngram=3)
    assert info.value.code == "bad_split"


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_a_benchmark_with_splits_is_checked_on_its_test_split(tmp_path, ext):
    """A benchmark folder holding train and test is checked on test (an evaluation set), said in
    REPORT.md, and named without this machine's folders; --benchmark-split picks another."""
    corpus, train, test = split_dir(tmp_path, ext)
    result = contamination(corpus, corpus, ngram=3)
    bench = result.summary()["benchmark"]
    assert bench["split"] == "test" and bench["records"] == len(test) and bench["name"] == f"corpus_{ext}"
    assert bench["notices"] == ["split not given: using 'test' (available: test, train)"]
    assert result.items == []                      # the train split holds none of the test items
    markdown = result.markdown()
    assert "> Note (benchmark): split not given: using 'test'" in markdown
    assert "> Note (corpus): split not given: using 'train'" in markdown
    assert str(tmp_path) not in markdown and str(tmp_path) not in json.dumps(result.summary())
    assert "Text fields checked: corpus `text`, benchmark `text`" in markdown
    on_train = contamination(corpus, corpus, benchmark_split="train", ngram=3).summary()
    assert on_train["benchmark"]["records"] == len(train) and "notices" not in on_train["benchmark"]
    assert len(on_train["items"]) == len(train)    # train against itself: every item


def test_the_leak_report_names_the_fields_it_compared_and_which_were_guessed(tmp_path):
    """A guessed field changes every figure (a multiple-choice letter taken as the answer makes
    every record "leak" by its answer): REPORT.md names the fields, and says which were guessed."""
    rows = [{"question": f"which option fits case {i} best", "answer": "ABCD"[i % 4], "id": i} for i in range(40)]
    a = write_jsonl(tmp_path / "a.jsonl", rows[:20])
    b = write_jsonl(tmp_path / "b.jsonl", rows[20:])
    guessed = leak(a, b).markdown()
    assert ("Fields compared: A text `question` (guessed), answer `answer` (guessed); "
            "B text `question` (guessed), answer `answer` (guessed).") in guessed
    named = leak(a, b, text="question", answer="answer").markdown()
    assert "Fields compared: A text `question`, answer `answer`; B text `question`, answer `answer`." in named


def test_a_config_for_a_local_source_is_refused(tmp_path, capsys):
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "one two three four"}])
    with pytest.raises(AuditorError) as info:
        auditor.load(path, config="main")
    assert info.value.code == "usage" and "no configs" in info.value.message
    assert "no configs" in cli_error(capsys, ["scan", path, "--config", "main", "--quiet"])
    assert "no configs" in cli_error(capsys, ["contamination", path, "--benchmark", "gsm8k", "--config", "x",
                                              "--quiet"])
    assert auditor.load(path, config=None).rows == [{"text": "one two three four"}]


# --------------------------------------------------------------------------- messages

def test_a_missing_role_names_the_dataset_it_is_missing_from(tmp_path):
    a = write_jsonl(tmp_path / "train_side.jsonl", [{"prompt": "alpha beta gamma", "text": "x"}])
    b = write_jsonl(tmp_path / "eval_side.jsonl", [{"prompt": "alpha beta gamma"}])
    with pytest.raises(AuditorError) as info:
        leak(a, b, text="text")
    assert info.value.code == "missing_field"
    assert info.value.message == "eval_side.jsonl: The text field 'text' is in no record."


def test_a_blank_field_name_is_never_guessed_as_the_text(tmp_path):
    path = write_jsonl(tmp_path / "blank_key.jsonl", [{"": "a long text in a field without a name", "n": 1}])
    with pytest.raises(AuditorError) as info:
        auditor.scan(path)
    assert info.value.code == "missing_field" and "could be guessed" in info.value.message


def test_twice_gzipped_and_lone_cr_files_say_what_they_are(tmp_path, capsys):
    body = b'{"text": "one two three"}\n{"text": "four five six"}\n'
    twice = tmp_path / "twice.jsonl.gz"
    twice.write_bytes(gzip.compress(gzip.compress(body)))
    assert "gzip-compressed twice" in cli_error(capsys, ["scan", str(twice), "--quiet"])
    old_mac = tmp_path / "old_mac.jsonl"
    old_mac.write_bytes(body.replace(b"\n", b"\r"))
    with pytest.raises(AuditorError) as info:
        auditor.load(str(old_mac))
    assert "carriage return" in info.value.hint and "cut short" not in info.value.hint


def test_a_threshold_too_small_to_keep_is_a_usage_error(capsys):
    line = cli_error(capsys, ["scan", "example:gsm8k", "--threshold", "1e-300", "--quiet"])
    assert "rounds to 0 at 6 decimals" in line


# --------------------------------------------------------------------------- outputs

@pytest.mark.parametrize("command", ["dedup", "clean"])
def test_parquet_output_of_lone_surrogates_is_escaped_not_a_traceback(tmp_path, capsys, command):
    src = tmp_path / "sur.jsonl"
    src.write_text('{"question": "alpha beta \\ud800 gamma", "tags": ["\\udc00", "ok"]}\n'
                   '{"question": "plain text here", "tags": ["ok"]}\n', encoding="utf-8")
    other = write_jsonl(tmp_path / "other.jsonl", [{"question": "nothing in common"}])
    out = tmp_path / "out.parquet"
    argv = ["dedup", str(src), "--out", str(out)] if command == "dedup" else \
        ["clean", str(src), "--against", other, "--out", str(out)]
    assert main(argv + ["--quiet"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "lone surrogates" in err
    assert pq.read_table(out).to_pylist() == [
        {"question": "alpha beta \\ud800 gamma", "tags": ["\\udc00", "ok"]},   # as the JSONL writer escapes
        {"question": "plain text here", "tags": ["ok"]}]


# --------------------------------------------------------------------------- JSON shapes

def test_json_objects_of_lists_are_records_columns_or_a_clear_error(tmp_path):
    recs = [{"question": f"what is {i} plus {i}"} for i in range(4)]

    def load(name, obj):
        path = tmp_path / name
        path.write_text(json.dumps(obj), encoding="utf-8")
        return auditor.load(str(path))

    assert load("data_and_tags.json", {"data": recs, "tags": ["a", "b"]}).rows == recs
    assert load("columns.json", {"q": ["a", "b"], "n": [1, 2]}).rows == [{"q": "a", "n": 1}, {"q": "b", "n": 2}]
    with pytest.raises(AuditorError) as info:     # was one record holding every value of each column
        load("ragged.json", {"q": ["a", "b", "c"], "n": [1, 2]})
    assert info.value.code == "bad_format" and "'q': 3, 'n': 2" in info.value.message
    for name, obj in (("splits.json", {"train": recs[:2], "test": recs[2:]}),   # was train[i] + test[i] as one record
                      ("versioned.json", {"version": 1, "train": recs[:2], "test": recs[2:]}),   # one record
                      ("one_empty.json", {"train": recs, "validation": []})):    # train alone, silently
        with pytest.raises(AuditorError) as info:
            load(name, obj)
        assert info.value.code == "bad_format" and "one list per split" in info.value.message, name
    # Columns of objects (json.dump(df.to_dict("list")) of nested columns) stay columns.
    nested = load("nested_columns.json", {"question": [{"en": "a"}, {"en": "b"}], "meta": [{"id": 1}, {"id": 2}]})
    assert nested.rows == [{"question": {"en": "a"}, "meta": {"id": 1}}, {"question": {"en": "b"}, "meta": {"id": 2}}]


def test_a_review_file_that_is_a_device_is_refused_before_it_is_read(tmp_path, capsys):
    # /dev/zero as a review used to be read whole (size 0 passes the size check) until memory ran out.
    data = write_jsonl(tmp_path / "d.jsonl", [{"text": "one two three four"}, {"text": "one two three four"}])
    line = cli_error(capsys, ["dedup", data, "--review", os.devnull, "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert line == "error: Cannot read the review file 'null': it is not a regular file (a pipe, socket or device)."


@pytest.mark.parametrize("roles", [("--text", "--answer"), ("--answer", "--group"), ("--text", "--id")])
def test_one_field_for_two_roles_is_a_usage_error(tmp_path, capsys, roles):
    """--text q --answer q would count every text match as an answer match too."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"q": f"question {i}", "a": str(i), "g": "x", "i": i} for i in range(5)])
    field = {"--text": "q", "--answer": "a", "--group": "g", "--id": "i"}[roles[0]]
    line = cli_error(capsys, ["scan", data, roles[0], field, roles[1], field])
    assert f"roles both name the field '{field}'" in line
    with pytest.raises(AuditorError, match="both name the field"):
        auditor.scan(data, **{roles[0][2:]: field, roles[1][2:]: field})


def test_many_schema_issues_keep_the_report_table_short(tmp_path):
    """Records each with a field of its own: summary.json lists every issue, REPORT.md the first
    50 and how many more."""
    rows = [{"text": f"record {i} says something", f"extra_{i}": i} for i in range(300)]
    result = auditor.scan(write_jsonl(tmp_path / "wide.jsonl", rows))
    issues = result.summary()["schema"]["issues"]
    assert len(issues) == 300 and {i["field"] for i in issues} == {f"extra_{i}" for i in range(300)}
    report = result.markdown()
    assert sum(line.startswith("| extra\\_") for line in report.splitlines()) == 50      # md_cell escapes _
    assert "... and 250 more schema issues, listed in summary.json." in report


def test_parquet_text_stored_as_binary_reads_as_its_utf8_text(tmp_path):
    """Older Spark/Hive write strings as binary without the UTF-8 mark: named as the text field, it
    reads as the text it is, with the same findings as the string column (a binary field is never
    guessed: it may be an image); bytes that are not UTF-8 are a clear error."""
    import real_data
    questions = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:300]]
    questions += questions[:20]                                   # 20 exact copies
    pq.write_table(pa.table({"text": pa.array(questions, pa.string())}), tmp_path / "s.parquet")
    pq.write_table(pa.table({"text": pa.array([q.encode() for q in questions], pa.binary())}), tmp_path / "b.parquet")
    as_string, as_binary = auditor.scan(str(tmp_path / "s.parquet")), auditor.scan(str(tmp_path / "b.parquet"), text="text")
    assert as_binary.fields.text == questions
    for key in ("exact_duplicates", "near_duplicates", "curve", "degenerate"):
        assert as_binary.summary()[key] == as_string.summary()[key], key
    assert as_binary.summary()["exact_duplicates"]["text"]["redundant"] == 20
    pq.write_table(pa.table({"text": pa.array([b"\xff\xfe\x00 not text"] * 3, pa.binary())}), tmp_path / "x.parquet")
    with pytest.raises(AuditorError, match="binary data, not UTF-8 text"):
        auditor.scan(str(tmp_path / "x.parquet"), text="text")


def test_csv_header_and_delimiter_edge_cases_read_as_pandas_reads_them(tmp_path):
    """A one-column CSV whose column has no name (pandas writes '""'), a one-column file whose header
    holds a semicolon, and blank lines before a header: read as pandas reads them."""
    cases = {"blank_name.csv": pd.DataFrame({"": ["foo", "bar"]}).to_csv(index=False),
             "semicolon_in_header.csv": 'notes; remarks\n"hello, world"\n"a; b"\n',
             "tab_in_header.csv": "question\ttext\nfoo\n",
             "blank_lines_first.csv": "\n \n\nq,a\nx,1\ny,2\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        expected = pd.read_csv(tmp_path / name, dtype=str, keep_default_na=False).to_dict("records")
        assert auditor.load(str(tmp_path / name)).rows == expected, name


def test_blank_lines_before_a_csv_header_are_counted_not_kept(tmp_path):
    """Lines numbers in errors are the file's; memory does not hold the blank lines."""
    (tmp_path / "late.csv").write_text("\n" * 5 + "q,a\nx,1\ny,2,3\n", encoding="utf-8")
    with pytest.raises(AuditorError, match=r"late.csv, line 8: 3 values but the header has 2 columns"):
        auditor.load(str(tmp_path / "late.csv"))


def test_bz2_xz_and_zstd_files_read_as_the_plain_file(tmp_path, capsys):
    """.bz2, .xz and .zst (common for pretraining shards) read as their plain file, alone and in a
    folder (so a folder reads the same records on both engines); a broken stream is a clear error."""
    import bz2
    import lzma
    import real_data
    rows = real_data.rows("gsm8k/test.jsonl")[:200]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    (tmp_path / "plain.jsonl").write_bytes(raw)
    (tmp_path / "d.jsonl.bz2").write_bytes(bz2.compress(raw))
    (tmp_path / "d.jsonl.xz").write_bytes(lzma.compress(raw))
    with pa.CompressedOutputStream(str(tmp_path / "d.jsonl.zst"), "zstd") as out:
        out.write(raw)
    plain = auditor.load(str(tmp_path / "plain.jsonl")).rows
    assert plain == rows
    for name in ("d.jsonl.bz2", "d.jsonl.xz", "d.jsonl.zst"):
        assert auditor.load(str(tmp_path / name)).rows == rows, name
        assert contamination(str(tmp_path / name), "gsm8k").summary()["contaminated"]["records"] == 200, name
    assert len(auditor.load(str(tmp_path), split=None).rows) == 800            # the folder: all four files
    (tmp_path / "cut.jsonl.zst").write_bytes((tmp_path / "d.jsonl.zst").read_bytes()[:200])
    (tmp_path / "cut.jsonl.bz2").write_bytes((tmp_path / "d.jsonl.bz2").read_bytes()[:200])
    for name, says in (("cut.jsonl.zst", "not a valid zstd file"), ("cut.jsonl.bz2", "bzip2 stream ends early")):
        line = cli_error(capsys, ["scan", str(tmp_path / name)])
        assert says in line and name in line, line


def test_a_csv_header_in_braces_that_is_not_json_is_a_header(tmp_path, capsys):
    """Only a real JSON object as the first line means JSON Lines named .csv; "{id},{text}" is a header."""
    (tmp_path / "braces.csv").write_text("{id},{text}\n1,first question here\n", encoding="utf-8")
    assert auditor.load(str(tmp_path / "braces.csv")).rows == [{"{id}": "1", "{text}": "first question here"}]
    (tmp_path / "lines.csv").write_text('{"id": 1, "text": "a"}\n{"id": 2, "text": "b"}\n', encoding="utf-8")
    assert "looks like JSON Lines named as CSV" in cli_error(capsys, ["scan", str(tmp_path / "lines.csv")])
