"""The cluster browser's data: the clusters at a threshold after the page's review (cached), the
counts every tab shows from them, filters and pages, and the split a cluster offers. No widgets."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from auditor.clusters import dedup_curve
from auditor.dedup import pair_jaccard, ranked_clusters

from . import curve_view, state

CLUSTERS_PAGE = 20             # clusters per page of the list
MEMBERS_PAGE = 20              # records per page of one cluster
NO_FILTERS = {"search": "", "min": 2, "max": 0, "kind": "all"}
KINDS = ("all", "identical", "variant")


def review_of(st: dict) -> dict:
    """The page's review: marks (pairs not duplicates), rows kept apart, cluster splits."""
    return {"marks": [tuple(map(int, m)) for m in st.get("marks") or ()],
            "apart": [int(r) for r in st.get("apart") or ()],
            "splits": [(int(r), float(t)) for r, t in st.get("splits") or ()]}


def ranked(result, key, t: float, keep: str, review: dict) -> tuple:
    """Every cluster at ``t`` after the review, largest first (cached per audit, threshold, rule, review)."""
    cache_key = (key, t, keep, tuple(review["marks"]), tuple(review["apart"]), tuple(review["splits"]))
    hit = state.CLUSTERS.get(cache_key)
    if hit is None:
        hit = ranked_clusters(result, threshold=t, keep=keep, not_duplicates=review["marks"],
                              keep_apart=review["apart"], splits=review["splits"])
        state.CLUSTERS.put(cache_key, hit, sum(64 + 8 * c.size for c in hit))
    return hit


def tally(result, clusters) -> dict:
    """The counts every tab shows at a threshold: clusters, records in them, rows kept and dropped."""
    in_clusters = sum(c.size for c in clusters)
    return {"records": result.records, "clusters": len(clusters), "in_clusters": in_clusters,
            "identical": sum(1 for c in clusters if c.identical), "dropped": in_clusters - len(clusters),
            "kept": result.records - in_clusters + len(clusters),
            "largest": max((c.size for c in clusters), default=0)}


def curve(result, key) -> list:
    """What dedup does at every threshold of the grid (cached per audit)."""
    hit = state.CURVES.get(key)
    if hit is None:
        hit = dedup_curve(result.pairs, curve_view.grid(result.pairs.min_threshold))
        state.CURVES.put(key, hit, 200 * len(hit))
    return hit


def filtered(result, clusters, filters: dict) -> list:
    """(rank, cluster) of the clusters passing the filters: size range, kind, words in any member."""
    lo, hi = int(filters.get("min") or 2), int(filters.get("max") or 0)
    kind = filters.get("kind") or "all"
    words = (filters.get("search") or "").strip().lower()
    text = result.fields.text
    out = []
    for rank, c in enumerate(clusters):
        if c.size < lo or (hi and c.size > hi):
            continue
        if kind != "all" and c.identical != (kind == "identical"):
            continue
        if words and not any(words in (text[r] or "").lower() for r in c.rows):
            continue
        out.append((rank, c))
    return out


def split_offer(result, c, t: float) -> dict | None:
    """The cut "split this cluster" makes: just above its weakest spanning-forest link (the forest
    decides connectivity at every threshold), with the parts' sizes and the rows it keeps; None
    for a cluster of identical texts (no link to cut)."""
    pairs = result.pairs
    rows = np.asarray(c.rows, np.int64)
    nodes = np.unique(pairs.node_of[rows][pairs.node_of[rows] >= 0])
    k = pairs.forest_upto(t)
    fa, fb, fj = pairs.forest_a[:k], pairs.forest_b[:k], pairs.forest_jaccard[:k]
    inside = np.isin(fa, nodes) & np.isin(fb, nodes)
    if not inside.any():
        return None
    weakest = float(fj[inside].min())
    cut = np.ceil((weakest + 1e-7) * 1e6) / 1e6
    if cut > 1.0:
        return None
    keep = inside & (fj >= cut - 1e-9)
    local = {int(n): i for i, n in enumerate(nodes.tolist())}
    a = np.asarray([local[int(x)] for x in fa[keep].tolist()], np.int64)
    b = np.asarray([local[int(x)] for x in fb[keep].tolist()], np.int64)
    graph = sp.coo_matrix((np.ones(a.size, np.int8), (a, b)), shape=(nodes.size, nodes.size))
    _, comp = connected_components(graph, directed=False)
    member_nodes = np.asarray([local[int(n)] for n in pairs.node_of[rows].tolist() if n >= 0], np.int64)
    sizes = np.bincount(comp[member_nodes])
    sizes = sorted((int(x) for x in sizes if x), reverse=True)
    dropped_after = sum(x - 1 for x in sizes if x >= 2)
    return {"weakest": weakest, "cut": round(float(cut), 6), "sizes": sizes, "gain": (c.size - 1) - dropped_after}


def member_jaccards(result, c, page: int) -> list:
    """Each member on ``page``'s Jaccard with the record kept (None for the kept record itself)."""
    members = list(c.rows)[page * MEMBERS_PAGE:(page + 1) * MEMBERS_PAGE]
    others = [r for r in members if r != c.kept_row]
    scores = dict(zip(others, pair_jaccard(result, others, [c.kept_row] * len(others)))) if others else {}
    return [scores.get(r) for r in members]
