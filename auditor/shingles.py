"""Step 3, shingle: texts to sets of shingles, as a sparse record x shingle matrix.

Default preparation (the dataset-integrity-audit seed's, so figures compare with its
tables): lowercase, split on whitespace, 3-word shingles; a text of fewer than 3 words
is one shingle of all its words; an empty text has no shingles and takes no part in
near-duplicate search (it is reported as degenerate instead). ``char:N`` shingles
are N-character windows of the lowercased, whitespace-collapsed text.

Shingle ids are exact (no hashing collisions): tokens get integer ids, and each
window of token ids is packed into one integer, or ranked as a tuple when the
vocabulary is too large to pack.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import AuditorError

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class ShingleSpec:
    unit: str = "word"    # "word" or "char"
    size: int = 3

    @classmethod
    def parse(cls, spec: str) -> "ShingleSpec":
        """'word:3' or 'char:5'."""
        unit, _, size = str(spec).partition(":")
        unit = unit.strip().lower()
        try:
            n = int(size) if size else 3
        except ValueError:
            n = -1
        if unit not in ("word", "char") or n < 1 or n > 64:
            raise AuditorError("usage", f"Bad shingle setting {spec!r}.",
                               "Use word:N or char:N with N from 1 to 64, e.g. word:3 or char:5.")
        return cls(unit, n)

    def __str__(self) -> str:
        return f"{self.unit}:{self.size}"


def shingle_matrix(texts: list, spec: ShingleSpec = ShingleSpec()) -> sp.csr_matrix:
    """A binary CSR matrix: row i holds the shingle set of texts[i] (None/empty -> empty row)."""
    if spec.unit == "word":
        token_ids, lengths = _word_tokens(texts)
    else:
        token_ids, lengths = _char_tokens(texts)
    return _windows_to_matrix(token_ids, lengths, spec.size)


TOKEN_BATCH = 100_000      # records tokenised at a time: word strings are freed per batch


def _word_tokens(texts: list) -> tuple[np.ndarray, np.ndarray]:
    index: dict[str, int] = {}
    parts: list[np.ndarray] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for lo in range(0, len(texts), TOKEN_BATCH):
        words: list[str] = []
        add = words.extend
        for i, text in enumerate(texts[lo:lo + TOKEN_BATCH], lo):
            if text:
                tokens = text.lower().split()
                lengths[i] = len(tokens)
                add(tokens)
        for w in dict.fromkeys(words):           # new words only; the per-word work stays in C
            if w not in index:
                index[w] = len(index)
        parts.append(np.fromiter(map(index.__getitem__, words), dtype=np.int64, count=len(words)))
    # Renumber in sorted word order, so ids depend on the vocabulary, not on record order.
    rank = np.empty(len(index), dtype=np.int64)
    rank[np.fromiter((index[w] for w in sorted(index)), dtype=np.int64, count=len(index))] = np.arange(len(index))
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return rank[ids], lengths


def _char_tokens(texts: list) -> tuple[np.ndarray, np.ndarray]:
    prepared = [" ".join(t.lower().split()) if t else "" for t in texts]
    lengths = np.fromiter((len(t) for t in prepared), dtype=np.int64, count=len(prepared))
    codepoints = np.frombuffer("".join(prepared).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return np.unique(codepoints, return_inverse=True)[1].reshape(-1).astype(np.int64), lengths


WINDOW_CHUNK = 4_000_000   # windows packed at a time: bounds the temporaries on big inputs


def _windows_to_matrix(token_ids: np.ndarray, lengths: np.ndarray, k: int) -> sp.csr_matrix:
    """token_ids: dense ids 0..V-1 of all records' tokens, concatenated; lengths per record."""
    n = len(lengths)
    vocab = int(token_ids.max()) + 1 if token_ids.size else 0
    pad = vocab                      # marks "no word here" in a short text's single shingle
    base = vocab + 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    # Windows: every position p of record r with p + k <= length(r); a record shorter
    # than k (but not empty) contributes one window of all its tokens, padded.
    n_windows = np.where(lengths >= k, lengths - k + 1, (lengths > 0).astype(np.int64))
    indptr = np.concatenate(([0], np.cumsum(n_windows)))
    total = int(indptr[-1])
    padded = np.concatenate((token_ids, np.full(k, pad, dtype=np.int64)))
    packable = base ** k < 2 ** 63
    keys = np.empty(total, dtype=np.int64) if packable else np.empty((total, k), dtype=np.int64)
    for lo in range(0, total, WINDOW_CHUNK):
        hi = min(total, lo + WINDOW_CHUNK)
        record = np.searchsorted(indptr, np.arange(lo, hi), side="right") - 1
        offset = np.arange(lo, hi) - indptr[record]
        first = starts[record] + offset
        length = lengths[record]
        key = np.zeros(hi - lo, dtype=np.int64)
        for j in range(k):
            token = np.where(offset + j < length, padded[np.minimum(first + j, padded.size - 1)], pad)
            if packable:
                key = key * base + token      # one integer per window, collision-free
            else:
                keys[lo:hi, j] = token
        if packable:
            keys[lo:hi] = key
    if not packable:  # too many distinct tokens to pack: rank the windows as tuples instead
        view = keys.view(np.dtype((np.void, keys.dtype.itemsize * k))).reshape(-1)
        keys = np.unique(view, return_inverse=True)[1].reshape(-1).astype(np.int64)
    # Columns in key order: a shingle's column depends on the vocabulary, not on record order.
    uniq, shingle_ids = np.unique(keys, return_inverse=True)
    matrix = sp.csr_matrix((np.ones(total, dtype=np.float32), shingle_ids.reshape(-1).astype(np.int32), indptr),
                           shape=(n, uniq.size))
    matrix.sum_duplicates()          # sets, not bags: a repeated shingle counts once
    matrix.data[:] = 1.0
    return matrix


def set_sizes(matrix: sp.csr_matrix) -> np.ndarray:
    return np.diff(matrix.indptr).astype(np.int64)
