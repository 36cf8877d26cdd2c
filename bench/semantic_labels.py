#!/usr/bin/env python
"""How many of the paraphrase pass's flags on "distinct items of one kind" are false (issue 31).

bench/semantic.py counts every flag on a set split in halves (Alpaca, MBPP) as false, which assumes
the halves hold no rewording of each other. This script checks that assumption by hand labels: for
each set, a seeded sample of 50 flagged items (the default decision: margin >= 0.45 and cosine >=
the floor), each with its best match labelled by one reader (bench/semantic_labels.json) as

- ``same``: the same request reworded, or with a detail added ("five tips to save money on
  groceries" / "at least five tips on how to save money when buying groceries");
- ``borderline``: the same request narrowed or widened ("a fictional setting" / "a fictional
  setting of a science-fiction world");
- ``distinct``: a different task ("the sum of repeated elements" / "of non-repeated elements").

It prints each set's flag rate, the labelled shares, and the rate of items flagged falsely that
they imply (flag rate x distinct share; with borderline counted as false too). A sampled item
without a label, or whose best match is no longer the labelled one, is counted as stale (and
left out of the shares).

    python bench/semantic_labels.py            # needs ../shared/data (Alpaca, MBPP); about a minute
    python bench/semantic_labels.py --show     # also print each labelled pair
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
LABELS = HERE / "semantic_labels.json"
SETS = {"alpaca halves": ("alpaca/alpaca_5000.jsonl", ("instruction", "input")),
        "mbpp halves": ("mbpp/mbpp.jsonl", "text")}


def flagged_sample(texts: list[str], size: int, seed: int):
    """The halves' search, its flag rate and a seeded sample of its flagged items: {row: best match}."""
    from auditor.semantic import semantic_search
    h = len(texts) // 2
    bench, corpus = texts[:h], texts[h:]
    flags = {it["benchmark_row"]: it["corpus_row"] for it in semantic_search(bench, corpus).flagged()}
    pick = sorted(random.Random(seed).sample(sorted(flags), min(size, len(flags))))
    return bench, corpus, len(flags) / len(bench), {r: flags[r] for r in pick}


def main() -> None:
    from semantic import DEFAULT_DATA, jsonl
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    labels = json.loads(LABELS.read_text())
    print("| set | items | flagged | labelled | same | borderline | distinct | "
          "falsely flagged (with borderline) | stale |")
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
