"""Hostile shapes for the bounded engine, built from real questions (seeded, so repeatable).

- ``template(n)``: one 30-word text plus one unique word per record; every pair has J = 28/30
  (cookie notices, boilerplate, templated prompts);
- ``template_mix(n, template_n)``: ``template_n`` copies of one ~40-word question template with
  small edits (1-5% of words replaced), the rest real-question variants (``run.make_synthetic``
  without its template block);
- ``edited_copies(n)``: real questions from many sources, each copied 10-50 times with 2-50% of
  its words replaced (scraped Q&A, augmented instruction sets, exam banks).

Replacement words are drawn from the pool's own word frequencies.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# Real question fields in the team's data folder (see its MANIFEST.md), and in the checkout.
SOURCES = (("gsm8k/train.jsonl", "question"), ("gsm8k/test.jsonl", "question"),
           ("spider/train_spider.jsonl", "question"), ("spider/dev.jsonl", "question"),
           ("mbpp/mbpp.jsonl", "text"), ("alpaca/alpaca_5000.jsonl", "instruction"),
           ("rephrased/sociology_test.jsonl", "question"), ("humaneval/HumanEval.jsonl", "prompt"))


def read_questions(data: Path) -> list[str]:
    """Distinct non-empty questions from every source file present under ``data``."""
    seen, out = set(), []
    for rel, field in SOURCES:
        path = data / rel
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                value = json.loads(line).get(field)
                if isinstance(value, str) and value.split() and value not in seen:
                    seen.add(value)
                    out.append(value)
    return out


class _Words:
    """The pool as token ids, for fast vectorised substitutions."""

    def __init__(self, pool: list[str]):
        self.words = [t.split() for t in pool]
        vocab: dict[str, int] = {}
        self.flat = np.array([vocab.setdefault(w, len(vocab)) for ws in self.words for w in ws], dtype=np.int64)
        self.names = np.array(list(vocab), dtype=object)
        self.lengths = np.array([len(ws) for ws in self.words], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1]))

    def copies(self, rng, sources: np.ndarray, rates: np.ndarray) -> list[str]:
        """One text per (source index, substitution rate)."""
        lengths = self.lengths[sources]
        starts = self.offsets[sources]
        idx = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())
        tokens = self.flat[idx].copy()
        hit = rng.random(tokens.size) < np.repeat(rates, lengths)
        tokens[hit] = self.flat[rng.integers(0, self.flat.size, int(hit.sum()))]
        strs = self.names[tokens].tolist()
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        return [" ".join(strs[bounds[i]:bounds[i + 1]]) for i in range(sources.size)]


def template(n: int, pool: list[str]) -> list[str]:
    words = [w for t in pool for w in t.split()]
    # 30 words from the pool in order, kept only if the 30-word window has 28 distinct 3-shingles.
    base = next(words[i:i + 30] for i in range(0, len(words) - 30)
                if len({tuple(words[k:k + 3]) for k in range(i, i + 28)}) == 28)
    head = " ".join(base)
    return [f"{head} u{i:x}q" for i in range(n)]


def template_mix(n: int, template_n: int, pool: list[str], seed: int = 1) -> list[str]:
    import run                                    # bench/run.py: the real-question synthetic series
    rng = np.random.default_rng(seed)
    rest, _, _ = run.make_synthetic(n - template_n, seed, pool, template_max=0)
    tpl = " ".join(pool[int(rng.integers(0, len(pool)))].split() + pool[int(rng.integers(0, len(pool)))].split())
    words = _Words([tpl])
    copies = words.copies(rng, np.zeros(template_n, np.int64), rng.uniform(0.01, 0.05, template_n))
    texts = rest + copies
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


def edited_copies(n: int, pool: list[str], seed: int = 1, copies=(10, 50), rates=(0.02, 0.5),
                  passage_share: float = 0.4, passage_group: float = 10.0) -> list[str]:
    """``n`` records: sources drawn from ``pool`` in a seeded order, each copied a number of
    times uniform in ``copies``, each copy with a substitution rate uniform in ``rates``.

    Like an exam bank with shared reading passages, ``passage_share`` of the sources are a
    passage (3-6 pool questions, ~100 words) followed by one question; passages are shared
    by a heavy-tailed number of sources (Zipf, mean about ``passage_group``), so some passages
    carry thousands of records whose pairs are all similar."""
    rng = np.random.default_rng(seed)
    needed = int(np.ceil(n / (sum(copies) / 2))) + 1
    if passage_share > 0:
        n_passage_sources = int(passage_share * len(pool))
        sizes = np.minimum(rng.zipf(1.8, size=n_passage_sources), 400)
        sizes = sizes[np.cumsum(sizes) <= n_passage_sources]
        passages = [" ".join(pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(3, 7))))
                    for _ in range(sizes.size)]
        owner = rng.permutation(len(pool))[:int(sizes.sum())]
        which = np.repeat(np.arange(sizes.size), sizes)
        pool = list(pool)
        for src, p_i in zip(owner.tolist(), which.tolist()):
            pool[src] = passages[p_i] + " " + pool[src]
    if needed > len(pool):
        # More sources than real questions: the extra ones are real questions with 35% of their
        # words replaced (as run.make_synthetic's bases; two bases of one question share ~5%).
        extra = _Words(pool).copies(rng, rng.integers(0, len(pool), needed - len(pool)),
                                    np.full(needed - len(pool), 0.35))
        pool = list(pool) + extra
    words = _Words(pool)
    order = rng.permutation(len(pool))
    counts = rng.integers(copies[0], copies[1] + 1, size=len(pool))
    total = np.cumsum(counts[order])
    used = int(np.searchsorted(total, n)) + 1
    sources = np.repeat(order[:used], counts[order[:used]])[:n]
    texts = words.copies(rng, sources, rng.uniform(*rates, size=n))
    perm = rng.permutation(n)
    return [texts[i] for i in perm]


def template_swaps(n: int, pool: list[str], seed: int = 1, words: int = 27, swap_share: float = 1 / 3,
                   choices: int = 3) -> list[str]:
    """``n`` records of one ``words``-word notice plus a unique id word, ``swap_share`` of them
    with one word (at a random position) swapped for one of ``choices`` words (cookie banners,
    form letters, generated prompts with a slot): every pair is similar, few texts are identical."""
    rng = np.random.default_rng(seed)
    flat = [w for t in pool for w in t.split()]
    start = next(i for i in range(0, len(flat) - words)
                 if len({tuple(flat[k:k + 3]) for k in range(i, i + words - 2)}) == words - 2)
    base = flat[start:start + words]
    swaps = [f"slot{k}word" for k in range(choices)]
    swapped = rng.random(n) < swap_share
    position = rng.integers(0, words, n)
    choice = rng.integers(0, choices, n)
    out = []
    for i in range(n):
        text = list(base)
        if swapped[i]:
            text[position[i]] = swaps[choice[i]]
        out.append(" ".join(text) + f" id{i:x}q")
    return out


def swap_mix(n: int, block: int, pool: list[str], seed: int = 1) -> list[str]:
    """``n - block`` edited copies of real questions (``edited_copies`` without shared passages)
    and a ``block`` of ``template_swaps``, shuffled."""
    rng = np.random.default_rng(seed + 7)
    texts = edited_copies(n - block, pool, seed, passage_share=0.0) + template_swaps(block, pool, seed)
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


def synth_block(n: int, block: int, pool: list[str], seed: int = 1) -> list[str]:
    """``n - block`` records of run.py's synthetic series (no template) and a ``block`` of
    ``template_swaps``, shuffled: a large corpus with one boilerplate file in it."""
    import run
    rng = np.random.default_rng(seed + 11)
    texts = run.make_synthetic(n - block, seed, pool, template_max=0)[0] + template_swaps(block, pool, seed)
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


def instruction_templates(count: int, seed: int, data: Path | None = None, words=(40, 80)) -> list[str]:
    """``count`` long instruction templates made of real instructions (the Alpaca subset, else
    the question pool) joined until ``words`` words: the boilerplate prompt datasets put before
    each question."""
    rng = np.random.default_rng(seed)
    import run
    path = run.data_dir(str(data or run.DEFAULT_DATA)) / "alpaca" / "alpaca_5000.jsonl"
    if path.exists():
        with open(path, encoding="utf-8") as fh:
            instructions = [json.loads(line)["instruction"] for line in fh if line.strip()]
    else:
        instructions = read_questions(run.data_dir("bundled"))
    out = []
    for _ in range(count):
        target = int(rng.integers(words[0], words[1] + 1))
        parts: list[str] = []
        while sum(len(p.split()) for p in parts) < target:
            parts.append(instructions[int(rng.integers(0, len(instructions)))])
        out.append(" ".join(" ".join(parts).split()[:target]))
    return out


def realistic(n: int, pool: list[str], seed: int = 1, copies=(10, 50), rates=(0.02, 0.5),
              templated_share: float = 0.1, templates: int = 40, zipf: float = 1.3) -> list[str]:
    """The pair density of real instruction data: ``n`` records from real questions (and, past the
    pool, real questions with 35% of their words replaced), each source copied 10-50 times with
    2-50% of its words replaced; ``templated_share`` of the sources open with one of
    ``templates`` long instruction templates (40-80 words of real instructions), shared by a
    heavy-tailed (Zipf) number of sources. A template's records pair with one another whatever
    their questions (J about 0.35-0.6 at these lengths), so pairs at 0.3 grow with the square
    of the template groups: about 800 million at 1M records (BENCHMARKS.md)."""
    rng = np.random.default_rng(seed)
    mean = sum(copies) / 2
    needed = int(np.ceil(n / mean)) + 1
    pool = list(pool)
    if needed > len(pool):
        extra = _Words(pool).copies(rng, rng.integers(0, len(pool), needed - len(pool)),
                                    np.full(needed - len(pool), 0.35))
        pool = pool + extra
    words = _Words(pool)
    order = rng.permutation(len(pool))
    counts = rng.integers(copies[0], copies[1] + 1, size=len(pool))
    total = np.cumsum(counts[order])
    used = int(np.searchsorted(total, n)) + 1
    sources = np.repeat(order[:used], counts[order[:used]])[:n]
    texts = words.copies(rng, sources, rng.uniform(*rates, size=n))
    # Templates: each templated source gets one (Zipf weights), kept whole in every copy (the
    # copies' edits are the question's paraphrases; the boilerplate stays).
    heads = instruction_templates(templates, seed)
    weights = 1.0 / np.arange(1, templates + 1) ** zipf
    chosen = np.unique(sources)
    templated = chosen[rng.random(chosen.size) < templated_share]
    head_of = np.full(len(pool), -1, np.int64)
    head_of[templated] = rng.choice(templates, size=templated.size, p=weights / weights.sum())
    which = head_of[sources]
    texts = [t if h < 0 else heads[h] + " " + t for t, h in zip(texts, which.tolist())]
    perm = rng.permutation(n)
    return [texts[i] for i in perm]


def shared_prefix(n: int, pool: list[str], seed: int = 1, chars: int = 320) -> list[str]:
    """``n`` records that open with one ``chars``-character instruction (real instructions,
    cut at a word) before an edited copy of a real question (``edited_copies`` without shared
    passages): a prompt dataset built on one system prompt."""
    head = instruction_templates(1, seed, words=(80, 80))[0]
    head = head[:chars].rsplit(" ", 1)[0]
    return [head + " " + t for t in edited_copies(n, pool, seed, passage_share=0.0)]
