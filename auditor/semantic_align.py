"""Token alignment of a matched pair: does the record say every part of what the item says?

One job: for an item and its best match, a BERTScore-style score (Zhang et al. 2020, "BERTScore:
Evaluating Text Generation with BERT") from the same model's contextual token vectors (its
output before mean pooling): each token of one text is matched greedily to the most similar token
of the other, and the similarities are averaged with idf weights from the corpus side, so rare
words count most.

Why beside the margin: two distinct tasks on one topic ("Write a story about a robot that becomes
self-aware." / "... a robot who can perform everyday tasks.") share most of their pooled vector,
and stand out together from a neighbourhood on other topics; but the words that make them distinct
tasks find no counterpart in the other text. A rephrase leaves few such words.

Long texts: the pair is aligned on its best pair of windows (the one whose cosine the search
reported), and the score is the coverage of the smaller side (the larger of recall and precision),
so a question inside a long record, or a rephrase of a question that ends a long passage, is
aligned with its own part of the other text, not penalised for the rest.

Measured for issue 31 and not adopted (BENCHMARKS.md, semantic pass): distinct tasks on one topic
align about as well as rephrases do, so it is reported on request (``semantic_search(align=True)``)
and the decision stays the margin's.
"""
from __future__ import annotations

import numpy as np

from .semantic_model import padded_batches

BATCH = 32                  # windows per model call


def add_df(df: np.ndarray, windows) -> None:
    """Add to ``df`` (per token id: how many texts hold it) the tokens of ``windows``' texts."""
    if not windows.encodings:
        return
    lengths = np.array([len(e.ids) for e in windows.encodings], np.int64)
    ids = np.fromiter((i for e in windows.encodings for i in e.ids), np.int64, int(lengths.sum()))
    owner = np.repeat(windows.owner, lengths)
    pairs = np.unique(owner * df.size + ids)          # each (text, token) once
    df += np.bincount(pairs % df.size, minlength=df.size)


def idf(df: np.ndarray, texts: int) -> np.ndarray:
    """Smoothed idf (ln((N + 1) / (df + 1)) + 1): a small corpus weighs tokens nearly alike, and a
    token every record holds still counts a little."""
    return (np.log((texts + 1.0) / (df + 1.0)) + 1.0).astype(np.float32)


def token_vectors(encoder, encodings) -> list[np.ndarray]:
    """Per window, its tokens' unit vectors (special tokens dropped) and its mean-pooled unit
    vector, as the search computes it: [(tokens x dim, dim), ...]. Empty when the model's output is
    already pooled (no token vectors to align)."""
    out: list = [None] * len(encodings)
    for idx, ids, mask in padded_batches(encodings, BATCH):
        hidden = encoder.token_outputs(ids, mask)
        if hidden is None:
            return []
        for r, i in enumerate(idx.tolist()):
            n = int(mask[r].sum())
            tok = hidden[r, :n].astype(np.float32)
            pooled = tok.mean(0)
            special = np.asarray(encodings[i].special_tokens_mask[:n], bool)
            tok = tok[~special] if (~special).any() else tok
            tok = tok / np.maximum(np.linalg.norm(tok, axis=1, keepdims=True), 1e-12)
            out[i] = (tok, pooled / max(float(np.linalg.norm(pooled)), 1e-12))
    return out


def align(encoder, pairs: list[tuple[str, str]], weights: np.ndarray) -> list:
    """Per (item, record) pair: the coverage of its smaller side on its best pair of windows
    (idf-weighted mean of each token's best cosine in the other window), rounded; None for every
    pair when the model gives no token vectors."""
    if not pairs:
        return []
    texts = list(dict.fromkeys(t for p in pairs for t in p))
    w = encoder.windows(texts)
    vecs = token_vectors(encoder, w.encodings)
    if not vecs:
        return [None] * len(pairs)
    starts = np.append(w.starts, len(w.encodings))
    where = {t: i for i, t in enumerate(texts)}
    out = []
    for a, b in pairs:
        ia, ib = where[a], where[b]
        wa = range(int(starts[ia]), int(starts[ia + 1]))
        wb = range(int(starts[ib]), int(starts[ib + 1]))
        pa = np.stack([vecs[j][1] for j in wa])
        pb = np.stack([vecs[j][1] for j in wb])
        s = pa @ pb.T
        i, j = np.unravel_index(int(np.argmax(s)), s.shape)   # the best window pair, first on ties
        ja, jb = wa[int(i)], wb[int(j)]
        out.append(round(coverage(vecs[ja][0], _ids(w.encodings[ja]), vecs[jb][0], _ids(w.encodings[jb]),
                                  weights), 6))
    return out


def _ids(encoding) -> np.ndarray:
    ids = np.asarray(encoding.ids, np.int64)
    special = np.asarray(encoding.special_tokens_mask, bool)
    return ids[~special] if (~special).any() else ids


def coverage(ta: np.ndarray, ida: np.ndarray, tb: np.ndarray, idb: np.ndarray, weights: np.ndarray) -> float:
    """max(recall, precision): recall = a's tokens' idf-weighted mean best cosine in b, precision
    the same of b in a."""
    return max(recall_precision(ta, ida, tb, idb, weights))


def recall_precision(ta, ida, tb, idb, weights) -> tuple[float, float]:
    sim = ta @ tb.T
    wa, wb = weights[ida], weights[idb]
    return float((sim.max(1) * wa).sum() / wa.sum()), float((sim.max(0) * wb).sum() / wb.sum())
