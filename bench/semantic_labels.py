#!/usr/bin/env python
"""How many of the paraphrase pass's flags on "distinct items of one kind" are false (issue 31).

bench/semantic.py counts every flag on a set split in halves (Alpaca, MBPP) as false, which assumes
the halves hold no rewording of each other. This script checks that assumption by hand labels: for
each set, a seeded sample of 50 flagged items (the default decision, margin >= 0.45), each with its
best match labelled by one reader (bench/semantic_labels.json) as

- ``same``: the same request reworded, or with a detail added ("five tips to save money on
  groceries" / "at least five tips on how to save money when buying groceries");
- ``borderline``: the same request narrowed or widened ("a fictional setting" / "a fictional
  setting of a science-fiction world");
- ``distinct``: a different task ("the sum of repeated elements" / "of non-repeated elements").

It prints each set's flag rate, the labelled shares, and the rate of items flagged falsely that
they imply (flag rate x distinct share; with borderline counted as false too). A label whose
item is no longer flagged, or whose best match moved, is reported as stale.

    python bench/semantic_labels.py            # needs ../shared/data (Alpaca, MBPP); about a minute
    python bench/semantic_labels.py --show     # also print each labelled pair
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
LABELS = HERE / "semantic_labels.json"
SETS = {"alpaca halves": ("alpaca/alpaca_5000.jsonl", ("instruction", "input")),
        "mbpp halves": ("mbpp/mbpp.jsonl", "text")}


def flagged_sample(texts: list[str], size: int, seed: int):
    from auditor.semantic import semantic_search
    h = len(texts) // 2
    bench, corpus = texts[:h], texts[h:]
    result = semantic_search(bench, corpus)
    margin = np.nan_to_num(np.array(result.margins(), dtype=float), nan=-1.0)
    flags = np.flatnonzero(margin >= result.threshold)
    pick = sorted(random.Random(seed).sample(flags.tolist(), min(size, flags.size)))
    best = {r: int(result.neighbours[r][0][0]) for r in pick}
    return bench, corpus, flags.size / len(bench), best


def main() -> None:
    from semantic import jsonl
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(HERE.parents[1] / "shared" / "data"))
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    labels = json.loads(LABELS.read_text())
    print("| set | items | flagged | labelled | same | borderline | distinct | falsely flagged (with borderline) | stale |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (path, field) in SETS.items():
        entry = labels[name]
        bench, corpus, rate, best = flagged_sample(jsonl(Path(args.data) / path, field), entry["size"], entry["seed"])
        by_row = {x["row"]: x for x in entry["labels"]}
        stale = [r for r in best if r not in by_row or by_row[r]["corpus_row"] != best[r]]
        kinds = [by_row[r]["label"] for r in best if r not in stale]
        share = {k: kinds.count(k) / max(len(kinds), 1) for k in ("same", "borderline", "distinct")}
        false = rate * share["distinct"]
        print(f"| {name} | {len(bench):,} | {100 * rate:.1f}% | {len(kinds)} | {100 * share['same']:.0f}% | "
              f"{100 * share['borderline']:.0f}% | {100 * share['distinct']:.0f}% | {100 * false:.1f}% "
              f"({100 * (false + rate * share['borderline']):.1f}%) | {len(stale)} |")
        if args.show:
            for r in best:
                label = by_row.get(r, {}).get("label", "?")
                print(f"    [{label}] {bench[r][:150]!r}\n      ~ {corpus[best[r]][:150]!r}")


if __name__ == "__main__":
    main()
