"""Benchmark contamination: which benchmark items share an n-gram span with a corpus.

GPT-3 style (Brown et al. 2020, appendix C): tokens are whitespace-separated words of the
text as every check reads it (``normalize.fold``: hidden characters removed, NFKC, case-folded,
confusable letters mapped), each character of a script written without spaces (Han, kana, Thai,
Lao, Khmer, Myanmar) a word of its own as in the near-duplicate shingles (``unspaced.words``),
lowercased, with punctuation stripped; N is the 5th percentile of benchmark item
lengths in tokens, clamped to 8..13 (``ngram="auto"``), or a fixed N (13 as in
lm-eval-harness). The benchmark's n-grams are indexed once (sorted 64-bit keys); the
corpus streams through in batches, so its size does not bound memory. Every match
found by key is confirmed token by token, so a hash collision cannot report one.

``tokenize`` is the definition; the scan tokenises a whole batch at once with
``wordtokens`` (the same tokens, tested) and reads a local JSONL corpus's text field with
Arrow (``textstream``). ``build_index``, ``scan_batch`` and ``HitSet`` are the steps, shared
with the Ray engine (``distributed.contamination``), so both report the same bytes.

Items shorter than N cannot be checked and are reported as "too short to check".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import wordtokens
from .env import format_bytes
from .errors import AuditorError
from .io.columns import checked_texts, is_text_list
from .io.budget import max_bytes
from .io.listing import codec_of, display_name, format_of, local_files
from .io.sources import looks_local, peek_records, source_text
from .normalize import DESCRIPTION as NORMALIZATION
from .prepare import in_source, prepare
from .progress import Progress
from .report import PARAPHRASE_CAVEAT  # noqa: F401  (re-exported: the caveat the lexical checks share)
from .report import contamination as report
from .roles import joined_text, resolve_text_spec, text_fields
from .settings import COPIED_COVERAGE, check_max_rows
from .textstream import jsonl_texts
from .wordtokens import TOKENIZER, binary_array, token_ids, tokenize, word_table  # noqa: F401  (tokenize: the definition, documented here)

# Bundled references that work offline by name: (source, config, split, text field).
BENCHMARKS = {
    "gsm8k": ("example:gsm8k", "main", "test", "question"),
    "humaneval": ("example:humaneval", "default", "test", "prompt"),
    "mbpp": ("example:mbpp", "full", "test", "text"),
    "mbpp-sanitized": ("example:mbpp", "sanitized", "test", "prompt"),
}
STAGES = (("index", "indexing benchmark", 0.1), ("scan", "scanning corpus", 0.9))
BATCH = 20_000
# Below this many bytes of JSONL the small-batch path scans the whole corpus: loading the compiled
# pass (numba, ~1 s a process) costs more than it saves (measured: GSM8K train, 4 MB, 0.54 s vs 1.27 s).
COMPILED_MIN_BYTES = 8 << 20
_MUL = np.uint64(0x9E3779B97F4A7C15)


MAX_NGRAM = 64     # GPT-3 used 13; beyond 64 words an n-gram test says nothing an exact match does not
# An item counts as contaminated when it shares one n-gram with the corpus (GPT-3's definition, the
# count reported). Its coverage, the share of its words that lie in one of its n-grams found in the
# corpus, tells a copy (most of the item is there, even with a word changed) from an item that only
# shares a stock phrase with another text (settings.COPIED_COVERAGE). (The share of its n-grams found
# would call a 30-word item with one word changed a phrase: 5 of its 18 13-grams hold that word.)


def verdict(coverage: float) -> str:
    """"copied" when at least COPIED_COVERAGE of an item's words are covered, else "phrase"."""
    return "copied" if coverage >= COPIED_COVERAGE else "phrase"


def choose_n(lengths: list[int], ngram="auto") -> int:
    if ngram != "auto":
        try:
            if isinstance(ngram, bool) or (isinstance(ngram, float) and not ngram.is_integer()):
                raise ValueError
            n = int(ngram.strip() if isinstance(ngram, str) else ngram)
        except (TypeError, ValueError, OverflowError):
            n = 0
        if not 1 <= n <= MAX_NGRAM:
            raise AuditorError("usage", f"Bad n-gram size {ngram!r:.40}: use a whole number from 1 to {MAX_NGRAM}.",
                               "Use --ngram auto (8..13 from the benchmark's item lengths) or e.g. 13, as GPT-3 did.")
        return n
    if not lengths:
        return 13
    return int(min(13, max(8, np.percentile(np.asarray(lengths), 5))))


def ngram_keys(ids: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """A 64-bit key for each window ids[s:s+n] (polynomial hash, wrapping)."""
    key = np.zeros(starts.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            key = key * _MUL + ids[starts + j].astype(np.uint64) + np.uint64(1)
    return key


def _windows(lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(record, start) of every n-token window, over concatenated token arrays."""
    counts = np.maximum(lengths - n + 1, 0)
    record = np.repeat(np.arange(lengths.size), counts)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    within = np.arange(record.size) - np.repeat(np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return record, offsets[record] + within


@dataclass(frozen=True)
class ContaminationResult:
    corpus: dict
    benchmark: dict
    n: int
    items: list                 # [{benchmark_row, corpus_rows, matched_ngrams, longest_span, item_ngrams}]
    too_short: list = field(default_factory=list)
    corpus_records: int = 0
    corpus_tokens: int = 0
    corpus_no_words: int = 0    # corpus records with no word to check (BatchScan.no_words)
    # How the scan ran (--engine ray: shards, seconds, MB/s). The one part of summary.json that
    # differs between engines and runs, so it is kept out of everything else; None: local engine.
    engine: dict | None = None
    tokenizer: str = TOKENIZER  # the tokens' definition, as the report states it
    normalization: str = NORMALIZATION  # the text normalisation (normalize.fold), as the report states it

    def summary(self) -> dict:
        return report.summary(self)

    def markdown(self) -> str:
        return report.markdown(self)


def benchmark_texts(benchmark: str, config, split, text, max_rows, token):
    if benchmark in BENCHMARKS:
        source, cfg, spl, field_name = BENCHMARKS[benchmark]
        config, split, text = config or cfg, split or spl, text or field_name
        name = benchmark
    else:
        # A local benchmark by its name, never this machine's folders (as every report shows sources).
        source, name = benchmark, display_name(benchmark) if looks_local(benchmark) else benchmark
    # A benchmark is an evaluation set: without a split, its test split when it has one.
    side = prepare(source, config=config, split=split, max_rows=max_rows, token=token, text=text, text_only=True,
                   default_split="test")
    table = side.table
    _check_index_size(side.fields.text, name)
    info = {"name": name, "source": table.source, "config": table.config, "split": table.split,
            "records": len(table.rows), "text": side.roles.text, "fingerprint": side.fingerprint,
            **({"notices": list(table.notices)} if table.notices else {})}
    return side.fields.text, info


# The n-gram index holds about 12 bytes per character of the benchmark's texts (ids, windows, keys
# and their order; measured: 20 MiB of text, 250 MB), so a benchmark may hold at most the reading
# budget's 1/INDEX_SHARE in text: 64 MiB by default, 200 times GSM8K's test set. (A 1.7 MB gzip
# of 728 MiB of words, within the reading budget, took a process to 21.9 GB.)
INDEX_SHARE = 16


def _check_index_size(texts: list, name: str) -> None:
    limit = max_bytes() // INDEX_SHARE
    chars = 0
    for text in texts:
        chars += len(text) if isinstance(text, str) else 0
        if chars > limit:
            raise AuditorError("too_large", f"{name}: the benchmark's texts hold more than {format_bytes(limit)}, "
                               f"the most its n-gram index is built for (1/{INDEX_SHARE} of AUDITOR_MAX_BYTES, "
                               f"{format_bytes(max_bytes())}: the index takes about 12 bytes a character).",
                               "A benchmark is a test set (GSM8K's is 0.3 MiB of text): point at its test split, "
                               "or raise AUDITOR_MAX_BYTES if the machine has the memory.")


def contamination(corpus, benchmark: str, *, corpus_config=None, corpus_split=None, corpus_text=None,
                  benchmark_config=None, benchmark_split=None, benchmark_text=None, ngram="auto",
                  max_rows=None, token=None, progress=None) -> ContaminationResult:
    """Benchmark items sharing an n-gram with ``corpus`` (a source string or a list of texts)."""
    return scan_corpus(corpus, benchmark, corpus_config=corpus_config, corpus_split=corpus_split,
                       corpus_text=corpus_text, benchmark_config=benchmark_config, benchmark_split=benchmark_split,
                       benchmark_text=benchmark_text, ngram=ngram, max_rows=max_rows, token=token, progress=progress)


def scan_corpus(corpus, benchmark: str, *, corpus_config=None, corpus_split=None, corpus_text=None,
                benchmark_config=None, benchmark_split=None, benchmark_text=None, ngram="auto",
                max_rows=None, token=None, progress=None, matched_rows=None) -> ContaminationResult:
    """``contamination``; with ``matched_rows`` (a list), each batch's corpus rows that share an
    n-gram with any item are appended to it as an ascending array (``decontaminate``'s first pass)."""
    if ngram != "auto":
        choose_n([], ngram)                 # a bad n-gram size fails before anything is read
    check_max_rows(max_rows)
    if not is_text_list(corpus):
        corpus = source_text(corpus)       # a pathlib.Path works like its string
    benchmark = source_text(benchmark)
    run = Progress(progress, STAGES)
    with run.stage("index"):
        bench_texts, bench_info = benchmark_texts(benchmark, benchmark_config, benchmark_split, benchmark_text,
                                                   None, token)
        index = build_index(bench_texts, ngram)
    hits = HitSet()
    n_records = n_tokens = n_silent = 0
    with run.stage("scan"):
        corpus_info, records, compiled = _corpus_batches(corpus, corpus_config, corpus_split, corpus_text, max_rows,
                                                         token)
        total = len(corpus) if is_text_list(corpus) else None
        for batch_start, batch in records:
            scanned = scan_batch(index, batch, compiled)
            n_records += scanned.records
            # Each batch moves the progress (a corpus read from a source has no known total: the
            # fraction then approaches the end as records go by).
            run.at(n_records / total if total else n_records / (n_records + BATCH),
                   f"scanning corpus: {n_records:,}{f' of {total:,}' if total else ''} records")
            n_tokens += scanned.tokens
            n_silent += scanned.no_words
            hits.extend(HitSet.from_batch(scanned, index), batch_start)
            if matched_rows is not None:
                matched_rows.append(np.flatnonzero(scanned.text_hit) + batch_start)
    run.done()
    return ContaminationResult(corpus=corpus_info, benchmark=bench_info, n=index.n, items=hits.items(index),
                               too_short=index.too_short, corpus_records=n_records, corpus_tokens=n_tokens,
                               corpus_no_words=n_silent)


@dataclass(frozen=True)
class BenchmarkIndex:
    """The benchmark's n-grams, built once (and, on Ray, put in the object store once and shared
    by every task): every window of n word ids, and its distinct n-grams ("grams") sorted by a
    64-bit key, each with the windows that hold it. A corpus window is confirmed against one gram
    and then credits all its windows, so a gram many items share costs one confirmation."""
    n: int
    vocab: object                   # pa.BinaryArray: word id -> UTF-8 bytes
    tokens: np.ndarray              # every item's word ids, concatenated
    lengths: np.ndarray             # tokens per item
    window_item: np.ndarray         # window -> item
    window_start: np.ndarray        # window -> start in ``tokens``
    gram_keys: np.ndarray           # per gram, ascending (equal keys: a hash collision, told apart by ids)
    gram_offsets: np.ndarray        # gram g's windows: gram_windows[gram_offsets[g]:gram_offsets[g + 1]]
    gram_windows: np.ndarray        # ascending within a gram; the first one's ids are the gram's
    too_short: list

    @cached_property
    def word_table(self):
        """The vocabulary as the compiled scan looks words up (built on first use: small scans
        never need it)."""
        return word_table(self.vocab)


def build_index(bench_texts: list, ngram="auto") -> BenchmarkIndex:
    # One item's words at a time, straight to ids: the words of all items as Python strings took
    # about 20 bytes of memory per character of the benchmark.
    vocab: dict[str, int] = {}
    bench_ids = []
    for text in bench_texts:
        toks = tokenize(text)
        bench_ids.append(np.fromiter((vocab.setdefault(w, len(vocab)) for w in toks), dtype=np.int64, count=len(toks)))
    b_lengths = np.fromiter((len(t) for t in bench_ids), dtype=np.int64, count=len(bench_ids))
    n = choose_n([int(k) for k in b_lengths if k], ngram)
    b_all = np.concatenate(bench_ids) if bench_ids else np.zeros(0, np.int64)
    b_item, b_start = _windows(b_lengths, n)
    keys, offsets, windows = _grams(b_all, b_start, n)
    words = binary_array([w.encode("utf-8", "surrogatepass") for w in vocab])
    return BenchmarkIndex(n=n, vocab=words, tokens=b_all, lengths=b_lengths, window_item=b_item, window_start=b_start,
                          gram_keys=keys, gram_offsets=offsets, gram_windows=windows,
                          too_short=[i for i, length in enumerate(b_lengths.tolist()) if length < n])


GRAM_CHUNK = 1 << 20        # windows compared at a time while grouping (memory: a few arrays of this many)


def _grams(ids: np.ndarray, starts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, offsets, windows) of the distinct n-grams of the windows ids[s:s+n]: windows sorted
    by key (stably) and cut where the key changes; a key whose windows differ in their ids (a hash
    collision) has its windows sorted by ids and cut where the ids change."""
    keys = ngram_keys(ids, starts, n)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    new_key = np.r_[True, keys[1:] != keys[:-1]] if keys.size else np.zeros(0, bool)
    run_first = np.maximum.accumulate(np.where(new_key, np.arange(keys.size), 0))
    # Windows sharing a key almost always share their ids: compare each with its key's first
    # window, one column at a time (memory of the chunk, whatever n).
    later = np.flatnonzero(~new_key)
    differs = np.zeros(keys.size, bool)
    for lo in range(0, later.size, GRAM_CHUNK):
        at = later[lo:lo + GRAM_CHUNK]
        mine, first = starts[order[at]], starts[order[run_first[at]]]
        unequal = np.zeros(at.size, bool)
        for j in range(n):
            unequal |= ids[mine + j] != ids[first + j]
        differs[at] = unequal
    new_gram = new_key.copy()
    key_starts = np.r_[np.flatnonzero(new_key), keys.size]
    for run in np.unique(run_first[differs]).tolist():
        stop = int(key_starts[np.searchsorted(key_starts, run, side="right")])
        block = ids[starts[order[run:stop]][:, None] + np.arange(n)]
        by_ids = np.lexsort(block.T[::-1])
        order[run:stop], block = order[run:stop][by_ids], block[by_ids]
        new_gram[run + 1:stop] = (block[1:] != block[:-1]).any(axis=1)
    first = np.flatnonzero(new_gram)
    return keys[first], np.r_[first, keys.size].astype(np.int64), order.astype(np.int64)


@dataclass(frozen=True)
class BatchScan:
    """One batch of corpus texts against the index, its matches reduced as they were found (so its
    size is the benchmark's, whatever the batch repeats): the benchmark windows matched, and per
    item how many of the batch's texts match it, the first ROWS_LISTED of them (-1 padded) and the
    last (-1: none); texts numbered within the batch."""
    records: int
    tokens: int
    window_hit: np.ndarray          # uint8 per benchmark window
    item_count: np.ndarray
    item_first: np.ndarray          # (items, ROWS_LISTED)
    item_last: np.ndarray
    text_hit: np.ndarray            # uint8 per text of the batch: 1 if it shares an n-gram with any item
    no_words: int                   # texts with no word (missing, null, blank, only punctuation): reported

    @staticmethod
    def empty_state(index: "BenchmarkIndex", texts: int) -> tuple:
        items = index.lengths.size
        return (np.zeros(index.window_item.size, dtype=np.uint8), np.zeros(items, dtype=np.int64),
                np.full((items, ROWS_LISTED), -1, dtype=np.int64), np.full(items, -1, dtype=np.int64),
                np.zeros(texts, dtype=np.uint8))


def scan_batch(index: BenchmarkIndex, texts, compiled: bool | None = None) -> BatchScan:
    """Match a batch of texts (a list of str/None or an Arrow string array) against the index.
    ``compiled``: the compiled pass or the small-batch path, both giving the same matches (None:
    by the batch's size, ``wordtokens.SMALL_BYTES``)."""
    try:
        arr = wordtokens.folded(wordtokens.as_string_array(texts))
        b, off = wordtokens.batch_bytes(arr)
        if compiled is False or (compiled is None and b.size < wordtokens.SMALL_BYTES):
            return _scan_small(index, arr)
        return _scan_compiled(index, b, off)
    except UnicodeDecodeError as exc:       # a binary array's bytes (string arrays are checked above)
        raise AuditorError("bad_format", f"A text of the corpus is not valid UTF-8 ({exc.reason}).",
                           "Re-encode the corpus as UTF-8, or fix the rows that hold other bytes.") from None


def _scan_compiled(index: BenchmarkIndex, b: np.ndarray, off: np.ndarray) -> BatchScan:
    """``scan_batch`` in one compiled pass over the batch's bytes (``kernels.ngram_scan``): words,
    their ids, rolling window keys, confirmations and the reduction, with no per-word array."""
    table = index.word_table
    odd = wordtokens.odd_runs(b, off, index.vocab)
    state = BatchScan.empty_state(index, off.size - 1)
    from .kernels import ngram_scan  # numba: compiled on first use
    words, silent = ngram_scan(b, off, wordtokens.BYTE_CLASS, wordtokens.BYTE_LOWER, odd.table.kind, odd.table.offsets,
                       odd.table.lowered, odd.table.context, table.data, table.offsets, table.slots, table.longest,
                       odd.starts, odd.ends, odd.id_offsets, odd.ids,
                       index.n, _MUL, index.gram_keys, index.gram_offsets, index.gram_windows,
                       np.full(index.gram_keys.size, -1, dtype=np.int64), index.window_start, index.window_item,
                       index.tokens, *state)
    return BatchScan(off.size - 1, int(words), *state, no_words=int(silent))


def _scan_small(index: BenchmarkIndex, arr) -> BatchScan:
    """``scan_batch`` for a small batch (a benchmark against another, the app's uploads): the
    definition's tokens and numpy windows, quicker than loading the compiled scan."""
    n = index.n
    # Word ids (-1: a word no benchmark item uses), by an exact hash lookup of each word's bytes.
    c_all, c_lengths = token_ids(arr, index.vocab, folded=True)
    state = BatchScan.empty_state(index, int(c_lengths.size))
    window_hit, item_count, item_first, item_last, text_hit = state
    records, n_tokens = int(c_lengths.size), int(c_lengths.sum())
    silent = int(np.count_nonzero(c_lengths == 0))
    if not index.gram_keys.size or not n_tokens:
        return BatchScan(records, n_tokens, *state, no_words=silent)
    c_rec, c_start = _windows(c_lengths, n)
    if not c_rec.size:
        return BatchScan(records, n_tokens, *state, no_words=silent)
    # A window with a word the benchmark never uses cannot match: drop it before hashing.
    unknown = np.concatenate(([0], np.cumsum(c_all < 0)))
    ok = unknown[c_start + n] - unknown[c_start] == 0
    c_rec, c_start = c_rec[ok], c_start[ok]
    c_keys = ngram_keys(c_all, c_start, n)
    keys = index.gram_keys
    pos = np.searchsorted(keys, c_keys)
    hit = (pos < keys.size) & (keys[np.minimum(pos, keys.size - 1)] == c_keys)
    b_all, offsets, windows = index.tokens, index.gram_offsets, index.gram_windows
    gram_last = {}
    for rec, start, p in zip(c_rec[hit].tolist(), c_start[hit].tolist(), pos[hit].tolist()):   # records in order
        window = c_all[start:start + n]
        key = keys[p]
        while p < keys.size and keys[p] == key:               # every gram with this key (one, unless a collision)
            b0 = int(index.window_start[windows[offsets[p]]])
            if np.array_equal(b_all[b0:b0 + n], window):       # confirm: no hash collision
                text_hit[rec] = 1
                if gram_last.get(p) != rec:                    # and reduce, as the compiled pass does
                    gram_last[p] = rec
                    for w in windows[offsets[p]:offsets[p + 1]].tolist():
                        window_hit[w] = 1
                        item = index.window_item[w]
                        if item_last[item] != rec:
                            item_last[item] = rec
                            if item_count[item] < ROWS_LISTED:
                                item_first[item, item_count[item]] = rec
                            item_count[item] += 1
                break
            p += 1
    return BatchScan(records, n_tokens, *state, no_words=silent)


ROWS_LISTED = 100      # corpus rows listed per item (the report gives the count of all of them)


class HitSet:
    """Matches reduced to what the report lists, in memory bounded by the benchmark whatever the
    corpus holds: per item, the benchmark windows it matched, how many corpus rows match it and the
    first ROWS_LISTED of them. Parts of the corpus are added in order (``extend`` with each part's
    first row), which is what keeps the count of distinct rows exact without every row."""

    def __init__(self):
        self.windows: dict[int, set] = {}
        self.count: dict[int, int] = {}
        self.first: dict[int, list] = {}
        self.last: dict[int, int] = {}

    @classmethod
    def from_batch(cls, scan: BatchScan, index: BenchmarkIndex) -> "HitSet":
        """A batch's matches (rows numbered within the batch)."""
        hits = cls()
        matched = np.flatnonzero(scan.window_hit)
        for item, b0 in zip(index.window_item[matched].tolist(), index.window_start[matched].tolist()):
            hits.windows.setdefault(item, set()).add(b0)
        for item in np.flatnonzero(scan.item_count).tolist():
            count = int(scan.item_count[item])
            hits.count[item] = count
            hits.first[item] = scan.item_first[item, :min(count, ROWS_LISTED)].tolist()
            hits.last[item] = int(scan.item_last[item])
        return hits

    def extend(self, other: "HitSet", row_offset: int = 0) -> None:
        """Add ``other``'s matches, its rows shifted by ``row_offset`` (the next part of the corpus)."""
        for item, starts in other.windows.items():
            self.windows.setdefault(item, set()).update(starts)
        for item in sorted(other.count):
            last = self.last.get(item, -1)
            first = np.asarray(other.first[item], dtype=np.int64) + row_offset
            if first[0] < last:
                raise RuntimeError(f"corpus rows out of order for item {item}: {int(first[0])} after {last}")
            overlap = int(first[0] == last)       # the same row, met at the end of one part and the start of the next
            self.count[item] = self.count.get(item, 0) + other.count[item] - overlap
            listed = self.first.setdefault(item, [])
            listed += first[overlap:overlap + ROWS_LISTED - len(listed)].tolist()
            self.last[item] = other.last[item] + row_offset

    def to_json(self) -> dict:
        return {"windows": {str(i): sorted(w) for i, w in sorted(self.windows.items())},
                "rows": {str(i): [self.count[i], self.first[i], self.last[i]] for i in sorted(self.count)}}

    @classmethod
    def from_json(cls, data: dict) -> "HitSet":
        hits = cls()
        hits.windows = {int(i): set(w) for i, w in data["windows"].items()}
        for i, (count, first, last) in data["rows"].items():
            hits.count[int(i)], hits.first[int(i)], hits.last[int(i)] = count, list(first), last
        return hits

    def items(self, index: BenchmarkIndex) -> list:
        n, b_lengths = index.n, index.lengths
        item_offsets = np.concatenate(([0], np.cumsum(b_lengths)[:-1]))
        items = []
        for item in sorted(self.windows):
            starts = sorted(s - int(item_offsets[item]) for s in self.windows[item])
            longest = run = 1
            for prev, cur in zip(starts, starts[1:]):
                run = run + 1 if cur == prev + 1 else 1
                longest = max(longest, run)
            item_ngrams = int(max(b_lengths[item] - n + 1, 0))
            covered = np.zeros(int(b_lengths[item]), dtype=bool)
            for s in starts:
                covered[s:s + n] = True
            coverage = round(float(covered.mean()), 4) if covered.size else 0.0
            items.append({"benchmark_row": item, "corpus_rows": self.first[item],
                          "corpus_matches": self.count[item], "matched_ngrams": len(starts),
                          "item_ngrams": item_ngrams, "longest_span": longest + n - 1,
                          "coverage": coverage, "verdict": verdict(coverage)})
        return items


def _corpus_batches(corpus, config, split, text, max_rows, token):
    """(info, iterator of (first row number, texts), compiled) for the scan: texts as Arrow string
    arrays where a local JSONL corpus allows (``textstream``), else lists of str/None; ``compiled``
    for ``scan_batch`` (False for a local JSONL corpus under COMPILED_MIN_BYTES)."""
    info, batches, paths = corpus_stream(corpus, config, split, text, max_rows, token)
    field_name = info["text"]
    if is_text_list(corpus) or field_name is None or "." in field_name or "[" in field_name:
        return info, batches, None
    if paths is None or any(format_of(p) != "jsonl" for p in paths):      # not local files of JSONL
        return info, batches, None
    batches.close()                     # only its first rows were read (to choose the text field)
    # Compressed files are judged batch by batch: their size on disk says little about their text.
    compressed = any(codec_of(p) for p in paths)
    compiled = None if compressed or sum(p.stat().st_size for p in paths) >= COMPILED_MIN_BYTES else False

    def arrow_batches():
        seen = 0
        for path in paths:
            for block in jsonl_texts(path, field_name, seen):
                if max_rows is not None and seen + len(block) > max_rows:
                    block = block[:max_rows - seen]
                # The small-batch path's arrays take some 30 bytes a byte of text: it scans a block
                # (8 MiB) a slice at a time (a quarter MiB: one of Chinese text, a word a character, held
                # 100 MB at a MiB). Matches are the same, the parts being added in order.
                for first, texts in (_slices(block) if compiled is False else ((0, block),)):
                    if len(texts):
                        yield seen + first, texts
                seen += len(block)
                if max_rows is not None and seen >= max_rows:
                    return
    return info, arrow_batches(), compiled


SMALL_SLICE_BYTES = 1 << 18     # text of a block the small-batch path scans at a time


def _slices(texts, most: int = SMALL_SLICE_BYTES):
    """(first row, rows) slices of an Arrow string array of about ``most`` bytes of text each (a
    list, or a smaller array, whole)."""
    if isinstance(texts, list) or texts.nbytes <= most:
        yield 0, texts
        return
    offsets = wordtokens.batch_bytes(texts)[1]
    lo = 0
    while lo < len(texts):
        hi = max(lo + 1, int(np.searchsorted(offsets, offsets[lo] + most, side="right")) - 1)
        hi = min(hi, len(texts))
        yield lo, texts.slice(lo, hi - lo)
        lo = hi


def corpus_stream(corpus, config, split, text, max_rows, token):
    """(info, iterator of (first row number, [texts]), the local files read or None) for a source
    string or a list of texts."""
    if is_text_list(corpus):
        info = {"source": "(texts)", "config": None, "split": None, "text": None}
        return info, iter([(0, checked_texts(corpus, "the corpus"))]), None
    first, records = peek_records(corpus, config, split, token=token)
    if not first:
        raise AuditorError("empty_input", f"{corpus}: no records to check.", "Check the corpus source.")
    try:
        spec = resolve_text_spec(first, text)       # one field, or several checked as one text
    except AuditorError as exc:
        raise in_source(exc, display_name(corpus) if looks_local(corpus) else corpus) from None
    fields = text_fields(spec)
    info = {"source": display_name(corpus) if looks_local(corpus) else corpus,
            "config": config, "split": split, "text": spec}
    paths = None
    if looks_local(corpus) and not corpus.startswith("example:"):
        paths, info["split"], notices, _ = local_files(corpus, split)      # the files iter_records reads
        if notices:
            info["notices"] = notices

    def batches():
        buf, start, seen = [], 0, 0
        for row in records:
            if max_rows is not None and seen >= max_rows:
                break
            buf.append(joined_text(row, fields, seen))
            seen += 1
            if len(buf) >= BATCH:
                yield start, buf
                start, buf = seen, []
        if buf:
            yield start, buf
    return info, batches(), paths
