"""JSON documents in the layouts users save: pandas' to_json orients and missing values, the Hub's
rows API, columns beside single values, SQuAD's nesting, a document named .jsonl, a trailing comma,
JSON Lines joined with byte-order marks: read as their records, or one clear error."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import auditor
import real_data  # noqa: E402
from auditor import AuditorError
from auditor.cli import main
from auditor.io.shards import list_shards, open_shard, record_batches  # noqa: E402
from auditor.io import sources  # noqa: E402
from auditor.leakage import leak
from auditor.roles import resolve_roles
from definitions import read_jsonl


N = 300


@pytest.fixture(scope="module")
def gsm_train_and_test(real_data):
    def rows(rel):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    return rows("gsm8k/train.jsonl"), rows("gsm8k/test.jsonl")[:N]


def write_jsonl_path(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def final(answer: str) -> int:
    return int(answer.split("####")[-1].strip().replace(",", ""))


@pytest.fixture(scope="module")
def gsm_train400(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl")[:400]


TEST = real_data.rows("gsm8k/test.jsonl")


def _squad(rows: list[dict], articles: int = 4, paragraphs: int = 2) -> dict:
    data, k = [], 0
    for a in range(articles):
        article = {"title": f"GSM8K_{a}", "paragraphs": []}
        for p in range(paragraphs):
            context = rows[k]["answer"]
            qas = []
            for q in range(1 + (a + p) % 3):
                question = rows[k + q]["question"]
                final = rows[k + q]["answer"].split("####")[-1].strip()
                qas.append({"question": question, "id": f"q{k + q}", "is_impossible": final not in context,
                            "answers": [{"text": final, "answer_start": context.find(final)}]
                            if final in context else []})
            k += len(qas)
            article["paragraphs"].append({"context": context, "qas": qas})
        data.append(article)
    return {"version": "v2.0", "data": data}


def test_json_objects_of_lists_are_records_columns_or_a_clear_error(tmp_path):
    """From the hostile-input sweep."""
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


def test_nan_answers_are_missing_not_one_duplicate_answer(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes: df.to_dict("records") + json.dumps writes
    a missing answer as NaN: read as the text "nan",
    every missing answer was one exact-duplicate group and none was degenerate."""
    _, test = gsm_train_and_test
    df = pd.DataFrame(test)
    df.loc[::7, "answer"] = np.nan
    path = write_jsonl_path(tmp_path / "nan.jsonl", df.to_dict("records"))
    assert "NaN" in path.read_text()
    result = auditor.scan(str(path), text="question", answer="answer").summary()
    present = df["answer"].dropna().map(lambda a: " ".join(a.lower().split()))
    counts = present.value_counts()
    assert result["degenerate"]["by_role"]["answer"] == int(df["answer"].isna().sum()) == 43
    assert result["exact_duplicates"]["answer"]["records"] == int(counts[counts > 1].sum())
    issue = next(i for i in result["schema"]["issues"] if i["field"] == "answer")
    assert issue["found"] == {"null": 43}


def test_a_widened_int_answer_equals_the_int(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes: Final answers as ints in A; in B saved by
    pandas from a column with a gap (float64: 18.0,
    NaN). The same number must be the same answer, and a missing one no answer at all."""
    train, test = gsm_train_and_test
    a = [{"question": r["question"], "final": final(r["answer"])} for r in train[:2000]]
    df = pd.DataFrame({"question": [r["question"] for r in test], "final": [final(r["answer"]) for r in test]})
    df.loc[::10, "final"] = np.nan
    assert df["final"].dtype == np.float64
    b_path = tmp_path / "b.parquet"
    df.to_parquet(b_path, index=False)
    a_finals = {r["final"] for r in a}
    expected = int(sum(v in a_finals for v in df["final"].dropna().astype(int)))
    assert 0 < expected < N
    got = leak(write_jsonl_path(tmp_path / "a.jsonl", a), b_path, text="question", answer="final").summary()
    assert got["identical_answer"]["records"] == expected
    assert got["b"]["no_text"] == 0


@pytest.mark.parametrize("orient", ["columns", "index", "split", "records", "table"])
def test_pandas_to_json_layouts_are_read_as_records(gsm_train_and_test, tmp_path, orient):
    """From the review of real benchmark rows in curators' shapes: df.to_json() writes orient="columns" by
    default: {"question": {"0": ..., "1": ...}}. It was
    one record (or, "index", a record of records) and no audit."""
    _, test = gsm_train_and_test
    df = pd.DataFrame(test)
    path = tmp_path / f"{orient}.json"
    df.to_json(path, orient=orient)
    table = auditor.load(str(path))
    # (the index is a column of "table" only: the others keep it as keys or a list beside the data)
    expected = json.loads(path.read_text())["data"] if orient == "table" else json.loads(df.to_json(orient="records"))
    assert table.rows == expected and len(table.rows) == N


def test_pandas_default_json_leaks_every_record(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes."""
    _, test = gsm_train_and_test
    reference = write_jsonl_path(tmp_path / "ref.jsonl", test)
    path = tmp_path / "df.json"
    pd.DataFrame(test).to_json(path)
    got = leak(reference, path).summary()
    assert got["b"]["records"] == N and got["identical_both"]["records"] == N


def test_rows_of_the_hub_api_are_read_by_their_row_fields(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes: The Hub's rows API: {"rows": [{"row_idx",
    "row": {question, answer}, "truncated_cells"}]}:
    no field could be guessed. Now the row's question and answer are, and every record leaks."""
    _, test = gsm_train_and_test
    reference = write_jsonl_path(tmp_path / "ref.jsonl", test)
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"rows": [{"row_idx": i, "row": r, "truncated_cells": []}
                                         for i, r in enumerate(test)], "num_rows_total": N}))
    got = leak(reference, path).summary()
    assert (got["b"]["roles"]["text"], got["b"]["roles"]["answer"]) == ("row.question", "row.answer")
    assert got["identical_both"]["records"] == N


def test_one_json_document_named_jsonl_is_refused_with_the_fix(gsm_train_and_test, tmp_path, run_cli):
    """From the review of real benchmark rows in curators' shapes: json.dump({"version": ..., "data": [...]})
    saved as .jsonl was one record holding every
    question (exit 0); a list saved so was "line 1: not valid JSON" with no hint of the fix."""
    _, test = gsm_train_and_test
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
    chat = write_jsonl_path(tmp_path / "chat.jsonl", [{"messages": [{"role": "user", "content": test[0]["question"]},
                                                               {"role": "assistant", "content": test[0]["answer"]}]}])
    assert len(auditor.load(str(chat)).rows) == 1


def test_joined_jsonl_with_byte_order_marks_says_so(gsm_train_and_test, tmp_path, run_cli):
    """From the review of real benchmark rows in curators' shapes."""
    _, test = gsm_train_and_test
    part = "\ufeff" + "".join(json.dumps(r) + "\n" for r in test[:50])
    path = tmp_path / "joined.jsonl"
    path.write_text(part + part, encoding="utf-8")
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "line 51" in err and "byte-order mark" in err and "Traceback" not in err


def test_a_trailing_comma_in_a_json_list_is_named(gsm_train_and_test, tmp_path, run_cli):
    """From the review of real benchmark rows in curators' shapes: Hand-edited or templated JSON:
    "[{...},\\n{...},\\n]". The message was "Expecting value: line
    7 column 1", whole or capped read alike; now it names the trailing comma."""
    _, test = gsm_train_and_test
    path = tmp_path / "trailing.json"
    path.write_text("[\n" + "".join(json.dumps(r) + ",\n" for r in test[:5]) + "]\n", encoding="utf-8")
    for extra in ([], ["--max-rows", "7"]):
        code, _, err = run_cli("scan", path, "--quiet", *extra)
        assert code == 2 and "trailing comma" in err and "Traceback" not in err
    assert len(auditor.load(str(path), max_rows=3).rows) == 3       # the items before it are fine


def test_a_json_document_with_an_id_beside_its_lists_is_one_record(gsm_train400, tmp_path):
    """From the round-5 review of role guesses."""
    words = gsm_train400[0]["question"].split()
    doc = {"id": 3, "tokens": words, "ner_tags": ["O"] * len(words)}
    (tmp_path / "doc.json").write_text(json.dumps(doc), encoding="utf-8")
    table = auditor.load(str(tmp_path / "doc.json"))
    assert table.rows == [doc]
    cols = {"question": [r["question"] for r in gsm_train400[:5]], "answer": [r["answer"] for r in gsm_train400[:5]], "version": "1.0"}
    (tmp_path / "cols.json").write_text(json.dumps(cols), encoding="utf-8")
    table = auditor.load(str(tmp_path / "cols.json"))
    assert table.rows == [{"question": q, "answer": a} for q, a in zip(cols["question"], cols["answer"])]
    assert any("'version'" in n for n in table.notices)


def test_columns_with_a_version_are_read_as_records(tmp_path):
    """From the round-5 review (readers)."""
    rows = TEST[:25]
    path = tmp_path / "gsm8k_columns.json"
    path.write_text(json.dumps({"question": [r["question"] for r in rows], "answer": [r["answer"] for r in rows],
                                "version": "1.0"}))
    expected = [{"question": r["question"], "answer": r["answer"]} for r in rows]
    table = sources.load(str(path))
    assert table.rows == expected
    [notice] = table.notices
    assert "'version': \"1.0\"" in notice and "25 records" in notice
    assert resolve_roles(table.rows).text == "question"
    # the Ray engine reads JSON shards with the same parser
    filesystem, [shard] = list_shards(str(path))
    assert [r for batch in record_batches(open_shard(filesystem, shard), shard) for r in batch] == expected
    # one record with lists of one length and a text beside them stays one record
    record = {"id": 7, "text": TEST[0]["question"], "tokens": TEST[0]["question"].split()[:5],
              "tags": ["O"] * 5}
    (tmp_path / "one.json").write_text(json.dumps(record))
    assert sources.load(str(tmp_path / "one.json")).rows == [record]


def test_squad_is_read_one_record_per_question(tmp_path):
    """From the round-5 review (readers)."""
    doc = _squad(TEST)
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps(doc))
    expected = []
    for article in doc["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                expected.append({"id": qa["id"], "title": article["title"], "context": paragraph["context"],
                                 "question": qa["question"], "is_impossible": qa["is_impossible"],
                                 "answers": qa["answers"]})
    table = sources.load(str(path))
    assert table.rows == expected and len(expected) > len(doc["data"]) * 2
    assert "SQuAD layout" in table.notices[0] and f"{len(expected)} questions in 4 articles" in table.notices[0]
    roles = resolve_roles(table.rows)
    assert roles.text == "question" and roles.answer == "answers.text"
    filesystem, [shard] = list_shards(str(path))
    assert [r for batch in record_batches(open_shard(filesystem, shard), shard) for r in batch] == expected
    out = tmp_path / "scan.json"
    assert main(["scan", str(path), "--json", str(out), "--quiet"]) == 0
    summary = json.loads(out.read_text())
    assert summary["input"]["records"] == len(expected) and summary["roles"]["text"] == "question"


def test_other_two_level_nesting_is_named(tmp_path):
    """From the round-5 review (readers): Not SQuAD's own keys: each top-level item stays one record, and a
    notice names the nesting."""
    doc = _squad(TEST)
    renamed = {"data": [{"name": a["title"], "sections": [{"body": p["context"], "items": p["qas"]}
                                                          for p in a["paragraphs"]]} for a in doc["data"]]}
    path = tmp_path / "nested.json"
    path.write_text(json.dumps(renamed))
    table = sources.load(str(path))
    assert table.rows == renamed["data"]
    assert any("'sections' -> 'items'" in n for n in table.notices)
    # chat records whose messages hold content parts are ordinary records: no notice
    chat = [{"messages": [{"role": "user", "content": [{"type": "text", "text": r["question"]}]},
                          {"role": "assistant", "content": [{"type": "text", "text": r["answer"]}]}]}
            for r in TEST[:5]]
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    table = sources.load(str(tmp_path / "chat.json"))
    assert table.rows == chat and table.notices == ()
