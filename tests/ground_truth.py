"""An independent, pure-Python reference for near-duplicate search.

Deliberately written with nothing but sets, dicts and loops (no numpy, no scipy, and no
import of the auditor's shingle or near-duplicate code), so that the engine can be checked
against a second implementation of the same definitions. Texts are read normalised, through
``auditor.normalize.fold`` (its own tests are in tests/normalize; for ASCII text it is lowercase):

- word shingles: the normalised text split on whitespace, each Han ideograph, kana, Thai, Lao,
  Khmer or Myanmar character (by its Unicode name) a word of its own, windows of ``size`` words; a text of
  fewer than ``size`` words is ONE shingle made of all its words; an empty (or blank)
  text has no shingles;
- char shingles: the normalised text, whitespace runs collapsed to one space and stripped, windows
  of ``size`` characters; a shorter (non-empty) text is one shingle, the whole text;
- Jaccard = |A & B| / |A | B|, compared with thresholds exactly (fractions, not floats);
- clusters at a threshold: connected components (union-find) of >= 2 records over the
  pairs whose Jaccard reaches the threshold.

The search is exact all-pairs through an inverted index shingle -> records, after
collapsing records with identical shingle sets, so a few thousand records take seconds.
"""
from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from itertools import combinations

import unicodedata

from auditor.normalize import fold


# --------------------------------------------------------------------------- shingles

UNSPACED_NAMES = ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA", "KATAKANA",
                  "IDEOGRAPHIC ITERATION MARK", "IDEOGRAPHIC CLOSING MARK", "IDEOGRAPHIC NUMBER ZERO",
                  "THAI ", "LAO ", "KHMER ", "MYANMAR ")


def reference_words(folded: str) -> list:
    """Whitespace-separated words, each character of a script written without spaces (a Han
    ideograph, a kana, a Thai letter ..., by its Unicode name) a word of its own."""
    out, word = [], ""
    for c in folded:
        if c.isspace() or unicodedata.name(c, "").startswith(UNSPACED_NAMES):
            out += [word] if word else []
            word = "" if c.isspace() else c
            if word:
                out.append(word)
                word = ""
        else:
            word += c
    return out + ([word] if word else [])


def word_shingles(text, size: int = 3) -> frozenset:
    if not text:
        return frozenset()
    words = reference_words(fold(text))
    if not words:
        return frozenset()
    if len(words) < size:
        return frozenset([tuple(words)])
    return frozenset(tuple(words[i:i + size]) for i in range(len(words) - size + 1))


def char_shingles(text, size: int = 5) -> frozenset:
    if not text:
        return frozenset()
    prepared = " ".join(fold(text).split())
    if not prepared:
        return frozenset()
    if len(prepared) < size:
        return frozenset([prepared])
    return frozenset(prepared[i:i + size] for i in range(len(prepared) - size + 1))


def shingle_sets(texts, unit: str = "word", size: int = 3) -> list:
    fn = word_shingles if unit == "word" else char_shingles
    return [fn(t, size) for t in texts]


def jaccard(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _reaches(inter: int, union: int, threshold) -> bool:
    """inter / union >= threshold, decided exactly (floats only settle the clear cases)."""
    j = inter / union
    if j > threshold + 1e-6:
        return True
    if j < threshold - 1e-6:
        return False
    return Fraction(inter, union) >= Fraction(str(threshold))


# --------------------------------------------------------------------------- search

class Reference:
    """All pairs of records with Jaccard >= ``min_threshold`` over ``sets``.

    Records with identical non-empty shingle sets are collapsed into one node first;
    ``node_pairs`` maps (node_a, node_b) -> (intersection, union), node_a < node_b.
    """

    def __init__(self, sets: list, min_threshold: float = 0.3):
        self.n_records = len(sets)
        self.min_threshold = min_threshold
        node_of_set: dict = {}
        self.members: list = []                 # node -> [record ids], ascending
        for i, s in enumerate(sets):
            if not s:
                continue
            node = node_of_set.setdefault(s, len(self.members))
            if node == len(self.members):
                self.members.append([])
            self.members[node].append(i)
        self.node_sets = [None] * len(self.members)
        for s, node in node_of_set.items():
            self.node_sets[node] = s
        self.node_pairs: dict = {}
        postings: dict = {}
        for node, s in enumerate(self.node_sets):
            shared = Counter()                  # earlier node -> shingles shared with this one
            for sh in s:
                shared.update(postings.get(sh, ()))
            for sh in s:
                postings.setdefault(sh, []).append(node)
            size = len(s)
            for other, inter in shared.items():
                union = size + len(self.node_sets[other]) - inter
                if _reaches(inter, union, min_threshold):
                    self.node_pairs[(other, node)] = (inter, union)

    # -- record level

    def record_pairs(self, threshold: float) -> dict:
        """{(a, b): jaccard} over records, a < b, for every pair reaching ``threshold``."""
        self._check(threshold)
        out: dict = {}
        for m in self.members:
            for a, b in combinations(m, 2):
                out[(a, b)] = 1.0
        for (x, y), (inter, union) in self.node_pairs.items():
            if not _reaches(inter, union, threshold):
                continue
            j = inter / union
            for a in self.members[x]:
                for b in self.members[y]:
                    out[(min(a, b), max(a, b))] = j
        return out

    def pair_count(self, threshold: float) -> int:
        """Number of record pairs reaching ``threshold`` (no expansion: fine for huge groups)."""
        self._check(threshold)
        total = sum(len(m) * (len(m) - 1) // 2 for m in self.members)
        for (x, y), (inter, union) in self.node_pairs.items():
            if _reaches(inter, union, threshold):
                total += len(self.members[x]) * len(self.members[y])
        return total

    def clusters(self, threshold: float) -> list:
        """Components of >= 2 records as a sorted list of sorted record-id tuples."""
        self._check(threshold)
        parent = list(range(len(self.members)))
        for (x, y), (inter, union) in self.node_pairs.items():
            if _reaches(inter, union, threshold):
                rx, ry = root(parent, x), root(parent, y)
                if rx != ry:
                    parent[rx] = ry
        comps: dict = {}
        for node, m in enumerate(self.members):
            comps.setdefault(root(parent, node), []).extend(m)
        return sorted(tuple(sorted(c)) for c in comps.values() if len(c) >= 2)

    def cluster_count(self, threshold: float) -> int:
        return len(self.clusters(threshold))

    def _check(self, threshold: float) -> None:
        if threshold < self.min_threshold:
            raise ValueError(f"threshold {threshold} below the searched minimum {self.min_threshold}")


def root(parent: list, x: int) -> int:
    """The root of x in a union-find forest (``parent``), halving the path on the way."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def reference(texts, unit: str = "word", size: int = 3, min_threshold: float = 0.3) -> Reference:
    return Reference(shingle_sets(texts, unit, size), min_threshold)


# --------------------------------------------------------------------------- reading data and the engine's output

def near_leak_count(a_texts, b_texts, threshold: float) -> int:
    """B texts with an A text at word-3-gram Jaccard >= threshold (an inverted index over A's
    shingles, every candidate's Jaccard exact): what a leak check counts as near duplicates."""
    a_sets = [word_shingles(t) for t in a_texts]
    index: dict = {}
    for i, s in enumerate(a_sets):
        for g in s:
            index.setdefault(g, set()).add(i)
    count = 0
    for t in b_texts:
        s = word_shingles(t)
        candidates = set().union(*(index.get(g, set()) for g in s)) if s else set()
        count += any(jaccard(s, a_sets[i]) >= threshold - 1e-12 for i in candidates)
    return count


def read_field(data_dir, rel: str, field: str, max_rows=None) -> list:
    """``field`` of every row of the JSONL file ``data_dir / rel`` (the first ``max_rows``)."""
    with open(data_dir / rel, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r.get(field) for r in rows[:max_rows]]


def engine_members(pairs) -> dict:
    """node -> [records], built from the engine's ``node_of`` alone (not from its own helpers)."""
    members: dict = {}
    for record, node in enumerate(pairs.node_of.tolist()):
        if node >= 0:
            members.setdefault(node, []).append(record)
    return members


def engine_record_pairs(pairs, threshold: float) -> dict:
    """{(a, b): jaccard} over records with J >= threshold, expanded from the engine's node pairs
    (duck-typed ``near.Pairs``); a record pair reported twice fails."""
    members = engine_members(pairs)
    out: dict = {}
    for m in members.values():
        for i, a in enumerate(m):
            for b in m[i + 1:]:
                out[(a, b)] = 1.0
    for a, b, j in zip(pairs.a.tolist(), pairs.b.tolist(), pairs.jaccard.tolist()):
        if j >= threshold - 1e-9:
            for ra in members[a]:
                for rb in members[b]:
                    key = (min(ra, rb), max(ra, rb))
                    assert key not in out, f"record pair {key} reported twice"
                    out[key] = j
    return out
