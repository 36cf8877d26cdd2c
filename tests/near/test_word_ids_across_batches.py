"""Word ids stay the positions of the words in the sorted vocabulary however the texts are cut into
batches: each batch sorts its own distinct words, and the batches are numbered by Arrow's rank of
them all or, for many words, by a compiled merge (``shingles._number_words``), so the ids equal Python's ``sorted`` of every word, and the
vocabulary a caller asks for lists the word behind each id."""
from __future__ import annotations

import random

import pytest

from ground_truth import read_field
from auditor import shingles
from auditor.normalize import fold

WORDS = ["a", "ab", "abc", "b", "é", "e\u0301", "İ", "ß", "ss", "\U0001F600", "\ud800", "z" * 40, "Σς", "x\x00y"]


def expected(texts):
    words = [fold(t).split() if t else [] for t in texts]
    vocabulary = sorted({w for ws in words for w in ws}, key=lambda w: w.encode("utf-8", "surrogatepass"))
    at = {w: i for i, w in enumerate(vocabulary)}
    return [at[w] for ws in words for w in ws], [len(ws) for ws in words], vocabulary


@pytest.fixture(params=["merge", "arrow-rank"])
def numbering(request, monkeypatch):
    if request.param == "merge":
        monkeypatch.setattr(shingles, "MERGE_MIN_WORDS", 0)
    else:
        monkeypatch.setattr(shingles, "MERGE_MIN_WORDS", 10 ** 9)


@pytest.mark.parametrize("arrow_batch,python_chars", [(3, 8), (50, 64), (10 ** 6, 1 << 22)])
def test_ids_and_vocabulary_equal_sorted_words_for_any_batching(real_data, monkeypatch, numbering, arrow_batch,
                                                                python_chars):
    rng = random.Random(arrow_batch)
    texts = read_field(real_data, "gsm8k/test.jsonl", "question")[:300]
    texts += [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    texts += [None, "", "   "]
    rng.shuffle(texts)
    monkeypatch.setattr(shingles, "ARROW_MIN_TEXTS", 0)
    monkeypatch.setattr(shingles, "ARROW_BATCH", arrow_batch)
    monkeypatch.setattr(shingles, "TOKEN_BATCH_CHARS", python_chars)
    vocabulary: list = []
    ids, lengths = shingles.word_tokens(texts, vocabulary)
    want_ids, want_lengths, want_vocabulary = expected(texts)
    assert ids.tolist() == want_ids
    assert lengths.tolist() == want_lengths
    assert vocabulary == want_vocabulary


def test_batches_without_any_word_are_numbered_with_the_rest(monkeypatch, numbering):
    # Batches of the Arrow path whose texts all go to Python (non-ASCII) leave empty dictionaries.
    texts = ["é é"] * 5 + ["plain words here"] * 5 + ["ü"] * 5
    monkeypatch.setattr(shingles, "ARROW_MIN_TEXTS", 0)
    monkeypatch.setattr(shingles, "ARROW_BATCH", 5)
    ids, lengths = shingles.word_tokens(texts)
    want_ids, want_lengths, _ = expected(texts)
    assert ids.tolist() == want_ids and lengths.tolist() == want_lengths


def test_words_past_four_byte_offsets_are_refused_by_name(monkeypatch):
    """A batch whose distinct words pass 4-byte offsets (a text of 2 GB of them; the limit lowered
    here) is refused as too large, naming what to do, not a traceback."""
    from auditor.errors import AuditorError

    monkeypatch.setattr(shingles, "ARROW_MIN_TEXTS", 0)
    monkeypatch.setattr(shingles, "ARROW_BATCH", 2)
    monkeypatch.setattr(shingles, "MERGE_MIN_WORDS", 0)
    monkeypatch.setattr(shingles, "INT32_OFFSETS", 64)
    texts = [" ".join(f"word{i}x{j}" for j in range(20)) for i in range(4)]
    with pytest.raises(AuditorError) as caught:
        shingles.word_tokens(texts)
    assert caught.value.code == "too_large" and "Split the text" in caught.value.hint
