"""Paraphrase contamination: benchmark items that a corpus record rephrases.

One job: find each benchmark item's nearest corpus records by sentence-embedding cosine (blocked
matrix products, bounded memory), score how much the best one stands out from the neighbourhood
(``semantic_score``), and return a plain result that ``auditor.report.semantic`` renders.

Texts longer than the model's window are embedded as overlapping windows (``semantic_model``),
and the cosine of two texts is that of their best pair of windows, so a question at the end of a
long passage, or a rephrase inside a long record, is found; the report says how many texts were
windowed, and how many were cut beyond the window limit.

Large corpora are searched in two stages: static token vectors distilled from the same model
(``semantic_static``, thousands of texts/s) shortlist each item's nearest records over the whole
corpus, and the transformer (~45 question-length texts per CPU second: its matrix products run
near the CPU's floating-point peak) embeds only the union of the shortlists, so every cosine
reported is the transformer's. Its work is kept to the least: every window of a search is batched
by length (little padding), a corpus record that copies a benchmark item reuses the item's
vectors, and a long-lived process distils the static vectors once, ahead (``warm_up``). Each
item's nearest records and each record's nearest items over that union give the margin's two
neighbourhoods.

The decision: an item is flagged when its best match's margin score (``semantic_score``) is at
least the threshold and its cosine at least ``COSINE_FLOOR``. Both defaults are calibrated on
principle from bundled data, never on rephrase sets (``bench/semantic.py --parts calibrate``): the
floor is the 99th percentile of best-match cosines between unrelated bundled sets (GSM8K train
questions vs MBPP + HumanEval, both ways: 0.536 -> 0.54), the threshold the smallest at which at
most 2.5% of a set of distinct items of one task are flagged (GSM8K train in halves, both ways:
2.49% at 0.45). Same-domain pairs held out of the calibration (GSM8K test vs train, Spider, MBPP
vs HumanEval) check it (BENCHMARKS.md). Scores are evidence for review, not verdicts.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from . import parallel, semantic_align
from .contamination import benchmark_texts, corpus_stream
from .errors import AuditorError
from .io.columns import is_text_list
from .progress import Progress
from .report import semantic as report
from .report.semantic import BINS, CAVEAT, histogram  # noqa: F401  (re-exported: the app draws with them)
from .semantic_model import DEFAULT_MODEL, INSTALL, MAX_WINDOWS, Encoder, load_model  # noqa: F401
from .semantic_score import K_BACKGROUND, UNRELATED_COSINE, anchor_agreement, anchors, margins
from .semantic_static import StaticVectors
from .settings import MAX_SEMANTIC_K, SEMANTIC_COSINE_FLOOR, SEMANTIC_THRESHOLD

DEFAULT_THRESHOLD = SEMANTIC_THRESHOLD       # on the margin score: see the module docstring
COSINE_FLOOR = SEMANTIC_COSINE_FLOOR         # the cosine a flagged pair needs as well
DEFAULT_K = 5
DEFAULT_CANDIDATES = 10     # stage-1 shortlist per benchmark item, re-scored by the transformer (bench/semantic.py)
CHUNK = 2048                # corpus texts embedded, then multiplied, at a time
BENCH_BLOCK = 4096          # benchmark windows per matrix product: at most 4096 x CHUNK windows (32 MB each)
WIDTH = max(DEFAULT_K, K_BACKGROUND + 1)    # neighbours kept per item and per record
GAP_FROM = 0.2              # margin scores below this are ordinary: the gap is looked for above
COPY_COSINE = 0.99          # a verbatim copy: left out of the gap (the exact and n-gram checks find copies)
ALIGN_FROM = 0.2            # align=True: token alignment of best matches at or above this margin (and the floor)
# Progress stages (name, label, share of the run): the two-stage search, and the exhaustive one (candidates=0)
STAGES = (("embed", "embedding benchmark", 0.2), ("shortlist", "shortlisting corpus records (static vectors)", 0.2),
          ("rescore", "re-scoring shortlisted records with the transformer", 0.55), ("rank", "scoring", 0.05))
STAGES_EXHAUSTIVE = (("embed", "embedding benchmark", 0.1), ("scan", "embedding corpus records", 0.85),
                     ("rank", "scoring", 0.05))


@dataclass(frozen=True)
class SemanticResult:
    """Each benchmark item's nearest corpus records (cosine), its best match's margin score, and
    the items flagged at the threshold."""
    model: str
    threshold: float
    k: int
    max_tokens: int
    benchmark_records: int
    corpus_records: int
    neighbours: tuple = field(repr=False)        # per benchmark row: ((corpus_row, cosine), ...) best first
    margin: tuple = field(default=(), repr=False)        # per benchmark row: the best match's margin (None: no match)
    background: tuple = field(default=(), repr=False)    # per benchmark row: the margin's background cosine
    anchors: tuple = field(default=(), repr=False)       # per benchmark row: anchor agreement with the best match
    alignment: tuple = field(default=(), repr=False)     # per benchmark row: token alignment (align=True only)
    cosine_floor: float = COSINE_FLOOR
    empty_benchmark: tuple = ()                  # benchmark rows with no text: skipped
    empty_corpus: int = 0                        # corpus records with no text: skipped
    windowed_benchmark: int = 0                  # texts longer than one window, embedded as several
    windowed_corpus: int = 0
    truncated_benchmark: int = 0                 # texts beyond MAX_WINDOWS windows: their end not embedded
    truncated_corpus: int = 0
    benchmark_texts: tuple = field(default=(), repr=False)
    corpus_texts: dict = field(default_factory=dict, repr=False)   # texts of the rows in ``neighbours``
    candidates: int = 0                          # stage-1 shortlist per item (0: every record re-scored)
    rescored: int = 0                            # corpus records the transformer embedded
    background_k: int = K_BACKGROUND             # neighbours averaged on each side of the margin
    unrelated_cosine: float = UNRELATED_COSINE   # what an empty neighbour slot is taken to hold
    max_windows: int = MAX_WINDOWS               # windows embedded per text at most

    def best_scores(self) -> np.ndarray:
        """The best-match cosine of every benchmark item that has text and a corpus to match."""
        return np.array([n[0][1] for n in self.neighbours if n], dtype=np.float64)

    def margins(self) -> np.ndarray:
        """The best match's margin score of every benchmark item that has text and a corpus to match."""
        return np.array([m for m in self.margin if m is not None], dtype=np.float64)

    def item(self, row: int) -> dict:
        """Benchmark row ``row``'s best match: the summary's item keys."""
        n = self.neighbours[row]
        second = n[1][1] if len(n) > 1 else None
        return {"benchmark_row": row, "corpus_row": n[0][0], "score": round(float(n[0][1]), 6),
                "margin": round(float(self.margin[row]), 6), "background": round(float(self.background[row]), 6),
                "second": None if second is None else round(float(second), 6),
                "gap": None if second is None else round(float(n[0][1] - second), 6),
                "anchors": self.anchors[row], **({"alignment": self.alignment[row]} if self.alignment else {})}

    def flagged(self, threshold: float | None = None) -> list[dict]:
        """Items whose best match has margin >= threshold and cosine >= the floor, highest margin
        first (then by benchmark row)."""
        t = self.threshold if threshold is None else threshold
        items = [self.item(b) for b, n in enumerate(self.neighbours)
                 if n and self.margin[b] >= t and n[0][1] >= self.cosine_floor]
        return sorted(items, key=lambda it: (-it["margin"], it["benchmark_row"]))

    def gap(self) -> dict | None:
        """Where the margin scores part: the widest empty stretch between two neighbouring scores,
        as (low, high) and how many items lie above it. Only items that reach the cosine floor, score
        at least GAP_FROM (below, every item is ordinary) and are not verbatim copies (cosine >=
        COPY_COSINE: they sit at the top whatever the rest does) are placed."""
        scores = np.sort(np.array([m for b, m in enumerate(self.margin) if m is not None and m >= GAP_FROM
                                   and self.cosine_floor <= self.neighbours[b][0][1] < COPY_COSINE]))
        if scores.size < 2:
            return None
        widths = np.diff(scores)
        i = int(np.argmax(widths))
        return {"low": round(float(scores[i]), 6), "high": round(float(scores[i + 1]), 6),
                "width": round(float(widths[i]), 6), "above": int(scores.size - i - 1)}

    def distribution(self) -> dict:
        return histogram(self.margins(), "each benchmark item's best-match margin score")

    def cosine_distribution(self) -> dict:
        return histogram(self.best_scores(), "each benchmark item's best-match cosine")

    def notices(self) -> list[str]:
        return report.notices(self)

    def summary(self) -> dict:
        return report.summary(self)

    def markdown(self) -> str:
        return report.markdown(self)


def _has_text(t) -> bool:
    return isinstance(t, str) and bool(t.strip())


def check_threshold(threshold) -> float:
    """The margin threshold: a number in [0, 1]."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise AuditorError("usage", f"Semantic threshold {threshold!r:.40} is outside [0, 1].",
                           f"It is a margin score; use e.g. the default {DEFAULT_THRESHOLD}.")
    return float(threshold)


def semantic_search(benchmark_texts, corpus, *, model: str | None = None, threshold: float | None = None,
                    k: int = DEFAULT_K, candidates: int | None = None, progress=None,
                    align: bool = False) -> SemanticResult:
    """Each benchmark text's ``k`` nearest corpus texts by transformer cosine, and its best match's
    margin score.

    ``corpus`` is a list of texts or an iterable of ``(first_row, [texts])`` batches (streamed: only
    the benchmark vectors, one chunk, the running neighbour lists and their texts are held). Empty
    texts are skipped and counted; long texts are embedded window by window and counted.

    Two stages (``candidates`` > 0; default ``DEFAULT_CANDIDATES``): static token vectors shortlist
    each item's ``candidates`` nearest records over the whole corpus; the transformer embeds the
    union of all shortlists, and each item's neighbours are ranked over that union by transformer
    cosine. ``candidates=0`` embeds every corpus record with the transformer.

    ``align``: also measure each best match's token alignment (``semantic_align``; at or above
    ALIGN_FROM and the floor, else None), idf-weighted over the corpus side. Measured, not part of
    the decision (BENCHMARKS.md: it does not tell distinct tasks on one topic from rephrases
    well enough), so off by default: it costs a second model pass over the aligned pairs.
    """
    threshold = check_threshold(DEFAULT_THRESHOLD if threshold is None else threshold)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AuditorError("usage", f"Bad k {k!r}: the number of nearest records must be at least 1.", "Use e.g. 5.")
    if k > MAX_SEMANTIC_K:
        raise AuditorError("usage", f"k {k:,} nearest records per item: at most {MAX_SEMANTIC_K:,} are kept.",
                           f"Use e.g. the default {DEFAULT_K}.")
    candidates = DEFAULT_CANDIDATES if candidates is None else candidates
    if not isinstance(candidates, int) or isinstance(candidates, bool) or candidates < 0:
        raise AuditorError("usage", f"Bad candidates {candidates!r}: the shortlist per item is a count >= 0.",
                           f"Use e.g. {DEFAULT_CANDIDATES}, or 0 to embed every corpus record with the transformer.")
    for name, texts in (("benchmark_texts", benchmark_texts), ("corpus", corpus)):
        if texts is None or isinstance(texts, (str, bytes, dict)):
            # (a string was read as its characters: "abc" made 3 benchmark items)
            raise AuditorError("usage", f"{name} must be a list of texts, got {type(texts).__name__} "
                               f"{str(texts)[:40]!r}.", "e.g. semantic_search(['item one', ...], ['record', ...]).")
    width = max(k, WIDTH)
    shortlist = max(candidates, k) if candidates else 0
    run = Progress(progress, STAGES if shortlist else STAGES_EXHAUSTIVE)
    encoder = load_model(model)
    bench = ["" if t is None else str(t) for t in benchmark_texts]
    keep = np.array([i for i, t in enumerate(bench) if _has_text(t)], dtype=np.int64)
    with run.stage("embed"):
        wb = encoder.windows([bench[i] for i in keep])
        vecs = _embed(encoder, wb.encodings, run.at)
    bench_side = (vecs, wb.starts)
    known = {tuple(e.ids): v for e, v in zip(wb.encodings, vecs)} if keep.size else {}
    batches = [(0, list(corpus))] if is_text_list(corpus) else corpus
    count = {"records": 0, "empty": 0, "windowed": 0, "cut": 0}
    df = np.zeros(encoder.tokenizer.get_vocab_size(with_added_tokens=True), np.int64) if align else None   # idf
    if shortlist:
        static = _static(encoder)

        def shortlist_chunk(texts, _at):
            w = encoder.windows(texts)
            if align:
                semantic_align.add_df(df, w)
            count["windowed"] += w.windowed
            count["cut"] += w.cut
            return static.embed(w.encodings), w.starts

        with run.stage("shortlist"):
            static_b = (static.embed(wb.encodings), wb.starts) if keep.size else bench_side
            top = _scan(static_b, _nonempty(batches, count), shortlist, shortlist_chunk, run)
            union = np.unique(top.rows[top.rows >= 0])
        with run.stage("rescore", f"re-scoring {union.size:,} shortlisted records with the transformer"):
            chunks = ((union[s:s + CHUNK], [top.texts[r] for r in union[s:s + CHUNK].tolist()])
                      for s in range(0, union.size, CHUNK))
            top = _scan(bench_side, chunks, width, lambda t, at: _embed_windows(encoder, t, at, known=known), run,
                        union.size, backward=True)
        rescored = int(union.size)
    else:
        def transformer_chunk(texts, at):
            w = encoder.windows(texts)
            if align:
                semantic_align.add_df(df, w)
            count["windowed"] += w.windowed
            count["cut"] += w.cut
            return _embed_windows(encoder, texts, at, w, known)

        with run.stage("scan"):
            top = _scan(bench_side, _nonempty(batches, count), width, transformer_chunk, run, backward=True)
        rescored = count["records"] - count["empty"]
    with run.stage("rank"):
        result = _result(bench, keep, top, k)
        if align:
            weights = semantic_align.idf(df, count["records"] - count["empty"])
            result["alignment"] = _alignment(encoder, bench, result, weights)
    run.done()
    return SemanticResult(model=encoder.name, threshold=threshold, k=k, max_tokens=encoder.max_tokens,
                          benchmark_records=len(bench), corpus_records=count["records"],
                          empty_benchmark=tuple(i for i, t in enumerate(bench) if not _has_text(t)),
                          empty_corpus=count["empty"], windowed_benchmark=wb.windowed,
                          windowed_corpus=count["windowed"], truncated_benchmark=wb.cut,
                          truncated_corpus=count["cut"], benchmark_texts=tuple(bench), candidates=shortlist,
                          rescored=rescored, max_windows=wb.limit, **result)


def _result(bench: list, keep: np.ndarray, top, k: int) -> dict:
    """The per-row fields of a SemanticResult from the ranked lists: neighbours, margins, anchors."""
    n = len(bench)
    neighbours: list = [()] * n
    margin: list = [None] * n
    background: list = [None] * n
    agreement: list = [None] * n
    has = top.rows[:, 0] >= 0 if keep.size else np.zeros(0, bool)
    if has.any():
        j = np.flatnonzero(has)
        best = top.scores[j, 0].astype(np.float64)
        item_nb = np.where(top.rows[j, 1:] >= 0, top.scores[j, 1:], np.nan)
        record_nb = np.stack([_others(top.back, int(top.rows[i, 0]), int(i)) for i in j])
        m, bg = margins(best, item_nb, record_nb)
        item_anchors = [anchors(bench[i]) for i in keep.tolist()]
        found = anchor_agreement([item_anchors[i] for i in j],
                                 [anchors(top.texts[int(top.rows[i, 0])]) for i in j])
        for pos, i in enumerate(j.tolist()):
            row = int(keep[i])
            margin[row], background[row], agreement[row] = float(m[pos]), float(bg[pos]), found[pos]
    for i, row in enumerate(keep.tolist()):
        neighbours[row] = tuple((int(r), float(s)) for r, s in zip(top.rows[i, :k], top.scores[i, :k]) if r >= 0)
    wanted = {r for nb in neighbours for r, _ in nb}
    return {"neighbours": tuple(neighbours), "margin": tuple(margin), "background": tuple(background),
            "anchors": tuple(agreement), "corpus_texts": {r: t for r, t in top.texts.items() if r in wanted}}


def _alignment(encoder, bench: list, result: dict, weights: np.ndarray) -> tuple:
    """Token alignment of each best match at or above ALIGN_FROM and the cosine floor (None
    elsewhere); an identical text aligns fully without a model call."""
    out: list = [None] * len(bench)
    todo = []
    for row, nb in enumerate(result["neighbours"]):
        if nb and nb[0][1] >= COSINE_FLOOR and result["margin"][row] >= ALIGN_FROM:
            record = result["corpus_texts"][nb[0][0]]
            if record == bench[row]:
                out[row] = 1.0
            else:
                todo.append(row)
    pairs = [(bench[row], result["corpus_texts"][result["neighbours"][row][0][0]]) for row in todo]
    for row, a in zip(todo, semantic_align.align(encoder, pairs, weights)):
        out[row] = a
    return tuple(out)


def _others(back: dict, row: int, item: int) -> np.ndarray:
    """Corpus row ``row``'s cosines to its nearest items other than ``item`` (K_BACKGROUND, NaN-padded)."""
    scores, items = back[row]
    mine = scores[(items >= 0) & (items != item)][:K_BACKGROUND]
    return np.concatenate([mine, np.full(K_BACKGROUND - mine.size, np.nan)])


def _nonempty(batches, count):
    """(rows, texts) chunks of at most CHUNK non-empty corpus texts; counts records and empty ones."""
    for start, batch in batches:
        count["records"] += len(batch)
        rows = np.array([start + i for i, t in enumerate(batch) if _has_text(t)], dtype=np.int64)
        count["empty"] += len(batch) - rows.size
        for s in range(0, rows.size, CHUNK):
            part = rows[s:s + CHUNK]
            yield part, [batch[r - start] for r in part.tolist()]


@dataclass
class _Top:
    """Running neighbour lists: per item the best ``width`` rows (scores, rows); per corpus row its
    best items (``back``: row -> (scores, items)), when asked for; the texts of the rows kept."""
    scores: np.ndarray
    rows: np.ndarray
    texts: dict
    back: dict


def pooled(a: np.ndarray, a_starts: np.ndarray, b: np.ndarray, b_starts: np.ndarray) -> np.ndarray:
    """Text x text cosines from window x window products: each pair's best pair of windows."""
    s = a @ b.T
    if a_starts.size != a.shape[0]:
        s = np.maximum.reduceat(s, a_starts, axis=0)
    if b_starts.size != b.shape[0]:
        s = np.maximum.reduceat(s, b_starts, axis=1)
    return s


def _scan(bench_side, chunks, width, embed_chunk, run, total: int | None = None, backward: bool = False) -> _Top:
    """Every benchmark item's ``width`` best corpus rows over streamed ``(rows, texts)`` chunks,
    embedded window by window by ``embed_chunk(texts, progress)`` -> (vectors, window starts);
    with ``backward``, also each corpus row's ``width`` best items. Keeps the texts of the rows in
    the running lists only. Progress goes to ``run`` (a ``Progress`` in its stage): the fraction of
    ``total`` records done, when the total is known (a streamed corpus's is not)."""
    vecs, starts = bench_side
    n = starts.size
    best_s = np.full((n, width), -np.inf, np.float32)
    best_r = np.full((n, width), -1, np.int64)
    texts: dict[int, str] = {}
    back: dict[int, tuple] = {}
    done = 0
    for part, part_texts in chunks:
        if not n:
            continue
        span = f"records {int(part[0]):,}..{int(part[-1]):,}"
        at = (lambda f, d=done, p=len(part): run.at((d + f * p) / total, span)) if total else \
            (lambda f: run.at(0.0, span))
        at(0.0)
        cvecs, cstarts = embed_chunk(part_texts, at)
        done += len(part)
        scores = _block_scores(vecs, starts, cvecs, cstarts)
        best_s, best_r = _merge(best_s, best_r, scores, part, width)
        if backward:
            k = min(width, n)
            idx = np.argpartition(-scores, k - 1, axis=0)[:k] if n > k else np.broadcast_to(
                np.arange(n)[:, None], scores.shape)
            col = np.take_along_axis(scores, idx, 0)
            order = np.lexsort((idx, -col), axis=0)
            col, idx = np.take_along_axis(col, order, 0), np.take_along_axis(idx, order, 0)
            back.update((int(r), (col[:, c].copy(), idx[:, c].copy())) for c, r in enumerate(part.tolist()))
        wanted = set(best_r[best_r >= 0].tolist())
        texts.update((r, t) for r, t in zip(part.tolist(), part_texts) if r in wanted)
        if len(texts) > 2 * len(wanted) + 1024:
            texts = {r: v for r, v in texts.items() if r in wanted}
            if backward:
                back = {r: v for r, v in back.items() if r in wanted}
    wanted = set(best_r[best_r >= 0].tolist())
    return _Top(best_s, best_r, {r: v for r, v in texts.items() if r in wanted},
                {r: v for r, v in back.items() if r in wanted})


def _block_scores(vecs, starts, cvecs, cstarts) -> np.ndarray:
    """Items x chunk-rows cosines, BENCH_BLOCK benchmark windows per product (items never split)."""
    n = starts.size
    if vecs.shape[0] <= BENCH_BLOCK:
        return pooled(vecs, starts, cvecs, cstarts)
    out = np.empty((n, cstarts.size), np.float32)
    ends = np.append(starts[1:], vecs.shape[0])
    i = 0
    while i < n:
        j = int(np.searchsorted(starts, starts[i] + BENCH_BLOCK, side="left"))
        j = max(j, i + 1)
        sl = slice(int(starts[i]), int(ends[j - 1]))
        out[i:j] = pooled(vecs[sl], starts[i:j] - starts[i], cvecs, cstarts)
        i = j
    return out


_STATIC: dict = {}
_WARM_LOCK = parallel.fork_safe(threading.Lock())


def _static(encoder: Encoder):
    """The encoder's stage-1 static vectors, distilled lazily and kept for the process."""
    with _WARM_LOCK:
        if encoder.name not in _STATIC:
            _STATIC[encoder.name] = StaticVectors(encoder)
        return _STATIC[encoder.name]


def _embed(encoder: Encoder, encodings, at=None, known: dict | None = None) -> np.ndarray:
    """Transformer unit vectors of tokenised windows, in batches, reporting the fraction done.
    ``known``: vectors already computed, by token ids (the benchmark's windows): a corpus record
    that copies a benchmark item costs nothing. A window's vector does not depend on the batch it
    is computed in, so reusing one changes no result."""
    if not len(encodings):
        return np.zeros((0, 1), np.float32)
    todo = list(range(len(encodings)))
    out = None
    if known:
        keys = [tuple(e.ids) for e in encodings]
        todo = [j for j, key in enumerate(keys) if key not in known]
        done = [j for j, key in enumerate(keys) if key in known]
        if done:
            out = np.zeros((len(encodings), next(iter(known.values())).size), np.float32)
            out[done] = np.stack([known[keys[j]] for j in done])
    # All windows by length first, then in slices (a progress report each): a batch holds windows
    # of nearly one length, so padding costs ~5% of the model's work, not the ~50% that slices
    # sorted each on their own cost (GSM8K questions: 39,800 positions for 37,800 tokens, not 58,200).
    lengths = np.array([len(encodings[j].ids) for j in todo], np.int64)
    order = np.asarray(todo, np.int64)[np.argsort(lengths, kind="stable")]
    done_tokens = np.cumsum(np.sort(lengths, kind="stable"))
    step = 64                     # windows per progress report: the bar moves every second or two
    for s in range(0, order.size, step):
        part = order[s:s + step]
        vecs = encoder.encode_tokens([encodings[j] for j in part.tolist()])
        if out is None:
            out = np.zeros((len(encodings), vecs.shape[1]), np.float32)
        out[part] = vecs
        if at:
            at(float(done_tokens[min(s + step, order.size) - 1] / done_tokens[-1]))
    return out


def _embed_windows(encoder: Encoder, texts: list[str], at=None, windows=None, known=None) -> tuple:
    """(window vectors, window starts) of ``texts``, each distinct text embedded once (and a
    window in ``known`` not at all)."""
    first: dict[str, int] = {}
    index = np.array([first.setdefault(t, len(first)) for t in texts], dtype=np.int64)
    unique = list(first)
    w = encoder.windows(unique) if windows is None or len(unique) != len(texts) else windows
    vecs = _embed(encoder, w.encodings, at, known)
    starts = w.starts
    if len(unique) == len(texts):
        return vecs, starts
    counts = np.diff(np.append(starts, vecs.shape[0]))
    take = np.concatenate([np.arange(starts[i], starts[i] + counts[i]) for i in index.tolist()])
    return vecs[take], np.concatenate([[0], np.cumsum(counts[index])[:-1]]).astype(np.int64)


def _merge(best_s, best_r, scores, rows, k):
    """Running top-k: the current best and a block's scores -> the new best, ordered by score
    descending, then corpus row ascending (so ties resolve the same way every run)."""
    if scores.shape[1] > k:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        scores = np.take_along_axis(scores, part, 1)
        cand_r = rows[part]
    else:
        cand_r = np.broadcast_to(rows, scores.shape)
    all_s = np.concatenate([best_s, scores.astype(np.float32)], 1)
    all_r = np.concatenate([best_r, cand_r], 1)
    order = np.lexsort((np.where(all_r < 0, np.iinfo(np.int64).max, all_r), -all_s), axis=1)[:, :k]
    return np.take_along_axis(all_s, order, 1), np.take_along_axis(all_r, order, 1)


def semantic_contamination(corpus, benchmark: str, *, corpus_config=None, corpus_split=None, corpus_text=None,
                           benchmark_config=None, benchmark_split=None, benchmark_text=None, model=None,
                           threshold=None, k: int = DEFAULT_K, max_rows=None, token=None,
                           progress=None) -> SemanticResult:
    """The semantic pass of ``auditor contamination --semantic``: a benchmark (bundled name or any
    source) against a streamed corpus (a source or a list of texts)."""
    load_model(model)                               # a missing model fails before anything is read
    bench_texts, _ = benchmark_texts(benchmark, benchmark_config, benchmark_split, benchmark_text, None, token)
    _, batches, _ = corpus_stream(corpus, corpus_config, corpus_split, corpus_text, max_rows, token)
    return semantic_search(bench_texts, batches, model=model, threshold=threshold, k=k, progress=progress)


_WARMING: dict = {}


def warm_up(model: str | None = None) -> threading.Thread | None:
    """Load the model and distil its static vectors for the whole vocabulary in a background
    thread (once per process; ~35 CPU s for all-MiniLM-L6-v2's 30,522 tokens), so a long-lived
    process's searches (the app's) skip that step. A model that does not load raises here."""
    encoder = load_model(model)
    static = _static(encoder)
    with _WARM_LOCK:
        if encoder.name not in _WARMING:
            worker = threading.Thread(target=static.warm, name="semantic-static-warm", daemon=True)
            worker.start()
            _WARMING[encoder.name] = worker
        return _WARMING[encoder.name]


def available() -> bool:
    """True when the default model and its runtime are installed (the app can hide the view otherwise)."""
    try:
        load_model()
        return True
    except AuditorError:
        return False
