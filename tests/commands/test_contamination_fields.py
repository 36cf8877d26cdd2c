"""Contamination over several corpus fields (``--text instruction,input,output``): each record's
present fields, read as one field is read, joined by a newline and checked as one text, alike by
every reader (Arrow's JSON blocks, the row reader, Parquet, both engines), against a reference
written here from that definition (tests/definitions.py's n-gram reference).

The corpus is instruction-tuning records built from real data (MBPP task texts as instructions,
GSM8K train solutions as outputs) with GSM8K test questions planted in each field, and one split
across two fields.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from definitions import contamination_reference, read_jsonl, write_jsonl

FIELDS = ("instruction", "input", "output")
PLANTED = {11: ("instruction", 60), 222: ("input", 61), 900: ("output", 62)}     # corpus row -> (field, test row)
SPLIT_ROW, SPLIT_ITEM = 300, 70          # a question cut in two: its end in instruction, the rest in input


def reference_text(row: dict, fields=FIELDS) -> str | None:
    """The definition: each present field as text (a number by its written form), joined by a newline."""
    parts = [v if isinstance(v, str) else str(v) for v in (row.get(f) for f in fields) if v is not None]
    return "\n".join(parts) if parts else None


@pytest.fixture(scope="module")
def data(real_data):
    mbpp = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    train = read_jsonl(real_data / "gsm8k/train.jsonl")
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    rows = [{"instruction": mbpp[i % len(mbpp)]["text"], "input": "", "output": train[i]["answer"]}
            for i in range(1500)]
    for row, (field, item) in PLANTED.items():
        rows[row][field] = "As seen online: " + test[item]["question"]
    words = test[SPLIT_ITEM]["question"].split()
    rows[SPLIT_ROW]["instruction"] = "Solve this. " + " ".join(words[:len(words) // 2])
    rows[SPLIT_ROW]["input"] = " ".join(words[len(words) // 2:])
    odd = [dict(r) for r in rows]       # values the row reader takes and Arrow does not vouch for
    odd[5]["input"] = None
    del odd[6]["output"]
    odd[7]["input"] = 12
    odd[8] = {"id": 8}
    return rows, odd, [r["question"] for r in test]


def items_of(summary: dict) -> dict:
    return {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"])
            for it in summary["items"]}


def cli_summary(run_cli, *args) -> dict:
    code, out, err = run_cli("contamination", *map(str, args), "--benchmark", "gsm8k", "--json", "-", "--quiet",
                             timeout=300)
    assert code == 0, err
    return json.loads(out)


def test_several_fields_are_checked_as_one_text(data, run_cli, tmp_path):
    rows, odd, questions = data
    for name, records in (("clean", rows), ("odd", odd)):
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, records)
        got = cli_summary(run_cli, path, "--text", "instruction, input,output")
        assert got["corpus"]["text"] == "instruction,input,output"
        n = got["settings"]["ngram"]
        expected = contamination_reference([reference_text(r) or "" for r in records], questions, n)
        assert items_of(got) == expected, name
        found = {(r, i) for i, (rs, _, _) in expected.items() for r in rs}
        planted = {(row, item) for row, (_, item) in PLANTED.items()} | {(SPLIT_ROW, SPLIT_ITEM)}
        assert planted <= found, name               # the premise: every planted question is there
        assert got["corpus"]["records"] == len(records)
    # One field finds only what sits in it; the question split across fields needs both.
    only = cli_summary(run_cli, tmp_path / "clean.jsonl", "--text", "output")
    expected = contamination_reference([r["output"] for r in rows], questions, n)
    assert items_of(only) == expected
    rows_found = {r for rs, _, _ in expected.values() for r in rs}
    assert 900 in rows_found and not {11, 222, SPLIT_ROW} & rows_found


def test_the_arrow_reader_and_the_row_reader_join_alike(data, tmp_path):
    """The fast reader (Arrow's JSON blocks, joined by Arrow compute) gives the definition's text
    for every record, nulls where no field is present; a block with a number goes row by row."""
    from auditor.textstream import jsonl_texts
    rows, odd, _ = data
    for name, records, arrow in (("clean", rows, True), ("odd", odd, False)):
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, records)
        blocks = list(jsonl_texts(path, "instruction,input,output"))
        assert all(isinstance(b, pa.Array) == arrow for b in blocks), name
        texts = [t for b in blocks for t in (b.to_pylist() if isinstance(b, pa.Array) else b)]
        assert texts == [reference_text(r) for r in records], name
    # A record with none of the fields, and one with only some, on the Arrow path.
    sparse = tmp_path / "sparse.jsonl"
    write_jsonl(sparse, [{"id": 1}, {"input": "x"}, {"output": "y", "instruction": None}, {"instruction": ""}])
    (block,) = jsonl_texts(sparse, "instruction,input,output")
    assert isinstance(block, pa.Array) and block.to_pylist() == [None, "x", "y", ""]


@pytest.mark.sweep
def test_parquet_and_the_ray_engine_agree(data, run_cli, tmp_path):
    """The same records as JSONL, as Parquet, and as shards of both on Ray: the same report."""
    pytest.importorskip("ray")
    rows, odd, _ = data
    write_jsonl(tmp_path / "odd.jsonl", odd)
    local = cli_summary(run_cli, tmp_path / "odd.jsonl", "--text", "instruction,input,output")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "clean.parquet")
    write_jsonl(tmp_path / "clean.jsonl", rows)
    assert items_of(cli_summary(run_cli, tmp_path / "clean.parquet", "--text", "instruction,input,output")) \
        == items_of(cli_summary(run_cli, tmp_path / "clean.jsonl", "--text", "instruction,input,output"))
    shards = tmp_path / "shards"
    shards.mkdir()
    write_jsonl(shards / "part-0.jsonl", odd[:700])                  # row reader (a number, a missing field)
    pq.write_table(pa.Table.from_pylist(odd[700:1100]), shards / "part-1.parquet")
    write_jsonl(shards / "part-2.jsonl", odd[1100:])                 # Arrow
    code, out, err = run_cli("contamination", shards, "--benchmark", "gsm8k", "--text", "instruction,input,output",
                             "--engine", "ray", "--json", "-", "--quiet", env={"RAY_ADDRESS": ""}, timeout=600)
    assert code == 0, err
    ray = json.loads(out)
    ray.pop("engine", None)
    for key in ("items", "contaminated", "settings"):
        assert ray[key] == local[key], key
    assert (ray["corpus"]["text"], ray["corpus"]["records"]) == ("instruction,input,output", len(odd))


def test_bad_field_lists_are_clear_errors(data, run_cli, tmp_path):
    rows, _, _ = data
    write_jsonl(tmp_path / "c.jsonl", rows[:50])
    for spec, says in (("instruction,nosuch", "'nosuch' is in no record"), ("input,input", "named twice"),
                       (" , ", "name no field")):
        code, out, err = run_cli("contamination", tmp_path / "c.jsonl", "--benchmark", "gsm8k", "--text", spec)
        assert code == 2 and says in err and "Traceback" not in err, (spec, err)


def test_report_and_evidence_name_every_field(data, tmp_path):
    from auditor.contamination import contamination
    from auditor.evidence import corpus_texts
    rows, odd, _ = data
    write_jsonl(tmp_path / "odd.jsonl", odd)
    result = contamination(str(tmp_path / "odd.jsonl"), "gsm8k", corpus_text=["instruction", "input", "output"])
    assert "Text fields checked: corpus `instruction`, `input`, `output` (each record's fields joined as one " \
           "text)" in result.markdown()
    wanted = [900, SPLIT_ROW, 7, 8]
    got = corpus_texts(str(tmp_path / "odd.jsonl"), wanted, text=result.corpus["text"])
    assert got == {r: reference_text(odd[r]) for r in wanted}


def test_the_space_searches_the_fields_picked(data, tmp_path):
    """The Space's contamination check on an uploaded file: A's text field alone misses what sits in
    the other fields; with all three picked, the count is the reference's, and the summary names them."""
    import re
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from ui import handlers
    rows, _, questions = data
    path = tmp_path / "sft.jsonl"
    write_jsonl(path, rows)
    view = handlers.run("upload:sft.jsonl", "", "", "instruction", "output", "", [], 0.7, None, str(path), None,
                        "upload:sft.jsonl", "http://space.example/")
    # (label, value) pairs: short names are listed as they are
    assert view["contam_fields"]["choices"] == [(f, f) for f in ("instruction", "input", "output")]
    counts = {}
    for picked in ((), ("instruction", "input", "output")):
        out = handlers.leak_check(view["state"], "", "", "", "", None, False, "gsm8k", "", contam_fields=list(picked))
        md = out["contam_md"]
        counts[picked] = int(re.search(r"share an n-gram with A \(contaminated\) \| ([\d,]+)", md).group(1))
    texts = {(): [r["instruction"] for r in rows], ("instruction", "input", "output"): [reference_text(r) for r in rows]}
    for picked, count in counts.items():
        n = int(re.search(r"shares a (\d+)-token sequence", out["contam_md"]).group(1))
        assert count == len(contamination_reference(texts[picked], questions, n)), picked
    assert counts[()] < counts[("instruction", "input", "output")]
    assert "A's fields searched: instruction, input, output (each record's joined as one text)" in out["contam_md"]


def test_a_field_named_with_a_comma_is_a_clear_error(run_cli, tmp_path):
    write_jsonl(tmp_path / "c.jsonl", [{"problem, restated": "a question", "problem": "b"}] * 3)
    code, out, err = run_cli("contamination", tmp_path / "c.jsonl", "--benchmark", "gsm8k", "--text", "problem, restated")
    assert code == 2 and "has a comma in its name" in err and "Traceback" not in err


def test_a_field_of_numbers_is_refused_not_searched(data, run_cli, tmp_path):
    """A score or an index holds no benchmark passage: searching it would report a clean corpus."""
    rows, _, _ = data
    write_jsonl(tmp_path / "c.jsonl", [dict(r, score=i) for i, r in enumerate(rows[:50])])
    for spec in ("score", "output,score"):
        code, out, err = run_cli("contamination", tmp_path / "c.jsonl", "--benchmark", "gsm8k", "--text", spec)
        assert code == 2 and "'score' holds numbers, not text" in err and "Traceback" not in err, spec
