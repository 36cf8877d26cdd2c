"""GPT-3's contamination words for a batch of texts, as the scan needs them, on Arrow buffers.

The definition is ``tokenize``: the text as every check reads it (``normalize.fold``: ``folded``
applies it to a batch's non-ASCII texts, the rest are only lowercased, which the scan does), split
into the words every check reads (``unspaced.words``: whitespace, and each character of a script
written without spaces, Han, kana, Thai, Lao, Khmer, Myanmar, a word of its own), then each word
lowercased, every character that is neither alphanumeric nor whitespace (and "_") deleted, and the
words left empty dropped. The compiled
scan (``kernels.ngram_scan``) gives exactly its words one character at a time, because Python's
lowercasing and deletion look at one character alone, with a single exception: capital sigma,
whose lowercase (final or not) depends on the nearest letters around it that case ignores, never
past whitespace or a character of those scripts. So each text's UTF-8 bytes are read once, and

- an ASCII byte is a letter or digit kept lowercased, whitespace, or deleted (``BYTE_CLASS`` and
  ``BYTE_LOWER``, one table lookup per byte);
- any other character up to U+2FFFF (emoji and CJK extensions included) is looked up in
  ``unicode_table`` (what the definition does to it alone, computed from this Python's own
  ``str.lower``, ``PUNCT`` and ``unspaced`` once per process: a character of a script written
  without spaces is ALONE, a word of its own); for capital sigma the table also holds every
  character's part in the final-sigma rule (cased, case-ignorable or neither, again from this
  Python's ``str.lower``), and the scan applies the rule where it meets one;
- a run between ASCII whitespace that holds a character the table cannot take (one beyond
  U+2FFFF, a lone surrogate, malformed UTF-8) goes through the definition itself (``odd_runs``):
  whitespace ends every context it depends on.

Each word's bytes are then looked up in the benchmark's vocabulary (``word_table``).

Small batches skip the compiled code (numba's start-up) and take the definition text by text
(``token_ids``). Words are bytes (UTF-8; a lone surrogate, which ``json.loads`` can produce, is
kept as "surrogatepass" bytes), looked up in the benchmark's vocabulary without a Python string
per word where the batch is large.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import unspaced
from .errors import AuditorError
from .normalize import fold

# Every character that is neither a word character nor whitespace, and underscores: re's \s is
# str.isspace(), the set str.split() splits on.
PUNCT = re.compile(r"[^\w\s]+|_+")
# A byte's class, and a character's kind in the Unicode table (the compiled scan's DELETE, KEEP,
# SPACE, OTHER, SIGMA, ALONE): _OTHER is a non-ASCII byte, or a character the table cannot take;
# _SIGMA is capital sigma, lowercased by the final-sigma rule with the table's ``context``; _ALONE a
# kept character of a script written without spaces (``unspaced``): it ends a word and is one.
_DELETE, _KEEP, _SPACE, _OTHER, _SIGMA, _ALONE = 0, 1, 2, 3, 4, 5
# A character's part in the final-sigma rule (``UnicodeTable.context``): Python's \p{cased}
# (and not case-ignorable), \p{case-ignorable}, or neither.
_NEITHER, _CASED, _IGNORABLE = 0, 1, 2
_CAPITAL_SIGMA = 0x3A3
BYTE_CLASS = np.full(256, _OTHER, dtype=np.uint8)
for _c in range(128):
    _ch = chr(_c)
    BYTE_CLASS[_c] = _KEEP if _ch.isalnum() else _SPACE if _ch.isspace() else _DELETE
# ``tokenize``, of the text ``fold`` gives, as the reports state it
TOKENIZER = ("whitespace words, each Han, kana, Thai, Lao, Khmer or Myanmar character a word of its own, "
             "lowercased, punctuation stripped")
# ASCII characters the regex deletes: neither alphanumeric nor whitespace, or "_".
_ASCII_PUNCT = {c: None for c in range(128) if not (chr(c).isalnum() or chr(c).isspace()) or chr(c) == "_"}
SMALL_BYTES = 256 * 1024      # batches below this are tokenised text by text (see token_ids)
# The compiled scan's one lookup per byte: a kept byte's lowercase (all >= "0"), or its class
# (_DELETE, _SPACE, _OTHER).
BYTE_LOWER = np.where(BYTE_CLASS == _KEEP, np.arange(256), BYTE_CLASS).astype(np.uint8)
BYTE_LOWER[ord("A"):ord("Z") + 1] += 32


def tokenize(text: str | None) -> list[str]:
    """Words of ``text`` as every check reads it (``normalize.fold``, ``unspaced.words``): split on
    whitespace, each character of a script written without spaces a word of its own, lowercased,
    punctuation and underscores removed, empty words dropped."""
    if not text:
        return []
    if text.isascii():      # the same deletion as a table lookup: 5x faster than the regex
        return text.lower().translate(_ASCII_PUNCT).split()
    return folded_words(fold(text))


def folded_words(text: str) -> list[str]:
    """``tokenize`` of a text already folded (``normalize.fold``): the words the compiled scan
    reads from folded bytes. Spaced apart (``unspaced.spaced``) before lowercasing, so the
    final-sigma rule's context ends where a word does, as when each word is lowercased alone."""
    if text.isascii():
        return text.lower().translate(_ASCII_PUNCT).split()
    return PUNCT.sub("", unspaced.spaced(text).lower()).split()


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
    elif not pa.types.is_binary(texts.type):
        # A reader's strings (a Parquet column, say) are not always checked: the scan needs UTF-8.
        try:
            texts.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise AuditorError("bad_format", f"A text of the corpus is not valid UTF-8 ({exc}).",
                               "Re-encode the corpus as UTF-8, or fix the rows that hold other bytes.") from None
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    if texts.null_count:
        texts = pc.fill_null(texts, "")
    return texts


def folded(arr: pa.Array) -> pa.Array:
    """A batch (``as_string_array``'s) with each non-ASCII text replaced by its ``normalize.fold``:
    what the compiled scan and ``token_ids(..., folded=True)`` read. ASCII texts are kept as they are
    (their fold is their lowercase, which the scan does itself)."""
    if pa.types.is_binary(arr.type):
        odd = np.ones(len(arr), dtype=bool)
    else:
        odd = ~np.asarray(pc.fill_null(pc.string_is_ascii(arr), True))
    if not odd.any():
        return arr
    rows = np.flatnonzero(odd)
    # A slice of about FOLD_CHUNK_BYTES of texts at a time: as Python strings (the fold's), a text
    # holding one character past U+FFFF costs 4 bytes a character, a few times over while folded.
    ends = np.cumsum(np.asarray(pc.fill_null(pc.binary_length(arr), 0), dtype=np.int64)[rows])
    parts, lo = [], 0
    while lo < rows.size:
        hi = max(lo + 1, int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + FOLD_CHUNK_BYTES, side="right")))
        values = arr.take(pa.array(rows[lo:hi])).to_pylist()
        if pa.types.is_binary(arr.type):
            parts.append(pa.array([fold(v.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")
                                   for v in values], pa.binary()))
        else:
            try:
                parts.append(pa.array([fold(v) for v in values], arr.type))
            except UnicodeEncodeError:    # cannot happen from valid UTF-8 (fold adds no surrogate); kept exact
                return folded(arr.cast(pa.binary()))
        del values
        lo = hi
    done = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
    del parts
    return done if rows.size == len(arr) else pc.replace_with_mask(arr, pa.array(odd), done)


FOLD_CHUNK_BYTES = 1 << 20


def token_ids(texts, vocab: pa.Array, folded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(each word's index in ``vocab`` (binary, UTF-8), -1 for a word not in it; words per text),
    by the definition text by text: the small-batch path, quicker than loading the compiled scan.
    ``folded``: the texts are already ``folded`` (the scan's batches)."""
    arr = as_string_array(texts)
    values = arr.to_pylist()
    if pa.types.is_binary(arr.type):
        values = [v.decode("utf-8", "surrogatepass") for v in values]
    words = [(folded_words if folded else tokenize)(t) if t else [] for t in values]
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
    data, offsets = batch_bytes(vocab)
    data = data.copy()
    slots = np.zeros((1 << max(4, int(2 * len(vocab)).bit_length()), 3), dtype=np.uint64)
    from .kernels import fill_word_table  # numba: compiled on first use
    fill_word_table(data, offsets, slots)
    longest = int(np.diff(offsets).max()) if len(vocab) else 0
    return WordTable(data=data, offsets=offsets, slots=slots, longest=longest)


@dataclass(frozen=True)
class OddRuns:
    """What the compiled scan takes from outside for one batch: the Unicode table (``unicode_table``,
    with planes 1-2 when the batch holds a 4-byte character), and the runs (between ASCII
    whitespace) holding a character that table cannot take, tokenised by the definition: run k is
    b[starts[k]:ends[k]], its word ids ids[id_offsets[k]:id_offsets[k + 1]] (-1: not in vocab)."""
    table: "UnicodeTable"
    starts: np.ndarray
    ends: np.ndarray
    id_offsets: np.ndarray
    ids: np.ndarray


ODD_RUNS_AT_ONCE = 1 << 15      # runs tokenised by the definition at a time (memory: Python objects)
_astral_seen = False            # a batch of this process held a character of planes 1-2


def ascii_words(b: np.ndarray) -> tuple[np.ndarray, int]:
    """(b[head:] as whole 64-bit words, head): ``head`` is the first byte at an 8-byte-aligned
    address, so the words are aligned loads (a view, no copy)."""
    head = min(-b.ctypes.data % 8, b.size)
    whole = (b.size - head) // 8 * 8
    return b[head:head + whole].view(np.uint64), head


def odd_runs(b: np.ndarray, off: np.ndarray, vocab: pa.Array) -> OddRuns:
    global _astral_seen
    # Planes 1-2 once a batch of this process has needed them, so the pass is not run twice again.
    table = unicode_table(astral=_astral_seen)
    words, head = ascii_words(b)
    room = b.size // 64 + 64           # runs found at most; if not enough, again with room for all
    while True:
        starts, ends = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.int64)
        state = np.zeros(2, dtype=np.int64)
        from .kernels import odd_runs as find_runs
        fits = find_runs(b, words, head, off, BYTE_CLASS, table.kind, starts, ends, state)
        if state[1] and table.kind.size < ASTRAL_END:
            table = unicode_table(astral=True)
            _astral_seen = True
        elif not fits:
            room = b.size // 3 + 1     # a run holds a character of 2+ bytes and ends at a separator
        else:
            break
    count = int(state[0])
    starts, ends = starts[:count], ends[:count]
    if not count:
        return OddRuns(table, starts, ends, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    # A part of the runs at a time: the definition makes Python strings and lists per run and per
    # word, so a batch of nothing but such runs would otherwise cost 200x its bytes.
    counts, ids = [], []
    for lo in range(0, count, ODD_RUNS_AT_ONCE):
        run_counts, words = _run_words(b, starts[lo:lo + ODD_RUNS_AT_ONCE], ends[lo:lo + ODD_RUNS_AT_ONCE])
        counts.append(run_counts)
        ids.append(_lookup(words, vocab))
    id_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.concatenate(counts), out=id_offsets[1:])
    return OddRuns(table, starts, ends, id_offsets, np.concatenate(ids))


@dataclass(frozen=True)
class UnicodeTable:
    """Per code point below ``kind.size`` (U+10000, or U+30000 with planes 1-2: emoji, CJK
    extensions), what the definition does to the character alone: ``kind`` 0 deleted, 1 kept as the
    bytes ``lowered[offsets[cp]:offsets[cp + 1]]`` (its lowercase, UTF-8, deletions done),
    2 whitespace, 3 not taken (surrogates), 4 capital sigma, 5 a word of its own (kept, of a script
    written without spaces, its bytes as kind 1's); and ``context``, the character's part
    in the final-sigma rule (``_NEITHER``, ``_CASED``, ``_IGNORABLE``; ASCII included)."""
    kind: np.ndarray
    offsets: np.ndarray
    lowered: np.ndarray
    context: np.ndarray


ASTRAL_END = 0x30000        # planes 1-2 join the table when a batch holds a 4-byte character


@functools.cache
def unicode_table(astral: bool = False) -> UnicodeTable:
    """The table up to U+FFFF (``astral``: up to U+2FFFF), built once per process (planes 1-2 only
    when first needed: they cost more than the rest)."""
    spans = [(0, 0x10000)] + ([(0x10000, ASTRAL_END)] if astral else [])
    parts = [_unicode_part(lo, hi) for lo, hi in spans]
    lengths = np.concatenate([p[1] for p in parts])
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return UnicodeTable(kind=np.concatenate([p[0] for p in parts]), offsets=offsets,
                        lowered=np.concatenate([p[2] for p in parts]),
                        context=np.concatenate([_sigma_context(lo, hi) for lo, hi in spans]))


def _characters(lo: int, hi: int) -> np.ndarray:
    """The code points lo..hi-1 that are characters (no surrogates)."""
    codes = np.arange(lo, hi)
    return codes[(codes < 0xD800) | (codes >= 0xE000)]


@functools.cache
def _unicode_part(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, lengths, lowered bytes) of code points lo..hi-1, from this Python's ``str.lower``,
    ``PUNCT`` and whitespace (so it follows its Unicode version), all characters at once: joined
    by "0", which every step keeps as it is, no other character's lowercase contains, and no
    UTF-8 sequence holds as a byte."""
    codes = _characters(max(lo, 128), hi)
    codes = codes[codes != _CAPITAL_SIGMA]
    done = PUNCT.sub("", "0".join(map(chr, codes.tolist())).lower())
    chars = np.frombuffer(done.encode("utf-32-le"), dtype=np.uint32)
    space = np.zeros(chars.size, dtype=bool)
    space[[m.start() for m in re.finditer(r"\s", done)]] = True         # re's \s is str.isspace()
    cut = chars == ord("0")
    assert np.count_nonzero(cut) == codes.size - 1
    part = np.cumsum(cut)[~cut]                     # each remaining character's code point (by position)
    n_chars = np.bincount(part, minlength=codes.size)
    n_space = np.bincount(part, weights=space[~cut], minlength=codes.size)
    kind = np.full(hi - lo, _OTHER, dtype=np.uint8)
    kind[codes - lo] = np.where(n_chars == 0, _DELETE, np.where(n_space == n_chars, _SPACE,
                                                                np.where(n_space == 0, _KEEP, _OTHER)))
    if lo <= _CAPITAL_SIGMA < hi:
        kind[_CAPITAL_SIGMA - lo] = _SIGMA
    # A character of a script written without spaces stands apart (``unspaced.spaced``): kept, it is
    # a word of its own; deleted (a Thai vowel mark, say), it still ends the word before it.
    alone = unspaced.mask(lo, hi)
    kind[alone & (kind == _KEEP)] = _ALONE
    kind[alone & (kind == _DELETE)] = _SPACE
    data = np.frombuffer(done.encode("utf-8"), dtype=np.uint8)
    cut = data == ord("0")
    lengths = np.zeros(hi - lo, dtype=np.int64)
    lengths[codes - lo] = np.bincount(np.cumsum(cut)[~cut], minlength=codes.size)
    return kind, lengths, data[~cut]


@functools.cache
def _sigma_context(lo: int, hi: int) -> np.ndarray:
    """Each code point's part in the final-sigma rule, read from this Python's ``str.lower``:
    capital sigma right after a character c is final (ς) when c is cased and not case-ignorable;
    after "A" then c, it is final when c is cased or case-ignorable (skipped back to the "A").
    All characters at once, each pair of tests ended by a newline (neither cased nor ignorable,
    so each test's context ends there); surrogates count as neither, as in Python."""
    codes = _characters(lo, hi)
    codes = codes[codes != ord("\n")]
    chars = codes.astype("<u4").tobytes().decode("utf-32-le")
    final = []
    for before in ("", "A"):
        done = (before + ("\u03a3\n" + before).join(chars) + "\u03a3\n").lower()
        ends = np.frombuffer(done.encode("utf-32-le"), dtype=np.uint32)
        at = np.flatnonzero(ends == ord("\n")) - 1
        assert at.size == codes.size
        final.append(ends[at] == ord("\u03c2"))
    context = np.full(hi - lo, _NEITHER, dtype=np.uint8)
    context[codes - lo] = np.where(final[0], _CASED, np.where(final[1], _IGNORABLE, _NEITHER))
    # The definition spaces these apart before lowercasing (``unspaced.spaced``), and whitespace is
    # neither: the rule's context ends at them as at a space.
    context[unspaced.mask(lo, hi)] = _NEITHER
    return context


def _run_words(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, pa.BinaryArray]:
    """(words per run, all the words) of the byte runs b[starts[k]:ends[k]], each with a non-ASCII
    byte and no ASCII whitespace, by the definition. Joined by "\n" they are lowercased and cleaned
    as one string (Python's lowercasing looks no further than a word) and split apart again, so each
    run gets exactly its reference words."""
    raw = memoryview(b)            # runs are sliced from the batch's buffer, not from a copy of it
    joined = "\n".join([str(raw[lo:hi], "utf-8", "surrogatepass") for lo, hi in zip(starts.tolist(), ends.tolist())])
    per_run = [part.split() for part in PUNCT.sub("", unspaced.spaced(joined).lower()).split("\n")]
    counts = np.fromiter(map(len, per_run), dtype=np.int64, count=len(per_run))
    return counts, binary_array([w.encode("utf-8", "surrogatepass") for run in per_run for w in run])
