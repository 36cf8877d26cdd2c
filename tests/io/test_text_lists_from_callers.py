"""Texts a library caller hands over, as a list or a ``TextColumn``: a column's ``take`` indexes as a
list does (-1 is the last text; it was an empty text, silently), and a list holding something that is
not text is refused naming the item (an int in contamination's corpus list reached Arrow: a traceback)."""
from __future__ import annotations

import pytest

import real_data
from auditor import AuditorError
from auditor.contamination import contamination
from auditor.io.columns import TextColumn

QUESTIONS = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:40]]


def test_take_indexes_as_a_list_does():
    """From the round-6 hostile review: take([-1]) read offsets[-1]:offsets[0], an empty text."""
    texts = QUESTIONS[:5] + [None, "", "nul \x00 inside", "lone \ud800 surrogate"]
    column = TextColumn.of(texts)
    index = [-1, -9, 5, 6, 0, -4, 3]
    assert column.take(index) == [texts[i] for i in index]
    for outside in ([9], [-10], [0, 9]):
        with pytest.raises(IndexError):
            column.take(outside)
    assert column.take([]) == []


@pytest.mark.parametrize("bad", [7, 2.5, b"bytes", ["nested"]], ids=["int", "float", "bytes", "list"])
def test_a_corpus_list_holding_a_non_text_is_refused_naming_it(bad):
    """From the round-6 hostile review."""
    with pytest.raises(AuditorError) as info:
        contamination(QUESTIONS[:20] + [bad] + QUESTIONS[20:], "gsm8k")
    assert info.value.code == "bad_value"
    assert info.value.message.startswith(f"Item 20 of the corpus is {type(bad).__name__} ")


def test_a_corpus_as_a_list_a_tuple_or_a_column_finds_the_same_items():
    """From the round-6 hostile review: None and empty texts among them count as records, no items."""
    texts = QUESTIONS + [None, ""]
    found = [contamination(corpus, "gsm8k").summary()["contaminated"]["records"]
             for corpus in (texts, tuple(texts), TextColumn.of(texts))]
    assert found == [len(QUESTIONS)] * 3
