"""Splits of a local source: split files and shards in a folder, the split a corpus or a
benchmark is read at, the evaluation side without a test split, a config for a local source."""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.cli import main
from auditor.contamination import contamination
from auditor.io.table import choose_split
from auditor.leakage import leak
from ground_truth import reference


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


def write_jsonl_str(path, rows):
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


def split_dir(tmp_path, ext="jsonl"):
    corpus = tmp_path / f"corpus_{ext}"
    corpus.mkdir()
    # no three words in a row shared between the splits
    train = [{"text": f"apples and oranges grow number {i} trainside"} for i in range(3)]
    test = [{"text": f"pears with plums ripen {i} testside"} for i in range(2)]
    for name, rows in (("train", train), ("test", test)):
        if ext == "jsonl":
            write_jsonl_str(corpus / f"{name}.jsonl", rows)
        else:
            (corpus / f"{name}.csv").write_text("text\n" + "".join(r["text"] + "\n" for r in rows), encoding="utf-8")
    return str(corpus), train, test


def norm_plain(value: str) -> str:
    return " ".join(unicodedata.normalize("NFC", value).lower().split())


def sql_code(value: str) -> str:
    """The code normaliser on SQL without comments (as Spider's queries are): lowercase outside
    quoted strings, whitespace collapsed."""
    parts = re.split(r"""("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')""", value)
    return " ".join("".join(p if k % 2 else p.lower() for k, p in enumerate(parts)).split())


@pytest.fixture(scope="module")
def spider():
    keep = ("question", "query", "db_id")
    train = [{k: r[k] for k in keep} for r in real_data.rows("spider/train_spider.jsonl")]
    dev = [{k: r[k] for k in keep} for r in real_data.rows("spider/dev.jsonl")]
    return train, dev


def leak_truth(a_rows, b_rows, threshold=0.7):
    """Every leak figure, from the definitions: B records whose default-normalised text / whole
    code-normalised query / both (the same A record) occur in A, whose text reaches ``threshold``
    Jaccard with an A text (word 3-shingles, exact all pairs), and the shared db_id values."""
    ka = [norm_plain(r["question"]) for r in a_rows]
    kb = [norm_plain(r["question"]) for r in b_rows]
    qa = [sql_code(r["query"]) for r in a_rows]
    qb = [sql_code(r["query"]) for r in b_rows]
    text = {i for i, k in enumerate(kb) if k in set(ka)}
    answer = {i for i, q in enumerate(qb) if q in set(qa)}
    both = {i for i, kq in enumerate(zip(kb, qb)) if kq in set(zip(ka, qa))}
    ref = reference([r["question"] for r in a_rows] + [r["question"] for r in b_rows], "word", 3, threshold)
    n_a = len(a_rows)
    near = {b - n_a for (a, b) in ref.record_pairs(threshold) if a < n_a <= b}
    shared = sorted({r["db_id"] for r in a_rows} & {r["db_id"] for r in b_rows})
    return {"identical_text": len(text), "identical_answer": len(answer), "identical_both": len(both),
            "near_duplicate": len(near), "any_leak": len(text | answer | both | near),
            "text_leak": len(text | near), "shared_groups": shared}


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


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_a_local_corpus_split_is_the_split_read(tmp_path, ext):
    """From the hostile-input sweep."""
    corpus, train, test = split_dir(tmp_path, ext)
    bench = write_jsonl_str(tmp_path / "bench.jsonl", [{"text": test[1]["text"]}, {"text": train[0]["text"]}])
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
    """From the hostile-input sweep: A benchmark folder holding train and test is checked on test (an
    evaluation set), said in
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


def test_a_config_for_a_local_source_is_refused(tmp_path, capsys):
    """From the hostile-input sweep."""
    path = write_jsonl_str(tmp_path / "d.jsonl", [{"text": "one two three four"}])
    with pytest.raises(AuditorError) as info:
        auditor.load(path, config="main")
    assert info.value.code == "usage" and "no configs" in info.value.message
    assert "no configs" in cli_error(capsys, ["scan", path, "--config", "main", "--quiet"])
    assert "no configs" in cli_error(capsys, ["contamination", path, "--benchmark", "gsm8k", "--config", "x",
                                              "--quiet"])
    assert auditor.load(path, config=None).rows == [{"text": "one two three four"}]


def test_evaluation_side_without_a_test_split_reads_validation(spider, tmp_path):
    """From the round-4 review (real data): A folder laid out as the Hub's Spider (train shards and a
    validation file, no test split):
    ``leak DIR DIR`` read train as B too, so every one of 7,000 records "leaked" (100% identical
    text, answer and both) and the real figures (6 identical questions of 1,034) were never shown."""
    train, dev = spider
    folder = tmp_path / "spider"
    folder.mkdir()
    pd.DataFrame(train[:3500]).to_parquet(folder / "train-00000-of-00002.parquet", index=False)
    pd.DataFrame(train[3500:]).to_parquet(folder / "train-00001-of-00002.parquet", index=False)
    pd.DataFrame(dev).to_parquet(folder / "validation-00000-of-00001.parquet", index=False)

    result = leak(str(folder), str(folder))
    summary = result.summary()
    assert (summary["a"]["split"], summary["b"]["split"]) == ("train", "validation")
    assert (summary["a"]["records"], summary["b"]["records"]) == (len(train), len(dev)) == (7000, 1034)
    truth = leak_truth(train, dev)
    got = {k: summary[k]["records"] for k in truth if k != "shared_groups"}
    assert got == {k: v for k, v in truth.items() if k != "shared_groups"}
    assert got["identical_text"] == 6 and got["identical_both"] == 2      # not 7,000
    assert summary["shared_groups"]["values"] == truth["shared_groups"] == []

    # The rule itself: an evaluation side falls back to a held-out split before train; a training
    # side, and a source that has a test split, are unchanged.
    assert choose_split(None, ["train", "validation"], "x", "test")[0] == "validation"
    assert choose_split(None, ["train", "dev"], "x", "test")[0] == "dev"
    assert choose_split(None, ["train", "validation", "test"], "x", "test")[0] == "test"
    assert choose_split(None, ["train", "validation"], "x", "train")[0] == "train"
    assert choose_split(None, ["validation", "train"], "x")[0] == "train"
