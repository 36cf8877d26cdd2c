"""A corpus record that copies a benchmark item is not embedded again: its windows reuse the
item's vectors, so the transformer runs once per distinct window, and the result is the one a
search embedding every record itself gives."""
from __future__ import annotations

import pytest

from auditor import semantic, semantic_model
import real_data

pytest.importorskip("onnxruntime")
texts = real_data.semantic_texts


class Counting(semantic_model.Encoder):
    """The default model, counting the windows the transformer embeds (and able to forget the reuse)."""
    embedded = 0

    def encode_tokens(self, encodings):
        Counting.embedded += len(encodings)
        return super().encode_tokens(encodings)


@pytest.fixture
def counting(monkeypatch):
    e = semantic.load_model()
    monkeypatch.setitem(semantic_model._CACHE, e.name,
                        Counting(e.name, e.session, e.tokenizer, e.max_tokens, e.inputs, e.short))
    Counting.embedded = 0
    return Counting


@pytest.mark.parametrize("candidates", [0, 10])
def test_copies_of_items_cost_no_transformer_call_and_change_nothing(counting, monkeypatch, candidates):
    questions = texts("gsm8k_questions.jsonl.gz", "question")[:30]
    rephrases = texts("gsm8k_rephrased.jsonl.gz", "text")[30:60]
    corpus = rephrases + questions[:10]                     # 10 verbatim copies of items
    encoder = semantic.load_model()
    distinct = {tuple(e.ids) for e in encoder.windows(questions + corpus).encodings}
    counting.embedded = 0
    reused = semantic.semantic_search(questions, corpus, candidates=candidates)
    embedded = counting.embedded
    # without the reuse: every record's windows embedded by the transformer itself
    monkeypatch.setattr(semantic, "_embed", lambda enc, encodings, at=None, known=None:
                        semantic_model.Encoder.encode_tokens(enc, encodings))
    alone = semantic.semantic_search(questions, corpus, candidates=candidates)
    assert embedded <= len(distinct) < len(questions) + len(corpus)
    assert reused.summary() == alone.summary()
    assert reused.neighbours == alone.neighbours
    for b in range(10):                                     # each copy is its item's best match, cosine 1
        row, cos = reused.neighbours[b][0]
        assert row == 30 + b and cos == pytest.approx(1.0, abs=1e-5)
