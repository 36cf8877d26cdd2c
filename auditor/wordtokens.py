"""GPT-3's contamination words for a batch of texts, as the scan needs them, on Arrow buffers.

The definition is ``auditor.contamination.tokenize``: lowercase, delete every character that is
neither alphanumeric nor whitespace (and "_"), split on whitespace (``str.split()``). The compiled
scan (``kernels.ngram_scan``) gives exactly its words, because splitting on ASCII whitespace first
changes nothing (Python's lowercasing and deletion look no further than a word; whitespace ends a
word for the final-sigma rule too). So each text's UTF-8 bytes are cut at ASCII whitespace into
runs, and

- an ASCII run (nearly all of them) is one word or none: its letters and digits, lowercased
  (``_CLASS`` and ``_LOWER``, one table lookup per byte in the scan), looked up in ``word_table``;
- a run with a non-ASCII byte goes through the definition itself (``odd_runs``): it may hold
  Unicode whitespace or punctuation, and Unicode lowercasing has its own rules.

Small batches skip the compiled code (numba's start-up) and take the definition text by text
(``token_ids``). Words are bytes (UTF-8; a lone surrogate, which ``json.loads`` can produce, is
kept as "surrogatepass" bytes), looked up in the benchmark's vocabulary without a Python string
per word where the batch is large.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Every character that is neither a word character nor whitespace, and underscores: re's \s is
# str.isspace(), the set str.split() splits on.
PUNCT = re.compile(r"[^\w\s]+|_+")
_DELETE, _KEEP, _SPACE, _NON_ASCII = 0, 1, 2, 3
_CLASS = np.full(256, _NON_ASCII, dtype=np.uint8)
for _c in range(128):
    _ch = chr(_c)
    _CLASS[_c] = _KEEP if _ch.isalnum() else _SPACE if _ch.isspace() else _DELETE
SMALL_BYTES = 256 * 1024      # batches below this are tokenised text by text (see token_ids)
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"):ord("Z") + 1] += 32


def as_string_array(texts) -> pa.Array:
    """A batch of texts (list of str/None, or an Arrow string array) as one string (or, when a text
    holds a lone surrogate, binary) array, nulls as ''."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    if not isinstance(texts, pa.Array):
        try:
            texts = pa.array(texts, pa.string())
        except UnicodeEncodeError:
            texts = pa.array([t.encode("utf-8", "surrogatepass") if t else b"" for t in texts], pa.binary())
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    if texts.null_count:
        texts = pc.fill_null(texts, "")
    return texts


def token_ids(texts, vocab: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(each word's index in ``vocab`` (binary, UTF-8), -1 for a word not in it; words per text),
    by the definition text by text: the small-batch path, quicker than loading the compiled scan."""
    from .contamination import tokenize
    arr = as_string_array(texts)
    values = arr.to_pylist()
    if pa.types.is_binary(arr.type):
        values = [v.decode("utf-8", "surrogatepass") for v in values]
    words = [tokenize(t) for t in values]
    flat = binary_array([w.encode("utf-8", "surrogatepass") for ws in words for w in ws])
    return _lookup(flat, vocab), np.fromiter(map(len, words), dtype=np.int64, count=len(words))


def _lookup(words: pa.Array, vocab: pa.Array) -> np.ndarray:
    if not len(words):
        return np.zeros(0, dtype=np.int64)
    found = pc.index_in(words, value_set=vocab)     # int32, null where a word is not in vocab
    # Read from the buffers: pyarrow's own conversions import pandas first (see binary_array).
    start, n = found.offset, len(found)
    ids = np.frombuffer(found.buffers()[1], dtype=np.int32, count=start + n)[start:].astype(np.int64)
    if found.null_count:
        valid = np.unpackbits(np.frombuffer(found.buffers()[0], dtype=np.uint8), bitorder="little")[start:start + n]
        ids[valid == 0] = -1
    return ids


def binary_array(values: list) -> pa.BinaryArray:
    """A binary array of byte strings, built from its buffers: ``pa.array`` on a Python list
    imports pandas first (0.4 s, a tenth of a 200 MB scan) to check whether the list is a frame."""
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)), out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))]
    return pa.Array.from_buffers(pa.binary(), len(values), buffers)


def batch_bytes(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(the UTF-8 bytes of a string/binary array's texts, each text's start in them and the end),
    views of the Arrow buffers, no copy."""
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + n + 1)[arr.offset:].astype(np.int64)
    start = int(offsets[0])
    if arr.buffers()[2] is None or offsets[-1] == start:
        return np.zeros(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
    return np.frombuffer(arr.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))[start:], offsets - start


@dataclass(frozen=True)
class WordTable:
    """A vocabulary (word id -> UTF-8 bytes) as the compiled scan looks words up: the words' bytes
    end to end, their offsets, and an open-addressing hash table (``kernels.fill_word_table``)."""
    data: np.ndarray
    offsets: np.ndarray
    slots: np.ndarray
    longest: int


def word_table(vocab: pa.Array) -> WordTable:
    from .kernels import fill_word_table
    data, offsets = batch_bytes(vocab)
    data = data.copy()
    slots = np.zeros((1 << max(4, int(2 * len(vocab)).bit_length()), 3), dtype=np.uint64)
    fill_word_table(data, offsets, slots)
    longest = int(np.diff(offsets).max()) if len(vocab) else 0
    return WordTable(data=data, offsets=offsets, slots=slots, longest=longest)


def odd_runs(b: np.ndarray, off: np.ndarray, vocab: pa.Array):
    """The batch's runs with a non-ASCII byte (see ``tokens``), tokenised by the definition, as the
    compiled scan takes them: (first byte, end, each run's first id in ``ids``, ids (-1: not in vocab))."""
    from .kernels import odd_runs as find_runs
    non_ascii = np.flatnonzero(b >= 128)
    starts = np.empty(non_ascii.size, dtype=np.int64)
    ends = np.empty(non_ascii.size, dtype=np.int64)
    count = find_runs(b, off, _CLASS, non_ascii, starts, ends) if non_ascii.size else 0
    starts, ends = starts[:count], ends[:count]
    if not count:
        return starts, ends, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    run_counts, words = _run_words(b, starts, ends)
    id_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(run_counts, out=id_offsets[1:])
    return starts, ends, id_offsets, _lookup(words, vocab)


def _run_words(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, pa.BinaryArray]:
    """(words per run, all the words) of the byte runs b[starts[k]:ends[k]], each with a non-ASCII
    byte and no ASCII whitespace, by the definition. Joined by "\n" they are lowercased and cleaned
    as one string (Python's lowercasing looks no further than a word) and split apart again, so each
    run gets exactly its reference words."""
    raw = b.tobytes()
    joined = "\n".join([raw[lo:hi].decode("utf-8", "surrogatepass") for lo, hi in zip(starts.tolist(), ends.tolist())])
    per_run = [part.split() for part in PUNCT.sub("", joined.lower()).split("\n")]
    counts = np.fromiter(map(len, per_run), dtype=np.int64, count=len(per_run))
    return counts, binary_array([w.encode("utf-8", "surrogatepass") for run in per_run for w in run])
