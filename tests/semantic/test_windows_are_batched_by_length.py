"""The transformer's batches hold windows of nearly one length: every window of a search is sorted
by length before batching, so the positions the model computes (batch rows x the longest window)
are the fewest batches of that size can have, and the vectors are those of each window embedded alone."""
from __future__ import annotations

import numpy as np
import pytest

from auditor import semantic, semantic_model
import real_data

pytest.importorskip("onnxruntime")
texts = real_data.semantic_texts


class Counting(semantic_model.Encoder):
    positions = 0

    def run(self, ids, mask):
        Counting.positions += ids.size
        return super().run(ids, mask)


def test_padding_is_small_and_changes_no_vector(monkeypatch):
    e = semantic.load_model()
    counting = Counting(e.name, e.session, e.tokenizer, e.max_tokens, e.inputs, e.short)
    # sociology questions are short, GSM8K's long: interleaved, slices sorted on their own would pad a lot
    mixed = [t for pair in zip(texts("sociology_questions.jsonl.gz", "question"),
                               texts("gsm8k_questions.jsonl.gz", "question")) for t in pair]
    w = e.windows(mixed)
    tokens = sum(len(x.ids) for x in w.encodings)
    vecs = semantic._embed(counting, w.encodings)
    # the least padding batches of EMBED_BATCH windows can have: all windows sorted by length
    lengths = np.sort([len(x.ids) for x in w.encodings])
    step = semantic_model.EMBED_BATCH
    least = sum(int(lengths[s:s + step].max()) * lengths[s:s + step].size for s in range(0, lengths.size, step))
    assert tokens <= Counting.positions <= least
    for j in range(0, len(w.encodings), 15):               # ground truth: each window alone, no padding
        alone = e.encode_tokens([w.encodings[j]])[0]
        assert np.allclose(vecs[j], alone, atol=1e-5)
