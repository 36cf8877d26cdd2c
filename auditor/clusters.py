"""Step 5, cluster: connected components of the verified pairs at any threshold, their
classification, and the threshold curve — all from one cached ``Pairs``.

Components come from the maximum spanning forest that ``Pairs`` keeps: the forest's edges
with Jaccard >= t join exactly the records that the graph of all pairs >= t joins.

A cluster is a component of two or more records. It is *identical* when every
evaluated field (text, answer, group, labels) is equal under the default normaliser
across its records, and a *variant* (shared stem) otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .near import Pairs

GIANT_SHARE = 0.05     # a component holding more than 5% of the records is flagged


@dataclass(frozen=True)
class Clusters:
    threshold: float
    label: np.ndarray        # (n_records,) component id, -1 for records in no cluster
    sizes: np.ndarray        # records per cluster, indexed by cluster id
    identical: np.ndarray    # bool per cluster

    @property
    def count(self) -> int:
        return int(self.sizes.size)

    def members(self, cluster: int) -> np.ndarray:
        return np.flatnonzero(self.label == cluster)


def cluster_labels(pairs: Pairs, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Per record, its cluster id (numbered by first record; -1 if in none), and cluster sizes."""
    k = pairs.forest_upto(threshold)
    n_nodes = pairs.n_nodes
    if n_nodes == 0:  # every text empty: nothing can cluster
        return np.full(pairs.n_records, -1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    graph = sp.coo_matrix((np.ones(k, dtype=np.int8), (pairs.forest_a[:k], pairs.forest_b[:k])),
                          shape=(n_nodes, n_nodes))
    _, node_component = connected_components(graph, directed=False)
    record_component = np.where(pairs.node_of >= 0, node_component[np.maximum(pairs.node_of, 0)], -1)
    sizes = np.bincount(record_component[record_component >= 0], minlength=n_nodes if n_nodes else 0)
    in_cluster = (record_component >= 0) & (sizes[np.maximum(record_component, 0)] >= 2)
    # Renumber the clusters 0.. in order of their first record, so ids are stable.
    comp = record_component[in_cluster]
    _, first_idx = np.unique(comp, return_index=True)
    ordered = comp[np.sort(first_idx)]
    new_id = np.full(max(n_nodes, 1), -1, dtype=np.int64)
    new_id[ordered] = np.arange(ordered.size)
    label = np.full(pairs.n_records, -1, dtype=np.int64)
    label[in_cluster] = new_id[comp]
    return label, np.bincount(label[label >= 0], minlength=ordered.size)


def clusters_at(pairs: Pairs, threshold: float, evaluated_key: np.ndarray) -> Clusters:
    """Clusters at ``threshold``; ``evaluated_key`` gives each record an id of its evaluated
    fields under the default normaliser (equal ids = identical in every evaluated field)."""
    label, sizes = cluster_labels(pairs, threshold)
    inside = label >= 0
    distinct = np.unique(np.stack([label[inside], evaluated_key[inside]], axis=1), axis=0) \
        if inside.any() else np.zeros((0, 2), np.int64)
    keys_per_cluster = np.bincount(distinct[:, 0], minlength=sizes.size)
    return Clusters(threshold=threshold, label=label, sizes=sizes, identical=keys_per_cluster == 1)


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    pairs: int
    clusters: int
    clusters_per_1000: float
    jump_vs_previous: float | None    # clusters here / clusters at the previous (higher) threshold
    # A 95% interval for ``pairs`` when the work budget left it estimated (``Pairs.pairs_interval``);
    # kept out of the dataclass's own serialisation, so reports add its keys only when there is one.
    pairs_interval: tuple | None = field(default=None, repr=False)

    @property
    def pairs_estimated(self) -> bool:
        return self.pairs_interval is not None


def curve(pairs: Pairs, thresholds: list[float]) -> list[CurvePoint]:
    """Pairs and clusters at each threshold, highest first. Each threshold is a prefix of
    the score-sorted forest edges, so nothing is searched again; components are merged
    incrementally (each threshold adds only its new edges to the previous components)."""
    points: list[CurvePoint] = []
    n = max(pairs.n_records, 1)
    component = np.arange(pairs.n_nodes)          # each node's component so far
    n_components = pairs.n_nodes
    done = 0                                      # pairs already merged
    for t in sorted(thresholds, reverse=True):
        k = pairs.forest_upto(t)
        if k > done:
            new_a, new_b = component[pairs.forest_a[done:k]], component[pairs.forest_b[done:k]]
            graph = sp.coo_matrix((np.ones(new_a.size, dtype=np.int8), (new_a, new_b)),
                                  shape=(n_components, n_components))
            n_components, merged = connected_components(graph, directed=False)
            component = merged[component]
            done = k
        records = np.bincount(component, weights=pairs.weight, minlength=n_components)
        clusters = int((records >= 2).sum())            # a cluster holds two or more records
        previous = points[-1].clusters if points else None
        jump = None if not previous else round(clusters / previous, 4)
        points.append(CurvePoint(threshold=round(t, 6), pairs=pairs.record_pairs(t), clusters=clusters,
                                 clusters_per_1000=round(1000 * clusters / n, 4), jump_vs_previous=jump,
                                 pairs_interval=pairs.pairs_interval(t)))
    return points


@dataclass(frozen=True)
class DedupPoint:
    """What keeping one record per cluster at ``threshold`` does: records kept and dropped, with the
    clusters, the records in them and the largest cluster (records)."""
    threshold: float
    pairs: int
    clusters: int
    records_in_clusters: int
    largest_cluster: int
    rows_dropped: int
    rows_kept: int


def dedup_curve(pairs: Pairs, thresholds) -> list[DedupPoint]:
    """A DedupPoint per threshold, in ascending order of threshold, from one pass over the
    score-sorted forest (as ``curve``): any thresholds in the searched range, nothing searched again."""
    points: list[DedupPoint] = []
    component = np.arange(pairs.n_nodes)
    n_components, done = pairs.n_nodes, 0
    for t in sorted({round(float(x), 6) for x in thresholds}, reverse=True):
        k = pairs.forest_upto(t)
        if k > done:
            new_a, new_b = component[pairs.forest_a[done:k]], component[pairs.forest_b[done:k]]
            graph = sp.coo_matrix((np.ones(new_a.size, dtype=np.int8), (new_a, new_b)),
                                  shape=(n_components, n_components))
            n_components, merged = connected_components(graph, directed=False)
            component = merged[component]
            done = k
        records = np.bincount(component, weights=pairs.weight, minlength=n_components).astype(np.int64)
        clustered = records[records >= 2]
        dropped = int(clustered.sum()) - int(clustered.size)
        points.append(DedupPoint(threshold=t, pairs=pairs.record_pairs(t), clusters=int(clustered.size),
                                 records_in_clusters=int(clustered.sum()), largest_cluster=int(clustered.max(initial=0)),
                                 rows_dropped=dropped, rows_kept=pairs.n_records - dropped))
    return points[::-1]
