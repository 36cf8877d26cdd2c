"""The semantic pass's decision score: is this record a rephrase of THIS item, or only another item
of the same task?

One job: from the cosines the search found, compute each item's margin score and its parts.

A cosine alone cannot tell the two apart: distinct GSM8K problems score 0.85 with each other,
about what a rephrase scores. What separates them is how the best match stands out from the
neighbourhood. The score is a margin in the sense of bitext mining (Artetxe and Schwenk, 2019,
"Margin-based parallel corpus mining with multilingual sentence embeddings"): the pair's cosine
against the average cosine of each side's k nearest neighbours,

    background = (mean of the item's K nearest other records + mean of the record's K nearest
                  other items) / 2
    margin     = (cosine - background) / (1 - background)

i.e. the share of the distance between the neighbourhood and an identical text that this pair
closes. A rephrase closes most of it (median 0.75 on the GSM8K rephrase set, 0.85 on MMLU sociology); a distinct item of
the same task is one neighbour among many (GSM8K test against train: median 0.18), and an
unrelated best match barely stands out. Neighbour lists shorter than K (a small corpus or
benchmark) are filled with ``UNRELATED_COSINE``: no neighbours is no evidence of a crowded
domain. The record's neighbours are the other benchmark items, so a generic text close to many
items (a "hub") scores low for all of them.

Content anchors (numbers, names, identifiers) are measured and reported beside the margin (how
much of the item's anchor weight the record repeats, rare anchors weighing more), not folded
into the decision: rephrases of code rename identifiers and change constants on purpose.
"""
from __future__ import annotations

import math
import re

import numpy as np

K_BACKGROUND = 10             # neighbours averaged on each side
# What an empty neighbour slot is taken to hold: the median best-match cosine between unrelated
# bundled sets (bench/semantic.py --parts calibrate: 0.332).
UNRELATED_COSINE = 0.33

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_NAME = re.compile(r"(?<=[\w,;:)\"'] )[A-Z][A-Za-z]+|\b[A-Z]{2,}\b")
_IDENTIFIER = re.compile(r"\b[A-Za-z]\w*_\w+\b|\b[a-z]+[A-Z]\w*\b")


def margins(best: np.ndarray, item_neighbours: np.ndarray, record_neighbours: np.ndarray) -> tuple:
    """(margin, background) per item. ``item_neighbours``: each item's cosines to its next-best
    records (n x up to K, NaN where fewer); ``record_neighbours``: its best record's cosines to
    the other items (n x up to K, NaN where fewer)."""
    bg = (_background(item_neighbours) + _background(record_neighbours)) / 2
    return (best - bg) / np.maximum(1.0 - bg, 1e-6), bg


def _background(neighbours: np.ndarray) -> np.ndarray:
    """Mean of K slots, the missing ones (NaN, or beyond the array) taken as UNRELATED_COSINE."""
    out = np.full(neighbours.shape[0], UNRELATED_COSINE * K_BACKGROUND, np.float64)
    if neighbours.size:
        part = np.asarray(neighbours[:, :K_BACKGROUND], np.float64)
        out += np.where(np.isnan(part), 0.0, part - UNRELATED_COSINE).sum(1)
    return out / K_BACKGROUND


def anchors(text: str) -> frozenset:
    """A text's content anchors: numbers (thousands separators dropped), capitalised names that do
    not start a sentence, acronyms, and code identifiers (snake_case, camelCase)."""
    nums = set()
    for n in _NUMBER.findall(text):
        n = n.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+", n) else n.replace(",", ".")
        nums.add(n.rstrip("0").rstrip(".") if "." in n else n)
    return frozenset(nums | set(_NAME.findall(text)) | set(_IDENTIFIER.findall(text)))


def anchor_agreement(items: list[frozenset], matches: list[frozenset]) -> list:
    """Per pair: the share of the item's anchor weight that its match repeats (None for an item
    without anchors). An anchor's weight is its inverse document frequency over the items, so a
    number or name every item has counts little."""
    df: dict = {}
    for a in items:
        for z in a:
            df[z] = df.get(z, 0) + 1
    n = len(items)
    out = []
    for a, m in zip(items, matches):
        if not a:
            out.append(None)
            continue
        w = {z: math.log((n + 1) / (df[z] + 0.5)) + 1.0 for z in a}
        out.append(round(sum(v for z, v in w.items() if z in m) / sum(w.values()), 6))
    return out
