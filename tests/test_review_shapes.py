"""Real benchmark rows (GSM8K) saved in the shapes a curator meets on the Hub and in lab folders:
pandas' JSON layouts and missing values, a ``datasets`` save_to_disk folder, a Hub snapshot with
its dataset_infos.json, nested question objects (ARC's question.stem, the Hub API's rows). Every
figure is checked against ground truth computed here with pandas / json, never the tool's output.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import auditor
from auditor.errors import AuditorError
from auditor.leakage import leak

N = 300


@pytest.fixture(scope="module")
def gsm(real_data):
    def rows(rel):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    return rows("gsm8k/train.jsonl"), rows("gsm8k/test.jsonl")[:N]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def final(answer: str) -> int:
    return int(answer.split("####")[-1].strip().replace(",", ""))


# --------------------------------------------------------------------------- pandas' missing values

def test_nan_answers_are_missing_not_one_duplicate_answer(gsm, tmp_path):
    """df.to_dict("records") + json.dumps writes a missing answer as NaN: read as the text "nan",
    every missing answer was one exact-duplicate group and none was degenerate."""
    _, test = gsm
    df = pd.DataFrame(test)
    df.loc[::7, "answer"] = np.nan
    path = write_jsonl(tmp_path / "nan.jsonl", df.to_dict("records"))
    assert "NaN" in path.read_text()
    result = auditor.scan(str(path), text="question", answer="answer").summary()
    present = df["answer"].dropna().map(lambda a: " ".join(a.lower().split()))
    counts = present.value_counts()
    assert result["degenerate"]["by_role"]["answer"] == int(df["answer"].isna().sum()) == 43
    assert result["exact_duplicates"]["answer"]["records"] == int(counts[counts > 1].sum())
    issue = next(i for i in result["schema"]["issues"] if i["field"] == "answer")
    assert issue["found"] == {"null": 43}


def test_a_widened_int_answer_equals_the_int(gsm, tmp_path):
    """Final answers as ints in A; in B saved by pandas from a column with a gap (float64: 18.0,
    NaN). The same number must be the same answer, and a missing one no answer at all."""
    train, test = gsm
    a = [{"question": r["question"], "final": final(r["answer"])} for r in train[:2000]]
    df = pd.DataFrame({"question": [r["question"] for r in test], "final": [final(r["answer"]) for r in test]})
    df.loc[::10, "final"] = np.nan
    assert df["final"].dtype == np.float64
    b_path = tmp_path / "b.parquet"
    df.to_parquet(b_path, index=False)
    a_finals = {r["final"] for r in a}
    expected = int(sum(v in a_finals for v in df["final"].dropna().astype(int)))
    assert 0 < expected < N
    got = leak(write_jsonl(tmp_path / "a.jsonl", a), b_path, text="question", answer="final").summary()
    assert got["identical_answer"]["records"] == expected
    assert got["b"]["no_text"] == 0


# --------------------------------------------------------------------------- pandas' JSON layouts

@pytest.mark.parametrize("orient", ["columns", "index", "split", "records", "table"])
def test_pandas_to_json_layouts_are_read_as_records(gsm, tmp_path, orient):
    """df.to_json() writes orient="columns" by default: {"question": {"0": ..., "1": ...}}. It was
    one record (or, "index", a record of records) and no audit."""
    _, test = gsm
    df = pd.DataFrame(test)
    path = tmp_path / f"{orient}.json"
    df.to_json(path, orient=orient)
    table = auditor.load(str(path))
    # (the index is a column of "table" only: the others keep it as keys or a list beside the data)
    expected = json.loads(path.read_text())["data"] if orient == "table" else json.loads(df.to_json(orient="records"))
    assert table.rows == expected and len(table.rows) == N


def test_pandas_default_json_leaks_every_record(gsm, tmp_path):
    _, test = gsm
    reference = write_jsonl(tmp_path / "ref.jsonl", test)
    path = tmp_path / "df.json"
    pd.DataFrame(test).to_json(path)
    got = leak(reference, path).summary()
    assert got["b"]["records"] == N and got["identical_both"]["records"] == N


# --------------------------------------------------------------------------- what `datasets` writes

def test_a_save_to_disk_folder_is_refused_not_audited_as_its_metadata(gsm, tmp_path, run_cli):
    """A folder written by datasets' save_to_disk: its records are in .arrow files; its
    state.json and dataset_info.json were audited as a 2-record dataset, exit 0."""
    datasets = pytest.importorskip("datasets")
    _, test = gsm
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(test).save_to_disk(str(folder))
    assert {p.name for p in folder.iterdir()} >= {"state.json", "dataset_info.json"}
    code, out, err = run_cli("scan", folder, "--quiet")
    assert code == 2 and "save_to_disk" in err and "load_from_disk" in err and "Traceback" not in err
    with pytest.raises(AuditorError) as info:
        auditor.load(str(folder))
    assert info.value.code == "bad_format"


def test_dataset_infos_json_beside_the_data_is_not_a_record(gsm, tmp_path):
    """A Hub snapshot: data.jsonl and the dataset_infos.json the datasets library wrote. The
    metadata was read as one more record (301 of 300), in a folder and in a glob, by both engines'
    listings."""
    from auditor.io.shards import list_shards
    _, test = gsm
    folder = tmp_path / "snapshot"
    folder.mkdir()
    write_jsonl(folder / "data.jsonl", test)
    (folder / "dataset_infos.json").write_text(json.dumps(
        {"default": {"features": {"question": {"dtype": "string"}}, "splits": {"train": {"num_examples": N}}}}))
    for source in (folder, folder / "*"):
        table = auditor.load(str(source))
        assert len(table.rows) == N and table.files == ("data.jsonl",)
        assert [s.name for s in list_shards(str(source))[1]] == ["data.jsonl"]
    assert len(auditor.load(str(folder / "dataset_infos.json")).rows) == 1      # named: read as asked


# --------------------------------------------------------------------------- nested question objects

def test_arc_question_stem_is_the_text_not_the_id(gsm, tmp_path):
    """The original ARC / OpenBookQA / CommonsenseQA JSONL: {"id", "question": {"stem",
    "choices"}, "answerKey"}. The longest string field, the id ("Mercury_7175875"), was the text:
    every record distinct, planted duplicates unseen."""
    _, test = gsm
    rows = [{"id": f"Mercury_{7175875 + i}", "question": {"stem": r["question"], "choices": [
        {"text": str(final(r["answer"])), "label": "A"}, {"text": "7", "label": "B"}]}, "answerKey": "A"}
        for i, r in enumerate(test)]
    for k in range(0, 40, 2):                       # 20 stems asked twice, under new ids
        rows.append({**rows[k], "id": f"Mercury_{9000000 + k}"})
    path = write_jsonl(tmp_path / "arc.jsonl", rows)
    summary = auditor.scan(str(path)).summary()
    assert summary["roles"]["text"] == "question.stem" and summary["roles"]["id"] == "id"
    stems = pd.Series([" ".join(r["question"]["stem"].lower().split()) for r in rows]).value_counts()
    assert summary["exact_duplicates"]["text"]["records"] == int(stems[stems > 1].sum()) >= 40


def test_rows_of_the_hub_api_are_read_by_their_row_fields(gsm, tmp_path):
    """The Hub's rows API: {"rows": [{"row_idx", "row": {question, answer}, "truncated_cells"}]}:
    no field could be guessed. Now the row's question and answer are, and every record leaks."""
    _, test = gsm
    reference = write_jsonl(tmp_path / "ref.jsonl", test)
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"rows": [{"row_idx": i, "row": r, "truncated_cells": []}
                                         for i, r in enumerate(test)], "num_rows_total": N}))
    got = leak(reference, path).summary()
    assert (got["b"]["roles"]["text"], got["b"]["roles"]["answer"]) == ("row.question", "row.answer")
    assert got["identical_both"]["records"] == N


def test_only_ids_is_no_text(tmp_path, run_cli):
    path = write_jsonl(tmp_path / "ids.jsonl", [{"uid": f"item-{i:05d}", "label": i % 3} for i in range(50)])
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "could be guessed" in err and "Traceback" not in err


# --------------------------------------------------------------------------- CSV as Excel saves it

def test_excel_sep_line_names_the_delimiter(gsm, tmp_path):
    """Excel's "sep=;" first line: read as the header, the real header became a record (301 of
    300) and the columns "sep=" and "Unnamed: 1" (the answers guessed as the text)."""
    _, test = gsm
    path = tmp_path / "excel.csv"
    body = pd.DataFrame(test).to_csv(index=False, sep=";", lineterminator="\r\n")
    path.write_text("sep=;\r\n" + body, encoding="utf-8")
    expected = pd.read_csv(path, sep=";", skiprows=1, dtype=str, keep_default_na=False).to_dict("records")
    table = auditor.load(str(path))
    assert table.rows == expected and len(table.rows) == N
    assert any("sep=;" in notice for notice in table.notices)
    summary = auditor.scan(str(path)).summary()
    assert (summary["roles"]["text"], summary["input"]["records"]) == ("question", N)


def test_squad_answers_object_gives_its_text_as_the_answer(gsm, tmp_path):
    """rajpurkar/squad's rows: {"question", "context", "answers": {"text": [...], "answer_start":
    [...]}}. The answers object could not be the answer, so no answer was compared at all."""
    train, test = gsm

    def squad(rows, tag):
        return [{"id": f"{tag}{i}", "title": "gsm8k", "context": r["answer"], "question": r["question"],
                 "answers": {"text": [str(final(r["answer"]))], "answer_start": [r["answer"].rfind("#") + 2]}}
                for i, r in enumerate(rows)]
    a, b = squad(train[:2000], "tr"), squad(test, "te")
    got = leak(write_jsonl(tmp_path / "a.jsonl", a), write_jsonl(tmp_path / "b.jsonl", b)).summary()
    assert got["b"]["roles"]["answer"] == "answers.text" and got["b"]["roles"]["text"] == "question"
    a_answers = {r["answers"]["text"][0] for r in a}
    assert got["identical_answer"]["records"] == sum(r["answers"]["text"][0] in a_answers for r in b) > 0


# --------------------------------------------------------------------------- JSON named .jsonl

def test_one_json_document_named_jsonl_is_refused_with_the_fix(gsm, tmp_path, run_cli):
    """json.dump({"version": ..., "data": [...]}) saved as .jsonl was one record holding every
    question (exit 0); a list saved so was "line 1: not valid JSON" with no hint of the fix."""
    _, test = gsm
    wrapped = tmp_path / "squad.jsonl"
    wrapped.write_text(json.dumps({"version": "1.1", "data": test}))
    pretty = tmp_path / "pretty.jsonl"
    pretty.write_text(json.dumps(test, indent=2))
    for path in (wrapped, pretty):
        code, _, err = run_cli("scan", path, "--quiet")
        assert code == 2 and "name it .json" in err and "Traceback" not in err
    assert f"holds {N} records" in run_cli("scan", wrapped, "--quiet")[2]
    renamed = wrapped.rename(tmp_path / "squad.json")                  # the fix the hint gives
    assert auditor.load(str(renamed)).rows == test
    # Two such lines are two records (a JSONL of documents), and a one-line conversation is one.
    twice = tmp_path / "two.jsonl"
    twice.write_text(2 * (json.dumps({"version": "1.1", "data": test[:3]}) + "\n"))
    assert len(auditor.load(str(twice)).rows) == 2
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"messages": [{"role": "user", "content": test[0]["question"]},
                                                               {"role": "assistant", "content": test[0]["answer"]}]}])
    assert len(auditor.load(str(chat)).rows) == 1


# --------------------------------------------------------------------------- files joined with cat

def test_csv_files_joined_with_cat_keep_no_header_as_a_record(gsm, tmp_path):
    """`cat a.csv b.csv`: b's header line (with its byte-order mark, as Excel saves) was one more
    record, {"question": "\\ufeffquestion", "answer": "answer"}: 601 records of 600."""
    train, test = gsm
    parts = []
    for k, rows in enumerate((test, train[:200])):
        part = tmp_path / f"part{k}.csv"
        pd.DataFrame(rows).to_csv(part, index=False, encoding="utf-8-sig")
        parts.append(part.read_bytes())
    joined = tmp_path / "joined.csv"
    joined.write_bytes(b"".join(parts))
    expected = pd.concat([pd.read_csv(tmp_path / f"part{k}.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
                          for k in range(2)]).to_dict("records")
    table = auditor.load(str(joined))
    assert table.rows == expected and len(table.rows) == N + 200
    assert any("repeat the header" in notice for notice in table.notices)


def test_joined_jsonl_with_byte_order_marks_says_so(gsm, tmp_path, run_cli):
    _, test = gsm
    part = "\ufeff" + "".join(json.dumps(r) + "\n" for r in test[:50])
    path = tmp_path / "joined.jsonl"
    path.write_text(part + part, encoding="utf-8")
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "line 51" in err and "byte-order mark" in err and "Traceback" not in err


def test_unquoted_tsv_error_names_the_conversion(gsm, tmp_path, run_cli):
    """GLUE-style TSV, written without quoting: a text that starts with a quote is not a quoted
    value. Refused (as pandas' default reader refuses it), with the conversion that reads it."""
    _, test = gsm
    lines = ["id\tquestion"] + [f"{i}\t" + ('"Quoted" ' if i == 3 else "") + r["question"].replace("\n", " ")
                                for i, r in enumerate(test[:40])]
    path = tmp_path / "glue.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "line 5" in err and "quoting=3" in err and "Traceback" not in err
    assert len(pd.read_csv(path, sep="\t", quoting=3)) == 40          # the conversion the hint gives works


def test_a_trailing_comma_in_a_json_list_is_named(gsm, tmp_path, run_cli):
    """Hand-edited or templated JSON: "[{...},\\n{...},\\n]". The message was "Expecting value: line
    7 column 1", whole or capped read alike; now it names the trailing comma."""
    _, test = gsm
    path = tmp_path / "trailing.json"
    path.write_text("[\n" + "".join(json.dumps(r) + ",\n" for r in test[:5]) + "]\n", encoding="utf-8")
    for extra in ([], ["--max-rows", "7"]):
        code, _, err = run_cli("scan", path, "--quiet", *extra)
        assert code == 2 and "trailing comma" in err and "Traceback" not in err
    assert len(auditor.load(str(path), max_rows=3).rows) == 3       # the items before it are fine
