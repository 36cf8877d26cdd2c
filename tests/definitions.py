"""The documented definitions, written again in plain Python for the tests' ground truth
(docs/how-it-works.md, the docstrings of auditor/shingles.py and auditor/normalize.py): JSONL in and out,
the default, SQL and Python normalisers, duplicate figures, word 3-gram shingles, every pair's
Jaccard (a scipy sparse product over a shingle vocabulary built here), components, the cluster
curve, near-duplicate hits between two sides, and the GPT-3-style n-gram contamination reference.
No auditor function is used here."""
from __future__ import annotations

import io
import json
import re
import tokenize
import unicodedata
from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)      # the cluster curve's thresholds


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path, rows) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def norm_default(s: str) -> str:
    """NFC, lowercase, whitespace runs collapsed (and stripped)."""
    return " ".join(unicodedata.normalize("NFC", s).lower().split())


def norm_sql(s: str) -> str:
    """SQL: lowercased outside quoted literals, whitespace collapsed (Spider has no comments)."""
    parts, last = [], 0
    for m in re.finditer(r"'[^']*'|\"[^\"]*\"", s):
        parts += [s[last:m.start()].lower(), m.group()]
        last = m.end()
    parts.append(s[last:].lower())
    return " ".join("".join(parts).split())


def norm_python(s: str) -> str:
    """Python: comments removed (found by the tokenizer, so '#' in a string stays), case kept,
    whitespace collapsed."""
    lines = s.splitlines(True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    cuts = [(starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1])
            for t in tokenize.generate_tokens(io.StringIO(s).readline) if t.type == tokenize.COMMENT]
    for a, b in reversed(cuts):
        s = s[:a] + " " + s[b:]
    return " ".join(s.split())


def duplicate_figures(keys) -> tuple[int, int, int]:
    """(groups of >= 2 equal non-empty keys, records in them, redundant records)."""
    sizes = [n for n in Counter(k for k in keys if k).values() if n >= 2]
    return len(sizes), sum(sizes), sum(sizes) - len(sizes)


def shingles(text: str) -> frozenset:
    words = (text or "").lower().split()
    if not words:
        return frozenset()
    if len(words) < 3:
        return frozenset([tuple(words)])
    return frozenset(tuple(words[i:i + 3]) for i in range(len(words) - 2))


def all_pairs(texts):
    """Every record pair sharing a shingle, with intersection and union sizes: a sparse product
    over a vocabulary built here (so every pair is scored; none is skipped by a filter)."""
    sets = [shingles(t) for t in texts]
    vocab: dict = {}
    rows, cols = [], []
    for i, s in enumerate(sets):
        for x in s:
            rows.append(i)
            cols.append(vocab.setdefault(x, len(vocab)))
    m = sp.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(len(sets), max(1, len(vocab))))
    inter = sp.triu(m @ m.T, k=1).tocoo()
    size = np.array([len(s) for s in sets])
    return inter.row, inter.col, inter.data, size[inter.row] + size[inter.col] - inter.data


def at_least(inter, union, t: float):
    f = Fraction(str(t))
    return inter * f.denominator >= union * f.numerator


def components(pairs) -> list[int]:
    """Sizes of connected components (>= 2 records), largest first."""
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in pairs:
        parent[find(a)] = find(b)
    return sorted(Counter(find(x) for x in list(parent)).values(), reverse=True)


def curve(texts) -> dict:
    """threshold -> (pairs, clusters, records in clusters, largest cluster)."""
    r, c, inter, union = all_pairs(texts)
    out = {}
    for t in THRESHOLDS:
        keep = at_least(inter, union, t)
        sizes = components(zip(r[keep].tolist(), c[keep].tolist()))
        out[t] = (int(keep.sum()), len(sizes), sum(sizes), sizes[0] if sizes else 0)
    return out


def _inverted(texts) -> tuple[list, dict]:
    """(each text's shingle set, shingle -> the texts holding it)."""
    sets = [shingles(x) for x in texts]
    index = defaultdict(set)
    for i, s in enumerate(sets):
        for x in s:
            index[x].add(i)
    return sets, index


def near_hits(texts_a, texts_b, t: float = 0.7) -> set:
    """B rows with some A text at Jaccard >= t (an inverted index, then exact set arithmetic)."""
    sa, index = _inverted(texts_a)
    f = Fraction(str(t))
    hits = set()
    for j, s in enumerate(map(shingles, texts_b)):
        for i in set().union(*(index[x] for x in s)):
            if len(sa[i] & s) * f.denominator >= len(sa[i] | s) * f.numerator:
                hits.add(j)
                break
    return hits


def contained_hits(texts_a, texts_b, t: float = 0.7, min_shared: int = 11) -> dict:
    """B row -> best containment |S_a & S_b| / |S_b| >= t over the A texts at least 1/t times as
    long (|S_a| >= |S_b| / t), for B texts whose required overlap ceil(t |S_b|) is at least
    ``min_shared`` shingles (an inverted index over A, then exact set arithmetic with fractions)."""
    sa, index = _inverted(texts_a)
    f = Fraction(str(t))
    hits = {}
    for j, s in enumerate(map(shingles, texts_b)):
        need = -(-len(s) * f.numerator // f.denominator)          # ceil(t |S_b|), exactly
        if need < min_shared:
            continue
        best = max((len(sa[i] & s) for i in set().union(*(index[x] for x in s))
                    if len(sa[i]) * f.numerator >= len(s) * f.denominator), default=0)
        if best >= need:
            hits[j] = Fraction(best, len(s))
    return hits


def words(text: str) -> list[str]:
    """GPT-3 appendix C words: whitespace split, lowercased, punctuation removed."""
    out = []
    for w in text.lower().split():
        w = "".join(ch for ch in w if not unicodedata.category(ch).startswith("P"))
        if w:
            out.append(w)
    return out


def ngrams(tokens, n):
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def contamination_reference(corpus: list[str], items: list[str], n: int) -> dict:
    """benchmark row -> (sorted corpus rows sharing an n-gram with it, matched distinct n-grams,
    distinct n-grams of the item)."""
    where = defaultdict(set)
    for r, text in enumerate(corpus):
        for g in ngrams(words(text), n):
            where[g].add(r)
    out = {}
    for i, text in enumerate(items):
        grams = ngrams(words(text), n)
        hit = [g for g in grams if g in where]
        if hit:
            out[i] = (sorted(set().union(*(where[g] for g in hit))), len(hit), len(grams))
    return out
