"""Evidence spans of words cut around characters of scripts written without spaces keep only short
pieces' spans in their cache. From the session-48 review: the cache kept up to 65,536 pieces
whatever their length, so long letter runs beside a Chinese character (a hostile corpus: each run
distinct) stayed in memory, up to 65,536 x the run's length."""
from __future__ import annotations

import random

from auditor import evidence


def test_long_runs_beside_an_ideograph_are_not_kept_and_spans_stay_right():
    rng = random.Random(48)
    evidence._cached_piece_spans.cache_clear()
    for _ in range(200):
        run = "".join(rng.choices("abcdefghij", k=5_000))
        text = f"{run}中xyz"
        spans = evidence.token_spans(text)
        # the run, the ideograph and the short run after it, each a token at its own characters
        assert [(text[a:b], token) for token, a, b in spans] == [(run, run), ("中", "中"), ("xyz", "xyz")]
    kept = evidence._cached_piece_spans.cache_info().currsize
    assert kept == 2                # "中" and "xyz": never one of the 200 5,000-character runs
