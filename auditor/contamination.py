"""Benchmark contamination: which benchmark items share an n-gram span with a corpus.

GPT-3 style (Brown et al. 2020, appendix C): tokens are whitespace-separated words,
lowercased, with punctuation stripped; N is the 5th percentile of benchmark item
lengths in tokens, clamped to 8..13 (``ngram="auto"``), or a fixed N (13 as in
lm-eval-harness). The benchmark's n-grams are indexed once (sorted 64-bit keys); the
corpus streams through in batches, so its size does not bound memory. Every match
found by key is confirmed token by token, so a hash collision cannot report one.

Items shorter than N cannot be checked and are reported as "too short to check".
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np

from .errors import AuditorError
from .report import PARAPHRASE_CAVEAT, SCHEMA_VERSION, md_cell
from .roles import as_text, canonical_record, fingerprint, resolve_roles, _lookup
from .sources import iter_records, load

# Bundled references that work offline by name: (source, config, split, text field).
BENCHMARKS = {
    "gsm8k": ("example:gsm8k", "main", "test", "question"),
    "humaneval": ("example:humaneval", "default", "test", "prompt"),
    "mbpp": ("example:mbpp", "full", "test", "text"),
    "mbpp-sanitized": ("example:mbpp", "sanitized", "test", "prompt"),
}
TOKENIZER = "whitespace words, lowercased, punctuation stripped"
BATCH = 20_000
# Drop every character that is neither a word character nor whitespace, and underscores. re's
# \s is str.isspace(), the set str.split() splits on, so one pass over the whole text gives each
# whitespace-split word with its punctuation removed (3.5x faster than a pass per word).
_PUNCT = re.compile(r"[^\w\s]+|_+")
_MUL = np.uint64(0x9E3779B97F4A7C15)


def tokenize(text: str | None) -> list[str]:
    """Words of ``text``: lowercased, split on whitespace, punctuation and underscores removed,
    empty words dropped."""
    if not text:
        return []
    if text.isascii():      # the same deletion as a table lookup: 5x faster than the regex
        return text.lower().translate(_ASCII_PUNCT).split()
    return _PUNCT.sub("", text.lower()).split()


# ASCII characters the regex deletes: neither alphanumeric nor whitespace, or "_".
_ASCII_PUNCT = {c: None for c in range(128) if not (chr(c).isalnum() or chr(c).isspace()) or chr(c) == "_"}


MAX_NGRAM = 64     # GPT-3 used 13; beyond 64 words an n-gram test says nothing an exact match does not


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


def _keys(ids: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
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

    def summary(self) -> dict:
        n_b = self.benchmark["records"]
        return {
            "schema_version": SCHEMA_VERSION, "kind": "contamination",
            "corpus": {**self.corpus, "records": self.corpus_records, "tokens": self.corpus_tokens},
            "benchmark": self.benchmark,
            "settings": {"ngram": self.n, "tokenizer": TOKENIZER},
            "contaminated": {"records": len(self.items), "fraction": round(len(self.items) / n_b, 6) if n_b else 0.0},
            "too_short": {"records": len(self.too_short), "rows": self.too_short[:100]},
            "items": self.items,
            "caveat": PARAPHRASE_CAVEAT,
        }

    def markdown(self) -> str:
        d = self.summary()
        b, c = d["benchmark"], d["corpus"]
        lines = [f"# Contamination: {md_cell(b['name'])} in {md_cell(c['source'])}", "",
                 f"{d['contaminated']['records']} of {b['records']:,} benchmark items "
                 f"({100 * d['contaminated']['fraction']:.2f}%) share at least one {self.n}-gram with the corpus "
                 f"({c['records']:,} records, {c['tokens']:,} tokens). Tokens: {TOKENIZER}.", ""]
        if d["too_short"]["records"]:
            lines += [f"{d['too_short']['records']} items are shorter than {self.n} tokens: **too short to check**, "
                      "not clean.", ""]
        if self.items:
            lines += ["| benchmark row | corpus rows | matched n-grams | longest span (tokens) |", "|---|---|---|---|"]
            for it in self.items[:50]:
                rows = ", ".join(map(str, it["corpus_rows"][:5])) + (" …" if len(it["corpus_rows"]) > 5 else "")
                lines.append(f"| {it['benchmark_row']} | {rows} | {it['matched_ngrams']} of {it['item_ngrams']} | "
                             f"{it['longest_span']} |")
        lines += ["", "---", PARAPHRASE_CAVEAT + " A clean n-gram result is not proof of no contamination.", ""]
        return "\n".join(lines)


def _benchmark_texts(benchmark: str, config, split, text, max_rows, token):
    if benchmark in BENCHMARKS:
        source, cfg, spl, field_name = BENCHMARKS[benchmark]
        config, split, text = config or cfg, split or spl, text or field_name
        name = benchmark
    else:
        source, name = benchmark, benchmark
    table = load(source, config, split, max_rows=max_rows, token=token)
    roles = resolve_roles(table.rows, text=text)
    texts = [as_text(_lookup(r, roles.text), roles.text, i) for i, r in enumerate(table.rows)]
    info = {"name": name, "source": table.source, "config": table.config, "split": table.split,
            "records": len(table.rows), "text": roles.text,
            "fingerprint": fingerprint([canonical_record(r) for r in table.rows], roles)}
    return texts, info


def contamination(corpus, benchmark: str, *, corpus_config=None, corpus_split=None, corpus_text=None,
                  benchmark_config=None, benchmark_split=None, benchmark_text=None, ngram="auto",
                  max_rows=None, token=None, progress=None) -> ContaminationResult:
    """Benchmark items sharing an n-gram with ``corpus`` (a source string or a list of texts)."""
    from .sources import _source_text, check_max_rows
    if ngram != "auto":
        choose_n([], ngram)                 # a bad n-gram size fails before anything is read
    check_max_rows(max_rows)
    if not isinstance(corpus, (list, tuple)):
        corpus = _source_text(corpus)       # a pathlib.Path works like its string
    benchmark = _source_text(benchmark)
    report = progress or (lambda f, s: None)
    report(0.0, "indexing benchmark")
    bench_texts, bench_info = _benchmark_texts(benchmark, benchmark_config, benchmark_split, benchmark_text,
                                               None, token)
    bench_tokens = [tokenize(t) for t in bench_texts]
    lengths = [len(t) for t in bench_tokens if t]
    n = choose_n(lengths, ngram)
    vocab: dict[str, int] = {}
    bench_ids = [np.fromiter((vocab.setdefault(w, len(vocab)) for w in toks), dtype=np.int64, count=len(toks))
                 for toks in bench_tokens]
    b_lengths = np.fromiter((len(t) for t in bench_ids), dtype=np.int64, count=len(bench_ids))
    b_all = np.concatenate(bench_ids) if bench_ids else np.zeros(0, np.int64)
    b_item, b_start = _windows(b_lengths, n)
    b_keys = _keys(b_all, b_start, n)
    order = np.argsort(b_keys, kind="stable")
    sorted_keys = b_keys[order]
    too_short = [i for i, length in enumerate(b_lengths.tolist()) if length < n]

    # item -> set of matched window positions; item -> set of corpus rows
    matched_windows: dict[int, set] = {}
    corpus_rows: dict[int, set] = {}
    corpus_info, records, tokens = _corpus_stream(corpus, corpus_config, corpus_split, corpus_text, max_rows, token)
    n_records = n_tokens = 0
    for batch_start, batch in records:
        report(0.1, "scanning corpus")
        # Word ids per text (-1: a word no benchmark item uses); each text's strings are freed at once.
        toks = [list(map(vocab.get, tokenize(t), itertools.repeat(-1))) for t in batch]
        c_lengths = np.fromiter(map(len, toks), dtype=np.int64, count=len(toks))
        n_records += len(batch)
        n_tokens += int(c_lengths.sum())
        if not sorted_keys.size:
            continue
        c_all = np.fromiter(itertools.chain.from_iterable(toks), dtype=np.int64, count=int(c_lengths.sum()))
        c_rec, c_start = _windows(c_lengths, n)
        if not c_rec.size:
            continue
        # A window with a word the benchmark never uses cannot match: drop it before hashing.
        unknown = np.concatenate(([0], np.cumsum(c_all < 0)))
        ok = unknown[c_start + n] - unknown[c_start] == 0
        c_rec, c_start = c_rec[ok], c_start[ok]
        c_keys = _keys(c_all, c_start, n)
        pos = np.searchsorted(sorted_keys, c_keys)
        hit = (pos < sorted_keys.size) & (sorted_keys[np.minimum(pos, sorted_keys.size - 1)] == c_keys)
        for rec, start, p in zip(c_rec[hit].tolist(), c_start[hit].tolist(), pos[hit].tolist()):
            window = c_all[start:start + n]
            key = sorted_keys[p]
            while p < sorted_keys.size and sorted_keys[p] == key:   # every benchmark window with this key
                w = order[p]
                item, b0 = int(b_item[w]), int(b_start[w])
                if np.array_equal(b_all[b0:b0 + n], window):        # confirm: no hash collision
                    matched_windows.setdefault(item, set()).add(b0)
                    corpus_rows.setdefault(item, set()).add(batch_start + rec)
                p += 1
    item_offsets = np.concatenate(([0], np.cumsum(b_lengths)[:-1]))
    items = []
    for item in sorted(matched_windows):
        starts = sorted(s - int(item_offsets[item]) for s in matched_windows[item])
        longest = run = 1
        for prev, cur in zip(starts, starts[1:]):
            run = run + 1 if cur == prev + 1 else 1
            longest = max(longest, run)
        items.append({"benchmark_row": item, "corpus_rows": sorted(corpus_rows[item])[:100],
                      "corpus_matches": len(corpus_rows[item]), "matched_ngrams": len(starts),
                      "item_ngrams": int(max(b_lengths[item] - n + 1, 0)), "longest_span": longest + n - 1})
    report(1.0, "done")
    return ContaminationResult(corpus=corpus_info, benchmark=bench_info, n=n, items=items, too_short=too_short,
                               corpus_records=n_records, corpus_tokens=n_tokens)


def _corpus_stream(corpus, config, split, text, max_rows, token):
    """(info, iterator of (first row number, [texts])) for a source string or a list of texts."""
    if isinstance(corpus, (list, tuple)):
        info = {"source": "(texts)", "config": None, "split": None, "text": None}
        return info, iter([(0, list(corpus))]), None
    stream = iter_records(corpus, config, split, token=token)
    first = []
    for row in stream:
        first.append(row)
        if len(first) >= 1000:
            break
    if not first:
        raise AuditorError("empty_input", f"{corpus}: no records to check.", "Check the corpus source.")
    roles = resolve_roles(first, text=text)
    from .sources import _display, _looks_local
    info = {"source": _display(corpus) if _looks_local(corpus) else corpus,
            "config": config, "split": split, "text": roles.text}

    def batches():
        buf, start, seen = [], 0, 0
        import itertools
        for row in itertools.chain(first, stream):
            if max_rows is not None and seen >= max_rows:
                break
            buf.append(as_text(_lookup(row, roles.text), roles.text, seen))
            seen += 1
            if len(buf) >= BATCH:
                yield start, buf
                start, buf = seen, []
        if buf:
            yield start, buf
    return info, batches(), None
