"""Evidence for every claim: the two texts side by side and what they share.

- ``contamination_spans``: the character spans, in a benchmark item and in a corpus text, of the
  token runs of length >= n they share, under the contamination check's own tokens (GPT-3 style:
  whitespace words, each character of a script written without spaces a word of its own,
  lowercased, punctuation stripped; ``contamination.tokenize``);
  ``contamination_evidence`` gives one row per (benchmark item, corpus record) of a
  ``ContaminationResult``; ``corpus_texts`` fetches just the corpus records it names.
- ``leak_evidence``: one row per leaked evaluation record with its best training match, both
  texts and answers, the kinds of match that pair really has, and the verified Jaccard of the two
  texts' shingle sets (1.0 only when the sets are equal: an answer-only match shows the texts'
  true similarity).
- ``evidence_csv``: any of these row lists as CSV (lists and spans as JSON; a text a spreadsheet
  would run as a formula made inert, ``spreadsheet_text``); ``leak_evidence_csv`` is a leak's
  evidence.csv.

Spans are [start, end) character offsets into the texts as given (Python string indices), so a
viewer highlights ``text[start:end]``; each span starts on a kept character and ends on one or on
the marks it carries (leading and trailing punctuation of a word are outside it). The checks read texts normalised
(``normalize.fold``); evidence shows them as they are, and the rows' texts (``shown``) with their
hidden characters made visible (⟨U+200B⟩), spans moved to match.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import re
import unicodedata
from collections.abc import Mapping

import numpy as np

from .contamination import ngram_keys
from .errors import AuditorError
from .io.columns import is_text_list
from .io.outputs import CSV_LINE_END
from .io.sources import peek_records
from .normalize import HIDDEN_CHARS, fold, normalized, visible, visible_spans
from .report.leak import EVIDENCE_MATCHES, MATCH_KINDS
from .roles import joined_text, resolve_text_spec, text_fields
from .shingles import jaccard_rows, set_sizes, shingle_matrix
from .unspaced import UNSPACED
from .wordtokens import PUNCT, folded_words, tokenize

_WORD = re.compile(r"\S+")          # \s is str.isspace(), what str.split() splits on
RUNS_LISTED = 50                    # shared runs listed per pair (the spans cover every one)
MAX_MATCHES = 500_000               # window matches confirmed per pair (repetitive texts)


def token_spans(text: str | None) -> list:
    """``(token, start, end)`` for every token of ``contamination.tokenize(text)``, in order:
    the same tokens, each with the character span of the word it comes from (a character of a
    script written without spaces is a word of its own), trimmed to the characters the tokenizer
    keeps."""
    out = []
    if not text:
        return out
    if text.isascii():
        return _ascii_token_spans(text)
    # The fold keeps whitespace where it is (it removes, composes and maps characters within a
    # word), so the text's tokens are its words' tokens, each word folded alone.
    for m in _WORD.finditer(text):
        word = m.group()
        tokens = folded_words(fold(word))
        if not tokens:
            continue
        pieces = _alone_pieces(word)
        if len(pieces) > 1:
            # Each piece folded alone: taken when its tokens, end to end, are the word's (a fold
            # that joins characters across a cut, such as a kana and a voicing mark, is not cut).
            spans = [(token, lo + a, lo + b) for lo, hi in pieces for token, a, b in _spans_of_piece(word[lo:hi])]
            if [token for token, _, _ in spans] == tokens:
                out.extend((token, m.start() + a, m.start() + b) for token, a, b in spans)
                continue
        out.extend((token, m.start() + a, m.start() + b) for token, a, b in _word_spans(word, tokens))
    return out


def _word_spans(word: str, tokens: list | None = None) -> list:
    """``(token, start, end)`` of a word's tokens (``tokens``, or its own): all the span from its
    first kept character to its last, with the marks that last one carries."""
    if tokens is None:
        tokens = folded_words(fold(word))
    kept = [i for i, c in enumerate(word) if _kept(c)]
    first, last = (kept[0], kept[-1]) if kept else (0, len(word) - 1)
    while last + 1 < len(word) and unicodedata.category(word[last + 1])[0] == "M":
        last += 1                           # the marks on the last kept letter (a decomposed accent)
    return [(token, first, last + 1) for token in tokens]


def _spans_of_piece(piece: str) -> tuple:
    """``_word_spans`` of a piece: a short one's kept (most pieces are one character of a few
    thousand), a long one's made anew, so the cache holds at most its entries x CACHED_PIECE
    characters however long the runs beside such characters are."""
    return _cached_piece_spans(piece) if len(piece) <= CACHED_PIECE else tuple(_word_spans(piece))


CACHED_PIECE = 16             # characters of a piece whose spans are kept


@functools.lru_cache(maxsize=1 << 16)
def _cached_piece_spans(piece: str) -> tuple:
    return tuple(_word_spans(piece))


def _alone_pieces(word: str) -> list:
    """[start, end) pieces of a whitespace word, cut before and after each character whose fold is
    of a script written without spaces (``unspaced``), the marks (a Thai vowel, a kana's voicing
    mark) and hidden characters after it kept with it: the characters the tokens come from."""
    cuts = [0]
    i = 0
    while i < len(word):
        if _alone(word[i]):
            if cuts[-1] != i:
                cuts.append(i)
            i += 1
            while i < len(word) and _attached(word[i]):
                i += 1
            cuts.append(i)
        else:
            i += 1
    if cuts[-1] != len(word):
        cuts.append(len(word))
    return list(zip(cuts[:-1], cuts[1:]))


@functools.lru_cache(maxsize=1 << 16)
def _alone(char: str) -> bool:
    return bool(UNSPACED.match(char)) or (not char.isascii() and bool(UNSPACED.search(fold(char))))


def _attached(char: str) -> bool:
    return unicodedata.category(char)[0] == "M" or char in HIDDEN_CHARS


def _kept(char: str) -> bool:
    """Whether a character gives its word something of a token (alone: a combining mark or a
    hidden character does not), so a span starts and ends on one."""
    return bool(PUNCT.sub("", fold(char).lower()).strip())


# ASCII bytes the tokenizer keeps (letters and digits) and splits on (str.isspace: \t\n\v\f\r, space, \x1c-\x1f).
_KEPT = np.array([chr(c).isalnum() for c in range(128)])
_SPACE = np.array([chr(c).isspace() for c in range(128)])


def _ascii_token_spans(text: str) -> list:
    """token_spans of an ASCII text, the offsets found with array operations: each word's first and
    last kept character."""
    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    space = _SPACE[codes]
    word = np.cumsum(~space & np.concatenate(([True], space[:-1]))) - 1    # word number of each character
    kept = np.flatnonzero(_KEPT[codes])
    w = word[kept]
    first = np.ones(w.size, bool)
    first[1:] = w[1:] != w[:-1]
    last = np.ones(w.size, bool)
    last[:-1] = w[1:] != w[:-1]
    tokens = tokenize(text)
    return list(zip(tokens, kept[first].tolist(), (kept[last] + 1).tolist()))


def contamination_spans(benchmark_text: str | None, corpus_text: str | None, n: int) -> dict:
    """What ``benchmark_text`` and ``corpus_text`` share as runs of >= ``n`` tokens.

    Returns {n, matched_ngrams (distinct benchmark n-grams found in the corpus text),
    benchmark_ngrams, longest_tokens, longest (the longest shared run, as the benchmark text
    writes it), longest_span {benchmark, corpus}, benchmark_spans, corpus_spans (merged
    [start, end) character spans), runs [{benchmark, corpus, tokens}] (the longest ones), truncated}."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise AuditorError("usage", f"n-gram size {n!r:.20} is not a whole number >= 1.", "Use e.g. 13.")
    n = int(n)
    bt, ct = token_spans(benchmark_text), token_spans(corpus_text)
    out = {"n": n, "matched_ngrams": 0, "benchmark_ngrams": max(len(bt) - n + 1, 0), "longest_tokens": 0,
           "longest": "", "longest_span": None, "benchmark_spans": [], "corpus_spans": [], "runs": [],
           "truncated": False}
    if len(bt) < n or len(ct) < n:
        return out
    vocab: dict = {}
    b_ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t, _, _ in bt), np.int64, count=len(bt))
    c_ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t, _, _ in ct), np.int64, count=len(ct))
    b_keys = ngram_keys(b_ids, np.arange(len(bt) - n + 1), n)
    c_keys = ngram_keys(c_ids, np.arange(len(ct) - n + 1), n)
    order = np.argsort(c_keys, kind="stable")
    sorted_c = c_keys[order]
    lo, hi = np.searchsorted(sorted_c, b_keys, "left"), np.searchsorted(sorted_c, b_keys, "right")
    counts = hi - lo
    if counts.sum() > MAX_MATCHES:          # a text repeating one n-gram thousands of times
        counts = np.minimum(counts, max(1, MAX_MATCHES // max(1, int((counts > 0).sum()))))
        out["truncated"] = True
    bi = np.repeat(np.arange(b_keys.size), counts)
    within = np.arange(bi.size) - np.repeat(np.cumsum(counts) - counts, counts)
    cj = order[np.repeat(lo, counts) + within]
    ok = np.ones(bi.size, bool)
    for k in range(n):                      # confirm token by token: a hash collision never counts
        ok &= b_ids[bi + k] == c_ids[cj + k]
    bi, cj = bi[ok], cj[ok]
    if not bi.size:
        return out
    # Maximal shared runs: matched windows on one diagonal (bi - cj) at consecutive positions.
    diag = bi - cj
    o = np.lexsort((bi, diag))
    bi, diag = bi[o], diag[o]
    starts = np.ones(bi.size, bool)
    starts[1:] = (diag[1:] != diag[:-1]) | (bi[1:] != bi[:-1] + 1)
    first = np.flatnonzero(starts)
    last = np.append(first[1:], bi.size) - 1
    run_b0, run_b1 = bi[first], bi[last] + n          # token range [b0, b1) in the benchmark
    run_c0 = run_b0 - diag[first]
    length = run_b1 - run_b0
    by_length = np.lexsort((run_c0, run_b0, -length))

    def b_char(s: int, e: int) -> list:               # token range -> character span
        return [bt[s][1], bt[e - 1][2]]

    def c_char(s: int, e: int) -> list:
        return [ct[s][1], ct[e - 1][2]]

    best = int(by_length[0])
    b0, b1, c0 = int(run_b0[best]), int(run_b1[best]), int(run_c0[best])
    span_b, span_c = b_char(b0, b1), c_char(c0, c0 + b1 - b0)
    out.update(matched_ngrams=int(np.unique(bi).size), longest_tokens=b1 - b0,
               longest=benchmark_text[span_b[0]:span_b[1]], longest_span={"benchmark": span_b, "corpus": span_c},
               benchmark_spans=[b_char(s, e) for s, e in _merge(run_b0, run_b1)],
               corpus_spans=[c_char(s, e) for s, e in _merge(run_c0, run_c0 + length)],
               runs=[{"benchmark": b_char(int(run_b0[r]), int(run_b1[r])),
                      "corpus": c_char(int(run_c0[r]), int(run_c0[r] + length[r])), "tokens": int(length[r])}
                     for r in by_length[:RUNS_LISTED].tolist()])
    return out


def _merge(starts: np.ndarray, ends: np.ndarray) -> list:
    """Token intervals [s, e) merged where they overlap or touch, in order."""
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > reach[:-1]
    group_start = np.flatnonzero(new)
    group_end = np.append(group_start[1:], s.size) - 1
    return list(zip(s[group_start].tolist(), reach[group_end].tolist()))


def contamination_evidence(result, benchmark_texts, corpus_texts_by_row, per_item: int | None = None) -> list:
    """One row per (contaminated benchmark item, corpus record) of a ``ContaminationResult``:
    benchmark_row, corpus_row, benchmark_text, corpus_text, matched_ngrams, longest_tokens,
    longest_span (its text), spans {benchmark, corpus}. ``corpus_texts_by_row``: a mapping or
    sequence of corpus texts by row (``corpus_texts`` fetches them); rows it lacks are skipped.
    ``per_item`` caps the corpus records shown per item."""
    rows = []
    for item in result.items:
        b = item["benchmark_row"]
        b_text = benchmark_texts[b]
        shown = 0
        for c in item["corpus_rows"]:
            c_text = _get(corpus_texts_by_row, c)
            if c_text is _MISSING:
                continue
            if per_item is not None and shown >= per_item:
                break
            found = contamination_spans(b_text, c_text, result.n)
            # shown with hidden characters visible, the spans moved to index the shown texts
            b_shown, b_spans = visible_spans(b_text or "", found["benchmark_spans"])
            c_shown, c_spans = visible_spans(c_text or "", found["corpus_spans"])
            rows.append({"benchmark_row": b, "corpus_row": c, "benchmark_text": b_shown,
                         "corpus_text": c_shown, "matched_ngrams": found["matched_ngrams"],
                         "longest_tokens": found["longest_tokens"], "longest_span": visible(found["longest"]),
                         "spans": {"benchmark": b_spans, "corpus": c_spans}})
            shown += 1
    return rows


_MISSING = object()


def _get(texts, row):
    if isinstance(texts, Mapping):
        return texts.get(row, _MISSING)
    return texts[row] if 0 <= row < len(texts) else _MISSING


def corpus_texts(corpus, rows, *, config=None, split=None, text=None, token=None) -> dict:
    """{row: text} of the corpus records ``rows`` (0-based, as a ContaminationResult names them),
    read by streaming the corpus once and keeping only those: memory follows ``rows``. ``corpus``
    is a source (as for ``contamination``) or the list of texts itself; ``text`` the text field
    (``result.corpus["text"]``, one field or several joined by commas)."""
    wanted = set(int(r) for r in rows)
    if is_text_list(corpus):
        return {r: corpus[r] for r in sorted(wanted) if 0 <= r < len(corpus)}
    out: dict = {}
    if not wanted:
        return out
    head, records = peek_records(corpus, config, split, token=token)
    if not head:
        return out
    fields = text_fields(resolve_text_spec(head, text))
    last = max(wanted)
    for i, row in enumerate(records):
        if i in wanted:
            out[i] = joined_text(row, fields, i)
        if i >= last:
            break
    return out


def excerpt(text: str, spans: list, context: int = 300) -> tuple:
    """A window of ``text`` around its spans (``context`` characters either side of the first
    and last span), and the spans shifted into it: for showing a long corpus document."""
    if not spans or len(text) <= 2 * context + (spans[-1][1] - spans[0][0]):
        return text, [list(s) for s in spans]
    start = max(0, spans[0][0] - context)
    end = min(len(text), spans[-1][1] + context)
    return text[start:end], [[s - start, e - start] for s, e in spans]


# --------------------------------------------------------------------------- leakage

_PICK_ORDER = ("identical_both", "identical_text", "reworded_both", "near_duplicate", "contained", "identical_answer")


LEAK_COLUMNS = ("b_row", "a_row", "a_rows", "kind", "b_kinds", "text_jaccard", "text_containment", "b_text", "a_text",
                "b_answer", "a_answer")


def leak_evidence(result, limit: int | None = None) -> list:
    """One row per leaked B (evaluation) record of a ``LeakResult``, in row order: b_row, a_row
    (its best match: a text match before an answer-only one), a_rows (the A rows the matches list,
    up to EVIDENCE_MATCHES, a_row first, space-separated), kind (the kinds of match this pair has,
    "+"-joined), b_kinds (every kind the B record has), text_jaccard (verified Jaccard of the two
    texts' shingle sets; None when both texts are empty), text_containment (the share of B's
    shingles in A's text, |A & B| / |B|; None when B's text is empty), b_text, a_text, b_answer, a_answer, and
    b_id / a_id when the side has an id field. The one format of evidence.csv, the CLI's and the
    app's, for both engines."""
    b_rows = result.leaked_b_rows[:limit] if limit is not None else result.leaked_b_rows
    return list(iter_leak_evidence(result, b_rows))


EVIDENCE_BATCH_CHARS = 1 << 22     # characters of texts a batch of evidence rows holds


def iter_leak_evidence(result, b_rows: list):
    """``leak_evidence``'s rows for ``b_rows``, made a batch of about EVIDENCE_BATCH_CHARS of texts
    at a time: evidence.csv is written as they come, so the leaked texts are never all strings at
    once (every B record of a long file leaked held them all, twice with their A matches)."""
    fa, fb = result.a.fields, result.b.fields
    batch: list = []
    held = 0
    for b in b_rows:
        m = result.matches[b]
        a = m[next(k for k in _PICK_ORDER if m.get(k))][0]
        # Each text read once (a TextColumn makes a new string per read); the rows share them.
        pair = (b, a, fb.text[b], fa.text[a])
        batch.append(pair)
        held += len(pair[2] or "") + len(pair[3] or "")
        if held >= EVIDENCE_BATCH_CHARS:
            yield from _evidence_rows(result, batch)
            batch, held = [], 0
    if batch:
        yield from _evidence_rows(result, batch)


def _evidence_rows(result, batch: list) -> list:
    """The evidence rows of (b row, a row, b text, a text) pairs."""
    fa, fb = result.a.fields, result.b.fields
    b_rows, a_rows = [p[0] for p in batch], [p[1] for p in batch]
    texts = [p[2] for p in batch] + [p[3] for p in batch]
    del batch
    b_idx, a_idx = np.asarray(b_rows, np.int64), np.asarray(a_rows, np.int64)
    matrix = shingle_matrix(texts, result.shingle)
    k = len(b_rows)
    sizes = set_sizes(matrix)
    jac = jaccard_rows(matrix, np.arange(k), np.arange(k, 2 * k), sizes)
    inter = np.asarray(matrix[:k].multiply(matrix[k:]).sum(axis=1)).reshape(-1)
    inside = [round(float(x) / int(n), 6) if n else None for x, n in zip(inter.tolist(), sizes[:k].tolist())]
    same_text = [x is not None and x == y for x, y in zip(normalized(texts[:k], "default"),
                                                          normalized(texts[k:], "default"))]
    same_answer = [False] * k
    if fa.answer is not None and fb.answer is not None and result.answer_normalizer:
        bx = normalized([fb.answer[i] for i in b_rows], result.answer_normalizer)
        ax = normalized([fa.answer[i] for i in a_rows], result.answer_normalizer)
        same_answer = [x is not None and x == y for x, y in zip(bx, ax)]
    rows = []
    for i, (b, a) in enumerate(zip(b_idx.tolist(), a_idx.tolist())):
        m = result.matches[b]
        near = a in m.get("near_duplicate", ()) or (jac[i] is not None and jac[i] >= result.threshold - 1e-9)
        facts = {"identical_both": same_text[i] and same_answer[i], "identical_text": same_text[i],
                 "identical_answer": same_answer[i], "near_duplicate": near,
                 "contained": a in m.get("contained", ()),
                 "reworded_both": a in m.get("reworded_both", ())}
        listed = sorted({r for k in MATCH_KINDS for r in m.get(k, ())} - {a})
        row = {"b_row": b, "a_row": a, "a_rows": " ".join(map(str, [a, *listed][:EVIDENCE_MATCHES])),
               "kind": "+".join(x for x in MATCH_KINDS if facts[x]),
               "b_kinds": "+".join(x for x in MATCH_KINDS if m.get(x)), "text_jaccard": jac[i],
               "text_containment": inside[i],
               "b_text": visible(texts[i] or ""), "a_text": visible(texts[k + i] or ""),
               "b_answer": visible(fb.answer[b] or "") if fb.answer is not None else "",
               "a_answer": visible(fa.answer[a] or "") if fa.answer is not None else ""}
        if result.b.roles.id is not None:
            row["b_id"] = fb.ids[b]
        if result.a.roles.id is not None:
            row["a_id"] = fa.ids[a]
        rows.append(row)
    return rows


def leak_evidence_csv(result, rows: list | None = None, *, encoded: bool = False) -> str | bytes:
    """evidence.csv of a ``LeakResult``: ``leak_evidence``'s rows (``rows`` when already made),
    under their header even when nothing leaked; as UTF-8 bytes with ``encoded`` (``evidence_csv``)."""
    ids = [f"{side}_id" for side in ("b", "a") if getattr(result, side).roles.id is not None]
    return evidence_csv(iter_leak_evidence(result, result.leaked_b_rows) if rows is None else rows,
                        columns=[*LEAK_COLUMNS, *ids], encoded=encoded)


# What a spreadsheet reads as the start of a formula. A dataset's text "=HYPERLINK(...)" in an
# evidence file became a live link when the file was opened in Excel or LibreOffice.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-](?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_text(value):
    """``value``, or a text that a spreadsheet would run as a formula with an apostrophe before it
    (OWASP's advice on CSV injection: the cell then shows as text). Only in CSV files made for
    reading (evidence, pairs, manifests); summary.json and the deduplicated data keep texts as
    they are."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START) or _NUMBER.fullmatch(value):
        return value       # (a signed number, "-5" or "+1.5e3", is a value, not a formula: kept a number)
    return "'" + value


def evidence_csv(rows: list, columns: list | None = None, *, encoded: bool = False) -> str | bytes:
    """Rows as CSV (evidence, the dedup manifest): ``columns``, else the rows' keys in first-seen
    order; lists and dicts (spans) as JSON; texts through ``spreadsheet_text``; CRLF rows
    (``outputs.CSV_LINE_END``). ``encoded``: the UTF-8 bytes, which is what the files are: the
    CSV is encoded as it is written, so it is never one Python string, which costs 4 bytes a
    character when a single text holds a character past U+FFFF (an emoji)."""
    if not columns:
        rows = list(rows)           # read twice: for its keys, then written
        columns = list(dict.fromkeys(k for r in rows for k in r))
    raw = io.BytesIO()
    # A lone surrogate in a text is written as its escape (as summary.json writes it).
    buf = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", newline="", write_through=True)
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator=CSV_LINE_END)
    writer.writer.writerow([_no_nul(c) for c in columns])     # the header
    for r in rows:
        writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict))
                         else _no_nul(spreadsheet_text(v)) for k, v in r.items()})
    buf.detach()
    return raw.getvalue() if encoded else raw.getvalue().decode("utf-8")


def _no_nul(value):
    """A NUL as its escape: raw, it made the CSV a binary file that CSV readers, this tool's
    included, refuse."""
    return value.replace("\x00", "\\u0000") if isinstance(value, str) and "\x00" in value else value
