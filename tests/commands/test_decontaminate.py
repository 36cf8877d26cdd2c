"""``contamination --decontaminate``: a copy of a training corpus without the records that share an
n-gram with the benchmark, checked against the n-gram reference of tests/definitions.py
(the rows dropped are exactly the union of the rows it finds for any item; every other record is
written unchanged and in order), on real data: GSM8K train solutions and MBPP task texts as
instruction records, GSM8K test questions planted whole, cut short and split across records.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor.contamination as contamination_module
from auditor import wordtokens
from auditor.decontaminate import decontaminate
from auditor.errors import AuditorError
from definitions import contamination_reference, read_jsonl, write_jsonl


PLANTED = {40: 60, 777: 61, 1450: 62}            # corpus row -> GSM8K test row planted in it


@pytest.fixture(scope="module")
def corpus(real_data, tmp_path_factory):
    """1,800 records in a folder of two JSONL files, the second gzipped (rows number across them)."""
    mbpp = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    train = read_jsonl(real_data / "gsm8k/train.jsonl")
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    rows = [{"id": i, "text": f"{mbpp[i % len(mbpp)]['text']}\n{train[i]['answer']}"} for i in range(1800)]
    for row, item in PLANTED.items():
        rows[row]["text"] = "Seen in a forum post: " + test[item]["question"] + " Thanks!"
    rows[900]["text"] = " ".join(test[63]["question"].split()[:9])      # shorter than any n-gram: kept
    rows[901]["meta"] = {"note": "a nested value, written back as it was", "scores": [1.5, None, True]}
    folder = tmp_path_factory.mktemp("corpus")
    write_jsonl(folder / "part-0.jsonl", rows[:1000])
    with gzip.open(folder / "part-1.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows[1000:])
    questions = [r["question"] for r in test]
    return folder, rows, questions


def expected_drops(rows, questions, n) -> list[int]:
    found = contamination_reference([r["text"] for r in rows], questions, n)
    return sorted(set().union(*(set(r) for r, _, _ in found.values())))


@pytest.mark.parametrize("compiled", [True, False])
def test_the_copy_leaves_out_exactly_the_rows_sharing_an_ngram(corpus, tmp_path, monkeypatch, compiled):
    folder, rows, questions = corpus
    # Both scan paths: the compiled pass over Arrow blocks, and text by text.
    monkeypatch.setattr(contamination_module, "COMPILED_MIN_BYTES", 0 if compiled else 1 << 40)
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0 if compiled else 1 << 40)
    out = tmp_path / "clean.jsonl"
    result = decontaminate(str(folder), "gsm8k", out, corpus_text="text")
    drops = expected_drops(rows, questions, result.contamination.n)
    assert set(PLANTED) <= set(drops) and 900 not in drops
    assert result.dropped_rows.tolist() == drops
    assert read_jsonl(out) == [r for i, r in enumerate(rows) if i not in set(drops)]
    manifest = json.loads((tmp_path / "clean.jsonl.dropped.json").read_text(encoding="utf-8"))
    assert manifest["dropped_rows"] == drops
    assert (manifest["records"], manifest["kept"], manifest["dropped"]) == (len(rows), len(rows) - len(drops),
                                                                          len(drops))
    # The report is the contamination check's own.
    assert result.contamination.items == contamination_module.contamination(str(folder), "gsm8k",
                                                                             corpus_text="text").items


@pytest.mark.slow
def test_the_cli_writes_the_copy_its_manifest_and_the_unchanged_report(corpus, run_cli, tmp_path):
    folder, rows, questions = corpus
    plain = run_cli("contamination", folder, "--benchmark", "gsm8k", "--json", "-", "--quiet")
    out = tmp_path / "clean.json"                     # a JSON array this time
    code, stdout, err = run_cli("contamination", folder, "--benchmark", "gsm8k", "--decontaminate", out,
                                "--manifest", tmp_path / "dropped.json", "--json", "-")
    assert code == 0 and plain[0] == 0, err
    summary = json.loads(stdout)
    drops = expected_drops(rows, questions, summary["settings"]["ngram"])
    assert summary.pop("decontaminated") == {"out": "clean.json", "manifest": "dropped.json", "records": len(rows),
                                             "kept": len(rows) - len(drops), "dropped": len(drops)}
    assert summary == json.loads(plain[1])
    assert json.loads(out.read_text(encoding="utf-8")) == [r for i, r in enumerate(rows) if i not in set(drops)]
    assert json.loads((tmp_path / "dropped.json").read_text(encoding="utf-8"))["dropped_rows"] == drops
    assert f"kept {len(rows) - len(drops):,} of {len(rows):,} records" in err


@pytest.mark.slow
def test_refusals_leave_the_inputs_alone(corpus, run_cli, tmp_path):
    folder, rows, _ = corpus
    first = folder / "part-0.jsonl"
    before = first.read_bytes()
    cases = [
        (("--decontaminate", first), "input"),                       # over the corpus itself
        (("--decontaminate", folder / "new.jsonl"), "inside"),       # into the corpus's folder
        (("--decontaminate", tmp_path / "c.csv"), ".jsonl"),
        (("--decontaminate", tmp_path / "c.jsonl", "--max-rows", "10"), "--max-rows"),
        (("--manifest", tmp_path / "m.json"), "--decontaminate"),
    ]
    for args, said in cases:
        code, _, err = run_cli("contamination", folder, "--benchmark", "gsm8k", *args, "--quiet")
        assert code == 2 and "Traceback" not in err and said in err, (args, err)
    assert first.read_bytes() == before and not (folder / "new.jsonl").exists()
    assert not (tmp_path / "c.jsonl").exists()
    with pytest.raises(AuditorError, match="not a list of texts"):
        decontaminate([r["text"] for r in rows], "gsm8k", tmp_path / "x.jsonl")
    # Nor over the benchmark, through the library.
    bench = tmp_path / "bench.jsonl"
    write_jsonl(bench, [{"question": rows[0]["text"]}])
    with pytest.raises(AuditorError, match="same file as the input"):
        decontaminate(str(first), str(bench), bench)
    assert read_jsonl(bench) == [{"question": rows[0]["text"]}]


def test_a_corpus_that_changes_between_the_passes_leaves_no_copy(corpus, tmp_path):
    """The second pass must meet the records the first one scanned: a record appended while the
    copy is made (a writer still at work) is an error, and no file is left that looks like a
    finished copy."""
    folder, _, _ = corpus
    moving = tmp_path / "moving"
    shutil.copytree(folder, moving)
    outputs = tmp_path / "out"
    outputs.mkdir()

    def append_once_scanned(fraction, stage):
        if stage == "scanned":
            with open(moving / "part-0.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"id": -1, "text": "a record written after the scan"}) + "\n")
    with pytest.raises(AuditorError, match="changed while it was read"):
        decontaminate(str(moving), "gsm8k", outputs / "clean.jsonl", corpus_text="text", progress=append_once_scanned)
    assert list(outputs.iterdir()) == []


def test_a_record_rewritten_between_the_passes_leaves_no_copy(corpus, tmp_path):
    """As many records, the same size and the modification time put back (as `touch -r` does):
    the rows found are still not the rows a copy would hold, so no copy is written."""
    folder, _, _ = corpus
    moving = tmp_path / "moving"
    shutil.copytree(folder, moving)
    part = moving / "part-0.jsonl"
    outputs = tmp_path / "out"
    outputs.mkdir()

    def rewrite_once_scanned(fraction, stage):
        if stage == "scanned":
            before = part.stat()
            data = part.read_bytes()
            part.write_bytes(data[:10] + (b"X" if data[10:11] != b"X" else b"Y") + data[11:])
            os.utime(part, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert part.stat().st_size == before.st_size and part.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(AuditorError, match="part-0.jsonl changed while it was read"):
        decontaminate(str(moving), "gsm8k", outputs / "clean.jsonl", corpus_text="text", progress=rewrite_once_scanned)
    assert list(outputs.iterdir()) == []


def test_jsonl_records_are_copied_byte_for_byte(real_data, tmp_path):
    """Kept records keep their bytes: number forms (1e5, 2.50), escapes, key order, CRLF line
    ends; blank lines are not records (the scan's numbering) and are not copied."""
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    lines = ['{"z": 1e5, "text": "caf\\u00e9 and numbers 2.50", "a": [1, 2]}',
             json.dumps({"text": test[7]["question"]}),                           # dropped
             "",
             '  {"text": "a line with leading spaces and a CRLF end", "k": 0.10}\r',
             "   ",
             json.dumps({"text": "x " + test[8]["question"]}, ensure_ascii=False)]  # dropped
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    result = decontaminate(str(corpus), "gsm8k", tmp_path / "clean.jsonl")
    assert result.dropped_rows.tolist() == [1, 3]         # rows count records, not lines
    assert (tmp_path / "clean.jsonl").read_bytes() == (lines[0] + "\n" + lines[3] + "\n").encode("utf-8")
    decontaminate(str(corpus), "gsm8k", tmp_path / "clean.json")
    assert json.loads((tmp_path / "clean.json").read_text(encoding="utf-8")) == \
        [json.loads(lines[0]), json.loads(lines[3])]


def test_other_formats_are_written_as_read(corpus, tmp_path):
    """A Parquet corpus (no lines to copy) is written as the auditor reads its records."""
    _, rows, questions = corpus
    flat = [{"id": r["id"], "text": r["text"]} for r in rows[:1200]]
    pq.write_table(pa.Table.from_pylist(flat), tmp_path / "c.parquet", row_group_size=500)
    result = decontaminate(str(tmp_path / "c.parquet"), "gsm8k", tmp_path / "clean.jsonl")
    drops = expected_drops(flat, questions, result.contamination.n)
    assert drops and result.dropped_rows.tolist() == drops
    assert read_jsonl(tmp_path / "clean.jsonl") == [r for i, r in enumerate(flat) if i not in set(drops)]


def test_a_corpus_cut_short_between_the_passes_is_a_clear_error(corpus, tmp_path):
    """A compressed part truncated after the scan (a copy still being written): the second pass
    meets the broken stream and says which file, and leaves no copy."""
    folder, _, _ = corpus
    moving = tmp_path / "moving"
    shutil.copytree(folder, moving)
    outputs = tmp_path / "out"
    outputs.mkdir()
    gz = moving / "part-1.jsonl.gz"

    def truncate_once_scanned(fraction, stage):
        if stage == "scanned":
            data = gz.read_bytes()
            gz.write_bytes(data[:len(data) // 2])
    with pytest.raises(AuditorError, match="part-1.jsonl.gz"):
        decontaminate(str(moving), "gsm8k", outputs / "clean.jsonl", corpus_text="text",
                      progress=truncate_once_scanned)
    assert list(outputs.iterdir()) == []


def test_the_ray_copy_task_names_a_shard_it_cannot_read(tmp_path):
    """The copy task's own reader (a JSONL shard's lines), called as Ray calls it: a shard that
    no longer decompresses is an error naming the shard, and its file is not written."""
    pytest.importorskip("ray")
    from auditor.distributed.decontaminate import OutFolder, _CopyFn
    from auditor.io.shards import list_shards
    shard_file = tmp_path / "in" / "part-0.jsonl.gz"
    shard_file.parent.mkdir()
    with gzip.open(shard_file, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"text": f"record {i} " * 50}) + "\n" for i in range(2000))
    data = shard_file.read_bytes()
    shard_file.write_bytes(data[:len(data) // 2])
    filesystem, (shard,) = list_shards(str(shard_file.parent))
    copy = _CopyFn(filesystem, OutFolder(str(tmp_path / "out")), {shard.index: "part-0.jsonl"}, {shard.index: (2000, [])})
    with pytest.raises(AuditorError, match="part-0.jsonl.gz"):
        list(copy(shard, None))
    assert not (tmp_path / "out" / "part-0.jsonl").exists()


def test_the_ray_copy_task_refuses_a_shard_rewritten_since_it_was_listed(tmp_path):
    """As many records, the same size and modification time (put back as `touch -r` does): the
    change time tells, and the copy is refused rather than written with another version's rows."""
    pytest.importorskip("ray")
    from auditor.distributed.decontaminate import OutFolder, _CopyFn
    from auditor.io.shards import list_shards
    shard_file = tmp_path / "in" / "part-0.jsonl"
    shard_file.parent.mkdir()
    shard_file.write_text("".join(json.dumps({"text": f"record {i}"}) + "\n" for i in range(50)), encoding="utf-8")
    filesystem, (shard,) = list_shards(str(shard_file.parent))
    before = shard_file.stat()
    shard_file.write_text(shard_file.read_text(encoding="utf-8").replace("record 7", "RECORD 7"), encoding="utf-8")
    os.utime(shard_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    copy = _CopyFn(filesystem, OutFolder(str(tmp_path / "out")), {shard.index: "part-0.jsonl"}, {shard.index: (50, [3])})
    with pytest.raises(AuditorError, match="part-0.jsonl' changed while it was read"):
        list(copy(shard, None))
    assert not (tmp_path / "out" / "part-0.jsonl").exists()


def test_a_uri_manifest_is_refused_before_any_work_without_its_secret(tmp_path, run_cli):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "a record"}) + "\n", encoding="utf-8")
    code, _, err = run_cli("contamination", corpus, "--benchmark", "gsm8k", "--engine", "ray", "--decontaminate",
                           tmp_path / "out", "--manifest", "s3://KEYID:SECRET@bucket/m.json", "--quiet")
    assert code == 2 and "--manifest is written to a local file" in err and "SECRET" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_csv_corpus_copy_says_how_its_records_were_read(real_data, run_cli, tmp_path):
    """From a hostile review (session 52): a CSV corpus's cell written NaN became null and a repeated
    column name became text.1 in the copy, while REPORT.md said the records were copied unchanged
    and nothing was said. The readers' notices now reach stderr, summary.json and REPORT.md, which
    says the records are as they were read."""
    test = read_jsonl(real_data / "gsm8k/test.jsonl")[:5]
    lines = ["question,question,note"] + [f'"{r["question"]}",copy,x' for r in test] + ["NaN,other,y"]
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "clean.jsonl"
    code, stdout, err = run_cli("contamination", corpus, "--benchmark", "gsm8k", "--text", "question",
                                "--decontaminate", out, "--json", "-", "--quiet")
    assert code == 0, err
    said = json.loads(stdout)["decontaminated"]
    assert said["kept"] == 1 and said["dropped"] == 5
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == [
        {"question": None, "question.1": "other", "note": "y"}]
    assert any("repeats are read as question.1" in n for n in said["notices"])
    assert any("NaN" in n for n in said["notices"])
    assert err.count("note: corpus.csv:") == 2
    code, report, err = run_cli("contamination", corpus, "--benchmark", "gsm8k", "--text", "question",
                                "--decontaminate", tmp_path / "again.jsonl", "--quiet")
    assert code == 0, err
    assert "in order, as they were read" in report and "unchanged" not in report.split("## Decontaminated copy")[1]
