"""Benchmark data: the real sets' texts (``--data DIR`` or ``bundled``) and the seeded synthetic
series with near duplicates planted at known rates (``make_synthetic``), plus the Python-set
shingles and Jaccard the foreign baselines use."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]                                  # the checkout
DEFAULT_DATA = HERE.parents[2] / "shared" / "data"
REAL = {"gsm8k": ("gsm8k/train.jsonl", "question"), "spider": ("spider/train_spider.jsonl", "question")}
POOL = (("gsm8k/train.jsonl", "question"), ("mbpp/mbpp.jsonl", "text"))

# Synthetic recipe (all rates are per-word substitution probabilities).
BASE_RATE = 0.35                    # a base record: a pool question with 35% of its words replaced
DUP_SHARE = 0.10                    # share of records that are planted copies of a base record
DUP_RATES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3)   # planted copies, equally often at each rate
TEMPLATE_MAX = 3000                 # records sharing one long template (min(3000, n/5))
TEMPLATE_RATES = (0.01, 0.06)       # their substitution rate, uniform in this range
TEMPLATE_TEXTS = 8                  # pool questions concatenated into the template (~250 words)


def data_dir(value: str) -> Path:
    """``--data``: a directory holding gsm8k/, spider/, mbpp/ and humaneval/ as JSONL, or ``bundled``:
    the repository's own copies written out in that layout (tests/real_data.py, checked against
    the originals' sha256) to a temporary directory removed at exit."""
    if value != "bundled":
        return Path(value)
    import atexit
    import shutil
    sys.path.insert(0, str(ROOT / "tests"))
    import real_data
    tmp = Path(tempfile.mkdtemp(prefix="auditor-bench-data-"))
    atexit.register(shutil.rmtree, tmp, True)
    return real_data.materialize(tmp)


def read_field(path: Path, field: str) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                v = json.loads(line).get(field)
                out.append(v if isinstance(v, str) else "")
    return out


def make_synthetic(n: int, seed: int, pool: list[str], template_max: int = TEMPLATE_MAX):
    """``n`` records from real questions, with near duplicates at known rates.

    - bases: a pool question with BASE_RATE of its words substituted by words drawn from
      the pool's word frequencies (so bases of one question are distinct, J ~ 0.05);
    - planted copies (DUP_SHARE of n): a base with DUP_RATES substitutions (0.0 = exact copy);
    - a template block of min(template_max, n // 5) records: one ~250-word text made of
      TEMPLATE_TEXTS questions, each copy with 1-6% substitutions, so every pair of them has
      J >= 0.3 (millions of pairs above 0.3: the bounded-memory case).
    Returns (texts, planted (k, 2) int64 record pairs, planted rate per pair)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    words = [t.split() for t in pool if t and t.split()]
    vocab: dict[str, int] = {}
    flat = np.array([vocab.setdefault(w, len(vocab)) for ws in words for w in ws], dtype=np.int64)
    names = np.array(list(vocab), dtype=object)
    plen = np.array([len(ws) for ws in words], dtype=np.int64)
    poff = np.concatenate(([0], np.cumsum(plen)[:-1]))

    def gather(offsets, lengths):                   # token ids of many slices of one flat array
        rep = np.repeat(offsets - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        return rep + np.arange(int(lengths.sum()))

    def mutate(tokens, lengths, rates):             # per-record substitution rate
        per_token = np.repeat(rates, lengths)
        hit = rng.random(tokens.size) < per_token
        tokens = tokens.copy()
        tokens[hit] = flat[rng.integers(0, flat.size, int(hit.sum()))]   # unigram frequencies
        return tokens

    n_tpl = min(template_max, n // 5)
    n_dup = int(round(DUP_SHARE * n))
    n_base = n - n_tpl - n_dup
    src = rng.integers(0, len(words), n_base)
    b_len = plen[src]
    b_tok = mutate(flat[gather(poff[src], b_len)], b_len, np.full(n_base, BASE_RATE))
    b_off = np.concatenate(([0], np.cumsum(b_len)[:-1]))
    # planted copies of bases
    parent = rng.integers(0, n_base, n_dup)
    d_rate = np.array(DUP_RATES)[np.arange(n_dup) % len(DUP_RATES)]
    d_len = b_len[parent]
    d_tok = mutate(b_tok[gather(b_off[parent], d_len)], d_len, d_rate)
    # template block
    tpl = np.concatenate([flat[poff[i]:poff[i] + plen[i]] for i in rng.integers(0, len(words), TEMPLATE_TEXTS)])
    t_len = np.full(n_tpl, tpl.size, dtype=np.int64)
    t_tok = mutate(np.tile(tpl, n_tpl), t_len, rng.uniform(*TEMPLATE_RATES, n_tpl))

    tokens = np.concatenate([b_tok, d_tok, t_tok])
    lengths = np.concatenate([b_len, d_len, t_len])
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    strs = names[tokens].tolist()
    texts_in_order = [" ".join(strs[bounds[i]:bounds[i + 1]]) for i in range(n)]
    perm = rng.permutation(n)                        # record r of the output is texts_in_order[perm[r]]
    where = np.empty(n, dtype=np.int64)
    where[perm] = np.arange(n)
    texts = [texts_in_order[i] for i in perm.tolist()]
    planted = np.stack([where[parent], where[n_base + np.arange(n_dup)]], axis=1)
    planted.sort(axis=1)
    return texts, planted, d_rate


def shingle_sets(texts: list[str]) -> list:
    """Python sets of the default shingles (None for an empty text), as the seed scripts build them."""
    out = []
    for t in texts:
        w = t.lower().split() if t else []
        if not w:
            out.append(None)
        elif len(w) < 3:
            out.append({" ".join(w)})
        else:
            out.append({" ".join(w[i:i + 3]) for i in range(len(w) - 2)})
    return out


def jaccard(a: set, b: set) -> float:
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def write_dataset(path: Path, texts: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for t in texts:
            fh.write(json.dumps({"text": t}) + "\n")


def load_texts(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]
