"""The text and answer roles' values are held as one UTF-8 buffer (``io.columns.TextColumn``), not
as a Python string each (issue 34, item 2): they read back exactly as the records hold them
(missing values, empty texts, accents, characters past U+FFFF, lone surrogates), index, slice and
iterate as a list does, and cost about their UTF-8 bytes, where strings cost 2.1 times 8-word texts'
bytes and 4 times a long English text's holding one emoji."""
from __future__ import annotations

import json
import pickle
import random
import sys

import auditor
from auditor.io.columns import TextColumn, chained

ODD = ["plain", None, "", "héllo wörld", "emoji \U0001F600 at the end", "lone \ud800 surrogate", "  ", "ζ" * 70]


def test_every_kind_of_text_reads_back_as_given():
    for texts in (ODD * 700, [t for t in ODD * 3 if t is None or "\ud800" not in t], [], [None], [""]):
        column = TextColumn.of(texts)
        assert len(column) == len(texts) and column == texts and list(column) == texts
        assert [column[i] for i in range(len(texts))] == texts
        assert [column[-i] for i in range(1, len(texts) + 1)] == [texts[-i] for i in range(1, len(texts) + 1)]
        assert column[3:4_100] == texts[3:4_100] and column[::-3] == texts[::-3] and column[9:2] == []
        assert pickle.loads(pickle.dumps(column)) == texts


def test_iteration_decodes_a_bounded_batch_of_long_texts_at_a_time():
    """200 texts of 300 KB: a batch of the 4,096 a short text's iteration takes would be 60 MB of
    strings; iteration stops a batch at about a megabyte of bytes."""
    texts = [chr(97 + i % 26) * 300_000 for i in range(200)]
    column = TextColumn.of(texts)
    spans = []
    real = column._decode
    column._decode = lambda lo, hi: spans.append(hi - lo) or real(lo, hi)
    assert list(column) == texts
    assert max(spans) <= 4 and sum(spans) == 200


def test_chained_columns_read_as_one_list():
    a, b = TextColumn.of(["a", None, "c"]), ["d", "e"]
    both = chained(a, b, TextColumn.of(["f"]))
    assert len(both) == 6 and list(both) == ["a", None, "c", "d", "e", "f"]
    assert both[2:5] == ["c", "d", "e"] and both[-1] == "f" and both[3] == "d" and both[::2] == ["a", "c", "e"]


def _string_bytes(texts: list) -> int:
    return sum(sys.getsizeof(t) for t in texts) + 8 * len(texts)


def test_a_scan_holds_its_texts_and_answers_at_about_their_utf8_bytes(tmp_path):
    rng = random.Random(0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    rows = [{"text": " ".join(rng.choices(words, k=8)) + (" \U0001F600" if i % 2 else ""),
             "answer": f"{i} " + " ".join(rng.choices(words, k=3))} for i in range(20_000)]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = auditor.scan(str(path), text="text", answer="answer")
    texts, answers = [r["text"] for r in rows], [r["answer"] for r in rows]
    assert result.fields.text == texts and result.fields.answer == answers
    for held, values in ((result.fields.text, texts), (result.fields.answer, answers)):
        assert isinstance(held, TextColumn)
        utf8 = sum(len(t.encode()) for t in values)
        assert held.nbytes <= utf8 + 9 * len(values) + 64
        assert held.nbytes < 0.5 * _string_bytes(values)
    # Every record reads back whole, its text filled in from the column.
    assert list(result.table.rows) == rows


def test_a_scans_text_column_is_a_corpus_as_a_list_is(real_data):
    """The library takes texts as a list wherever it took a Python list (contamination's corpus,
    the semantic pass's): a scan's TextColumn is not mistaken for a source or a stream of batches."""
    from auditor.contamination import contamination

    result = auditor.scan(str(real_data / "gsm8k/train.jsonl"), text="question", answer="answer")
    assert isinstance(result.fields.text, TextColumn)
    as_column = contamination(result.fields.text, "gsm8k", ngram=13).summary()
    as_list = contamination(list(result.fields.text), "gsm8k", ngram=13).summary()
    assert as_column == as_list and [item["benchmark_row"] for item in as_column["items"]] == [581, 602, 632]


def test_a_kept_subset_copies_the_texts_as_bytes():
    column = TextColumn.of(ODD * 50)
    index = [5, 0, 399, 7, 7, 1]
    kept = column.take(index)
    assert isinstance(kept, TextColumn) and kept == [column[i] for i in index]
    assert isinstance(kept._data, bytes) and isinstance(TextColumn.of(["x"])._data, bytes)   # pickled without a copy


def test_evidence_made_in_small_batches_equals_one_batch(real_data, monkeypatch, tmp_path):
    """From the review of this change: no default test size crossed a batch boundary."""
    from auditor import evidence
    from auditor.leakage import leak

    train = (real_data / "gsm8k/train.jsonl").read_text(encoding="utf-8").splitlines()
    test = (real_data / "gsm8k/test.jsonl").read_text(encoding="utf-8").splitlines()
    b = tmp_path / "b.jsonl"
    b.write_text("\n".join(train[:40:2] + test[:20]) + "\n", encoding="utf-8")      # 20 copied, 20 not
    result = leak(str(real_data / "gsm8k/train.jsonl"), str(b))
    assert len(result.leaked_b_rows) >= 20
    whole = result.evidence_csv()
    monkeypatch.setattr(evidence, "EVIDENCE_BATCH_CHARS", 1)
    assert result.evidence_csv() == whole
    assert evidence.leak_evidence_csv(result, encoded=True) == whole.encode("utf-8")
    assert evidence.evidence_csv(iter([{"a": 1}, {"a": 2}])) == "a\r\n1\r\n2\r\n"   # rows given as an iterator


def test_folding_in_small_chunks_equals_one_chunk(monkeypatch):
    import pyarrow as pa

    from auditor import wordtokens

    rng = random.Random(3)
    pieces = ["Straße", "İstanbul", "ΣΊΣΥΦΟΣ", "ﬁne", "e\u0301", "plain", "\U0001F600", "ｆｕｌｌ"]
    texts = [" ".join(rng.choices(pieces, k=rng.randint(0, 12))) for _ in range(300)]
    arr = wordtokens.as_string_array(texts)
    whole = wordtokens.folded(arr)
    monkeypatch.setattr(wordtokens, "FOLD_CHUNK_BYTES", 7)
    assert wordtokens.folded(arr).equals(whole)
    binary = pa.array([t.encode() for t in texts], pa.binary())
    assert wordtokens.folded(binary).to_pylist() == [t.encode() for t in whole.to_pylist()]
