"""Step 3, shingle: texts to sets of shingles, as a sparse record x shingle matrix.

Default preparation (the dataset-integrity-audit seed's, so figures compare with its
tables): the text as every check reads it (``normalize.fold``: hidden characters removed,
NFKC, case-folded, confusable letters mapped; an ASCII text is only lowercased), split on
whitespace, each character of a script written without spaces (Han, kana, Thai, Lao, Khmer,
Myanmar) a word of its own (``unspaced.words``, the contamination n-grams' split too), 3-word shingles; a text
of fewer than 3 words is one shingle of all its words; an empty text (or one of nothing but
hidden characters) has no shingles and takes no part in near-duplicate search (it is reported as
degenerate instead). ``char:N`` shingles are
N-character windows of the folded, whitespace-collapsed text (``char_text``).

Shingle ids are exact (no hashing collisions): tokens get integer ids, and each
window of token ids is packed into one integer, or ranked as a tuple when the
vocabulary is too large to pack.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from . import parallel
from .errors import AuditorError
from .memory import trim_heap
from .normalize import fold
from .parallel import thread_map
from .settings import ShingleSpec
from .unspaced import words

_WS = re.compile(r"\s+")


def shingle_matrix(texts: list, spec: ShingleSpec = ShingleSpec()) -> sp.csr_matrix:
    """A binary CSR matrix (bool): row i holds the shingle set of texts[i] (None/empty -> empty row)."""
    if spec.unit == "word":
        token_ids, lengths = word_tokens(texts)
    else:
        token_ids, lengths = _char_tokens(texts)
    matrix = windows_to_matrix(token_ids, lengths, spec.size, reuse_tokens=True)
    # Words numbered batch by batch and windows ranked chunk by chunk leave small freed blocks
    # all over the C heap (22 MB on 100 MB of Chinese text): handed back before the search.
    trim_heap()
    return matrix


def word_tokens(texts: list, vocabulary: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (int32, numbered in sorted word order) of every text's ``words(fold(text))``
    (``normalize.fold``; an ASCII text's fold is its ``lower()``, and its words its ``split()``),
    concatenated, and the number of tokens per text.

    ASCII texts, the bulk of most datasets, are split by Arrow without making a Python
    string per word (1.7x faster on 1M records). Arrow's ASCII split equals
    Python's there except on \\x1c-\\x1f, which Python also splits on, so texts holding those,
    and non-ASCII texts (where Unicode casing and whitespace rules apply), take Python's
    own ``words(fold(text))``. Tests check the two paths agree with Python's on every ASCII
    character and on mixed inputs.

    Each batch's distinct words are held by Arrow as bytes (UTF-8, lone surrogates kept), never as
    a Python dict of strings: a text of distinct words (a huge vocabulary) cost 150 bytes a word
    that way; then one sort of every batch's words numbers them all (``_number_words``)."""
    n = len(texts)
    if n >= ARROW_MIN_TEXTS:
        arrow_lengths, arrow_parts, by_python = _arrow_word_tokens(texts)
    else:                                   # Arrow's split would cost more than it saves
        arrow_lengths, arrow_parts = np.zeros(n, np.int64), []
        by_python = np.fromiter((bool(t) for t in texts), dtype=bool, count=n)
    # The other texts, in batches of about TOKEN_BATCH_CHARS: each text's words are joined by a
    # newline (no word holds whitespace) and Arrow splits the batch again, so no Python string per
    # word outlives its text (a list of every word of 200 texts of 100 KB cost 9 times their size).
    python_lengths = np.zeros(n, dtype=np.int64)
    python_parts: list = []
    pieces: list[str] = []
    held = 0
    for i in np.flatnonzero(by_python).tolist():
        tokens = words(fold(texts[i]))
        if tokens:
            python_lengths[i] = len(tokens)
            pieces.append("\n".join(tokens))
            held += len(pieces[-1]) + 1
        del tokens
        if held >= TOKEN_BATCH_CHARS:
            python_parts.append(_encode_words(pieces))
            pieces, held = [], 0
    if pieces:
        python_parts.append(_encode_words(pieces))
    del pieces
    # Number every batch's words in sorted word order, so ids depend on the vocabulary, not on
    # record order; then each batch's local ids become those numbers.
    arrow_locals = [local for local, _ in arrow_parts]
    python_locals = [local for local, _ in python_parts]
    dictionaries = [dictionary for _, dictionary in arrow_parts + python_parts]
    del arrow_parts, python_parts                # the numbering drops each dictionary once read
    for local, number in zip(arrow_locals + python_locals, _number_words(dictionaries, vocabulary)):
        local[:] = number[local]                  # in place: a gather into a new array, copied back
    local = number = None                         # the last batch's too, so ``_joined`` can drop it
    arrow_ids = _joined(arrow_locals)
    python_ids = _joined(python_locals)
    del arrow_locals, python_locals
    lengths = arrow_lengths + python_lengths
    if not python_ids.size or not arrow_ids.size:           # one source: already in text order
        return (arrow_ids if arrow_ids.size else python_ids), lengths
    return _interleaved(lengths, ((arrow_lengths, arrow_ids), (python_lengths, python_ids))), lengths


INTERLEAVE_TOKENS = 1 << 20   # tokens placed at a time by ``_interleaved``: bounds its temporaries


def _interleaved(lengths: np.ndarray, sources) -> np.ndarray:
    """Every text's tokens in text order (int32), each text's from the one source that holds them:
    ``sources`` are (tokens per text, that source's tokens concatenated in text order). Texts are
    placed about INTERLEAVE_TOKENS tokens at a time: an offset per token of the whole stream (int64)
    and its index beside it held 24 bytes a token, 6x the ids (a scan of 81 MB of questions with a
    few non-ASCII ones among them peaked at 5x the bytes read while tokenising)."""
    ids = np.empty(int(lengths.sum()), dtype=np.int32)
    ends = np.cumsum(lengths)
    taken = [0] * len(sources)                    # each source's tokens placed so far
    lo = 0
    while lo < lengths.size:
        reached = (ends[lo - 1] if lo else 0) + INTERLEAVE_TOKENS
        hi = min(max(int(np.searchsorted(ends, reached, side="right")), lo + 1), lengths.size)
        starts = ends[lo:hi] - lengths[lo:hi]     # each text's first token in ``ids``
        for k, (source_lengths, source_ids) in enumerate(sources):
            counts = source_lengths[lo:hi]
            has = counts > 0
            count = int(counts.sum())
            if not count:
                continue
            # a token's place: its text's first token, plus its index within the text
            within = np.arange(count, dtype=np.int64) - np.repeat(np.cumsum(counts[has]) - counts[has], counts[has])
            within += np.repeat(starts[has], counts[has])
            ids[within] = source_ids[taken[k]:taken[k] + count]
            taken[k] += count
        lo = hi
    return ids


TOKEN_BATCH_CHARS = 1 << 22     # characters of texts tokenised by Python at a time
ARROW_MIN_TEXTS = 20_000        # texts from which the ASCII ones are split by Arrow
ARROW_BATCH = 50_000            # texts split by Arrow at a time, at most ...
ARROW_BATCH_CHARS = 1 << 22     # ... and about this many characters: bounds its temporaries


def arrow_pool():
    """The Arrow memory pool tokenisation allocates from: jemalloc where pyarrow has it, else the
    system allocator. Not pyarrow's default mimalloc, which kept what a batch freed: a scan of 20 MB
    of distinct words peaked at 13x the bytes read with it, 8.5x with jemalloc (10.5x with the
    system's), and ran faster."""
    import pyarrow as pa

    global _POOL
    if _POOL is None:
        try:
            _POOL = pa.jemalloc_memory_pool()
        except NotImplementedError:
            _POOL = pa.system_memory_pool()
    return _POOL


_POOL = None


def _joined(parts: list) -> np.ndarray:
    """The parts (int32) concatenated, each dropped from ``parts`` once copied: the result's pages
    are taken as they are written, so the parts and the whole are not all held at once (Chinese
    text, a token every 3 bytes, peaked there at 8 bytes a token with np.concatenate)."""
    if len(parts) <= 1:
        return parts.pop() if parts else np.zeros(0, dtype=np.int32)
    out = np.empty(sum(part.size for part in parts), dtype=np.int32)
    at = 0
    for i in range(len(parts)):
        part, parts[i] = parts[i], None
        out[at:at + part.size] = part
        at += part.size
        del part
    parts.clear()
    return out


def _encode_words(pieces: list):
    """(each word's index in the batch's dictionary (int32), the dictionary: its distinct words as
    Arrow bytes) of texts' words joined by newlines (``pieces``, none empty), split by Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pool = arrow_pool()
    joined = pa.array(["\n".join(pieces).encode("utf-8", "surrogatepass")], type=pa.large_binary(), memory_pool=pool)
    return _dictionary(pc.list_flatten(pc.split_pattern(joined, "\n", memory_pool=pool), memory_pool=pool))


def _dictionary(words):
    """(int32 indices, the distinct words sorted, as binary) of an Arrow array of words: each
    batch sorts its own words, so numbering them all is a merge (``_number_words``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pool = arrow_pool()
    encoded = pc.dictionary_encode(words.cast(pa.large_binary(), memory_pool=pool), memory_pool=pool)
    order = pc.sort_indices(encoded.dictionary, memory_pool=pool)
    place = np.empty(len(order), dtype=np.int32)
    place[np.asarray(order)] = np.arange(len(order), dtype=np.int32)
    dictionary = pc.take(encoded.dictionary, order, memory_pool=pool)
    del order
    local = place[np.asarray(encoded.indices)]
    del encoded, place
    return local, _held_by_numpy(dictionary)


def _held_by_numpy(words):
    """``words`` (binary; 4-byte offsets when they fit, half of large_binary's) in buffers held by
    numpy, whose pages go back as soon as ``_packed_words`` has copied a batch. Arrow's pool gave
    back less: numbering 100 MB of distinct words peaked 60-80 MB higher with its buffers."""
    import pyarrow as pa

    ends = _word_bytes(words)
    narrow = int(ends[-1]) < INT32_OFFSETS
    offsets = (ends - ends[0]).astype(np.int32 if narrow else np.int64)
    data = np.frombuffer(words.buffers()[2], dtype=np.uint8)[int(ends[0]):int(ends[-1])].copy() if len(words) \
        else np.zeros(0, dtype=np.uint8)
    return pa.Array.from_buffers(pa.binary() if narrow else pa.large_binary(), len(words),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


INT32_OFFSETS = (1 << 31) - 1


def _number_words(dictionaries: list, vocabulary: list | None) -> list:
    """For each batch's dictionary (distinct words, sorted: ``_dictionary``), the number of each of
    its words in the sorted vocabulary of them all (UTF-8 byte order, which is code point order:
    Python's ``sorted``). One batch's numbers are its positions; several batches' come from Arrow's
    rank of them all or, past MERGE_MIN_WORDS, from a merge (``kernels.merged_dense_ranks``) that
    writes them over the words' offsets, where the rank held 20 bytes a word more (a text of distinct
    words: 1.5x the bytes read).
    Empties ``dictionaries`` as it reads them."""
    if len(dictionaries) == 1:
        words = dictionaries.pop()
        if vocabulary is not None:        # the caller wants the words behind the ids (id i: vocabulary[i])
            vocabulary.extend(w.decode("utf-8", "surrogatepass") for w in words.to_pylist())
        return [np.arange(len(words), dtype=np.int32)]
    sizes = [len(d) for d in dictionaries]
    if sum(sizes) < MERGE_MIN_WORDS:
        return _ranked_words(dictionaries, sizes, vocabulary)
    data, offsets, data_starts, word_starts = _packed_words(dictionaries)
    from . import kernels

    ends = offsets.copy() if vocabulary is not None else None     # the merge writes ranks over offsets
    distinct = kernels.merged_dense_ranks(data, offsets, data_starts, word_starts)
    if vocabulary is not None:
        words = [None] * distinct
        for c in range(word_starts.size - 1):
            chunk = data[data_starts[c]:data_starts[c + 1]].tobytes()
            first, stop = int(word_starts[c]) + c, int(word_starts[c + 1]) + c
            bounds, ranks = ends[first:stop + 1].tolist(), offsets[first:stop].tolist()
            for i, at in enumerate(ranks):
                words[at] = chunk[bounds[i]:bounds[i + 1]].decode("utf-8", "surrogatepass")
        vocabulary.extend(words)
    del data, ends
    return [offsets[int(word_starts[c]) + c:int(word_starts[c + 1]) + c] for c in range(word_starts.size - 1)]


# Words from which batches are numbered by the compiled merge: below, Arrow's rank of them all
# (16 bytes a word) costs less than the merge's copy of the words (about 7 bytes a word at its
# peak) and loading compiled code in a process (about 60 MB, once per process).
MERGE_MIN_WORDS = 1 << 22


def _ranked_words(dictionaries: list, sizes: list, vocabulary: list | None) -> list:
    """``_number_words`` by Arrow's dense rank of every batch's words at once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pool = arrow_pool()
    wide = any(pa.types.is_large_binary(d.type) for d in dictionaries)     # a batch past 2 GB
    words = pa.chunked_array([d.cast(pa.large_binary()) if wide else d for d in dictionaries],
                             type=pa.large_binary() if wide else pa.binary())
    dictionaries.clear()
    rank = pc.rank(words, sort_keys="ascending", tiebreaker="dense", memory_pool=pool)   # 1-based
    number = np.empty(len(rank), dtype=np.int32)
    number[:] = np.asarray(rank)
    del rank
    number -= 1
    if vocabulary is not None:
        chosen = np.zeros(len(number), dtype=bool)
        chosen[np.unique(number, return_index=True)[1]] = True      # a word's first place
        ordered = words.filter(pa.array(chosen)).to_pylist()
        at = number[chosen]
        vocabulary.extend(ordered[i].decode("utf-8", "surrogatepass") for i in np.argsort(at).tolist())
    return np.split(number, np.cumsum(sizes)[:-1])


def _packed_words(dictionaries: list) -> tuple:
    """Every dictionary's words in one byte array, as ``kernels.merged_dense_ranks`` reads them:
    (bytes, chunk-local int32 offsets, each chunk's first byte, each chunk's first word). A
    dictionary is dropped once copied, so the copy never holds two of each."""
    sizes = [len(d) for d in dictionaries]
    data = np.empty(sum(int(_word_bytes(d)[-1] - _word_bytes(d)[0]) for d in dictionaries), dtype=np.uint8)
    offsets = np.empty(sum(sizes) + len(dictionaries), dtype=np.int32)
    data_starts = np.zeros(len(dictionaries) + 1, dtype=np.int64)
    word_starts = np.zeros(len(dictionaries) + 1, dtype=np.int64)
    word_starts[1:] = np.cumsum(sizes)
    for c in range(len(dictionaries)):
        words = dictionaries[c]
        dictionaries[c] = None
        ends = _word_bytes(words)
        lo, hi = int(ends[0]), int(ends[-1])
        if hi - lo > INT32_OFFSETS:
            raise AuditorError("too_large", "A text holds more than 2 GB of distinct words.",
                               "Split the text into records.")
        if hi > lo:
            data[data_starts[c]:data_starts[c] + hi - lo] = np.frombuffer(words.buffers()[2], dtype=np.uint8)[lo:hi]
        offsets[word_starts[c] + c:word_starts[c + 1] + c + 1] = ends - lo
        data_starts[c + 1] = data_starts[c] + hi - lo
        del words, ends
    dictionaries.clear()
    return data, offsets, data_starts, word_starts


def _word_bytes(words) -> np.ndarray:
    """The offsets of a binary or large_binary array's words in its bytes (a view)."""
    import pyarrow as pa

    if not len(words):
        return np.zeros(1, dtype=np.int64)
    wide = pa.types.is_large_binary(words.type)
    return np.frombuffer(words.buffers()[1], dtype=np.int64 if wide else np.int32)[words.offset:words.offset + len(words) + 1]


def _arrow_word_tokens(texts: list):
    """Arrow's split of the ASCII texts without \\x1c-\\x1f: their token counts, a (local ids,
    dictionary) part per batch (``_dictionary``), and the mask of texts left to Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    lengths = np.zeros(n, dtype=np.int64)
    by_python = np.zeros(n, dtype=bool)
    parts: list = []
    pool = arrow_pool()
    for lo, hi in _batches(texts, ARROW_BATCH, ARROW_BATCH_CHARS):
        batch = texts[lo:hi]
        ascii_texts = pa.array([t if t and t.isascii() else None for t in batch], type=pa.large_string(),
                               memory_pool=pool)
        python = np.asarray(pc.fill_null(pc.match_substring_regex(ascii_texts, "[\\x1c-\\x1f]", memory_pool=pool),
                                         False))
        python |= np.fromiter((bool(t) and not t.isascii() for t in batch), dtype=bool, count=len(batch))
        by_python[lo:lo + len(batch)] = python
        # Lowercase, trim (a leading/trailing space would give an empty token), split.
        prepared = pc.ascii_trim_whitespace(pc.ascii_lower(ascii_texts, memory_pool=pool), memory_pool=pool)
        del ascii_texts
        usable = pc.and_(pc.invert(pa.array(python, memory_pool=pool), memory_pool=pool),
                         pc.not_equal(prepared, "", memory_pool=pool), memory_pool=pool)
        lists = pc.ascii_split_whitespace(pc.if_else(usable, prepared, pa.scalar(None, pa.large_string()),
                                                     memory_pool=pool), memory_pool=pool)
        del prepared
        lengths[lo:lo + len(batch)] = np.asarray(pc.fill_null(pc.list_value_length(lists, memory_pool=pool), 0))
        parts.append(_dictionary(pc.list_flatten(lists, memory_pool=pool)))
        del lists
    return lengths, parts, by_python


def _batches(texts: list, most: int, chars: int):
    """(lo, hi) ranges of at most ``most`` texts and about ``chars`` characters (at least one text)."""
    sizes = np.fromiter((len(t) if t else 0 for t in texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(sizes)
    lo = 0
    while lo < len(texts):
        hi = int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + chars, side="right"))
        hi = min(max(hi, lo + 1), lo + most, len(texts))
        yield lo, hi
        lo = hi


def char_text(text: str | None) -> str:
    """The text ``char:N`` shingles are windows of: folded (``normalize.fold``), whitespace collapsed."""
    return " ".join(fold(text).split()) if text else ""


def _char_tokens(texts: list) -> tuple[np.ndarray, np.ndarray]:
    prepared = [char_text(t) for t in texts]
    lengths = np.fromiter((len(t) for t in prepared), dtype=np.int64, count=len(prepared))
    codepoints = np.frombuffer("".join(prepared).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return sorted_codes(codepoints)[1], lengths


WINDOW_CHUNK = 1 << 18     # token positions turned into windows at a time: bounds the temporaries


def windows_to_matrix(token_ids: np.ndarray, lengths: np.ndarray, k: int,
                      reuse_tokens: bool = False) -> sp.csr_matrix:
    """token_ids: dense ids 0..V-1 of all records' tokens, concatenated; lengths per record.

    Windows: every position p of record r with p + k <= length(r); a record shorter than k (but
    not empty) contributes one window of all its tokens, padded. A shingle's column is the rank of
    its window among the distinct windows, in (token, token, ...) order, so it depends on the
    vocabulary, not on record order (``window_columns``). ``reuse_tokens``: the caller is done with
    ``token_ids`` (int32), so the columns may be written over them."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    n_windows = np.where(lengths >= k, lengths - k + 1, (lengths > 0).astype(np.int64))
    indptr = np.concatenate(([0], np.cumsum(n_windows)))
    del n_windows
    n_columns, columns = window_columns(token_ids, lengths, k, reuse_tokens)
    # Boolean: repeated shingles merge as sets (a repeat counts once: bool sums are "or"), and a
    # byte an entry where float32 took four. Counts come from ``.multiply(...).sum()`` (an integer
    # sum) or from the indices; a product of two such matrices would be boolean, so the searches'
    # products use prefix matrices of their own, float32 (``near.prefix``).
    matrix = sp.csr_matrix((np.ones(columns.size, dtype=bool), columns, indptr), shape=(n, n_columns))
    del columns
    matrix.sum_duplicates()
    spare = matrix.indices.base
    if spare is not None and spare.nbytes > matrix.indices.nbytes * 9 // 8:
        matrix.indices = matrix.indices.copy()     # written over more token ids than it keeps (short texts)
    del spare
    return matrix


def window_columns(token_ids: np.ndarray, lengths: np.ndarray, k: int,
                   reuse_tokens: bool = False) -> tuple[int, np.ndarray]:
    """(number of distinct windows, each window's rank among them as int32), the windows of
    ``windows_to_matrix`` in record order. The rank of a window is that of its tuple of token ids
    (a short text's padded with V, after every token): when V + 1 to the k fits in 63 bits a window
    is packed into one integer, else the tuples are ranked a token at a time (the rank of the
    first j tokens, times V + 1, plus token j: the same order). Each pass makes its keys from the
    tokens a chunk at a time and ranks them (``_ranked``): about 12 bytes a window at the peak (16
    when the tuples are ranked a token at a time: the previous pass's ranks too), where np.unique's
    inverse took over 40; past RANGE_MIN windows, packed keys are ranked a key range at a time
    (``_ranked_by_range``: the ids, the ranks and an eighth of the keys, 9-10 bytes a window, 7 when
    the vocabulary fits in 16 bits). With ``reuse_tokens``, a one-pass ranking writes the ranks
    over the token ids, which no later window reads once its chunk's keys are made (there are no more
    windows than tokens, so window i starts at token i or later): 4 bytes a token less at the peak."""
    lengths = np.asarray(lengths, dtype=np.int64)
    vocab = int(token_ids.max()) + 1 if token_ids.size else 0
    base = vocab + 1                 # token id ``vocab`` marks "no word here" in a short text's window
    windows = _Windows(token_ids, lengths, k, pad=vocab)
    if not windows.total:
        return 0, np.zeros(0, dtype=np.int32)
    if base ** k < 2 ** 63:
        def keys(lo, hi, tokens):     # one integer per window, collision-free
            key = tokens[0].astype(np.int64)
            for token in tokens[1:]:
                key *= base
                key += token
            return key
        reuse = reuse_tokens and token_ids.dtype == np.int32 and token_ids.flags.writeable
        if reuse and windows.total >= RANGE_MIN and base <= 1 << 16:
            # A small vocabulary (Chinese characters, short words): the windows read a uint16 copy
            # of the ids and the ranks go over the int32 ids from the start, range by range.
            windows.ids = token_ids.astype(np.uint16)
            return _ranked_by_range(windows, keys, range(k), base ** k, out=token_ids, out_free=True)
        return _ranked(windows, keys, range(k), base ** k, out=token_ids if reuse else None)
    # Too many distinct tokens to pack k of them: rank the first two, then each next one on the
    # rank so far (ranks < 2**31 and tokens < 2**31, so a rank times base plus a token fits).
    count, codes = _ranked(windows, lambda lo, hi, tokens: tokens[0].astype(np.int64) * base + tokens[1], (0, 1),
                           base * base)
    for j in range(2, k):
        if count == windows.total:    # every window told apart already: the next tokens keep the order
            break
        previous = codes
        count, codes = _ranked(windows, lambda lo, hi, tokens: previous[lo:hi].astype(np.int64) * base + tokens[0],
                               (j,), count * base)
        del previous
    return count, codes


def _ranked(windows: "_Windows", make_keys, positions, bound: int,
            out: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """(distinct keys, each window's key rank as int32) of the keys ``make_keys(lo, hi, tokens)``
    gives for windows lo..hi from their tokens at ``positions``, every key below ``bound``.
    When a key times the number of windows fits in 63 bits, each window's key and its index are
    packed into one integer and sorted in place (``_ranked_packed``: 12 bytes a window at the
    peak); else the keys alone are (``_ranked_searched``, 12 bytes too). ``out``: int32, at least a
    slot a window, to write the ranks in (``window_columns``), each chunk's once its keys are made."""
    if bound * windows.total < 2 ** 63:
        return _ranked_packed(windows, make_keys, positions, bound, out)
    return _ranked_searched(windows, make_keys, positions, out)


def _ranked_searched(windows: "_Windows", make_keys, positions,
                     out: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """``_ranked`` of keys too wide to pack with a window index: every key sorted in place and made
    distinct there, then each chunk's keys made again and found among them by binary search, a
    chunk's keys in sorted order (the searches walk the distinct keys forward: 6x faster than in
    window order). A sort index of every key, as np.unique's inverse keeps, held 8 bytes a window
    more (17 at the peak, 12 now)."""
    keys = np.empty(windows.total, dtype=np.int64)
    for lo, hi, tokens in windows.chunks(positions):
        keys[lo:hi] = make_keys(lo, hi, tokens)
    keys.sort()
    distinct = keys[:_distinct_in_place(keys)]
    codes = np.empty(windows.total, dtype=np.int32) if out is None else out[:windows.total]

    def place(order, ordered):
        codes[order] = np.searchsorted(distinct, ordered)

    # The searches (numpy releases the GIL) run on a thread beside the next chunk's keys and sort: a
    # chunk's ranks land on windows before its tokens, which no later chunk reads.
    pool = ThreadPoolExecutor(1) if parallel.WORKERS > 1 else None
    pending = None
    try:
        for lo, hi, tokens in windows.chunks(positions):
            key = make_keys(lo, hi, tokens)
            order = np.argsort(key)
            ordered = key[order]
            order += lo
            del key
            if pending is not None:
                pending.result()
            pending = pool.submit(place, order, ordered) if pool else place(order, ordered)
            del order, ordered
        if pending is not None:
            pending.result()
    finally:
        if pool:
            pool.shutdown()
    return int(distinct.size), codes


def _distinct_in_place(ordered: np.ndarray) -> int:
    """Moves the distinct values of a sorted array to its front, a chunk at a time; returns how many."""
    count, last = 0, None
    for lo in range(0, ordered.size, WINDOW_CHUNK):
        chunk = ordered[lo:lo + WINDOW_CHUNK]
        new_run = np.empty(chunk.size, dtype=bool)
        new_run[0] = last is None or chunk[0] != last
        np.not_equal(chunk[1:], chunk[:-1], out=new_run[1:])
        kept = chunk[new_run]
        last = chunk[-1].item()          # read before the front is written, which may reach this chunk
        ordered[count:count + kept.size] = kept
        count += kept.size
    return count


def _ranked_packed(windows: "_Windows", make_keys, positions, bound: int,
                   out: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """``_ranked`` of keys for which key * total + window fits in 63 bits: those packed integers
    sorted in place (no permutation array beside them: 8 bytes a window, with the int32 ranks 12),
    then read a chunk at a time, each window's rank written at its index."""
    total = windows.total
    if total >= RANGE_MIN:
        return _ranked_by_range(windows, make_keys, positions, bound, out, out_free=False)
    packed = np.empty(total, dtype=np.int64)
    for lo, hi, tokens in windows.chunks(positions):
        key = make_keys(lo, hi, tokens)
        key *= total
        key += np.arange(lo, hi, dtype=np.int64)
        packed[lo:hi] = key
        del key
    packed.sort()
    codes = np.empty(total, dtype=np.int32) if out is None else out[:total]
    count, previous = 0, -1
    for lo in range(0, total, WINDOW_CHUNK):
        chunk = packed[lo:lo + WINDOW_CHUNK]
        key, window = np.divmod(chunk, total)
        new_run = np.empty(key.size, dtype=bool)           # where the sorted keys change
        new_run[0] = key[0] != previous
        np.not_equal(key[1:], key[:-1], out=new_run[1:])
        rank = np.cumsum(new_run, dtype=np.int64)
        rank += count - 1
        codes[window] = rank
        count, previous = int(rank[-1]) + 1, int(key[-1])
    return count, codes


RANGE_MIN = 1 << 22         # windows from which ``_ranked_by_range`` ranks the keys a range at a time
KEY_RANGES = 8              # ranges of about equal size it ranks them in
RANGE_SAMPLE = 1 << 16      # keys sampled to choose the ranges


def _ranked_by_range(windows: "_Windows", make_keys, positions, bound: int, out: np.ndarray | None,
                     out_free: bool) -> tuple[int, np.ndarray]:
    """``_ranked_packed`` a key range at a time: the ranges (``_key_ranges``) are taken in key order,
    and each pass makes every window's key again but keeps only those in its range (about
    1 / KEY_RANGES of them), so the peak is the int32 ranks, the ids and a range's keys, not every
    window's packed key (12 bytes a window held 4 times the bytes read on Chinese text, a token every
    3 bytes). A range's keys are packed with their window (key less the range's first, times the
    windows, plus the window: 8 bytes a window of the range) and sorted in place when that fits in
    63 bits; else (keys below ``bound``, a wide range of a large vocabulary) kept beside their
    windows and ordered by argsort (about 28 bytes a window of the range at its peak). A key
    sampled in more than 1 / KEY_RANGES of the windows (a heavy key: a text repeated over and over)
    is kept in no range: its windows are marked -1 - (its index) and given its rank once every
    range is done. ``out_free``: ``out`` may be written from the start (the windows read a copy of
    the ids); otherwise the ranks are copied into ``out`` once the ids are read no more."""
    total = windows.total
    heavy, bounds, shares = _key_ranges(windows, make_keys, positions)
    codes = out[:total] if out_free else np.empty(total, np.int32)
    heavy_rank = np.zeros(heavy.size, np.int64)
    lows = np.concatenate(([0], bounds)).tolist()
    highs = np.concatenate((bounds, [bound])).tolist()
    window_type = np.int32 if total < 2 ** 31 else np.int64
    count = 0
    for lo_key, hi_key, share in zip(lows, highs, shares.tolist()):
        packed = (hi_key - lo_key) * total < 2 ** 63          # Python integers: exact
        keys = _Growing(int(share * total * 1.1) + WINDOW_CHUNK, np.int64)
        places = None if packed else _Growing(keys.buffer.size, window_type)
        for lo, hi, tokens in windows.chunks(positions):
            key = make_keys(lo, hi, tokens)
            at = np.flatnonzero((key >= lo_key) & (key < hi_key))
            key = key[at]
            at += lo
            if heavy.size:
                h = np.minimum(np.searchsorted(heavy, key), heavy.size - 1)
                is_heavy = heavy[h] == key
                if is_heavy.any():
                    codes[at[is_heavy]] = -1 - h[is_heavy]
                    at, key = at[~is_heavy], key[~is_heavy]
            key -= lo_key
            if packed:
                key *= total
                key += at
            else:
                places.add(at)
            keys.add(key)
            del key, at
        in_range = heavy[(heavy >= lo_key) & (heavy < hi_key)]
        first_heavy = int(np.searchsorted(heavy, lo_key))
        below_heavy = np.zeros(in_range.size, np.int64)    # distinct range keys below each heavy key
        distinct, previous = 0, -1
        for key, window in _sorted_by_key(keys, places, total):    # keys less lo_key, ascending
            new_run = np.empty(key.size, dtype=bool)
            new_run[0] = key[0] != previous
            np.not_equal(key[1:], key[:-1], out=new_run[1:])
            previous = int(key[-1])
            rank = np.cumsum(new_run, dtype=np.int64)
            rank += count + distinct - 1
            if in_range.size:
                key += lo_key
                rank += np.searchsorted(in_range, key)
                below_heavy += np.searchsorted(key[new_run], in_range)
            codes[window] = rank
            distinct += int(np.count_nonzero(new_run))
        heavy_rank[first_heavy:first_heavy + in_range.size] = count + below_heavy + np.arange(in_range.size)
        count += distinct + in_range.size
    if heavy.size:
        for lo in range(0, total, WINDOW_CHUNK):
            chunk = codes[lo:lo + WINDOW_CHUNK]
            marked = chunk < 0
            chunk[marked] = heavy_rank[-1 - chunk[marked]]
    if out is not None and not out_free:
        out[:total] = codes
        codes = out[:total]
    return count, codes


class _Growing:
    """An array filled a chunk at a time into a buffer sized from an estimate, grown if it is short."""

    def __init__(self, capacity: int, dtype):
        self.buffer, self.size = np.empty(capacity, dtype), 0

    def add(self, values: np.ndarray) -> None:
        if self.size + values.size > self.buffer.size:          # the sample misjudged the range
            grown = np.empty(self.size + values.size + WINDOW_CHUNK, self.buffer.dtype)
            grown[:self.size] = self.buffer[:self.size]
            self.buffer = grown
        self.buffer[self.size:self.size + values.size] = values
        self.size += values.size

    def take(self) -> np.ndarray:
        values, self.buffer = self.buffer[:self.size], None
        return values


def _sorted_by_key(keys: _Growing, places: _Growing | None, total: int):
    """(keys, windows) a chunk at a time in key order: packed keys (``places`` None) sorted in place
    and split; else the keys and their windows gathered by the keys' argsort."""
    if places is None:
        packed = keys.take()
        packed.sort()
        for lo in range(0, packed.size, WINDOW_CHUNK):
            yield np.divmod(packed[lo:lo + WINDOW_CHUNK], total)
        return
    key = keys.take()
    order = np.argsort(key)
    key = key[order]
    window = places.take()[order]
    del order
    for lo in range(0, key.size, WINDOW_CHUNK):
        yield key[lo:lo + WINDOW_CHUNK], window[lo:lo + WINDOW_CHUNK]


def _key_ranges(windows: "_Windows", make_keys, positions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the heavy keys, ascending; the bounds between ranges; each range's share of the windows)
    from RANGE_SAMPLE windows' keys drawn with a fixed seed (the same ranges every run)."""
    total = windows.total
    picks = np.sort(np.random.default_rng(0).integers(0, total, min(total, RANGE_SAMPLE)))
    sample = np.empty(picks.size, np.int64)
    for lo, hi, tokens in windows.chunks(positions):
        first, last = np.searchsorted(picks, (lo, hi))
        if last > first:
            sample[first:last] = make_keys(lo, hi, tokens)[picks[first:last] - lo]
    sample.sort()
    values, counts = np.unique(sample, return_counts=True)
    heavy = values[counts * KEY_RANGES > sample.size]
    rest = sample[~np.isin(sample, heavy)]
    bounds = np.unique(rest[(np.arange(1, KEY_RANGES) * rest.size) // KEY_RANGES]) if rest.size else \
        np.zeros(0, np.int64)
    edges = np.searchsorted(rest, bounds)
    shares = np.diff(np.concatenate(([0], edges, [rest.size]))) / sample.size
    return heavy, bounds, shares


class _Windows:
    """The shingle windows of concatenated token ids, made a chunk of token positions at a time."""

    def __init__(self, token_ids: np.ndarray, lengths: np.ndarray, k: int, pad: int):
        self.ids, self.k, self.pad = token_ids, k, pad
        n_tokens = token_ids.size
        ends = np.cumsum(lengths)
        # A window starts at every position but a record's last k - 1 (all of a short record's)...
        self.starts = np.ones(n_tokens, dtype=bool)
        for j in range(1, k):
            self.starts[ends[lengths >= j] - j] = False
        # ... and at a short record's first token (its one padded window).
        short = (lengths > 0) & (lengths < k)
        self.short_at = (ends - lengths)[short]
        self.short_length = lengths[short]
        self.starts[self.short_at] = True
        self.total = int(np.count_nonzero(self.starts))

    def chunks(self, positions):
        """(first window, end window, [token at position j of each window, for j in positions])."""
        ids, n_tokens = self.ids, self.ids.size
        done = 0
        for lo in range(0, n_tokens, WINDOW_CHUNK):
            hi = min(n_tokens, lo + WINDOW_CHUNK)
            at = np.flatnonzero(self.starts[lo:hi]) + lo
            tokens = []
            first, last = np.searchsorted(self.short_at, (lo, hi))
            for j in positions:
                token = ids[np.minimum(at + j, n_tokens - 1)] if j else ids[at]
                if j and last > first:    # a short record's window past its last token: padding
                    past = self.short_length[first:last] <= j
                    if past.any():
                        token = token.astype(np.int64)
                        token[np.searchsorted(at, self.short_at[first:last][past])] = self.pad
                tokens.append(token)
            yield done, done + at.size, tokens
            done += at.size


PARALLEL_MIN = 1_000_000    # keys from which sorted_codes splits the sort across threads


def sorted_codes(keys: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct keys, each key's rank among them), i.e. np.unique's inverse.
    Large inputs are split at sampled quantiles into value ranges sorted on separate
    threads (numpy's sort releases the GIL): equal keys share a range and ranges are in
    order, so the codes are np.unique's exactly (tests check). 2.4x on 40M keys, 2 cores."""
    parts = parallel.WORKERS if keys.size >= PARALLEL_MIN else 1
    if parts == 1:
        uniq, codes = np.unique(keys, return_inverse=True)
        return int(uniq.size), codes.reshape(-1)
    sample = np.sort(keys[::max(1, keys.size // 10_000)])
    cuts = sample[(np.arange(1, parts) * sample.size) // parts]
    part = np.searchsorted(cuts, keys, side="right")
    members = [np.flatnonzero(part == p) for p in range(parts)]

    def ranks(index: np.ndarray) -> tuple[int, np.ndarray]:
        values = keys[index]
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        del values
        first = np.empty(ordered.size, dtype=bool)
        first[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        del ordered
        codes = np.empty(first.size, dtype=np.int32)       # CSR column ids are int32 anyway
        codes[order] = np.cumsum(first, dtype=np.int64) - 1
        return int(first.sum()), codes

    codes = np.empty(keys.size, dtype=np.int32)
    offset = 0
    for index, (count, part_codes) in zip(members, thread_map(ranks, members)):
        codes[index] = part_codes + offset
        offset += count
    return offset, codes


def set_sizes(matrix: sp.csr_matrix) -> np.ndarray:
    return np.diff(matrix.indptr).astype(np.int64)


COUNT_CHUNK = 1 << 20     # columns counted at a time by ``column_counts`` and ``shared_columns``


def column_counts(matrix: sp.csr_matrix) -> np.ndarray:
    """How many rows hold each column (int32). np.bincount's int64 over every column took 8 bytes a
    column, for long texts (nearly every shingle distinct) 8 bytes a shingle, with float copies on
    top; here a range of COUNT_CHUNK columns is counted at a time into the int32 array."""
    out = np.empty(matrix.shape[1], dtype=np.int32)
    for lo, counts in _column_count_chunks(matrix):
        out[lo:lo + counts.size] = counts
    return out


def shared_columns(matrix: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(the columns held by two rows or more, ascending (as the matrix's indices); how many rows hold
    each (int32)):
    the only columns that can make a pair. Nothing is held per column: long texts have a column a
    shingle, nearly all of them held once."""
    columns, counts = [], []
    for lo, chunk in _column_count_chunks(matrix):
        at = np.flatnonzero(chunk >= 2)
        counts.append(chunk[at].astype(np.int32))
        at += lo
        columns.append(at.astype(matrix.indices.dtype))          # int32 unless the matrix is wider
    if not columns:
        return np.zeros(0, matrix.indices.dtype), np.zeros(0, np.int32)
    return np.concatenate(columns), np.concatenate(counts)


def _column_count_chunks(matrix: sp.csr_matrix):
    """(first column, int64 counts of columns first..first+COUNT_CHUNK-1) over the matrix's width
    (a compiled loop would need no temporaries, but loading numba costs more memory than they take)."""
    m, indices = matrix.shape[1], matrix.indices
    if m <= COUNT_CHUNK:
        if m:
            yield 0, np.bincount(indices, minlength=m)
        return
    # Each range reads the entries a chunk at a time (masks over every entry held 2 bytes an entry:
    # Chinese text's 3-grams, nearly a column an entry, peaked there); an entry is in the range when
    # its column minus the first, as unsigned, is below the range's width (one comparison, not two).
    shifted = np.empty(min(indices.size, COUNT_ENTRIES), np.int64)
    for lo in range(0, m, COUNT_CHUNK):
        hi = min(m, lo + COUNT_CHUNK)
        counts = np.zeros(hi - lo, np.int64)
        for start in range(0, indices.size, COUNT_ENTRIES):
            chunk = indices[start:start + COUNT_ENTRIES]
            local = shifted[:chunk.size]
            np.subtract(chunk, lo, out=local)
            counts += np.bincount(local[local.view(np.uint64) < hi - lo], minlength=hi - lo)
        yield lo, counts
        del counts


COUNT_ENTRIES = 1 << 21   # matrix entries read at a time by ``_column_count_chunks``


ROW_SUM_CHUNK = 1 << 20     # matrix entries hashed at a time by ``row_hash_sums``


def row_hash_sums(matrix: sp.csr_matrix, seed: int, where: np.ndarray | None = None) -> np.ndarray:
    """Per row of a CSR matrix, the sum modulo 2^64 of a 64-bit hash of each entry's column
    (SplitMix64 of column + seed; only the entries where ``where``, a mask over them, holds): an
    order-free hash of the row's set. The hashes are made for a few rows at a time, so neither a
    per-column table of weights nor a per-entry array of them is held."""
    n = matrix.shape[0]
    out = np.zeros(n, dtype=np.uint64)
    indptr = matrix.indptr
    lo = 0
    with np.errstate(over="ignore"):
        while lo < n:
            hi = max(lo + 1, int(np.searchsorted(indptr, indptr[lo] + ROW_SUM_CHUNK, side="right")) - 1)
            hi = min(hi, n)
            start, stop = int(indptr[lo]), int(indptr[hi])
            if stop > start:
                hashed = splitmix64(matrix.indices[start:stop], seed)
                if where is not None:
                    hashed[~where[start:stop]] = 0
                held = np.diff(indptr[lo:hi + 1]) > 0
                out[lo:hi][held] = np.add.reduceat(hashed, indptr[lo:hi][held] - start)
            lo = hi
    return out


def entry_rows(indptr: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The row of each entry at ``positions`` of a CSR matrix (int64), by a search of the rows'
    starts: a row number for every entry of the matrix (np.repeat) held 8 bytes an entry."""
    return np.searchsorted(indptr, positions, side="right") - 1


def kept_entries(matrix: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
    """The matrix with only the entries ``keep`` (same shape; each row's indices stay in order)."""
    indptr = np.concatenate(([0], np.cumsum(row_counts(matrix.indptr, keep))))
    return sp.csr_matrix((matrix.data[keep], matrix.indices[keep], indptr), shape=matrix.shape)


ROWS_IN_PLACE_CHUNK = 1 << 20     # entries moved at a time by ``rows_in_place``


def rows_in_place(matrix: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """``matrix[rows]`` for ascending ``rows``, written over the matrix's own buffers front to back
    (no copy of the kept entries: a second matrix nearly as large as the first was the near search's
    largest cost when few records repeat; scipy still copies a kept part under half its buffer).
    ``matrix`` must not be read afterwards: when scipy copied the kept part, it is left empty."""
    rows = np.asarray(rows, dtype=np.int64)
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    sizes = (indptr[rows + 1] - indptr[rows]).astype(np.int64)
    out_indptr = np.concatenate(([0], np.cumsum(sizes)))
    lo = 0
    while lo < rows.size:
        hi = min(rows.size, max(lo + 1, int(np.searchsorted(out_indptr, out_indptr[lo] + ROWS_IN_PLACE_CHUNK,
                                                               side="right")) - 1))
        counts = sizes[lo:hi]
        # Each kept entry's place in the matrix: its row's start plus its index within the row. A
        # destination never lies past its source, and a chunk is read whole before it is written,
        # so no entry is overwritten before it is moved.
        source = np.arange(int(out_indptr[hi] - out_indptr[lo]), dtype=np.int64)
        source += np.repeat(indptr[rows[lo:hi]] - (out_indptr[lo:hi] - out_indptr[lo]), counts)
        start, stop = int(out_indptr[lo]), int(out_indptr[hi])
        indices[start:stop] = indices[source]
        data[start:stop] = data[source]
        lo = hi
    total = int(out_indptr[-1])
    out = sp.csr_matrix((data[:total], indices[:total], out_indptr), shape=(rows.size, matrix.shape[1]))
    if not np.shares_memory(out.indices, indices):
        # scipy copied a kept part under half its buffer: the matrix, read no more, lets its
        # buffers go now rather than when its caller does (the scan holds it through the search:
        # one-letter words, half of them one repeated text, kept 91 MB of shingles of 40 MB read).
        matrix.indptr = np.zeros(matrix.shape[0] + 1, indptr.dtype)
        matrix.indices, matrix.data = np.zeros(0, indices.dtype), np.zeros(0, data.dtype)
    return out


def row_counts(indptr: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row of a CSR matrix, how many of its entries ``mask`` holds (int64), a few rows at a
    time: np.add.reduceat over the whole mask would cast it to int64 first, 8 bytes an entry."""
    n = indptr.size - 1
    out = np.zeros(n, dtype=np.int64)
    lo = 0
    while lo < n:
        hi = min(n, max(lo + 1, int(np.searchsorted(indptr, indptr[lo] + ROW_SUM_CHUNK, side="right")) - 1))
        start = int(indptr[lo])
        held = np.concatenate(([0], np.cumsum(mask[start:int(indptr[hi])], dtype=np.int64)))
        out[lo:hi] = held[indptr[lo + 1:hi + 1] - start] - held[indptr[lo:hi] - start]
        lo = hi
    return out


def splitmix64(values: np.ndarray, seed: int) -> np.ndarray:
    """SplitMix64's output for each value + seed (uint64, wrapping): a well-mixed 64-bit hash."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) % 2 ** 64)
        z += np.uint64(0x9E3779B97F4A7C15)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def jaccard_rows(matrix, ia: np.ndarray, ib: np.ndarray, sizes: np.ndarray) -> list:
    """Jaccard of rows ia[i] and ib[i] of a binary CSR matrix (None when both are empty)."""
    inter = np.asarray(matrix[ia].multiply(matrix[ib]).sum(axis=1)).reshape(-1)
    union = sizes[ia] + sizes[ib] - inter
    out = np.round(inter / np.maximum(union, 1), 6)
    out = np.where(inter < union, np.minimum(out, 0.999999), out)     # 1.0 only for equal sets
    return [None if u == 0 else float(j) for j, u in zip(out.tolist(), union.tolist())]
