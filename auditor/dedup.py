"""Curation: keep one record per near-duplicate cluster, by a stated rule, and say why each
other record was dropped.

Clusters are the connected components of the verified pairs at a threshold (``clusters.py``).
A reviewer may mark record pairs "not a duplicate": the clusters are then the components of the
pairs >= threshold *minus* the marked pairs. ``Pairs`` keeps a spanning forest (exact for
connectivity) and a bounded sample of the pairs; when the sample holds every pair
(``Pairs.complete``) a marked pair is removed exactly. Otherwise only the forest and the sampled
pairs are known inside the clusters a mark touches: a cluster may then split more than the full
graph would, so records may be kept that a full search would drop, never the other way round
(``DedupResult.exact`` is False and a notice says so). Clusters no mark touches are always exact.

Keep rules (``KEEP_RULES``), ties always to the lowest row:
- ``first``: the lowest row;
- ``longest``: the longest text (characters of the text role);
- ``most_common_answer``: a record whose normalised answer is the most common answer in its
  cluster (missing answers never count as one).

Two more review decisions work on whole records and clusters:
- ``keep_apart``: rows a reviewer keeps whatever they resemble (each leaves its cluster, which
  keeps one record less to drop; the rest of the cluster stays joined only through other records);
- ``splits``: (row, threshold) pairs: the cluster holding that row is cut at a higher threshold of
  its own (its edges below it removed), e.g. just above its weakest link, so a chain of templates
  falls apart where it is weakest. Exact: the spanning forest decides components at any threshold.

Review files (``review_json`` / ``load_review`` / ``load_review_file``) carry the decisions
between sessions::

    {"kind": "auditor-review", "version": 1, "dataset": "train.jsonl", "fingerprint": "...",
     "threshold": 0.7, "not_duplicates": [[12, 40], [7, 9]], "keep_apart": [5], "splits": [[30, 0.81]]}

Rows are 0-based positions in the loaded dataset; the fingerprint (records and the role fields,
whether they were named or guessed) must match the audited data, so marks are never applied to
other data. A review holds at most ``MAX_REVIEW_ITEMS`` decisions.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .clusters import cluster_labels
from .errors import AuditorError
from .evidence import evidence_csv
from .exact import key_ids
from .io.copies import copier, files_copied_as_written, hub_files_copied, write_rows
from .io.listing import codec_of, format_of
from .io.outputs import check_outputs, retire, write_text, written_together
from .io.table import select
from .normalize import normalized
from .report import dedup as report
from .report.dedup import REVIEW_KIND, REVIEW_VERSION
from .settings import KEEP_RULES, check_threshold
from .shingles import jaccard_rows, set_sizes, shingle_matrix

REVIEW_MAX_BYTES = 64 * 1024 ** 2
# Decisions (marks, rows kept apart, splits) in one review, at most: a person reviews thousands; a
# file of 4.4 million marks (49 MiB) took 142 s and 1.2 GB to apply in the Space.
MAX_REVIEW_ITEMS = 100_000
WRITE_FORMATS = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "tsv": ".tsv", "parquet": ".parquet"}


@dataclass(frozen=True)
class ClusterInfo:
    cluster: int                 # id at this threshold (numbered by first record)
    size: int
    identical: bool              # every evaluated field equal (default normaliser) across members
    rows: tuple                  # members, ascending 0-based rows
    kept_row: int


@dataclass(frozen=True)
class DedupResult:
    threshold: float
    keep: str
    records: int
    clusters: int
    records_in_clusters: int
    kept_rows: tuple             # ascending 0-based rows written out
    dropped: tuple               # ({row, id, cluster, kept_row, reason, jaccard, differs}, ...) by row
    not_duplicates: int          # distinct "not a duplicate" marks applied
    exact: bool                  # False: marks were applied to a partial pair sample (see module doc)
    notices: tuple = ()
    source: str = ""
    fingerprint: str = ""
    kept_apart: int = 0          # rows a reviewer kept apart
    splits: int = 0              # clusters a reviewer split

    def summary(self) -> dict:
        return report.summary(self)


@dataclass(frozen=True)
class Review:
    """A reviewer's decisions: pairs that are not duplicates, rows kept apart, clusters split."""
    not_duplicates: tuple = ()       # ((low, high), ...) rows
    keep_apart: tuple = ()           # rows
    splits: tuple = ()               # ((row, threshold), ...)

    @property
    def size(self) -> int:
        return len(self.not_duplicates) + len(self.keep_apart) + len(self.splits)


# --------------------------------------------------------------------------- clusters with review marks

@dataclass(frozen=True)
class _Grouping:
    label: np.ndarray            # (records,) cluster id or -1
    sizes: np.ndarray
    identical: np.ndarray
    kept: np.ndarray             # kept row per cluster
    marks: int
    exact: bool
    notices: tuple
    threshold: float


def _check_keep(keep) -> str:
    if keep not in KEEP_RULES:
        raise AuditorError("usage", f"Unknown keep rule {keep!r:.40}.", f"Use one of: {', '.join(KEEP_RULES)}.")
    return keep


def _normalise_marks(result, not_duplicates) -> np.ndarray:
    """Marks as a sorted (k, 2) array of distinct (low, high) rows; bad marks are refused."""
    if not_duplicates is None:
        return np.zeros((0, 2), np.int64)
    if isinstance(not_duplicates, (str, bytes, dict)):
        raise AuditorError("usage", "not_duplicates must be a list of (row_a, row_b) pairs.",
                           "Give e.g. [(12, 40), (7, 9)], or load a review file with load_review.")
    pairs = []
    for item in not_duplicates:
        try:
            a, b = item
        except (TypeError, ValueError):
            raise AuditorError("usage", f"A 'not a duplicate' mark must be a pair of rows, got {item!r:.60}.",
                               "Give e.g. [(12, 40), (7, 9)].") from None
        for v in (a, b):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise AuditorError("usage", f"Rows are whole numbers, got {v!r:.40} in the mark {item!r:.60}.",
                                   "Rows are 0-based positions in the dataset.")
            if not 0 <= int(v) < result.records:
                raise AuditorError("usage", f"Row {int(v)} in the mark {item!r:.60} is outside the "
                                   f"dataset (0 .. {result.records - 1}).", "Rows are 0-based positions.")
        if int(a) == int(b):
            raise AuditorError("usage", f"The mark ({int(a)}, {int(b)}) pairs a row with itself.",
                               "Mark two different rows.")
        pairs.append((min(int(a), int(b)), max(int(a), int(b))))
    if not pairs:
        return np.zeros((0, 2), np.int64)
    return np.unique(np.asarray(pairs, dtype=np.int64), axis=0)


def _normalise_rows(result, rows, what: str) -> np.ndarray:
    out = []
    for v in rows or ():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < result.records:
            raise AuditorError("usage", f"{what}: {v!r:.40} is not a row of the dataset (0 .. {result.records - 1}).",
                               "Rows are 0-based positions in the dataset.")
        out.append(int(v))
    return np.unique(np.asarray(out, dtype=np.int64))


def _normalise_splits(result, splits, threshold: float) -> list:
    out = []
    for item in splits or ():
        try:
            row, at = item
        except (TypeError, ValueError):
            raise AuditorError("usage", f"A split is a (row, threshold) pair, got {item!r:.60}.",
                               "Give e.g. [(30, 0.81)].") from None
        row = _normalise_rows(result, [row], "A split's row")[0]
        at = check_threshold(at, "A split's threshold")
        # A cut at or below the clusters' threshold, or the lowest searched, removes no edge (a
        # review made in the app at a lower page threshold): nothing to do.
        if at > max(threshold, result.pairs.min_threshold):
            out.append((int(row), result.pairs.check_threshold(at)))
    return out


def _components_with_marks(result, threshold: float, marks: np.ndarray, apart: np.ndarray = None,
                           splits: list = ()):
    """(label, sizes, exact, effective marks): clusters at ``threshold`` as components of the
    verified pairs minus ``marks``, with the rows ``apart`` joined to nothing and each split
    cluster's edges below its own threshold removed. Only the clusters these touch are recomputed."""
    pairs = result.pairs
    label, sizes = cluster_labels(pairs, threshold)
    apart = np.zeros(0, np.int64) if apart is None else apart
    if marks.size:
        inside = (label[marks[:, 0]] >= 0) & (label[marks[:, 0]] == label[marks[:, 1]])
        marks = marks[inside]
    apart = apart[label[apart] >= 0]
    floors = {}
    for row, at in splits:               # the cluster's own threshold (the highest asked for it)
        if label[row] >= 0:
            floors[int(label[row])] = max(at, floors.get(int(label[row]), 0.0))
    if not marks.size and not apart.size and not floors:
        return label, sizes, True, 0
    node_of, n_nodes = pairs.node_of, pairs.n_nodes
    # Node-level edges >= t: the forest (exact connectivity) and the sampled pairs (every pair when
    # the sample is complete). Only edges inside touched clusters matter.
    k, s = pairs.forest_upto(threshold), pairs.upto(threshold)
    ea = np.concatenate([pairs.forest_a[:k], pairs.a[:s]]).astype(np.int64)
    eb = np.concatenate([pairs.forest_b[:k], pairs.b[:s]]).astype(np.int64)
    ej = np.concatenate([pairs.forest_jaccard[:k], pairs.jaccard[:s]]).astype(np.float64)
    touched = np.unique(np.concatenate([label[marks[:, 0]] if marks.size else np.zeros(0, np.int64),
                                        label[apart], np.asarray(sorted(floors), np.int64)]))
    first_of_node = np.full(n_nodes, -1, np.int64)
    valid = node_of >= 0
    np.maximum.at(first_of_node, node_of[valid], np.flatnonzero(valid))   # any member: clusters are per node
    node_cluster = np.where(first_of_node >= 0, label[np.maximum(first_of_node, 0)], -1)
    keep_edge = np.isin(node_cluster[ea], touched)
    if floors:
        floor = np.zeros(max(int(label.max(initial=-1)) + 1, 1))
        floor[list(floors)] = list(floors.values())
        keep_edge &= ej + 1e-9 >= floor[np.maximum(node_cluster[ea], 0)]
    ea, eb = ea[keep_edge], eb[keep_edge]
    # Split graph: vertex x < n_nodes is node x's members that no decision names (its "rest"); vertex
    # n_nodes + i is the i-th record a decision names. Rests are whole nodes' worth of identical
    # records, joined to everything their node touches; named records lose their marked pairs, and
    # a record kept apart loses every pair.
    named = np.unique(np.concatenate([marks.reshape(-1), apart]))
    m = named.size
    named_node = node_of[named]
    alone = np.isin(named, apart)
    rest = pairs.weight.astype(np.int64) - np.bincount(named_node, minlength=n_nodes)
    # Node adjacency at t, each node adjacent to itself (its members are identical: Jaccard 1).
    adjacency = sp.coo_matrix((np.ones(2 * ea.size + n_nodes, np.int32),
                               (np.concatenate([ea, eb, np.arange(n_nodes)]),
                                np.concatenate([eb, ea, np.arange(n_nodes)]))), shape=(n_nodes, n_nodes)).tocsr()
    place = sp.csr_matrix((np.ones(m, np.int32), (np.arange(m), named_node)), shape=(m, n_nodes))
    reach = place @ adjacency                                           # named record -> nodes it pairs with
    named_to_node = (reach @ sp.diags((rest > 0).astype(np.int32), dtype=np.int32)).tocoo()   # ... that keep a rest
    named_to_named = (reach @ place.T).tocoo()                          # named record -> named records
    nn_a, nn_b = named_to_named.row.astype(np.int64), named_to_named.col.astype(np.int64)
    code = np.minimum(nn_a, nn_b) * m + np.maximum(nn_a, nn_b)
    if marks.size:
        idx_a, idx_b = np.searchsorted(named, marks[:, 0]), np.searchsorted(named, marks[:, 1])
        unmarked = ~np.isin(code, idx_a.astype(np.int64) * m + idx_b)
    else:
        unmarked = np.ones(code.size, bool)
    allowed = (nn_a != nn_b) & unmarked & ~alone[nn_a] & ~alone[nn_b]
    to_node = ~alone[named_to_node.row]
    rest_edge = (rest[ea] > 0) & (rest[eb] > 0)
    rows = np.concatenate([ea[rest_edge], n_nodes + named_to_node.row[to_node], n_nodes + nn_a[allowed]])
    cols = np.concatenate([eb[rest_edge], named_to_node.col[to_node], n_nodes + nn_b[allowed]])
    graph = sp.coo_matrix((np.ones(rows.size, np.int8), (rows, cols)), shape=(n_nodes + m, n_nodes + m))
    _, comp = connected_components(graph, directed=False)
    # Records of touched clusters get their new component; the others keep theirs.
    in_touched = np.isin(label, touched)
    recs = np.flatnonzero(in_touched)
    vertex = node_of[recs].copy()
    pos = np.searchsorted(named, recs)
    is_named = (pos < m) & (named[np.minimum(pos, m - 1)] == recs) if m else np.zeros(recs.size, bool)
    vertex[is_named] = n_nodes + pos[is_named]
    component = np.full(label.size, -1, np.int64)
    component[~in_touched & (label >= 0)] = label[~in_touched & (label >= 0)]
    component[recs] = sizes.size + comp[vertex]
    label, sizes = _renumber(component)
    # A split is exact (the forest decides connectivity at its threshold); marks are exact when the
    # pair sample is complete.
    exact = bool(pairs.complete) or not marks.size
    return label, sizes, exact, int(marks.shape[0])


def _renumber(component: np.ndarray):
    """Clusters (components of >= 2 records) numbered 0.. by first record; -1 elsewhere."""
    valid = component >= 0
    counts = np.bincount(component[valid]) if valid.any() else np.zeros(0, np.int64)
    in_cluster = valid & (counts[np.maximum(component, 0)] >= 2) if counts.size else valid & False
    comp = component[in_cluster]
    _, first_idx = np.unique(comp, return_index=True)
    ordered = comp[np.sort(first_idx)]
    new_id = np.full(int(component.max(initial=0)) + 1, -1, np.int64)
    new_id[ordered] = np.arange(ordered.size)
    label = np.full(component.size, -1, np.int64)
    label[in_cluster] = new_id[comp]
    return label, np.bincount(label[in_cluster], minlength=ordered.size)


def _kept_rows(result, label: np.ndarray, n_clusters: int, keep: str) -> np.ndarray:
    """The row kept in each cluster under ``keep`` (ties to the lowest row)."""
    members = np.flatnonzero(label >= 0)
    cl = label[members]
    if keep == "first":
        score = np.zeros(members.size, np.int64)
    elif keep == "longest":
        text = result.fields.text
        score = -np.fromiter((len(text[i] or "") for i in members.tolist()), np.int64, count=members.size)
    else:
        if result.fields.answer is None:
            raise AuditorError("usage", "keep=most_common_answer needs an answer field, and this dataset has none.",
                               "Name it with --answer FIELD (answer= in Python), or keep first or longest.")
        answers = [result.fields.answer[i] for i in members.tolist()]
        keys = key_ids(normalized(answers, result.answer_normalizer or "default"))
        # How often each member's answer occurs in its cluster (a missing answer: 0).
        pair = cl * (int(keys.max(initial=0)) + 2) + (keys + 1)
        _, inverse, counts = np.unique(pair, return_inverse=True, return_counts=True)
        score = -np.where(keys >= 0, counts[inverse.reshape(-1)], 0)
    order = np.lexsort((members, score, cl))               # by cluster, best score, lowest row
    first = np.ones(order.size, bool)
    first[1:] = cl[order][1:] != cl[order][:-1]
    kept = np.full(n_clusters, -1, np.int64)
    kept[cl[order][first]] = members[order][first]
    return kept


def _grouping(result, threshold, keep, not_duplicates, keep_apart=(), splits=()) -> _Grouping:
    keep = _check_keep(keep)
    t = result.settings.threshold if threshold is None else threshold
    t = result.pairs.check_threshold(check_threshold(t))
    given = sum(len(x) if hasattr(x, "__len__") else 0 for x in (not_duplicates or (), keep_apart or (), splits or ()))
    if given > MAX_REVIEW_ITEMS:            # counted before anything is checked one by one
        raise AuditorError("too_large", f"{given:,} review decisions: more than the {MAX_REVIEW_ITEMS:,} one "
                           "review may hold.", "Raise the threshold (fewer, tighter clusters), or split the review.")
    marks = _normalise_marks(result, not_duplicates)
    apart = _normalise_rows(result, keep_apart, "A row kept apart")
    cuts = _normalise_splits(result, splits, t)
    label, sizes, exact, effective = _components_with_marks(result, t, marks, apart, cuts)
    inside = label >= 0
    distinct = np.unique(np.stack([label[inside], result.evaluated_key[inside]], axis=1), axis=0) \
        if inside.any() else np.zeros((0, 2), np.int64)
    identical = np.bincount(distinct[:, 0], minlength=sizes.size) == 1
    kept = _kept_rows(result, label, sizes.size, keep)
    notices = list(result.table.notices)          # defaults chosen while loading (split, config)
    if effective and not exact:
        notices.append(f"{effective} 'not a duplicate' mark(s) fall inside clusters whose pairs were only sampled "
                       "(too many to list): those clusters were split using the spanning forest and the sampled "
                       "pairs, so some records may be kept that a full pair list would drop; none are dropped "
                       "that it would keep.")
    if marks.shape[0] > effective:
        notices.append(f"{marks.shape[0] - effective} 'not a duplicate' mark(s) join rows in no common cluster at "
                       f"threshold {t:g}: nothing to split.")
    if result.table.truncated:
        notices.append(f"only the first {result.records:,} rows were read (row cap): the other rows are neither "
                       "deduplicated nor written.")
    return _Grouping(label=label, sizes=sizes, identical=identical, kept=kept, marks=int(marks.shape[0]),
                     exact=exact or not effective, notices=tuple(notices), threshold=t)


def ranked_clusters(result, threshold=None, keep: str = "first", not_duplicates=(), keep_apart=(),
                    splits=()) -> tuple:
    """Every cluster at ``threshold`` (default: the scan's) as ``ClusterInfo``, largest first, then
    by first row; ``kept_row`` is the record ``keep`` keeps."""
    g = _grouping(result, threshold, keep, not_duplicates, keep_apart, splits)
    members = np.flatnonzero(g.label >= 0)
    order = members[np.argsort(g.label[members], kind="stable")]
    split = np.split(order, np.cumsum(g.sizes)[:-1]) if g.sizes.size else []
    ranking = np.lexsort((np.arange(g.sizes.size), -g.sizes))      # clusters are numbered by first row
    return tuple(ClusterInfo(cluster=int(c), size=int(g.sizes[c]), identical=bool(g.identical[c]),
                             rows=tuple(split[c].tolist()), kept_row=int(g.kept[c])) for c in ranking.tolist())


def dedup(result, threshold=None, keep: str = "first", not_duplicates=(), keep_apart=(), splits=(),
          review: "Review | None" = None) -> "DedupResult":
    """One record per cluster at ``threshold`` (default: the scan's), chosen by ``keep``; every
    record in no cluster is kept. ``not_duplicates``: reviewed (row_a, row_b) pairs that are not
    duplicates; ``keep_apart``: rows kept whatever they resemble; ``splits``: (row, threshold)
    cuts of clusters (see the module docstring); ``review``: all three, as ``load_review_file`` reads them."""
    if not hasattr(result, "pairs") or not hasattr(result, "evaluated_key"):
        raise AuditorError("usage", f"dedup takes a scan result (auditor.scan(...)), got {type(result).__name__}.",
                           "e.g. dedup(auditor.scan('train.jsonl'), 0.7).")
    if review is not None:
        not_duplicates, keep_apart, splits = review.not_duplicates, review.keep_apart, review.splits
    g = _grouping(result, threshold, keep, not_duplicates, keep_apart, splits)
    inside = g.label >= 0
    kept_of = np.arange(g.label.size)
    kept_of[inside] = g.kept[g.label[inside]]
    drop = np.flatnonzero(kept_of != np.arange(g.label.size))
    kept_rows = np.flatnonzero(kept_of == np.arange(g.label.size))
    against = kept_of[drop]
    jac = pair_jaccard(result, drop, against)
    differs = differing_fields(result.evaluated_keys, drop, against)
    ids = result.fields.ids
    dropped = tuple({"row": int(r), "id": None if ids is None else ids[r], "cluster": int(c), "kept_row": int(k),
                     "reason": "near_duplicate" if d else "identical", "jaccard": j, "differs": list(d)}
                    for r, c, k, j, d in zip(drop.tolist(), g.label[drop].tolist(), against.tolist(), jac, differs))
    return DedupResult(threshold=g.threshold, keep=keep, records=result.records, clusters=int(g.sizes.size),
                       records_in_clusters=int(g.sizes.sum()), kept_rows=tuple(kept_rows.tolist()),
                       dropped=dropped, not_duplicates=g.marks, exact=g.exact,
                       kept_apart=len(keep_apart or ()), splits=len(splits or ()),
                       notices=g.notices + conflict_notices(result.fields, drop, differs, keep),
                       source=result.table.source, fingerprint=result.fingerprint)


def differing_fields(evaluated_keys: dict, rows: np.ndarray, kept: np.ndarray) -> list[tuple]:
    """Per dropped row, the evaluated fields (text, answer, group, label:NAME) whose value differs,
    under the default normaliser, from the record kept in its place (``ScanResult.evaluated_keys``:
    the scan's ids, so nothing is normalised again). A near duplicate with another answer is a
    conflicting label or a stem reused for another question: dropping it is a choice the curator
    should see, not a silent one."""
    names = list(evaluated_keys)
    if not rows.size or not names:
        return [()] * rows.size
    # Which fields differ, per row; then one tuple per distinct combination, not one per row.
    unequal = np.stack([keys[rows] != keys[kept] for keys in evaluated_keys.values()], axis=1)
    combos, which = np.unique(unequal, axis=0, return_inverse=True)
    named = [tuple(n for n, on in zip(names, combo.tolist()) if on) for combo in combos]
    return [named[i] for i in which.reshape(-1).tolist()]


def conflict_notices(fields, rows: np.ndarray, differs: list, keep: str) -> tuple:
    """A note counting the dropped rows that hold an answer, group or label other than the kept
    record's. A dropped row with no value there (missing, null or blank) disagrees with nothing
    and is not counted, though 'differs' names the field."""
    held = {"answer": fields.answer, "group": fields.group, **{f"label:{k}": v for k, v in fields.labels.items()}}
    counts: dict[str, int] = {}
    conflicting = 0
    for r, d in zip(rows.tolist(), differs):
        names = [name for name in d if name != "text" and _held(held[name][r])]
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        conflicting += bool(names)
    if not counts:
        return ()
    listed = ", ".join(f"{name} ({n:,})" for name, n in counts.items())
    if keep == "most_common_answer":
        why = ("the answer kept is the most common in its cluster, the other fields are those of the record "
               "holding it. Review them (the manifest's 'differs').")
    else:
        why = (f"the kept value was chosen by the rule '{keep}', not by agreement. Review them (the manifest's "
               "'differs')" + (", or keep most_common_answer." if "answer" in counts else "."))
    return (f"{conflicting:,} dropped row(s) differ from the record kept in their place in {listed}: "
            f"{why}",)


def _held(value) -> bool:
    return value is not None and bool(value.strip())


def pair_jaccard(result, rows_a, rows_b) -> list:
    """The verified Jaccard of the text shingle sets of each (rows_a[i], rows_b[i]), rounded to 6
    decimals; None when both texts have no shingles. Read from the scan's pairs where they hold
    the pair (the same node: 1.0; a sampled pair: its score); the other records' shingles are
    computed again, with the scan's shingle setting."""
    rows_a, rows_b = np.asarray(rows_a, np.int64), np.asarray(rows_b, np.int64)
    if not rows_a.size:
        return []
    pairs = result.pairs
    out = np.full(rows_a.size, np.nan)
    na, nb = pairs.node_of[rows_a].astype(np.int64), pairs.node_of[rows_b].astype(np.int64)
    out[(na == nb) & (na >= 0)] = 1.0
    if pairs.a.size:
        codes = np.minimum(pairs.a, pairs.b).astype(np.int64) * pairs.n_nodes + np.maximum(pairs.a, pairs.b)
        order = np.argsort(codes, kind="stable")
        wanted = np.minimum(na, nb) * pairs.n_nodes + np.maximum(na, nb)
        pos = np.minimum(np.searchsorted(codes[order], wanted), codes.size - 1)
        found = (codes[order][pos] == wanted) & (na >= 0) & (nb >= 0) & np.isnan(out)
        # distinct nodes have distinct sets: never shown as 1.0, however close
        out[found] = np.minimum(np.round(pairs.jaccard[order][pos[found]], 6), 0.999999)
    todo = np.flatnonzero(np.isnan(out))
    if todo.size:
        text = result.fields.text
        records = np.unique(np.concatenate([rows_a[todo], rows_b[todo]]))
        matrix = shingle_matrix([text[i] for i in records.tolist()], result.settings.shingle)
        computed = jaccard_rows(matrix, np.searchsorted(records, rows_a[todo]),
                                np.searchsorted(records, rows_b[todo]), set_sizes(matrix))
        out[todo] = [np.nan if j is None else j for j in computed]
    return [None if np.isnan(j) else float(j) for j in out.tolist()]


# --------------------------------------------------------------------------- review files

def review_fingerprint(result) -> str:
    """The fingerprint a review file carries: the records and the role fields, whether the roles
    were named or guessed (a review made in the app with guessed roles is for the same data as
    ``dedup --text FIELD`` naming them)."""
    return getattr(result, "data_fingerprint", None) or result.fingerprint


def review_json(result, not_duplicates, threshold=None, keep_apart=(), splits=()) -> str:
    """The review decisions as a small JSON document that ``load_review_file`` reads back (module doc)."""
    marks = _normalise_marks(result, not_duplicates)
    t = result.settings.threshold if threshold is None else float(threshold)
    t = result.pairs.check_threshold(t)
    apart = _normalise_rows(result, keep_apart, "A row kept apart").tolist() if len(keep_apart) else []
    cuts = [[int(r), float(x)] for r, x in sorted({(int(r), float(x)) for r, x in splits})]
    return report.review(_dataset_name(result.table), review_fingerprint(result), t, marks.tolist(), apart, cuts)


def load_review(path_or_text, result) -> tuple:
    """The "not a duplicate" marks of a review file (``load_review_file``): sorted distinct
    (low, high) row pairs."""
    return load_review_file(path_or_text, result).not_duplicates


def load_review_file(path_or_text, result) -> Review:
    """A review file's decisions (a path, or its JSON text), checked against ``result``: the same
    data (fingerprint), rows in range, at most MAX_REVIEW_ITEMS decisions."""
    doc = _read_review(path_or_text)
    if not isinstance(doc, dict) or doc.get("kind") != REVIEW_KIND:
        raise AuditorError("bad_format", "Not an auditor review file (its \"kind\" is not \"auditor-review\").",
                           "Load a file saved by the auditor's review (review_json, or the app's download).")
    if doc.get("version") != REVIEW_VERSION:
        raise AuditorError("bad_format", f"Review file version {doc.get('version')!r:.20} is not supported.",
                           f"This auditor reads version {REVIEW_VERSION}.")
    if doc.get("fingerprint") not in (review_fingerprint(result), result.fingerprint):
        raise AuditorError("usage", f"The review file was made for other data ({doc.get('dataset')!r:.80}, "
                           f"fingerprint {str(doc.get('fingerprint'))[:12]}…), not this dataset "
                           f"({_dataset_name(result.table)!r:.80}, fingerprint {review_fingerprint(result)[:12]}…).",
                           "Load the review with the same data, split, row cap and role fields it was made with.")
    marks, apart, splits = doc.get("not_duplicates"), doc.get("keep_apart", []), doc.get("splits", [])
    if not isinstance(marks, list) or not isinstance(apart, list) or not isinstance(splits, list):
        raise AuditorError("bad_format", "The review file has no \"not_duplicates\" list (or a keep_apart or "
                           "splits that is not a list).", "It holds [[row_a, row_b], ...].")
    total = len(marks) + len(apart) + len(splits)
    if total > MAX_REVIEW_ITEMS:
        raise AuditorError("too_large", f"The review file holds {total:,} decisions: more than the "
                           f"{MAX_REVIEW_ITEMS:,} one review may hold.",
                           "A review is a person's decisions; check it is the right file.")
    return Review(tuple(map(tuple, _normalise_marks(result, marks).tolist())),
                  tuple(_normalise_rows(result, apart, "A row kept apart").tolist()),
                  tuple(_normalise_splits(result, splits, 0.0)))


def _read_review(path_or_text):
    if isinstance(path_or_text, (str, os.PathLike)) and not (isinstance(path_or_text, str)
                                                           and path_or_text.lstrip().startswith("{")):
        path = Path(os.path.expanduser(os.fspath(path_or_text)))
        try:
            if path.exists() and not path.is_dir() and not path.is_file():
                # a FIFO or device (/dev/zero) has no size to check and may never end
                raise AuditorError("not_found", f"Cannot read the review file {path.name!r}: it is not a regular "
                                   "file (a pipe, socket or device).", "Check the path.")
            with open(path, "rb") as fh:
                data = fh.read(REVIEW_MAX_BYTES + 1)    # bounded even if the file grows while read
            if len(data) > REVIEW_MAX_BYTES:
                raise AuditorError("too_large", f"{path.name}: larger than {REVIEW_MAX_BYTES // 1024 ** 2} MB, too "
                                   "large for a review file.", "Check it is the right file.")
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuditorError("not_found", f"Cannot read the review file {path.name!r} ({exc}).",
                               "Check the path.") from None
    elif isinstance(path_or_text, (str, bytes)):
        text = path_or_text
    else:
        raise AuditorError("usage", f"A review is a file path or its JSON text, got {type(path_or_text).__name__}.",
                           "Pass the path of a review file.")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise AuditorError("bad_format", f"The review file is not valid JSON ({str(exc)[:120]}).",
                           "Load a file saved by the auditor's review.") from None


def _dataset_name(table) -> str:
    return table.source + (f" ({table.config}/{table.split})" if table.config else
                           f" ({table.split})" if table.split else "")


# --------------------------------------------------------------------------- writing

def input_format(table) -> str:
    """The format the table was read from: jsonl, json, csv, tsv or parquet (a Hub split read from
    its Parquet files: parquet; other hub data and bundled examples: jsonl)."""
    fmt = getattr(table, "format", None)
    if fmt:
        return fmt
    if getattr(table, "hub_parquet", None) is not None:
        return "parquet"
    for name in table.files:
        fmt = format_of(Path(str(name)))
        if fmt:
            return fmt
    return "jsonl"


def check_uncompressed(path) -> str:
    """The output's file name, refused when it names a compression (.gz ...): the copy is written
    uncompressed (as the input's format, it was a file under a .gz name that no gzip reader, this
    tool's included, reads)."""
    name = Path(os.fspath(path)).name
    codec = codec_of(Path(name))
    if codec:
        raise AuditorError("usage", f"Cannot write the deduplicated data as {name!r}: it is written uncompressed, "
                           f"not as {codec} says.", f"Name it without {codec} (e.g. {name[:-len(codec)]}) and "
                           "compress it afterwards.")
    return name


def output_format(path, table=None) -> str:
    """The format a path's extension names (.jsonl/.ndjson, .json, .csv, .tsv, .parquet/.pq), else
    the input's format when ``table`` is given; a compressed name (.gz ...) is refused."""
    name = check_uncompressed(path)
    fmt = format_of(Path(name))
    if fmt:
        return fmt
    if table is not None:
        return input_format(table)
    raise AuditorError("usage", f"Cannot tell the output format of {name!r} from its extension.",
                       "Use .jsonl, .json, .csv, .tsv or .parquet.")


def write_dedup(result, dedup_result: DedupResult, path, manifest_path=None, source=None, stamps=None,
                token=None, fetch_into=None) -> list:
    """The kept records, each equal to its input record, to ``path`` (format from its extension,
    else the input's), and the manifest of every dropped row to ``manifest_path`` (CSV when it
    ends .csv, JSON otherwise; default ``path`` + ".manifest.json"). Both written atomically.
    ``source``: the local path (file, folder or glob) the scan read, when it was one: JSONL read
    whole is then copied line for line (a table names its source for display only), provided its
    files are as ``stamps`` (``decontaminate.local_stamps`` taken before the scan) say; without
    stamps, the records held are written. A .parquet copy of a Hub split read from its Parquet files
    is their rows as stored, fetched with ``token`` at the commit read (``copies.hub_files_copied``;
    ``fetch_into``: a server's folder for them, ``hub.FetchInto``). Returns notices."""
    if dedup_result.fingerprint and dedup_result.fingerprint != result.fingerprint:
        raise AuditorError("usage", "This dedup result was computed on other data.", "Run dedup on this scan result.")
    if not isinstance(path, (str, os.PathLike)) or os.fspath(path) in ("", "-"):
        raise AuditorError("usage", "The deduplicated data needs a file path (not stdout).",
                           "Give e.g. --out train.dedup.jsonl.")
    manifest_path = manifest_path or f"{os.fspath(path)}.manifest.json"
    check_outputs([], [("output", path), ("manifest", manifest_path)])
    fmt = output_format(path, result.table)
    rows = result.table.rows
    table = result.table
    notices = []
    files = (files_copied_as_written(source, table.split, fmt, table.truncated, notices)
             if source is not None and stamps else None)
    if not files:
        files, hub_notices = hub_files_copied(table.hub_parquet, fmt, len(rows), table.truncated, token,
                                              fetch_into)
        notices += hub_notices
    # The previous manifest goes as the new file takes its place (``outputs.retire``).
    retire_manifest = partial(retire, manifest_path)
    # the copy takes its place only once its manifest is written: a failed manifest leaves neither new
    with written_together([path, manifest_path]):
        if files:
            # Local JSONL read whole: each kept record's line as written (number forms such as 1.50 or
            # 1e5, escapes, key order), as --decontaminate copies; the file must still hold the records.
            # CSV/TSV alike: each kept record's text after the header as written (the file's dialect).
            # A mask, not setdiff1d, whose sorted copies of every row number peaked 90 MB above the kept
            # rows for 2.2M records (3.2x the bytes read, where the scan had stayed under 3x).
            kept = np.zeros(len(rows), dtype=bool)
            kept[np.fromiter(dedup_result.kept_rows, dtype=np.int64, count=len(dedup_result.kept_rows))] = True
            dropped = np.flatnonzero(~kept)
            del kept
            # (a cut table's files are a Hub split's: its first rows are copied)
            copier(fmt, table.truncated)(files, dropped, len(rows), path, source=table.source, stamps=stamps or (),
                                         before_replace=retire_manifest)
        else:
            notices += write_rows(select(rows, dedup_result.kept_rows), path, fmt=fmt,
                                  before_replace=retire_manifest)
        write_manifest(result, dedup_result, manifest_path)
    return notices


def manifest_rows(result, dedup_result: DedupResult) -> list:
    """One dict per dropped row: row, id (when there is an id role), cluster, kept_row, reason, jaccard and
    differs (the evaluated fields whose value is not the kept record's)."""
    has_id = result.roles.id is not None
    return [{k: v for k, v in d.items() if k != "id" or has_id} for d in dedup_result.dropped]


def write_manifest(result, dedup_result: DedupResult, path) -> None:
    rows = manifest_rows(result, dedup_result)
    if os.fspath(path).lower().endswith(".csv"):
        fields = ["row", *(["id"] if result.roles.id is not None else []), "cluster", "kept_row", "reason",
                  "jaccard", "differs"]
        rows = [{**r, "differs": ";".join(r["differs"])} for r in rows]
        write_text(path, evidence_csv(rows, columns=fields), errors="backslashreplace")
        return
    write_text(path, report.manifest(_dataset_name(result.table), result.fingerprint, dedup_result, rows),
               errors="backslashreplace")
