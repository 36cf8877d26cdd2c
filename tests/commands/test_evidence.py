"""auditor.evidence: token offsets, shared n-gram spans and leakage evidence, checked against
independent references (the contamination tokenizer itself, brute-force n-gram sets and longest
common runs, Python-set Jaccard) on real GSM8K, HumanEval, MBPP and Spider texts."""
from __future__ import annotations

import csv
import io
import json
import random
import unicodedata
from difflib import SequenceMatcher
from pathlib import Path

import pytest

import auditor
import ground_truth as gt
import real_data
from auditor.contamination import contamination, tokenize
from auditor.evidence import (contamination_evidence, contamination_spans, corpus_texts, evidence_csv,
                              excerpt, leak_evidence, token_spans)
from auditor.leakage import leak
from conftest import run_cli
from definitions import contained_hits
from ground_truth import reference, word_shingles

pytest_plugins = ["app_server", "browser_support"]


def _lines(path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _shingles(text):
    words = text.lower().split()
    return {tuple(words[i:i + 3]) for i in range(max(len(words) - 2, 1))}


def norm_plain(value: str) -> str:
    return " ".join(unicodedata.normalize("NFC", value).lower().split())


def _texts(real_data):
    out = []
    for rel, fields in (("gsm8k/train.jsonl", ("question", "answer")), ("gsm8k/test.jsonl", ("question", "answer")),
                        ("humaneval/HumanEval.jsonl", ("prompt", "canonical_solution", "test")),
                        ("mbpp/mbpp.jsonl", ("text", "code")), ("spider/dev.jsonl", ("question", "query"))):
        with open(real_data / rel, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                out += [row[f] for f in fields]
    return out


def _ngram_truth(b_text: str, c_text: str, n: int):
    """Brute force: benchmark window starts whose n-gram the corpus text holds, the tokens they
    cover, and the longest common token run (difflib, no junk heuristic)."""
    b, c = tokenize(b_text), tokenize(c_text)
    corpus_grams = {tuple(c[i:i + n]) for i in range(len(c) - n + 1)}
    starts = [i for i in range(len(b) - n + 1) if tuple(b[i:i + n]) in corpus_grams]
    covered = {j for i in starts for j in range(i, i + n)}
    match = SequenceMatcher(None, b, c, autojunk=False).find_longest_match(0, len(b), 0, len(c))
    return starts, covered, match.size


@pytest.fixture(scope="module")
def contaminated(real_data):
    """A synthetic corpus holding real GSM8K test questions: whole, cut, spliced, with edits,
    amid unrelated text; plus clean lines."""
    with open(real_data / "gsm8k" / "test.jsonl", encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh]
    rng = random.Random(3)
    corpus = []
    for k in range(60):
        q = questions[k * 7]
        words = q.split()
        kind = k % 4
        if kind == 0:
            line = f"Worksheet {k}: {q} Show your work."
        elif kind == 1:
            line = "Intro. " + " ".join(words[: max(14, len(words) // 2)]) + " ... and more."
        elif kind == 2:                       # an edit in the middle: two shared runs
            cut = len(words) // 2
            line = " ".join(words[:cut] + ["EDITED", "WORDS"] + words[cut:])
        else:                                 # two questions spliced, punctuation changed
            line = q.replace(",", " ,").upper() + " " + questions[k * 7 + 1]
        corpus.append(line)
        corpus.append(" ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(30)))
    result = contamination(corpus, "gsm8k")
    return questions, corpus, result


def write_jsonl_unicode(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_evidence_jaccard_is_each_pairs_own(real_data):
    # Spider dev questions whose SQL equals a train query but whose wording differs ("How many
    # airlines do we have?" / "How many airlines are there?"): matched by answer, not near duplicates.
    result = leak(str(real_data / "spider/train_spider.jsonl"), str(real_data / "spider/dev.jsonl"),
                  text="question", answer="query", threshold=0.5)
    train_rows = [json.loads(l) for l in _lines(real_data / "spider/train_spider.jsonl")]
    train = [r["question"] for r in train_rows]
    evidence = list(csv.DictReader(io.StringIO(result.evidence_csv())))
    answer_only = [r for r in evidence if r["b_kinds"] == "identical_answer"]
    near = [r for r in evidence if "near_duplicate" in r["b_kinds"]]
    assert len(answer_only) >= 3 and near
    for r in answer_only:
        # the pair's own text similarity, under the threshold (never a 1.0 borrowed from the answer)
        assert float(r["text_jaccard"]) < 0.5 and r["kind"] == "identical_answer"
        assert r["a_answer"] == train_rows[int(r["a_row"])]["query"] and r["a_text"] == train[int(r["a_row"])]
        b = _shingles(r["b_text"])
        for a_row in map(int, r["a_rows"].split()):
            a = _shingles(train[a_row])
            assert len(a & b) / len(a | b) < 0.5     # independently: the texts are not near duplicates
    for r in near:
        assert 0.5 <= float(r["text_jaccard"]) <= 1.0
    sample = {p["b"]: p for p in result.summary()["pairs_sample"]}
    assert all(sample[int(r["b_row"])]["jaccard"] is None for r in answer_only if int(r["b_row"]) in sample)
    assert "| identical_answer | – |" in result.markdown()


def test_evidence_jaccard_and_ids_on_mbpp_versions(tmp_path):
    """From the round-4 review (real data): MBPP against its sanitized version (B's text field is ``prompt``;
    both guess ``task_id`` as
    id): the evidence names every leaked B record once, with the right ids and the exact Jaccard of
    the two texts."""
    a_rows = real_data.rows("mbpp/mbpp.jsonl")
    b_rows = real_data.rows("mbpp/sanitized-mbpp.jsonl")
    a_path, b_path = tmp_path / "mbpp.jsonl", tmp_path / "sanitized.jsonl"
    a_path.write_bytes(real_data.content("mbpp/mbpp.jsonl"))
    b_path.write_bytes(real_data.content("mbpp/sanitized-mbpp.jsonl"))
    result = leak(str(a_path), str(b_path), text_b="prompt")
    rows = result.evidence_rows()
    a_text = {norm_plain(r["text"]) for r in a_rows}
    ref = reference([r["text"] for r in a_rows] + [r["prompt"] for r in b_rows], "word", 3, 0.7)
    near = {b - len(a_rows) for (a, b) in ref.record_pairs(0.7) if a < len(a_rows) <= b}
    text_leak = {i for i, r in enumerate(b_rows) if norm_plain(r["prompt"]) in a_text} | near
    assert len(text_leak) == 228
    # and the sanitized prompts inside an original text (containment >= 0.7, tests/definitions.py)
    text_leak |= set(contained_hits([r["text"] for r in a_rows], [r["prompt"] for r in b_rows]))
    assert result.summary()["text_leak"]["records"] == len(text_leak)
    assert len({r["b_row"] for r in rows}) == len(rows) == result.summary()["any_leak"]["records"]
    for row in rows:
        b, a = int(row["b_row"]), int(row["a_row"])
        assert str(row["b_id"]) == str(b_rows[b]["task_id"]) and str(row["a_id"]) == str(a_rows[a]["task_id"])
        sa, sb = word_shingles(a_rows[a]["text"]), word_shingles(b_rows[b]["prompt"])
        assert abs(float(row["text_jaccard"]) - len(sa & sb) / len(sa | sb)) < 1e-4


def test_offsets_tokenizer_gives_the_contamination_tokens(real_data):
    texts = _texts(real_data)
    assert len(texts) > 20_000
    rng = random.Random(7)
    tricky = ("İıßΣσς ǅ _-–—'’\"“”.,;:!?()[]{}<>#$%&*+/=@\\^`|~"
              "\u0301\u0307\u00a0\u2003\u3000\x1c\x1f\t\n\r\x0b\x0c")
    alphabet = tricky + "abcXYZ019éÉøÅ日本語ΑΩ"
    ascii_only = "".join(map(chr, range(128)))
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(1500)]
    texts += ["".join(rng.choice(ascii_only) for _ in range(rng.randint(0, 60))) for _ in range(1500)]
    for k, text in enumerate(texts):
        spans = token_spans(text)
        assert [t for t, _, _ in spans] == tokenize(text), text
        for token, start, end in spans if k % 10 == 0 or k >= len(texts) - 3000 else ():
            assert tokenize(text[start:end]) == [token]
            # starts on a kept char, ends on one or on the marks it carries (a decomposed accent)
            assert tokenize(text[start]) and (tokenize(text[end - 1]) or unicodedata.category(text[end - 1])[0] == "M")


def test_spans_are_the_shared_runs(contaminated):
    questions, corpus, result = contaminated
    assert len(result.items) >= 60
    rows = contamination_evidence(result, questions, corpus)
    assert len(rows) == sum(len(it["corpus_rows"]) for it in result.items)
    n = result.n
    for row in rows:
        b_text, c_text = row["benchmark_text"], row["corpus_text"]
        assert b_text == questions[row["benchmark_row"]] and c_text == corpus[row["corpus_row"]]
        found = contamination_spans(b_text, c_text, n)
        starts, covered, longest = _ngram_truth(b_text, c_text, n)
        assert found["matched_ngrams"] == row["matched_ngrams"] == len(starts) > 0
        assert found["longest_tokens"] == row["longest_tokens"] == longest
        assert len(tokenize(row["longest_span"])) == longest
        # Every listed run is the same token run in both texts, at least n long.
        for run in found["runs"]:
            (bs, be), (cs, ce) = run["benchmark"], run["corpus"]
            assert tokenize(b_text[bs:be]) == tokenize(c_text[cs:ce])
            assert len(tokenize(b_text[bs:be])) == run["tokens"] >= n
        # The highlighted benchmark spans cover exactly the tokens of matched n-grams.
        positions = token_spans(b_text)
        lit = {i for i, (_, s, e) in enumerate(positions)
               for span_s, span_e in row["spans"]["benchmark"] if span_s <= s and e <= span_e}
        assert lit == covered
        for s, e in row["spans"]["corpus"]:
            assert len(tokenize(c_text[s:e])) >= n
    # Each item's n-gram count matches the contamination pass (one corpus record per item here).
    by_item = {it["benchmark_row"]: it for it in result.items}
    for row in rows:
        if len(by_item[row["benchmark_row"]]["corpus_rows"]) == 1:
            assert row["matched_ngrams"] == by_item[row["benchmark_row"]]["matched_ngrams"]
    edited = [r for r in rows if "EDITED" in r["corpus_text"]]
    assert edited and all(len(r["spans"]["corpus"]) == 2 for r in edited)


def test_no_shared_run_and_short_texts():
    assert contamination_spans("one two three four", "one two three four", 13)["matched_ngrams"] == 0
    found = contamination_spans("the cat sat on the mat today", "a dog sat on the mat today", 4)
    assert found["longest"] == "sat on the mat today" and found["longest_tokens"] == 5
    assert contamination_spans("alpha beta gamma", "delta epsilon zeta", 2)["benchmark_spans"] == []
    with pytest.raises(auditor.AuditorError):
        contamination_spans("a b", "a b", 0)
    # One n-gram repeated thousands of times on both sides: matches are capped, and say so.
    text = "la " * 1500
    found = contamination_spans(text, text, 13)
    assert found["truncated"] and found["longest_tokens"] >= 13
    for run in found["runs"]:
        (bs, be), (cs, ce) = run["benchmark"], run["corpus"]
        assert tokenize(text[bs:be]) == tokenize(text[cs:ce]) == ["la"] * run["tokens"]


def test_evidence_csv_and_corpus_texts(contaminated, tmp_path):
    questions, corpus, result = contaminated
    rows = contamination_evidence(result, questions, corpus, per_item=1)
    assert len(rows) == len(result.items)
    back = list(csv.DictReader(io.StringIO(evidence_csv(rows))))
    assert [int(r["benchmark_row"]) for r in back] == [r["benchmark_row"] for r in rows]
    assert [json.loads(r["spans"]) for r in back] == [r["spans"] for r in rows]
    assert [r["corpus_text"] for r in back] == [r["corpus_text"] for r in rows]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(corpus)))
    wanted = sorted({c for it in result.items for c in it["corpus_rows"]})
    fetched = corpus_texts(str(path), wanted, text="text")
    assert fetched == {c: corpus[c] for c in wanted}
    text, spans = excerpt("x" * 1000 + "HIT" + "y" * 1000, [[1000, 1003]], context=10)
    assert text[spans[0][0]:spans[0][1]] == "HIT" and len(text) == 23


def test_leak_evidence_shows_true_text_similarity(real_data):
    """Spider dev against train: answer-only matches (the same SQL for another question) show
    the texts' real Jaccard, not 1.0."""
    result = leak(str(real_data / "spider" / "train_spider.jsonl"), str(real_data / "spider" / "dev.jsonl"))
    rows = leak_evidence(result)
    assert [r["b_row"] for r in rows] == result.leaked_b_rows
    train = [json.loads(x) for x in open(real_data / "spider" / "train_spider.jsonl", encoding="utf-8")]
    dev = [json.loads(x) for x in open(real_data / "spider" / "dev.jsonl", encoding="utf-8")]
    answer_only = 0
    for r in rows:
        a, b = train[r["a_row"]], dev[r["b_row"]]
        assert (r["a_text"], r["b_text"], r["a_answer"], r["b_answer"]) == \
            (a["question"], b["question"], a["query"], b["query"])
        sa, sb = gt.word_shingles(a["question"]), gt.word_shingles(b["question"])
        assert r["text_jaccard"] == pytest.approx(gt.jaccard(sa, sb), abs=1e-6)
        assert (r["text_jaccard"] == 1.0) == (sa == sb)
        same_text = " ".join(a["question"].lower().split()) == " ".join(b["question"].lower().split())
        assert ("identical_text" in r["kind"].split("+")) == same_text
        if r["kind"] == "identical_answer":
            answer_only += 1
            assert r["text_jaccard"] < 1.0
    assert answer_only >= 3
    assert "b_id" not in rows[0]                       # Spider has no id field


def test_leak_evidence_ids(real_data):
    """MBPP full test against sanitized test: ids are the records' own task_id."""
    result = leak("example:mbpp", "example:mbpp", config_a="full", split_a="test", config_b="sanitized",
                  split_b="test", text="text", text_b="prompt", answer="code")
    assert result.a.roles.id == result.b.roles.id == "task_id"          # guessed from the field name
    rows = leak_evidence(result, limit=40)
    assert len(rows) == 40
    a_rows, b_rows = result.a.table.rows, result.b.table.rows
    for r in rows:
        assert r["a_id"] == str(a_rows[r["a_row"]]["task_id"]) and r["b_id"] == str(b_rows[r["b_row"]]["task_id"])
    assert sum(r["a_id"] == r["b_id"] for r in rows) >= 30     # sanitized is a subset of full, same tasks


def test_cli_leak_evidence_shows_the_a_record_the_b_text_repeats(tmp_path):
    """From a curator's review of the Space: B's record repeats A row 1 (text and answer); A row 0 shares
    only the answer. The evidence
    row's a_text must be row 1's text, not the lower-numbered answer-only match."""
    train = real_data.rows("gsm8k/train.jsonl")
    a_rows = [{"question": train[0]["question"], "answer": "#### 42"},
              {"question": train[1]["question"], "answer": "#### 42"}]
    b_rows = [{"question": train[1]["question"], "answer": "#### 42"}]
    a = write_jsonl_unicode(tmp_path / "a.jsonl", a_rows)
    b = write_jsonl_unicode(tmp_path / "b.jsonl", b_rows)
    evidence = tmp_path / "evidence.csv"
    code, _, err = run_cli("leak", a, b, "--evidence", evidence, "--json", tmp_path / "s.json", "--quiet")
    assert code == 0, err
    with open(evidence, encoding="utf-8", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["b_text"] == b_rows[0]["question"]
    assert row["a_text"] == a_rows[1]["question"]
    assert row["a_rows"].split() == ["1", "0"]
