"""``contamination``: benchmark n-grams found in a training corpus on real data, spans checked
against a plain Python reference, the automatic n-gram size, gzip corpora, the CLI and the report."""
from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

import real_data
from auditor.contamination import choose_n, contamination, tokenize
from definitions import contamination_reference, read_jsonl, words, write_jsonl


def _lines(path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


REPHRASED = Path(__file__).resolve().parents[1] / "data" / "semantic"      # GSM8K test rows 0-59, rephrased


def cli_json(run_cli, *args) -> dict:
    code, out, err = run_cli(*map(str, args), "--json", "-", "--quiet")
    assert code == 0, err
    return json.loads(out)


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


def test_gsm8k_test_in_train_13grams(real_data):
    s = contamination(str(real_data / "gsm8k/train.jsonl"), "gsm8k", ngram=13).summary()
    assert s["kind"] == "contamination" and s["settings"]["ngram"] == 13
    assert [item["benchmark_row"] for item in s["items"]] == [581, 602, 632]
    assert s["contaminated"]["records"] == 3 and s["benchmark"]["records"] == 1319
    for item in s["items"]:
        assert item["longest_span"] >= 13 and item["matched_ngrams"] >= 1 and item["corpus_rows"]
    assert "Paraphrase" in s["caveat"] or "paraphrase" in s["caveat"]


def test_contamination_spans_agree_with_a_plain_python_check(real_data):
    """Independent reference: every 13-token window of each flagged item, looked up in a set."""
    bench = [json.loads(l)["question"] for l in _lines(real_data / "gsm8k/test.jsonl")]
    corpus = [json.loads(l)["question"] for l in _lines(real_data / "gsm8k/train.jsonl")]
    grams = set()
    for text in corpus:
        t = tokenize(text)
        grams.update(tuple(t[i:i + 13]) for i in range(len(t) - 12))
    expected = [i for i, text in enumerate(bench)
                if any(tuple(tokenize(text)[k:k + 13]) in grams for k in range(len(tokenize(text)) - 12))]
    s = contamination(corpus, "gsm8k", ngram=13).summary()
    assert [item["benchmark_row"] for item in s["items"]] == expected


def test_humaneval_prompts_injected_are_all_found(real_data):
    prompts = [json.loads(l)["prompt"] for l in _lines(real_data / "humaneval/HumanEval.jsonl")]
    filler = [json.loads(l)["answer"] for l in _lines(real_data / "gsm8k/train.jsonl")]
    rng = random.Random(3)
    corpus = filler[:]
    for p in prompts:
        corpus.insert(rng.randrange(len(corpus)), "some preamble words " + p + " and a trailing note")
    s = contamination(corpus, "humaneval").summary()
    assert s["contaminated"]["records"] + s["too_short"]["records"] == 164
    assert s["contaminated"]["records"] == 164
    clean_run = contamination(filler, "humaneval").summary()
    assert clean_run["contaminated"]["records"] == 0


def test_auto_ngram_and_too_short_items(tmp_path):
    assert choose_n([20] * 100) == 13 and choose_n([3] * 100) == 8 and choose_n([10] * 100) == 10
    bench = tmp_path / "bench.jsonl"
    bench.write_text("\n".join(json.dumps({"text": t}) for t in [
        "one two three", "alpha beta gamma delta epsilon zeta eta theta iota kappa",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron"]) + "\n")
    s = contamination(["xx alpha beta gamma delta epsilon zeta eta theta iota kappa yy"], str(bench)).summary()
    assert s["settings"]["ngram"] == 8
    assert s["too_short"]["records"] == 1 and s["too_short"]["rows"] == [0]
    assert [i["benchmark_row"] for i in s["items"]] == [1, 2]
    assert s["items"][0]["longest_span"] == 10


def test_contamination_streams_a_gzip_corpus(real_data, tmp_path):
    import gzip
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for line in _lines(real_data / "gsm8k/train.jsonl"):
            fh.write(line + "\n")
    s = contamination(str(path), "gsm8k", ngram=13).summary()
    assert [item["benchmark_row"] for item in s["items"]] == [581, 602, 632]
    assert s["corpus"]["records"] == 7473


def test_contamination_cli(run_cli, real_data):
    rc, out, err = run_cli("contamination", str(real_data / "gsm8k/train.jsonl"), "--benchmark", "gsm8k",
                           "--ngram", "13", "--json", "-", "--quiet", "--fail-on-overlap")
    assert rc == 1 and json.loads(out)["contaminated"]["records"] == 3
    rc, out, err = run_cli("contamination", str(real_data / "gsm8k/train.jsonl"), "--benchmark", "gsm8k",
                           "--ngram", "zero")
    assert rc == 2 and "n-gram" in err


def test_contamination_report_module_formats_as_the_result_does(real_data):
    # auditor.report.contamination is where contamination reports are formatted; until the result
    # class delegates to it, both must agree byte for byte.
    from auditor.report import contamination as report
    corpus = [json.loads(l)["question"] for l in _lines(real_data / "gsm8k/test.jsonl")[:30]]
    result = contamination(corpus, "gsm8k", ngram=13)
    assert len(result.items) >= 30
    assert report.summary(result) == result.summary() and report.markdown(result) == result.markdown()


@pytest.mark.sweep
def test_contamination_finds_planted_items_at_their_rows(real_data, run_cli, tmp_path):
    """A corpus of GSM8K train problems with GSM8K test questions planted at known rows (whole, or
    only their last 15 words) and LLM rephrasings of other test questions: exactly the planted
    rows are reported, for exactly the planted items; the rephrasings are not (13-grams miss
    paraphrases); matched n-gram counts agree with the reference."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:2500]
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    rephrased = [json.loads(x)["text"] for x in gzip.open(REPHRASED / "gsm8k_rephrased.jsonl.gz", "rt",
                                                           encoding="utf-8")]
    corpus = [r["question"] + "\n" + r["answer"] for r in train]
    rng = random.Random(11)
    rows = rng.sample(range(len(corpus)), 16)
    planted = dict(zip(rows[:10], rng.sample(range(60, len(test)), 10)))          # whole questions
    partial = dict(zip(rows[10:12], rng.sample(range(60, len(test)), 2)))         # last 15 words
    reworded = dict(zip(rows[12:], range(4)))                                      # rephrasings of items 0-3
    for r, i in planted.items():
        corpus[r] = "Seen online: " + test[i]["question"] + " (answer below)"
    for r, i in partial.items():
        corpus[r] = "fragment " + " ".join(test[i]["question"].split()[-15:])
    for r, i in reworded.items():
        corpus[r] = rephrased[i]
    write_jsonl(tmp_path / "corpus.jsonl", [{"text": t} for t in corpus])

    summary = cli_json(run_cli, "contamination", tmp_path / "corpus.jsonl", "--benchmark", "gsm8k")
    lengths = [len(words(r["question"])) for r in test]
    assert summary["settings"]["ngram"] == int(min(13, max(8, np.percentile(lengths, 5))))
    n = summary["settings"]["ngram"]
    expected = contamination_reference(corpus, [r["question"] for r in test], n)
    got = {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"]) for it in summary["items"]}
    assert got == expected
    reported = {(r, i) for i, (rs, _, _) in got.items() for r in rs}
    planted_pairs = set({**planted, **partial}.items())
    # GSM8K train itself shares a few 13-grams with test (e.g. "a snowflake design some had a truck
    # design and some had a rose"): those are reported too, at rows nothing was planted in
    natural = {(r, i) for i, (rs, _, _) in contamination_reference(
        [r["question"] + "\n" + r["answer"] for r in train],
        [r["question"] for r in test], n).items() for r in rs if r not in rows}
    assert reported == planted_pairs | natural
    assert not set(reworded.values()) & set(got)
    assert summary["contaminated"]["records"] == len({i for _, i in planted_pairs | natural})
    assert summary["too_short"]["records"] == sum(length < n for length in lengths)


@pytest.mark.sweep
def test_contamination_mbpp_auto_ngram_and_too_short(real_data, run_cli, tmp_path):
    """MBPP test as the benchmark: N is the 5th percentile of its item lengths (clamped 8..13), the
    items shorter than N are counted, and a planted test item is found at its row while a planted
    item of another MBPP split (the prompt split, tasks 1-10) is not reported."""
    mbpp = read_jsonl(real_data / "mbpp/mbpp.jsonl")
    test = [r for r in mbpp if 11 <= r["task_id"] <= 510]
    corpus = [r["question"] for r in read_jsonl(real_data / "gsm8k/train.jsonl")[:1500]]
    corpus[7] = corpus[7] + " " + test[490]["text"]
    corpus[9] = "x " + mbpp[0]["text"]                       # task 1: not in the test split
    write_jsonl(tmp_path / "corpus.jsonl", [{"text": t} for t in corpus])
    summary = cli_json(run_cli, "contamination", tmp_path / "corpus.jsonl", "--benchmark", "mbpp")
    lengths = [len(words(r["text"])) for r in test]
    n = int(min(13, max(8, np.percentile(lengths, 5))))
    assert summary["settings"]["ngram"] == n and summary["benchmark"]["records"] == len(test)
    assert summary["too_short"]["records"] == sum(length < n for length in lengths) > 0
    expected = contamination_reference(corpus, [r["text"] for r in test], n)
    assert {it["benchmark_row"]: (it["corpus_rows"], it["matched_ngrams"], it["item_ngrams"])
            for it in summary["items"]} == expected
    assert expected[490][0] == [7]


def test_contamination_report_says_its_table_is_a_sample_and_agrees_with_summary(tmp_path, run_cli):
    """From the round-4 review (real data): MBPP (full, 974 texts) as a corpus for the bundled sanitized MBPP
    test split: 185 of 257
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
