"""Review round 4: the audit figures on real data (Spider, MBPP, GSM8K from tests/real_data.py) in
the shapes a user brings (a folder of Parquet shards with train/validation splits, CSV with quoted
newlines and CRLF, gzip'd JSONL), each figure compared with ground truth computed here with plain
Python and the exact all-pairs reference of tests/ground_truth.py, never with the tool's output.
"""
from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter

import pandas as pd
import pytest

import auditor
import real_data
from auditor.audit import scan
from auditor.leakage import leak
from auditor.io.table import choose_split
from ground_truth import reference, word_shingles


# --------------------------------------------------------------------------- independent definitions

def norm_default(value: str) -> str:
    return " ".join(unicodedata.normalize("NFC", value).lower().split())


def duplicate_figures(values, fn) -> tuple[int, int]:
    """(groups, records) of values equal under ``fn``; blank values are missing."""
    counts = Counter(fn(v) for v in values if v is not None and v.strip())
    groups = [k for k, n in counts.items() if n >= 2]
    return len(groups), sum(counts[k] for k in groups)


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
    ka = [norm_default(r["question"]) for r in a_rows]
    kb = [norm_default(r["question"]) for r in b_rows]
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


# --------------------------------------------------------------------------- the evaluation side's split

def test_evaluation_side_without_a_test_split_reads_validation(spider, tmp_path):
    """A folder laid out as the Hub's Spider (train shards and a validation file, no test split):
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


# --------------------------------------------------------------------------- scan figures on user-shaped files

MBPP_THRESHOLDS = (0.9, 0.7, 0.5, 0.3)


@pytest.fixture(scope="module")
def mbpp_truth():
    rows = real_data.rows("mbpp/mbpp.jsonl")
    texts = [r["text"] for r in rows]
    ref = reference(texts, "word", 3, min(MBPP_THRESHOLDS))
    return rows, ref


@pytest.mark.parametrize("shape", ["csv", "csv_crlf", "jsonl_gz"])
def test_mbpp_scan_figures_in_user_shapes(mbpp_truth, tmp_path, shape):
    """MBPP's code answers hold CRLF line ends and tabs: as CSV (quoted newlines, LF or CRLF
    records) and gzip'd JSONL every value reads back byte for byte, and every exact and
    near-duplicate figure equals the definitions'."""
    rows, ref = mbpp_truth
    frame = pd.DataFrame(rows)
    if shape == "csv":
        path = tmp_path / "mbpp.csv"
        frame.to_csv(path, index=False)
    elif shape == "csv_crlf":
        path = tmp_path / "mbpp.csv"
        frame.to_csv(path, index=False, lineterminator="\r\n")
    else:
        import gzip
        path = tmp_path / "mbpp.jsonl.gz"
        path.write_bytes(gzip.compress(real_data.content("mbpp/mbpp.jsonl")))
    table = auditor.load(str(path))
    assert [(r["text"], r["code"]) for r in table.rows] == [(r["text"], r["code"]) for r in rows]

    result = scan(str(path), text="text", answer="code", group=None)
    s = result.summary(0.7)
    texts, codes = [r["text"] for r in rows], [r["code"] for r in rows]
    by = s["exact_duplicates_by_normalizer"]
    assert (by["text"]["exact"]["groups"], by["text"]["exact"]["records"]) == duplicate_figures(texts, str) == (4, 8)
    assert (by["text"]["default"]["groups"], by["text"]["default"]["records"]) == duplicate_figures(texts, norm_default)
    assert (by["answer"]["exact"]["groups"], by["answer"]["exact"]["records"]) == duplicate_figures(codes, str) == (0, 0)
    assert (by["answer"]["default"]["groups"], by["answer"]["default"]["records"]) == \
        duplicate_figures(codes, norm_default) == (8, 16)
    for threshold in MBPP_THRESHOLDS:
        near = result.near_duplicates(threshold)
        clusters = ref.clusters(threshold)
        assert (near.pairs, near.clusters, near.records_in_clusters, near.largest_cluster) == \
            (ref.pair_count(threshold), len(clusters), sum(map(len, clusters)), max(map(len, clusters))), threshold


def test_spider_identical_and_variant_clusters_against_definitions(spider):
    """Spider train with question/query/db_id: a cluster is identical when all three fields are equal
    (default normaliser) across its records, else a variant; the group concentration is the db_id
    counts. Both are checked at several thresholds against the reference."""
    train, _ = spider
    table = auditor.Table(rows=train, source="train_spider.jsonl")
    result = scan(table)
    assert (result.roles.text, result.roles.answer, result.roles.group) == ("question", "query", "db_id")
    ref = reference([r["question"] for r in train], "word", 3, 0.5)

    def evaluated(i):
        return tuple(norm_default(train[i][k]) for k in ("question", "query", "db_id"))

    for threshold in (0.9, 0.7, 0.5):
        clusters = ref.clusters(threshold)
        identical = sum(len({evaluated(i) for i in c}) == 1 for c in clusters)
        near = result.near_duplicates(threshold)
        assert (near.clusters, near.identical_clusters, near.variant_clusters) == \
            (len(clusters), identical, len(clusters) - identical), threshold
    assert (result.near_duplicates(0.7).identical_clusters, result.near_duplicates(0.7).variant_clusters) == (9, 68)

    counts = Counter(r["db_id"] for r in train)
    conc = result.summary()["concentration"]
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert conc["groups"] == len(counts) == 140
    assert [(t["value"], t["records"]) for t in conc["top"]] == top[:10]
    assert conc["hhi"] == round(sum((n / len(train)) ** 2 for n in counts.values()), 6)


def test_evidence_jaccard_and_ids_on_mbpp_versions(tmp_path):
    """MBPP against its sanitized version (B's text field is ``prompt``; both guess ``task_id`` as
    id): the evidence names every leaked B record once, with the right ids and the exact Jaccard of
    the two texts."""
    a_rows = real_data.rows("mbpp/mbpp.jsonl")
    b_rows = real_data.rows("mbpp/sanitized-mbpp.jsonl")
    a_path, b_path = tmp_path / "mbpp.jsonl", tmp_path / "sanitized.jsonl"
    a_path.write_bytes(real_data.content("mbpp/mbpp.jsonl"))
    b_path.write_bytes(real_data.content("mbpp/sanitized-mbpp.jsonl"))
    result = leak(str(a_path), str(b_path), text_b="prompt")
    rows = result.evidence_rows()
    a_text = {norm_default(r["text"]) for r in a_rows}
    ref = reference([r["text"] for r in a_rows] + [r["prompt"] for r in b_rows], "word", 3, 0.7)
    near = {b - len(a_rows) for (a, b) in ref.record_pairs(0.7) if a < len(a_rows) <= b}
    text_leak = {i for i, r in enumerate(b_rows) if norm_default(r["prompt"]) in a_text} | near
    assert result.summary()["text_leak"]["records"] == len(text_leak) == 228
    assert len({r["b_row"] for r in rows}) == len(rows) == result.summary()["any_leak"]["records"]
    for row in rows:
        b, a = int(row["b_row"]), int(row["a_row"])
        assert str(row["b_id"]) == str(b_rows[b]["task_id"]) and str(row["a_id"]) == str(a_rows[a]["task_id"])
        sa, sb = word_shingles(a_rows[a]["text"]), word_shingles(b_rows[b]["prompt"])
        assert abs(float(row["text_jaccard"]) - len(sa & sb) / len(sa | sb)) < 1e-4


# --------------------------------------------------------------------------- a guessed corpus text

def ngram_tokens(text):
    """The contamination tokens by their definition: lowercase, drop what is neither a word
    character nor whitespace (and underscores), split on whitespace."""
    return re.sub(r"[^\w\s]+|_+", "", (text or "").lower()).split()


def contaminated_items(questions, corpus_texts, n):
    grams = {}
    for i, q in enumerate(questions):
        words = ngram_tokens(q)
        for s in range(len(words) - n + 1):
            grams.setdefault(tuple(words[s:s + n]), set()).add(i)
    hit = set()
    for text in corpus_texts:
        words = ngram_tokens(text)
        for s in range(len(words) - n + 1):
            hit |= grams.get(tuple(words[s:s + n]), set())
    return hit


@pytest.mark.parametrize("fields", [("instruction", "input", "output"), ("instruction", "output")])
def test_guessed_corpus_text_of_an_instruction_layout_is_the_whole_record(tmp_path, fields):
    """An Alpaca-shaped corpus with --text left blank: the guess was "instruction" alone, so a
    benchmark item copied into a record's input or output was never looked for (on the real
    5,000-row Alpaca subset, 3 of the 11 GSM8K items sharing a 6-gram were reported). The guess is
    now every field of the layout, as --text instruction,input,output checks them."""
    from auditor.contamination import contamination
    mbpp = real_data.rows("mbpp/mbpp.jsonl")
    train = real_data.rows("gsm8k/train.jsonl")
    questions = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    rows = [{"instruction": mbpp[i]["text"], "input": "", "output": train[i]["answer"]} for i in range(600)]
    rows[10]["instruction"] = "Solve: " + questions[5]
    rows[20]["input"] = questions[6]
    rows[30]["output"] = "The problem was: " + questions[7]
    rows = [{k: r[k] for k in fields} for r in rows]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    result = contamination(str(path), "gsm8k", ngram=8).summary()
    assert result["corpus"]["text"] == ",".join(f for f in fields)
    whole = contaminated_items(questions, ["\n".join(r[f] for f in fields if r.get(f) is not None) for r in rows], 8)
    instruction_only = contaminated_items(questions, [r["instruction"] for r in rows], 8)
    assert {5, 6 if "input" in fields else 5, 7} <= whole and 7 not in instruction_only
    assert {it["benchmark_row"] for it in result["items"]} == whole
    # A text named by the user is kept as named.
    named = contamination(str(path), "gsm8k", ngram=8, corpus_text="instruction").summary()
    assert named["corpus"]["text"] == "instruction"
    assert {it["benchmark_row"] for it in named["items"]} == instruction_only


# --------------------------------------------------------------------------- REPORT.md against summary.json

def test_contamination_report_says_its_table_is_a_sample_and_agrees_with_summary(tmp_path, run_cli):
    """MBPP (full, 974 texts) as a corpus for the bundled sanitized MBPP test split: 185 of 257
    items share a 9-gram. REPORT.md listed 50 of them with nothing saying the list stopped there, and
    showed at most 5 corpus rows of an item matched by 16. Every figure is checked against the
    n-gram definition, the report against summary.json, and two runs are byte-identical."""
    corpus = tmp_path / "mbpp.jsonl"
    corpus.write_bytes(real_data.content("mbpp/mbpp.jsonl"))
    outs = []
    for k in (1, 2):
        out = tmp_path / f"out{k}"
        code, _, err = run_cli("contamination", corpus, "--benchmark", "mbpp-sanitized", "--out-dir", out, "--quiet")
        assert code == 0, err
        outs.append(out)
    for name in ("summary.json", "REPORT.md"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    s = json.loads((outs[0] / "summary.json").read_text(encoding="utf-8"))
    md = (outs[0] / "REPORT.md").read_text(encoding="utf-8")

    sanitized = [r for r in real_data.rows("mbpp/sanitized-mbpp.jsonl") if 11 <= r["task_id"] <= 510]
    questions = [r["prompt"] for r in sanitized]
    corpus_texts = [r["text"] for r in real_data.rows("mbpp/mbpp.jsonl")]
    lengths = sorted(len(ngram_tokens(q)) for q in questions if ngram_tokens(q))
    import numpy as np
    n = int(min(13, max(8, np.percentile(lengths, 5))))
    hit = contaminated_items(questions, corpus_texts, n)
    assert (s["settings"]["ngram"], s["benchmark"]["records"], s["contaminated"]["records"]) == (n, 257, len(hit))
    assert {it["benchmark_row"] for it in s["items"]} == hit and len(hit) == 185

    head = re.search(r"\n([\d,]+) of ([\d,]+) benchmark items \(([\d.]+)%\) share at least one (\d+)-gram", md)
    assert head.groups() == (f"{len(hit):,}", "257", f"{100 * len(hit) / 257:.2f}", str(n))
    listed = re.findall(r"\n\| (\d+) \| ([^|]+) \| (\d+) of (\d+) \| (\d+) \|", md)
    assert len(listed) == 50 < len(hit)
    assert "The first 50 of the 185 contaminated items are listed" in md
    items = {it["benchmark_row"]: it for it in s["items"]}
    for row, cell, matched, of, span in listed:
        it = items[int(row)]
        assert (int(matched), int(of), int(span)) == (it["matched_ngrams"], it["item_ngrams"], it["longest_span"])
        shown = [int(x) for x in re.findall(r"\d+", cell.split("…")[0])]
        assert shown == it["corpus_rows"][:5]
        if it["corpus_matches"] > 5:
            assert f"({it['corpus_matches']:,} rows)" in cell
    # An item's corpus rows: the texts sharing an n-gram with it, by the definition.
    words = ngram_tokens(questions[10])
    grams = {tuple(words[k:k + n]) for k in range(len(words) - n + 1)}
    item10 = {i for i, t in enumerate(corpus_texts)
              if any(tuple(ngram_tokens(t)[k:k + n]) in grams for k in range(len(ngram_tokens(t)) - n + 1))}
    assert items[10]["corpus_matches"] == len(item10) == 16


# --------------------------------------------------------------------------- a Hub dataset with configs and splits

HUB_README = """---
configs:
- config_name: spider
  data_files:
  - split: train
    path: spider/train-*.parquet
  - split: validation
    path: spider/validation-00000-of-00001.parquet
- config_name: mbpp
  data_files:
  - split: train
    path: mbpp/train.parquet
  - split: test
    path: mbpp/test.parquet
---
# Spider and MBPP (fake Hub copy for tests)
"""


def test_hub_configs_and_splits_give_the_definitions_figures(spider, run_cli, tmp_path):
    """A Hub repo of two configs: Spider (train in two shards, validation) and MBPP (train, test).
    Leak with no split named reads train against Spider's validation (no test split there) and
    MBPP's test; scan reads the named config and split; every figure is the definitions'."""
    import io
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hub_server import FakeHub

    def parquet(rows):
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), buf)
        return buf.getvalue()

    train, dev = spider
    mbpp = [{k: r[k] for k in ("text", "code", "task_id")} for r in real_data.rows("mbpp/mbpp.jsonl")]
    mbpp_train = [r for r in mbpp if r["task_id"] > 600]
    mbpp_test = [r for r in mbpp if 11 <= r["task_id"] <= 510]
    hub = FakeHub(tmp_path / "hub")
    hub.add_repo("acme/code-sql", {
        "spider/train-00000-of-00002.parquet": parquet(train[:3500]),
        "spider/train-00001-of-00002.parquet": parquet(train[3500:]),
        "spider/validation-00000-of-00001.parquet": parquet(dev),
        "mbpp/train.parquet": parquet(mbpp_train), "mbpp/test.parquet": parquet(mbpp_test)}, readme=HUB_README)
    env = {"HF_ENDPOINT": hub.start(), "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HOME": str(tmp_path / "home"), "HF_DATASETS_CACHE": str(tmp_path / "home"), "HF_TOKEN": ""}

    def cli(*args):
        code, out, err = run_cli(*args, "--json", "-", "--quiet", env=env, timeout=300)
        assert code == 0, err
        return json.loads(out)

    try:
        got = cli("leak", "acme/code-sql", "acme/code-sql", "--config-a", "spider", "--config-b", "spider")
        assert (got["a"]["split"], got["b"]["split"], got["b"]["records"]) == ("train", "validation", 1034)
        truth = leak_truth(train, dev)
        assert {k: got[k]["records"] for k in truth if k != "shared_groups"} == \
            {k: v for k, v in truth.items() if k != "shared_groups"}

        got = cli("leak", "acme/code-sql", "acme/code-sql", "--config-a", "mbpp", "--config-b", "mbpp")
        assert (got["a"]["split"], got["b"]["split"]) == ("train", "test")
        a_text = {norm_default(r["text"]) for r in mbpp_train}
        ref = reference([r["text"] for r in mbpp_train + mbpp_test], "word", 3, 0.7)
        near = {b - len(mbpp_train) for (a, b) in ref.record_pairs(0.7) if a < len(mbpp_train) <= b}
        identical = {i for i, r in enumerate(mbpp_test) if norm_default(r["text"]) in a_text}
        assert (got["identical_text"]["records"], got["near_duplicate"]["records"], got["text_leak"]["records"]) == \
            (len(identical), len(near), len(identical | near)) == (3, 16, 16)

        got = cli("scan", "acme/code-sql", "--config", "spider", "--split", "validation")
        assert (got["input"]["config"], got["input"]["split"], got["input"]["records"]) == ("spider", "validation", 1034)
        ref = reference([r["question"] for r in dev], "word", 3, 0.3)
        assert [(p["pairs"], p["clusters"]) for p in got["curve"]] == \
            [(ref.pair_count(t), ref.cluster_count(t)) for t in got["settings"]["thresholds"]]
        counts = Counter(r["db_id"] for r in dev)
        assert (got["concentration"]["groups"], got["concentration"]["largest"]["value"],
                got["concentration"]["largest"]["records"]) == (len(counts), *counts.most_common(1)[0])
        queries = [r["query"] for r in dev]
        assert (got["exact_duplicates"]["answer"]["groups"], got["exact_duplicates"]["answer"]["records"]) == \
            duplicate_figures(queries, sql_code)
    finally:
        hub.stop()


def test_semicolon_csv_whose_first_record_spans_lines(tmp_path):
    """A European Excel CSV (semicolons) of Spider and MBPP rows whose first record holds a quoted
    newline: the first record's first line (a quote left open) held fewer values than the header,
    so the file was read as comma-separated and refused ("5 values but the header has 1 columns").
    It reads back value for value, and a one-column file whose header holds a semicolon stays one."""
    train = real_data.rows("spider/train_spider.jsonl")[:200]
    rows = [{"question": r["question"], "query": r["query"].replace("  ", "\n"), "db_id": r["db_id"]} for r in train]
    rows[0]["question"] = "List the heads;\nolder first"          # the first record: a newline and a semicolon
    path = tmp_path / "spider_semicolon.csv"
    pd.DataFrame(rows).to_csv(path, index=False, sep=";")
    assert path.read_text(encoding="utf-8").splitlines()[0] == "question;query;db_id"
    table = auditor.load(str(path))
    assert table.rows == rows
    assert any("semicolon" in n for n in table.notices)

    mbpp = [{"text": r["text"], "code": r["code"]} for r in real_data.rows("mbpp/mbpp.jsonl")[:100]]
    path = tmp_path / "mbpp_semicolon.csv"
    pd.DataFrame(mbpp).to_csv(path, index=False, sep=";")
    assert auditor.load(str(path)).rows == mbpp

    one = tmp_path / "one.csv"
    one.write_text('notes; remarks\n"first line\nsecond; line"\n', encoding="utf-8")
    assert auditor.load(str(one)).rows == [{"notes; remarks": "first line\nsecond; line"}]
