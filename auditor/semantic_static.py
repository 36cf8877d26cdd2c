"""Stage 1 of the semantic search: static token vectors that shortlist candidates fast.

One job: turn already-tokenised texts into unit vectors by a weighted sum of per-token vectors
(model2vec-style), thousands of texts per second, so every corpus record can be compared with
every benchmark item; the transformer then re-scores only each item's shortlist.

The token vectors are distilled from the transformer itself, not loaded from anywhere: token t's
vector is the model's mean-pooled output for the one-token text [CLS] t [SEP]. They are computed
lazily, only for tokens that occur, and kept for the life of the process (a corpus of 100,000
questions uses ~20,000 of the 30,522 WordPiece tokens). Distilling costs three token positions of
the transformer per token (~2,500 positions per CPU second: 6,500 tokens, what 2,000 GSM8K questions
use, take ~8 CPU s), so a long-lived process (the app) distils the whole vocabulary once, in the
background, with ``warm`` right after loading the model, and its searches find every token done.
A token's vector does not depend on which others share its model call (rows are independent), so
the order of distillation never changes a result. Tokens are weighted SIF-style,
a / (a + p(t)), with p(t) a Zipf law over the vocabulary's rank (WordPiece vocabularies list
whole words by frequency, starting at "the"), so frequent words count little.
"""
from __future__ import annotations

import os
import threading
import weakref

import numpy as np
from scipy.sparse import csr_matrix

ZIPF_A = 1e-4          # SIF smoothing: a token at frequency p weighs a / (a + p)
DISTIL_BATCH = 256     # one-token texts per model call; every call is padded to this many rows
_ALL: weakref.WeakSet = weakref.WeakSet()


def _fresh_locks() -> None:
    # A forked child (the app's job) gets its own locks: a thread warming the vectors in the parent,
    # holding one for a batch, does not exist in the child. (A batch's ``done`` flags are set after
    # its vectors, so a batch cut by the fork is simply distilled again.)
    for vectors in list(_ALL):
        vectors.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks)


class StaticVectors:
    """Per-token vectors distilled from ``encoder`` on first use; ``embed`` maps encodings to unit vectors."""

    def __init__(self, encoder):
        self.encoder = encoder
        tok = encoder.tokenizer
        vocab = tok.get_vocab_size(with_added_tokens=True)
        specials = tok.encode("").ids                     # e.g. [CLS] [SEP]: wrap each token as a text
        self.head, self.tail = specials[:1], specials[1:]
        self.first_word = tok.token_to_id("the") or 0     # ranks count from the most frequent whole word
        rank = np.maximum(np.arange(vocab, dtype=np.float64) - self.first_word + 1, 1.0)
        p = 1.0 / rank
        p /= p.sum()
        self.weight = (ZIPF_A / (ZIPF_A + p)).astype(np.float32)
        self.table: np.ndarray | None = None
        self.done = np.zeros(vocab, bool)
        self.lock = threading.Lock()
        _ALL.add(self)

    def _distil(self, ids: np.ndarray) -> None:
        """Compute the vectors of ``ids`` (sorted, not yet done) in fixed-shape model calls."""
        width = len(self.head) + 1 + len(self.tail)
        for s in range(0, ids.size, DISTIL_BATCH):
            part = ids[s:s + DISTIL_BATCH]
            seq = np.zeros((DISTIL_BATCH, width), np.int64)
            seq[:, :len(self.head)] = self.head
            seq[:part.size, len(self.head)] = part
            seq[:, len(self.head) + 1:] = self.tail
            hidden = self.encoder.run(seq, np.ones_like(seq))[:part.size]
            if self.table is None:
                self.table = np.zeros((self.done.size, hidden.shape[1]), np.float32)
            self.table[part] = hidden
            self.done[part] = True

    def warm(self, stop=None) -> None:
        """Distil every vocabulary token not yet done, DISTIL_BATCH at a time, taking the lock per
        batch so a search running meanwhile waits for one batch at most. ``stop``: a
        ``threading.Event`` that ends the warm-up early."""
        todo = np.flatnonzero(~self.done)
        for s in range(0, todo.size, DISTIL_BATCH):
            if stop is not None and stop.is_set():
                return
            with self.lock:
                part = todo[s:s + DISTIL_BATCH]
                part = part[~self.done[part]]
                if part.size:
                    self._distil(part)

    @property
    def warmed(self) -> float:
        """The share of the vocabulary distilled."""
        return float(self.done.mean())

    def embed(self, encodings) -> np.ndarray:
        """Unit vectors (float32) of tokenised texts, special tokens left out."""
        ids = [np.asarray(e.ids, np.int64)[np.asarray(e.special_tokens_mask) == 0] for e in encodings]
        lengths = np.fromiter((a.size for a in ids), np.int64, len(ids))
        flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        with self.lock:
            missing = np.unique(np.concatenate([flat[~self.done[flat]], [] if self.table is not None else
                                                [self.first_word]]).astype(np.int64))
            if missing.size:            # (the first call always distils one, so the width is known)
                self._distil(missing)
        # texts x vocabulary (token weights) @ vocabulary x dim: no per-token copy of the vectors
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        bag = csr_matrix((self.weight[flat], flat, indptr), shape=(len(ids), self.done.size))
        out = np.asarray(bag @ self.table, dtype=np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
