"""The semantic (paraphrase) pass's report: ``summary`` (the ``semantic`` block of summary.json),
``markdown`` (its REPORT.md section), ``notices`` and ``histogram``, of a SemanticResult."""
from __future__ import annotations

import numpy as np

from .common import md_cell

LISTED = 50                 # flagged items in REPORT.md's table (summary.json has them all)
BINS = tuple(round(0.05 * i, 2) for i in range(21))
CAVEAT = ("Scores are evidence for review, not verdicts: a high score means the record says what the item says "
          "more closely than the item's other neighbours do, which a rephrase does and so, rarely, can another "
          "item of the same task. Read both texts.")


def histogram(scores: np.ndarray, of: str) -> dict:
    """Counts of ``scores`` (clipped to [0, 1]) in 0.05-wide bins, with percentiles and the max."""
    counts = np.histogram(np.clip(scores, 0.0, 1.0), bins=np.array(BINS))[0] if scores.size else \
        np.zeros(len(BINS) - 1, int)
    pct = {f"p{p:g}": round(float(np.percentile(scores, p)), 4) if scores.size else None for p in (50, 90, 99)}
    return {"of": of, "bins": list(BINS), "counts": counts.tolist(), **pct,
            "max": round(float(scores.max()), 4) if scores.size else None}


def notices(result) -> list[str]:
    out = []
    if result.empty_benchmark:
        out.append(f"{len(result.empty_benchmark)} benchmark items have no text: skipped, not checked.")
    if result.empty_corpus:
        out.append(f"{result.empty_corpus} corpus records have no text: skipped.")
    for side, windowed, cut in (("benchmark items", result.windowed_benchmark, result.truncated_benchmark),
                                ("corpus records", result.windowed_corpus, result.truncated_corpus)):
        if windowed:
            out.append(f"{windowed:,} {side} are longer than the model's {result.max_tokens}-token window: each was "
                       "embedded as overlapping windows, and matched by its best window.")
        if cut:
            out.append(f"{cut:,} {side} are longer than {result.max_windows} windows: only their first {result.max_windows} "
                       "windows were embedded, their end was not checked.")
    return out


def summary(result) -> dict:
    items = result.flagged()
    n = result.benchmark_records
    return {
        "model": result.model, "threshold": result.threshold, "k": result.k,
        "items": items,
        "contaminated": {"records": len(items), "fraction": round(len(items) / n, 6) if n else 0.0},
        "benchmark": {"records": n, "empty": {"records": len(result.empty_benchmark),
                                               "rows": list(result.empty_benchmark[:100])},
                      "truncated": result.truncated_benchmark, "windowed": result.windowed_benchmark},
        "corpus": {"records": result.corpus_records, "empty": result.empty_corpus,
                   "truncated": result.truncated_corpus, "windowed": result.windowed_corpus},
        "max_tokens": result.max_tokens,
        "windows": {"tokens": result.max_tokens, "overlap": (result.max_tokens - 2) // 2, "max_per_text": result.max_windows},
        "search": {"candidates": result.candidates, "rescored": result.rescored},
        "decision": {"score": "margin", "threshold": result.threshold, "cosine_floor": result.cosine_floor,
                     "neighbours": result.background_k, "unrelated_cosine": result.unrelated_cosine},
        "distribution": result.cosine_distribution(),
        "margin_distribution": result.distribution(),
        "gap": result.gap(),
        "note": CAVEAT,
    }


def markdown(result) -> str:
    d = summary(result)
    items = d["items"]
    t, floor = result.threshold, result.cosine_floor
    lines = ["## Paraphrase contamination (semantic)", "",
             f"{len(items)} of {result.benchmark_records:,} benchmark items "
             f"({100 * d['contaminated']['fraction']:.2f}%) have a corpus record with margin score ≥ {t:g} and cosine "
             f"≥ {floor:g} (model {md_cell(result.model)}, {result.corpus_records:,} corpus records).", "",
             f"**{d['note']}**", "",
             f"The margin score is how far the best match stands out from the neighbourhood: (cosine − background) / "
             f"(1 − background), the background being the mean cosine of the item's {d['decision']['neighbours']} "
             "next-nearest records and of the record's nearest other items. A rephrase of the item stands far out; "
             "another item of the same task is one neighbour among many and scores low even at a high cosine.", ""]
    if result.candidates:
        lines += [f"Search in two stages: static token vectors shortlisted each item's {result.candidates} nearest "
                  f"records; the model re-scored the {result.rescored:,} shortlisted records, and every cosine "
                  "shown is the model's.", ""]
    lines += [f"- {n}" for n in notices(result)]
    lines += _histogram_lines(d, t)
    if items:
        lines += ["", "| benchmark row | corpus row | margin | cosine | next best | anchors shared | benchmark text "
                  "| corpus text |", "|---|---|---|---|---|---|---|---|"]
        for it in items[:LISTED]:
            second = "–" if it["second"] is None else f"{it['second']:.4f}"
            anchors = "–" if it["anchors"] is None else f"{100 * it['anchors']:.0f}%"
            lines.append(f"| {it['benchmark_row']} | {it['corpus_row']} | {it['margin']:.4f} | {it['score']:.4f} | "
                         f"{second} | {anchors} | {md_cell(result.benchmark_texts[it['benchmark_row']])} | "
                         f"{md_cell(result.corpus_texts.get(it['corpus_row']))} |")
        if len(items) > LISTED:
            lines.append(f"| … {len(items) - LISTED} more in summary.json | | | | | | | |")
    lines.append("")
    return "\n".join(lines)


def _histogram_lines(d: dict, t: float) -> list[str]:
    dist, cos = d["margin_distribution"], d["distribution"]
    if dist["max"] is None:
        return []
    lines = ["", f"Best-match margin scores: median {dist['p50']:.3f}, 90th percentile {dist['p90']:.3f}, 99th "
             f"{dist['p99']:.3f}, max {dist['max']:.3f} (cosines: median {cos['p50']:.3f}, max {cos['max']:.3f})."]
    gap = d["gap"]
    if gap:
        lines.append(f"The widest gap between neighbouring scores (of items whose cosine reaches the floor) lies "
                     f"between {gap['low']:.3f} and {gap['high']:.3f}, with {gap['above']:,} items above it; the "
                     f"threshold is {t:g}.")
    lines += ["", "| margin score | items | |", "|---|---|---|"]
    for lo, hi, c in zip(dist["bins"], dist["bins"][1:], dist["counts"]):
        mark = "← threshold" if lo <= t < hi or (hi == 1.0 and t == 1.0) else ""
        if gap and lo <= gap["low"] < hi:
            mark = (mark + "; " if mark else "") + "gap starts"
        if c or mark:
            lines.append(f"| {lo:.2f}–{hi:.2f} | {c:,} | {mark} |")
    return lines
