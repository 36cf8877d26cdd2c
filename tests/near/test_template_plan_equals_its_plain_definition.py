"""The template-group plan (``dense.plan``), read a chunk of entries and a block of column overlaps
at a time, gives the groups its definition gives, computed here in plain Python from each column's
set of holders (issue 34, item 2: 40 MB of one-letter words made every 3-gram a template column and
the k x k overlaps took 5.9 GB).

The definition (near/dense.py's docstring): a prefix shingle held by HEAVY_DF prefixes or more is
heavy; a heavy shingle is a template shingle when its median holder (the one at half its count,
rounded down, in ascending order) holds MIN_HEAVY_PER_ROW heavy shingles; template shingles whose
holders overlap by LINK_SHARE of the larger one are linked, and linked shingles mark one template
(numbered in the order of their lowest shingle); a node joins the template it holds most shingles
of (ties: the lowest); a template of MIN_NODES nodes or more is a group when listing its pairs
sparsely costs SPARSE_OVER_DENSE times scoring them densely and its dense matrix fits; a template
shingle leaves the sparse join when every prefix holding it is in one group."""
from __future__ import annotations

import random
from collections import Counter, defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from ground_truth import read_field, root
from auditor import near
from auditor.near import dense
from auditor.near.prefix import prefix_matrix
from auditor.shingles import shingle_matrix


def plain_plan(nodes, prefixes) -> list[tuple[list, list]]:
    """[(node ids, the shingles that leave the sparse join)] per group, by the definition."""
    n = prefixes.shape[0]
    holders = defaultdict(list)
    for row in range(n):
        for column in prefixes.indices[prefixes.indptr[row]:prefixes.indptr[row + 1]].tolist():
            holders[column].append(row)
    heavy = sorted(c for c, rows in holders.items() if len(rows) >= dense.HEAVY_DF)
    if n < dense.MIN_NODES:
        return []
    heaviness = Counter(row for c in heavy for row in holders[c])
    template = [c for c in heavy
                if sorted(heaviness[r] for r in holders[c])[len(holders[c]) // 2] >= dense.MIN_HEAVY_PER_ROW]
    # Links by set overlap, components by union-find, numbered by their lowest shingle.
    parent = {c: c for c in template}
    held = {c: set(holders[c]) for c in template}
    for i, a in enumerate(template):
        for b in template[i + 1:]:
            if len(held[a] & held[b]) >= dense.LINK_SHARE * max(len(held[a]), len(held[b])):
                parent[max(root(parent, a), root(parent, b))] = min(root(parent, a), root(parent, b))
    lowest = sorted({root(parent, c) for c in template})
    label = {c: lowest.index(root(parent, c)) for c in template}
    per_row = defaultdict(Counter)
    for c in template:
        for row in holders[c]:
            per_row[row][label[c]] += 1
    members = defaultdict(list)
    for row, counts in per_row.items():
        most = max(counts.values())
        members[min(t for t, k in counts.items() if k == most)].append(row)
    sizes = np.diff(nodes.indptr)
    accepted = []
    for t in sorted(members):
        ids = sorted(members[t])
        if len(ids) < dense.MIN_NODES:
            continue
        sparse = sum(len(holders[c]) ** 2 for c in template if label[c] == t) / 2
        if sparse < dense.SPARSE_OVER_DENSE * len(ids) * (len(ids) - 1) / 2:
            continue
        frequent = dense._frequent_columns(nodes[np.array(ids)])
        if len(ids) * frequent.size * 4 > dense.DENSE_BYTES or sizes[ids].max() >= 2 ** 24:
            continue
        accepted.append(ids)
    group = {row: g for g, ids in enumerate(accepted) for row in ids}
    leaving = defaultdict(list)
    for c in template:
        owners = {group.get(row, -1) for row in holders[c]}
        if len(owners) == 1 and owners != {-1}:
            leaving[owners.pop()].append(c)
    return [(ids, sorted(leaving[g])) for g, ids in enumerate(accepted)]


def edited_templates(real_data, count: int, copies: int, seed: int) -> list[str]:
    """Real GSM8K questions beside ``count`` templates (real questions joined), each copied
    ``copies`` times with 2-12% of its words replaced."""
    rng = random.Random(seed)
    questions = read_field(real_data, "gsm8k/train.jsonl", "question", 1500)
    pool = " ".join(questions).split()
    texts = list(questions)
    for t in range(count):
        template = " ".join(questions[40 * t:40 * t + 4]).split()[:60]
        texts += [" ".join(rng.choice(pool) if rng.random() < rng.uniform(0.02, 0.12) else w for w in template)
                  for _ in range(copies)]
    rng.shuffle(texts)
    return texts


def few_letters(records: int, letters: str, seed: int) -> list[str]:
    """Records of one-letter words over a few letters: every 3-gram is in most prefixes."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(letters, k=rng.randint(20, 60))) for _ in range(records)]


@pytest.mark.parametrize("chunks", ["default", "small"])
@pytest.mark.parametrize("threshold", [0.3, 0.5])
@pytest.mark.parametrize("case", ["templates", "letters"])
def test_template_plan_equals_its_plain_definition(real_data, monkeypatch, case, threshold, chunks):
    monkeypatch.setattr(dense, "HEAVY_DF", 64)
    monkeypatch.setattr(dense, "MIN_NODES", 64)
    if chunks == "small":           # every chunked read and overlap block cut into many pieces
        monkeypatch.setattr(dense, "ENTRY_CHUNK", 97)
        monkeypatch.setattr(dense, "LINK_ENTRIES", 50)
    texts = edited_templates(real_data, 3, 200, seed=3) if case == "templates" else few_letters(1500, "abcdef", 4)
    nodes = near.collapse_identical(shingle_matrix(texts))[2]
    prefixes = prefix_matrix(nodes, threshold)
    groups, left = dense.plan(nodes, prefixes)
    want = plain_plan(nodes, prefixes)
    assert [(g.ids.tolist(), g.heavy.tolist()) for g in groups] == want
    if case == "templates":
        assert len(want) >= 2, "the edited templates should form groups"         # the case is what it says
    dropped = np.zeros(prefixes.shape[1], bool)
    for _, heavy in want:
        dropped[heavy] = True
    keep = ~dropped[prefixes.indices]
    assert np.array_equal(left.indices, prefixes.indices[keep])
    assert np.diff(left.indptr).tolist() == [int(keep[lo:hi].sum()) for lo, hi in zip(prefixes.indptr[:-1],
                                                                                      prefixes.indptr[1:])]


def test_rows_without_template_shingles_before_a_row_past_the_chunk(monkeypatch):
    """A stretch of rows holding no template shingle, cut off by a row holding more than a chunk
    of them, is an empty stretch: it is skipped, and the plan is its definition's (a review found
    it raised IndexError)."""
    monkeypatch.setattr(dense, "HEAVY_DF", 5)
    monkeypatch.setattr(dense, "MIN_NODES", 8)
    monkeypatch.setattr(dense, "MIN_HEAVY_PER_ROW", 3)
    monkeypatch.setattr(dense, "ENTRY_CHUNK", 3)
    held = np.zeros((10, 5), bool)
    held[1:] = True                     # row 0 holds nothing; every other row all 5 shingles
    nodes = sp.csr_matrix(held)
    prefixes = sp.csr_matrix(held.astype(np.float32))
    groups, _ = dense.plan(nodes, prefixes)
    assert [(g.ids.tolist(), g.heavy.tolist()) for g in groups] == plain_plan(nodes, prefixes)
    assert len(groups) == 1
