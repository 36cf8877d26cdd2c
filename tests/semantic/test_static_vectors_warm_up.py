"""The static vectors distilled ahead (``warm``, what the app starts after loading the model) are
the model's own output for [CLS] token [SEP], whatever batch computed them, so a search gives the
same result, byte for byte, warmed or distilled lazily."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from auditor import semantic
from auditor.semantic_static import StaticVectors

pytest.importorskip("onnxruntime")


def partial(encoder, ids: np.ndarray) -> StaticVectors:
    """Static vectors with every token but ``ids`` marked done (the full vocabulary would take ~35 CPU s)."""
    static = StaticVectors(encoder)
    static._distil(np.array([static.first_word]))
    static.done[:] = True
    static.done[ids] = False
    return static


def test_warm_distils_every_missing_token_as_the_model_embeds_it_alone():
    encoder = semantic.load_model()
    ids = np.sort(np.random.default_rng(7).choice(np.arange(1000, 30000), 300, replace=False))
    static = partial(encoder, ids)
    static.warm()
    assert static.done.all() and static.warmed == 1.0
    head, tail = static.head, static.tail
    for t in ids[::30].tolist():                          # ground truth: the token as a text of its own, alone in a call
        seq = np.array([head + [t] + tail], np.int64)
        alone = encoder.run(seq, np.ones_like(seq))[0]
        assert np.allclose(static.table[t], alone, atol=1e-5)


def test_warm_stops_when_told():
    encoder = semantic.load_model()
    static = partial(encoder, np.arange(2000, 2600))
    stop = threading.Event()
    stop.set()
    static.warm(stop)
    assert not static.done[2000:2600].any()


def test_a_search_is_the_same_warmed_or_lazy():
    bench = ["Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
             "What is the capital city of the country that hosted the 1992 Summer Olympics?"]
    corpus = ["In April Natalia sold 48 clips to friends; in May she sold half as many.",
              "Barcelona hosted the Summer Olympics in 1992.", "A train leaves at 3 pm going 60 miles per hour.",
              "The mitochondria is the powerhouse of the cell."] * 3
    encoder = semantic.load_model()
    lazy = StaticVectors(encoder)
    w = encoder.windows(bench + corpus)
    ids = np.unique(np.concatenate([np.asarray(e.ids) for e in w.encodings]))
    warmed = partial(encoder, ids)
    warmed.warm()
    assert np.array_equal(lazy.embed(w.encodings), warmed.embed(w.encodings))
