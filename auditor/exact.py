"""Exact duplicates: records whose value (text, answer, both, or the whole record) is
equal under a named normaliser; and label conflicts (same text, different labels)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .digests import present

SAMPLE_GROUPS = 5


@dataclass(frozen=True)
class DuplicateGroups:
    normalizer: str
    groups: int           # distinct values held by two or more records
    records: int          # records in those groups
    examples: list        # row lists of the largest groups (up to SAMPLE_GROUPS)

    @property
    def redundant(self) -> int:
        """Records beyond the first of each group: what deduplication would remove."""
        return self.records - self.groups


def key_ids(values: list, blank_missing: bool = False) -> np.ndarray:
    """An integer per value, equal for equal values; -1 for None (missing never matches), and with
    ``blank_missing`` for a blank string too (a label of spaces is no label)."""
    ids: dict = {}
    get = ids.setdefault
    if blank_missing:
        return np.fromiter((-1 if v is None or (isinstance(v, str) and not v.strip()) else get(v, len(ids))
                            for v in values), dtype=np.int64, count=len(values))
    return np.fromiter((-1 if v is None else get(v, len(ids)) for v in values), dtype=np.int64,
                       count=len(values))


def digest_ids(keys: np.ndarray) -> np.ndarray:
    """``key_ids`` of a digest array (``digests.digests``: a row per value): an integer per row, equal
    for equal digests, numbered by first occurrence as ``key_ids`` numbers values; -1 where missing.
    Sorted in numpy, so no normal form is held while grouping."""
    out = np.full(keys.shape[0], -1, dtype=np.int64)
    rows = np.flatnonzero(present(keys))
    if not rows.size:
        return out
    held = keys if rows.size == keys.shape[0] else keys[rows]
    order = np.lexsort((held[:, 1], held[:, 0]))        # stable: equal digests stay in row order
    ordered = held[order]
    first = np.empty(order.size, dtype=bool)
    first[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=first[1:])
    del ordered, held
    group = np.cumsum(first) - 1                         # each sorted row's digest, numbered in digest order
    first_row = order[first]                             # a digest's first row (the stable sort keeps it first)
    rank = np.empty(first_row.size, dtype=np.int64)
    rank[np.argsort(first_row)] = np.arange(first_row.size)
    out[rows[order]] = rank[group]
    return out


def duplicate_groups(keys: np.ndarray, normalizer: str) -> DuplicateGroups:
    valid = keys >= 0
    counts = np.bincount(keys[valid]) if valid.any() else np.zeros(0, np.int64)
    dup_keys = np.flatnonzero(counts >= 2)
    examples = []
    if dup_keys.size:
        # Largest groups first; ties by first occurrence, so the sample is deterministic.
        first_row = np.full(counts.size, keys.size, dtype=np.int64)
        np.minimum.at(first_row, keys[valid], np.flatnonzero(valid))
        top = sorted(dup_keys.tolist(), key=lambda k: (-counts[k], first_row[k]))[:SAMPLE_GROUPS]
        examples = [np.flatnonzero(keys == k)[:10].tolist() for k in top]
    return DuplicateGroups(normalizer, int(dup_keys.size), int(counts[dup_keys].sum()), examples)


def combine(*keys: np.ndarray) -> np.ndarray:
    """One id per distinct tuple of ids (ids >= -1), numbered in the tuples' order; -1 where any
    part is missing. The tuple so far is ranked, then packed with the next part into one integer
    (rank x (its largest id + 2) + id + 1, in the tuples' order) and ranked again: np.unique over
    rows of a stacked copy took 12 times as long and half as much memory again (1.2M records)."""
    missing = np.zeros(keys[0].size, dtype=bool)
    for key in keys:
        missing |= key < 0
    combined = np.unique(keys[0], return_inverse=True)[1].reshape(-1).astype(np.int64)
    for key in keys[1:]:
        combined *= int(key.max(initial=-1)) + 2
        combined += key
        combined += 1
        combined = np.unique(combined, return_inverse=True)[1].reshape(-1)
    combined[missing] = -1
    return combined


@dataclass(frozen=True)
class LabelConflicts:
    fields: list
    groups: int           # normalised texts that carry more than one distinct label
    records: int
    examples: list


def label_conflicts(text_keys: np.ndarray, labels: dict) -> LabelConflicts | None:
    """Normalised texts whose labelled records (every label field present and not blank) carry
    more than one distinct label."""
    if not labels:
        return None
    label_keys = combine(*[key_ids(v, True) if v is not None else np.full(text_keys.size, -1) for v in
                           labels.values()]) if len(labels) > 1 else key_ids(next(iter(labels.values())), True)
    valid = (text_keys >= 0) & (label_keys >= 0)
    pairs = np.unique(np.stack([text_keys[valid], label_keys[valid]], axis=1), axis=0)
    labels_per_text = np.bincount(pairs[:, 0], minlength=int(text_keys.max(initial=-1)) + 1)
    conflicted = np.flatnonzero(labels_per_text >= 2)
    in_conflict = valid & np.isin(text_keys, conflicted)
    examples = [np.flatnonzero(valid & (text_keys == k))[:10].tolist() for k in conflicted[:SAMPLE_GROUPS]]
    return LabelConflicts(list(labels), int(conflicted.size), int(in_conflict.sum()), examples)
