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


def _word_tokens(texts: list) -> tuple[np.ndarray, np.ndarray]:
    words: list[str] = []
    add = words.extend
    lengths = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        if text:
            tokens = text.lower().split()
            lengths[i] = len(tokens)
            add(tokens)
    # Ids in sorted word order, so they depend on the vocabulary, not on record order;
    # dict.fromkeys and map(dict.__getitem__) keep the per-word work in C.
    index = {w: i for i, w in enumerate(sorted(dict.fromkeys(words)))}
    return np.fromiter(map(index.__getitem__, words), dtype=np.int64, count=len(words)), lengths


def _char_tokens(texts: list) -> tuple[np.ndarray, np.ndarray]:
    prepared = [" ".join(t.lower().split()) if t else "" for t in texts]
    lengths = np.fromiter((len(t) for t in prepared), dtype=np.int64, count=len(prepared))
    codepoints = np.frombuffer("".join(prepared).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return np.unique(codepoints, return_inverse=True)[1].reshape(-1).astype(np.int64), lengths


def _windows_to_matrix(token_ids: np.ndarray, lengths: np.ndarray, k: int) -> sp.csr_matrix:
    """token_ids: dense ids 0..V-1 of all records' tokens, concatenated; lengths per record."""
    n = len(lengths)
    vocab = int(token_ids.max()) + 1 if token_ids.size else 0
    pad = vocab                      # marks "no word here" in a short text's single shingle
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    # Windows: every position p of record r with p + k <= length(r); a record shorter
    # than k (but not empty) contributes one window of all its tokens, padded.
    n_windows = np.where(lengths >= k, lengths - k + 1, (lengths > 0).astype(np.int64))
    record_of = np.repeat(np.arange(n, dtype=np.int64), n_windows)
    offset_in_record = np.arange(record_of.size, dtype=np.int64) - np.repeat(
        np.concatenate(([0], np.cumsum(n_windows)[:-1])), n_windows)
    first = starts[record_of] + offset_in_record
    padded = np.concatenate((token_ids, np.full(k, pad, dtype=np.int64)))
    short = lengths[record_of] < k
    window = np.empty((record_of.size, k), dtype=np.int64)
    for j in range(k):
        window[:, j] = padded[first + j]
        if short.any():
            window[short, j] = np.where(offset_in_record[short] + j < lengths[record_of[short]],
                                        window[short, j], pad)
    keys = _pack(window, vocab + 1)
    # Columns in key order: a shingle's column depends on the vocabulary, not on record order.
    uniq, shingle_ids = np.unique(keys, return_inverse=True)
    indptr = np.concatenate(([0], np.cumsum(n_windows)))
    matrix = sp.csr_matrix((np.ones(keys.size, dtype=np.float32), shingle_ids.reshape(-1).astype(np.int32), indptr),
                           shape=(n, uniq.size))
    matrix.sum_duplicates()          # sets, not bags: a repeated shingle counts once
    matrix.data[:] = 1.0
    return matrix


def _pack(window: np.ndarray, base: int) -> np.ndarray:
    """One integer per window, order-preserving and collision-free."""
    k = window.shape[1]
    if base ** k < 2 ** 63:
        key = np.zeros(window.shape[0], dtype=np.int64)
        for j in range(k):
            key = key * base + window[:, j]
        return key
    # Too many distinct tokens to pack: rank the windows as tuples instead.
    contiguous = np.ascontiguousarray(window)
    view = contiguous.view(np.dtype((np.void, contiguous.dtype.itemsize * k))).reshape(-1)
    return np.unique(view, return_inverse=True)[1].reshape(-1).astype(np.int64)


def set_sizes(matrix: sp.csr_matrix) -> np.ndarray:
    return np.diff(matrix.indptr).astype(np.int64)
