"""The search cut into pieces that run independently and merge exactly: what an executor maps.

``plan`` does the part that needs the whole collection: identical sets collapse into nodes,
nodes that only private shingles tell apart into classes, prefixes under the global rare-first
order and template groups (``dense.plan``). The pieces are then:

- a template group each (``dense_group``: ``dense.process`` with its nodes numbered 0..k-1);
- ``exact``: the ranked prefix columns cut into ranges of equal estimated work
  (``column_ranges``); a node goes to every range holding one of its joined prefix shingles, and
  a pair is verified only in the range of its smallest shared prefix shingle
  (``join_partition``), so it is counted once, with the local ``CandidateFilter`` and its exact
  shared-prefix count: the candidates verified are the local search's;
- ``lsh``: every (node, band) row routed by a hash of its band key (``band_partitions``); a
  partition emits a pair only in the first band where the two signatures agree
  (``lsh_group``), so the candidates are the local LSH's, each once.

Each piece verifies its pairs (true Jaccard) into its own ``PairSink`` and keeps only that sink's
bounded result (``bounded``): score-bin counts, a maximum spanning forest (the union of
per-piece forests contains a maximum spanning forest of the whole graph) and the best pairs of
each 0.01 stratum. The samples are folded as pieces arrive (``Pieces.keep``); ``merge`` adds the
counts and offers the forests to one sink in the plan's order: the same counts at every
threshold, the same components, the same pair sample. Pieces slice their rows from the plan's
arrays (``shared_arrays``), which an executor ships once. A piece verifies every candidate it
owns, so its counts are exact where the one-pass search (``find_pairs``) may estimate them past
its work budget.

``PieceStore`` keeps finished pieces in a folder (``--shard-dir``), signed and keyed by the plan
(``io.resume``); ``Pieces`` reads them back or computes and saves them. ``find_pairs_in_pieces``
runs the plan in this process, piece after piece, so a killed scan restarts from its finished
pieces; ``distributed.near`` maps the same pieces over Ray tasks.
"""
from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..env import env_int
from ..errors import AuditorError
from ..io import resume
from ..io.outputs import atomic_write
from ..parallel import thread_map
from ..settings import MAX_EXACT_CANDIDATES
from ..shingles import entry_rows, kept_entries, rows_in_place, set_sizes
from . import dense
from .classes import NodeClasses, expand, node_classes
from .lsh import BATCH, band_keys, choose_bands, group_runs, minhash_signatures, splitmix64
from .prefix import (PRODUCT_BUDGET, CandidateFilter, collapse_identical, estimated_candidates, prefix_matrix,
                     size_fits)
from .result import SCORE_SCALE, Pairs, checked_search
from .sink import PairSink, SampleFold
from .verifier import Verifier

ENTRY_COST = 32               # join work of one (node, shared prefix shingle) entry, in product pairs
LOCAL_PARTITIONS = 16         # pieces of a resumable run in one process: what a restart skips
PIECE_FILE_VERSION = 1        # the saved piece's format (part of the run key)
# Fault injection for the resume tests: after saving this many pieces the run waits (to be killed).
HOLD_AFTER_ENV = "AUDITOR_HOLD_AFTER_PIECES"


# --------------------------------------------------------------------------- the plan

@dataclass
class PiecePlan:
    """What every piece reads: the searched rows (nodes, or class representatives), their
    weights and multiplicities, the method chosen, and for ``exact`` the prefixes and the
    template groups with the joined prefixes (``dense.plan``)."""
    n_records: int
    node_of: np.ndarray
    node_weight: np.ndarray
    classes: NodeClasses | None
    nodes: sp.csr_matrix
    weight: np.ndarray
    multiplicity: np.ndarray | None
    min_threshold: float
    method: str
    groups: list
    prefixes: sp.csr_matrix | None = None
    joined: sp.csr_matrix | None = None

    @property
    def common(self) -> dict:
        return dict(n_records=self.n_records, node_of=self.node_of, min_threshold=self.min_threshold)


def plan(matrix: sp.csr_matrix, threshold: float, method: str = "auto",
         max_exact_candidates: int = MAX_EXACT_CANDIDATES) -> PiecePlan:
    """The plan of a search at ``threshold`` (see the module docstring)."""
    min_threshold = checked_search(threshold, method)
    node_of, node_weight, nodes = collapse_identical(matrix)
    classes = node_classes(nodes, node_weight)
    weight, multiplicity = (node_weight, None) if classes is None else (classes.weight, classes.count)
    if classes is not None:        # nodes collapsed from the matrix are this plan's own to write over
        nodes = nodes[classes.rep] if nodes is matrix else rows_in_place(nodes, classes.rep)
    nodes = nodes if nodes.has_sorted_indices else nodes.sorted_indices()
    prefixes = prefix_matrix(nodes, min_threshold)
    groups, joined = dense.plan(nodes, prefixes)
    if method == "auto":
        method = "exact" if estimated_candidates(joined) <= max_exact_candidates else "lsh"
    return PiecePlan(matrix.shape[0], node_of, node_weight, classes, nodes, weight, multiplicity, min_threshold,
                     method, groups, prefixes if method == "exact" else None, joined if method == "exact" else None)


def column_ranges(df: np.ndarray, partitions: int) -> list[tuple[int, int]]:
    """Contiguous ranges of ranked prefix columns with about equal join work: the pairs a
    column makes (df choose 2) plus ENTRY_COST per node holding it (merging its lists)."""
    df = df.astype(np.float64)
    cost = np.cumsum(df * (df - 1) / 2 + ENTRY_COST * df * (df >= 2))
    total = cost[-1] if cost.size else 0.0
    if total <= 0:
        return []
    cuts = np.searchsorted(cost, total * np.arange(1, partitions) / partitions, side="left") + 1
    edges = np.unique(np.r_[0, np.minimum(cuts, df.size), df.size])
    return [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]


def exact_partitions(plan: PiecePlan, partitions: int):
    """Yields, per join partition: (node ids, column range lo, hi). A node goes to a partition when
    one of its joined prefix shingles in the range is held by another node too (a shingle held
    once makes no pair)."""
    joined = plan.joined
    m = joined.shape[1]
    df = np.bincount(joined.indices, minlength=m)
    useful = df[joined.indices] >= 2
    for lo, hi in column_ranges(df, partitions):
        inside = useful & (joined.indices >= lo) & (joined.indices < hi)
        ids = np.unique(entry_rows(joined.indptr, np.flatnonzero(inside)))
        if ids.size >= 2:
            yield ids, lo, hi


def shared_arrays(plan: PiecePlan) -> tuple:
    """What the pieces slice their rows from: (nodes, prefixes, joined prefixes with sorted
    indices, dense group of each node or -1, weights, multiplicities or None). An executor ships
    it once (``Pieces.share``), not a slice per piece: a node is in several join partitions."""
    n = plan.nodes.shape[0]
    joined = plan.joined
    if joined is not None and not joined.has_sorted_indices:
        joined = joined.sorted_indices()
    group = dense.group_of(n, plan.groups) if plan.groups else np.full(n, -1, np.int64)
    return plan.nodes, plan.prefixes, joined, group, plan.weight, plan.multiplicity


# --------------------------------------------------------------------------- the pieces

def join_partition(ids, nodes, prefixes, joined, group, weight, lo: int, hi: int, min_threshold: float,
                   multiplicity=None) -> dict:
    """The pairs owned by one partition (their smallest shared joined prefix shingle is in
    [lo, hi)), verified into a local PairSink (node ids are positions in ``ids``; ``multiplicity``:
    nodes per row when rows are classes, ``near.classes``)."""
    n = ids.size
    sizes = set_sizes(nodes)
    sink = PairSink(weight, min_threshold, multiplicity)
    verifier = Verifier(nodes, min_threshold, sink)
    check = CandidateFilter(prefixes, sizes, min_threshold)
    cols = joined.indices
    part = kept_entries(joined, (cols >= lo) & (cols < hi))
    before = kept_entries(joined, cols < lo)
    after = kept_entries(joined, cols >= hi)
    after_len = np.diff(after.indptr)
    transposed = part.T.tocsr().astype(np.float32)          # counts: one float32 operand (prefixes are bool)
    bounds = np.cumsum(part @ np.diff(transposed.indptr).astype(np.float64))
    blocks, start = [], 0
    while start < n:                                      # rows in blocks of about PRODUCT_BUDGET entries
        limit = (bounds[start - 1] if start else 0.0) + PRODUCT_BUDGET
        stop = max(start + 1, int(np.searchsorted(bounds, limit, side="right")))
        blocks.append((start, stop))
        start = stop

    def run(block):
        start, stop = block
        product = (part[start:stop] @ transposed).tocoo()
        rows = product.row.astype(np.int64) + start
        other = product.col.astype(np.int64)
        shared = product.data.astype(np.int64)            # shared prefix shingles in this range
        keep = (other > rows) & ((group[rows] < 0) | (group[rows] != group[other]))
        rows, other, shared = rows[keep], other[keep], shared[keep]
        # The overlap bound with every shared prefix shingle the pair could have after the range:
        # cheap, and it drops most pairs before their lists are merged.
        keep = check(rows, other, shared + np.minimum(after_len[rows], after_len[other]))
        rows, other, shared = rows[keep], other[keep], shared[keep]
        if lo > 0:                                        # owned: no shared prefix shingle before lo
            owned = _intersections(before, rows, other) == 0
            rows, other, shared = rows[owned], other[owned], shared[owned]
        if after.nnz:                                     # the exact count, as the local product gives it
            shared = shared + _intersections(after, rows, other)
        keep = check(rows, other, shared)
        return verifier.verify_light(rows[keep], other[keep])

    candidates = 0
    # Blocks on parallel.WORKERS threads (a Ray task sets one), added to the sink in block order.
    for kept, count in thread_map(run, blocks):
        verifier.add(kept)
        candidates += count
    return bounded(sink, candidates)


def _intersections(matrix: sp.csr_matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|row a[i] & row b[i]| (sorted indices)."""
    out = np.empty(a.size, np.int64)
    if a.size:
        from ..kernels import intersections     # numba: compiled on first use
        intersections(matrix.indptr.astype(np.int64), matrix.indices, a, b, out)
    return out


def dense_group(nodes, weight, min_threshold: float, multiplicity=None) -> dict:
    """One template group (``dense.process``), its nodes numbered 0..k-1."""
    sink = PairSink(weight, min_threshold, multiplicity)
    scored = dense.process(nodes, dense.DenseGroup(ids=np.arange(nodes.shape[0]), heavy=np.zeros(0, np.int64)),
                           min_threshold, sink)
    return bounded(sink, scored)


def join_piece(shared: tuple, ids: np.ndarray, lo: int, hi: int, min_threshold: float) -> dict:
    """The join partition of nodes ``ids`` and columns [lo, hi), its rows sliced from ``shared``
    (``shared_arrays``)."""
    nodes, prefixes, joined, group, weight, multiplicity = shared
    return join_partition(ids, nodes[ids], prefixes[ids], joined[ids], group[ids], weight[ids], lo, hi,
                          min_threshold, None if multiplicity is None else multiplicity[ids])


def dense_piece(shared: tuple, ids: np.ndarray, min_threshold: float) -> dict:
    """The template group of nodes ``ids``, its rows sliced from ``shared`` (``shared_arrays``)."""
    nodes, _, _, _, weight, multiplicity = shared
    return dense_group(nodes[ids], weight[ids], min_threshold, None if multiplicity is None else multiplicity[ids])


def band_partitions(keys: np.ndarray, lo: int, hi: int, partitions: int) -> np.ndarray:
    """The partition of each (node, band) row of nodes lo..hi-1 (node-major): a hash of the band
    and its key, so nodes with equal band values meet in one partition."""
    bands = keys.shape[1]
    route = splitmix64(keys[lo:hi].astype(np.uint64) ^ splitmix64(np.arange(bands, dtype=np.uint64)))
    return (route.reshape(-1) % np.uint64(partitions)).astype(np.int32)


def lsh_group(node: np.ndarray, band: np.ndarray, keys: np.ndarray, nodes: sp.csr_matrix, weight: np.ndarray,
              min_threshold: float, multiplicity=None, group=None) -> dict:
    """One partition of (node, band) rows: per band, the nodes with equal keys; a pair is
    proposed only in the first band where the two agree (``band_first_pairs``), then verified
    into a local sink. Node ids in the result are global (rows of ``nodes``)."""
    ids = np.unique(node)                  # this partition's nodes; the sink numbers them 0..
    local = nodes[ids]
    sizes = set_sizes(local)
    sink = PairSink(weight[ids], min_threshold, None if multiplicity is None else multiplicity[ids])
    verifier = Verifier(local, min_threshold, sink)
    from ..kernels import band_first_pairs      # numba: compiled on first use
    out_a, out_b = np.empty(BATCH, np.int64), np.empty(BATCH, np.int64)
    candidates = 0
    for b in np.unique(band).tolist():
        members = np.sort(node[band == b])
        bucket = keys[members, b]
        if group is None:
            order = np.argsort(bucket, kind="stable")
            skip_to = np.arange(1, members.size + 1, dtype=np.int64)
        else:                       # a dense group's members as one run, skipped (``near.lsh``)
            order = np.lexsort((members, group[members], bucket))
            skip_to = group_runs(bucket[order], group[members][order])
        ordered = bucket[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        ends = np.r_[starts[1:], ordered.size]
        multi = ends - starts > 1
        state = np.array([0, -1, 0], np.int64)
        starts, ends, order = starts[multi].astype(np.int64), ends[multi].astype(np.int64), members[order]
        while state[0] < starts.size:
            k = band_first_pairs(order, starts, ends, keys, b, state, out_a, out_b, skip_to)
            # Verified batch by batch, so memory stays at one batch however large a bucket is.
            a, c = np.searchsorted(ids, out_a[:k]), np.searchsorted(ids, out_b[:k])
            candidates += k
            fits = size_fits(sizes, a, c, min_threshold)
            verifier.add(verifier.verify_light(a[fits], c[fits])[0])
    return map_ids(ids, bounded(sink, candidates))


# --------------------------------------------------------------------------- merging

def bounded(sink: PairSink, candidates: int) -> dict:
    """A piece's result: its sink's counts, forest and sample (bounded by its nodes)."""
    r = sink.result(n_records=0, node_of=np.zeros(0, np.int64), min_threshold=sink.base / SCORE_SCALE)
    return {"bins": r.counts.bins, "node_pairs": r.counts.node_pairs, "record_pairs": r.counts.record_pairs,
            "forest": (r.forest_a, r.forest_b, r.forest_jaccard), "sample": (r.a, r.b, r.jaccard),
            "complete": r.complete, "candidates": int(candidates)}


def map_ids(ids, piece: dict) -> dict:
    """A piece's local node numbers (positions in the ascending ``ids``) as global ones; the
    order of ids is kept, so a < b and the sample's order still hold."""
    for key in ("forest", "sample"):
        a, b, j = piece[key]
        piece[key] = (ids[a], ids[b], j)
    return piece


def merge(plan: PiecePlan, pieces: list[dict], samples: SampleFold, **fields) -> Pairs:
    """One Pairs from the pieces (in the plan's order) and their folded samples (``Pieces``):
    counts added, forests offered to one PairSink, class pairs expanded back to node pairs. The
    sample's pairs are not offered to the forest: the forests' union already joins every verified
    pair's ends at its score, so they would change no component at any threshold (only, rarely,
    which of two edges in one score bin the forest holds)."""
    sink = PairSink(plan.weight, plan.min_threshold, plan.multiplicity)
    size = sink.node_hist.size
    for piece in pieces:
        at = piece["bins"] - sink.base
        node_hist, record_hist = np.zeros(size, np.int64), np.zeros(size, np.int64)
        node_hist[at], record_hist[at] = piece["node_pairs"], piece["record_pairs"]     # bins are distinct
        sink.add_counts(node_hist, record_hist)
    for piece in pieces:
        sink.add(*piece["forest"], counted=True, sample=False)
    *sample, complete = samples.result()
    sink.set_sample(*sample, complete)
    candidates = sum(p["candidates"] for p in pieces)
    pairs = sink.result(**plan.common, candidates=candidates, **fields)
    if plan.classes is None:
        return pairs
    return expand(pairs, plan.classes, weight=plan.node_weight, **plan.common, **fields, candidates=candidates)


def dense_groups_field(plan: PiecePlan) -> dict:
    """The report's ``dense_groups`` (template group sizes), as the one-pass search gives it."""
    sizes = tuple(int(g.ids.size) for g in plan.groups)
    return {"dense_groups": sizes} if (sizes or plan.method == "exact") else {}


# --------------------------------------------------------------------------- saved pieces

EMPTY = {"empty": True}       # an LSH partition no row was routed to: nothing to merge
_ARRAYS = {"bins": "i8", "node_pairs": "i8", "record_pairs": "i8"}
_TRIPLES = ("forest", "sample")                 # (a int64, b int64, jaccard float64)


def matrix_fingerprint(matrix: sp.csr_matrix) -> str:
    """A hash of the shingle matrix (its shape, rows and shingle ids): what the search reads."""
    matrix = matrix if matrix.has_sorted_indices else matrix.sorted_indices()
    digest = hashlib.sha256(repr(matrix.shape).encode())
    for part in (matrix.indptr, matrix.indices, matrix.data):
        digest.update(np.ascontiguousarray(part, dtype=np.dtype(part.dtype).newbyteorder("<")).tobytes())
        digest.update(str(part.dtype).encode())
    return digest.hexdigest()


def run_key(matrix: sp.csr_matrix, plan: PiecePlan, partitions: int, num_perm: int, seed: int) -> str:
    """The key saved pieces are bound to: what the search reads, its settings and its cut."""
    lsh = plan.method == "lsh"
    return resume.run_key({"matrix": matrix_fingerprint(matrix), "min_threshold": plan.min_threshold,
                           "method": plan.method, "num_perm": num_perm if lsh else None,
                           "seed": seed if lsh else None, "partitions": partitions, "version": PIECE_FILE_VERSION})


def _encode(values: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype="<" + dtype).tobytes()).decode("ascii")


def _decode(text, dtype: str) -> np.ndarray:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    return np.frombuffer(raw, dtype="<" + dtype).astype(dtype)


def encode_piece(piece: dict) -> dict:
    """A piece as JSON (arrays as base64 of their little-endian bytes: exact, and compact)."""
    if piece is EMPTY:
        return dict(EMPTY)
    out = {name: _encode(piece[name], dtype) for name, dtype in _ARRAYS.items()}
    for name in _TRIPLES:
        a, b, j = piece[name]
        out[name] = [_encode(a, "i8"), _encode(b, "i8"), _encode(j, "f8")]
    return {**out, "complete": bool(piece["complete"]), "candidates": int(piece["candidates"])}


def decode_piece(data: dict) -> dict | None:
    """The piece, or None when ``data`` is not one (then it is computed again)."""
    try:
        if data == EMPTY:
            return EMPTY
        piece = {name: _decode(data[name], dtype) for name, dtype in _ARRAYS.items()}
        for name in _TRIPLES:
            a, b, j = data[name]
            piece[name] = (_decode(a, "i8"), _decode(b, "i8"), _decode(j, "f8"))
        complete, candidates = data["complete"], data["candidates"]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    sizes = {piece[name].size for name in _ARRAYS}
    if (len(sizes) != 1 or any(len({x.size for x in piece[name]}) != 1 for name in _TRIPLES)
            or not isinstance(complete, bool) or not isinstance(candidates, int) or isinstance(candidates, bool)):
        return None
    return {**piece, "complete": complete, "candidates": candidates}


class PieceStore:
    """Finished pieces in a folder: ``near-KEY-NNNNN.json``, written atomically, signed and checked
    when read (``io.resume``): a file this run's code did not write for this plan is not used."""

    def __init__(self, folder, key: str):
        self.folder, self.key = resume.shard_folder(folder), key

    def path(self, index: int) -> Path:
        return self.folder / f"near-{self.key}-{index:05d}.json"

    def load(self, index: int, identity: dict) -> dict | None:
        data = resume.load(self.path(index), self.key, {**identity, "index": index})
        return None if data is None or not isinstance(data.get("piece"), dict) else decode_piece(data["piece"])

    def save(self, index: int, identity: dict, piece: dict) -> bool:
        text = resume.dump(self.key, {**identity, "index": index}, {"piece": encode_piece(piece)})
        if text is None:
            return False                        # no signing secret: nothing saved, nothing to trust later
        with atomic_write(self.path(index), sync=False) as handle:     # a resume cache: checked when read
            handle.write(text)
        return True


class Pieces:
    """The plan's pieces: each read back from the store or computed (and saved as soon as it is
    finished); returned in the plan's order. Here computed in this process as they are
    submitted; ``distributed.near`` submits them as Ray tasks instead.

    Each piece's pair sample is folded into one ``SampleFold`` as the piece arrives (in any order:
    the sample's order is total) and dropped from the piece, so what waits for the merge is the
    forests and counts, not a sample of up to 1.4M pairs per piece (21 pieces of 230,000 nodes
    held 6.1M sample pairs, and merging them cost 455 MB)."""

    def __init__(self, store: PieceStore | None):
        self.store, self.done = store, {}
        self.samples = SampleFold()
        self.resumed = self.saved = 0
        self.hold = env_int(HOLD_AFTER_ENV, 0, 0, 1 << 30)

    def share(self, value):
        """``value`` as the pieces read it: here itself (``distributed.near`` puts it in Ray's store once)."""
        return value

    def load(self, index: int, identity: dict):
        piece = self.store.load(index, identity) if self.store else None
        self.resumed += piece is not None and piece is not EMPTY
        return piece

    def submit(self, index: int, identity: dict, ids: np.ndarray, fn, *args) -> None:
        """Piece ``index``: read back, or ``fn(*args)`` (its rows numbered as in ``ids``)."""
        piece = self.load(index, identity)
        if piece is None:
            piece = map_ids(ids, fn(*args))
            self.finished(index, identity, piece)
        self.keep(index, piece)

    def keep(self, index: int, piece: dict) -> None:
        """Piece ``index`` done (saved first, when it is saved, with its sample): its sample folded,
        what the merge reads copied (a piece from Ray's store is views of one buffer, which a view
        kept would keep whole, sample and all)."""
        if piece is not EMPTY:
            self.samples.add(*piece["sample"], complete=piece["complete"])
            piece = {**{name: np.array(piece[name]) for name in _ARRAYS}, "sample": None,
                     "forest": tuple(map(np.array, piece["forest"])), "complete": piece["complete"],
                     "candidates": piece["candidates"]}
        self.done[index] = piece

    def finished(self, index: int, identity: dict, piece: dict) -> None:
        if self.store and self.store.save(index, identity, piece):
            self.saved += 1
            if self.saved == self.hold:
                while True:                     # fault injection: wait here until killed
                    time.sleep(60)

    def collect(self) -> list[dict]:
        out = [self.done[i] for i in sorted(self.done) if self.done[i] is not EMPTY]
        self.done = {}
        return out


# --------------------------------------------------------------------------- in this process

def find_pairs_in_pieces(matrix: sp.csr_matrix, min_threshold: float, method: str = "auto", *,
                         num_perm: int = 128, seed: int = 1, partitions: int = LOCAL_PARTITIONS,
                         shard_dir=None, stats: dict | None = None, progress=None) -> Pairs:
    """``find_pairs`` as pieces in this process, each saved in ``shard_dir`` (when given) as it is
    finished, and read back by a re-run with the same plan: a killed search restarts from its
    finished pieces. ``stats``: filled with ``partitions`` (pieces merged) and ``partitions_resumed``."""
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise AuditorError("usage", f"partitions must be a whole number >= 1, got {partitions!r:.40}.",
                           "Leave it unset for the default.")
    if progress:
        progress(0.0, "planning candidates")
    p = plan(matrix, min_threshold, method)
    pieces = Pieces(PieceStore(shard_dir, run_key(matrix, p, partitions, num_perm, seed)) if shard_dir else None)
    # Progress by pieces finished, of the plan's pieces (a join range with one node makes none).
    total = len(p.groups) + (len(column_ranges(np.bincount(p.joined.indices, minlength=p.joined.shape[1]),
                                               partitions)) if p.method == "exact" else partitions)
    tick = (lambda done, stage: progress(0.1 + 0.9 * min(done / max(total, 1), 1.0), stage)) if progress else None
    shared = pieces.share(shared_arrays(p))
    submit_groups(p, pieces, shared, tick)
    if p.method == "exact":
        submit_joins(p, pieces, partitions, shared, tick)
        fields = dict(method="exact-all-pairs")
    else:
        bands, rows = choose_bands(p.min_threshold, num_perm)
        lsh_partitions(p, pieces, bands, rows, seed, partitions, first=len(p.groups), progress=tick)
        fields = dict(method="minhash-lsh", num_perm=num_perm, bands=bands, rows=rows, seed=seed)
    merged = pieces.collect()
    if progress:
        progress(1.0, "pairs verified")
    if stats is not None:
        stats.update(partitions=len(merged), partitions_resumed=pieces.resumed)
    return merge(p, merged, pieces.samples, **fields, **dense_groups_field(p))


def submit_groups(p: PiecePlan, pieces: Pieces, shared, tick=None) -> None:
    """Each template group as a piece (pieces 0..groups-1); ``shared``: ``pieces.share(shared_arrays(p))``."""
    for g, group in enumerate(p.groups):
        pieces.submit(g, {"kind": "dense", "nodes": int(group.ids.size)}, group.ids, dense_piece, shared,
                      group.ids, p.min_threshold)
        if tick:
            tick(g + 1, "template groups scored")


def submit_joins(p: PiecePlan, pieces: Pieces, partitions: int, shared, tick=None) -> None:
    """Each join partition as a piece (pieces groups.. after the template groups)."""
    for j, (ids, lo, hi) in enumerate(exact_partitions(p, partitions)):
        identity = {"kind": "join", "lo": lo, "hi": hi, "nodes": int(ids.size)}
        pieces.submit(len(p.groups) + j, identity, ids, join_piece, shared, ids, lo, hi, p.min_threshold)
        if tick:
            tick(len(p.groups) + j + 1, "pairs verified by partition")


def lsh_identity(part: int) -> dict:
    return {"kind": "lsh", "part": part}


def lsh_partitions(p: PiecePlan, pieces: Pieces, bands: int, rows: int, seed: int, partitions: int, *,
                   first: int, progress=None) -> None:
    """The LSH partitions as pieces ``first + part``, in this process: signatures, band keys,
    each partition's (node, band) rows, then ``lsh_group``."""
    n = p.nodes.shape[0]
    todo = []
    for q in range(partitions):
        saved = pieces.load(first + q, lsh_identity(q))
        if saved is None:
            todo.append(q)
        else:
            pieces.keep(first + q, saved)
    if not todo or n < 2:
        return
    if progress:
        progress(first, "signatures")
    keys = np.ascontiguousarray(band_keys(minhash_signatures(p.nodes, bands * rows, seed), bands, rows))
    route = band_partitions(keys, 0, n, partitions)
    order = np.argsort(route, kind="stable")
    edges = np.searchsorted(route[order], np.arange(partitions + 1))
    group = dense.group_of(n, p.groups) if p.groups else None
    for k, q in enumerate(todo):
        at = order[edges[q]:edges[q + 1]]
        piece = EMPTY if at.size == 0 else lsh_group(at // bands, (at % bands).astype(np.int32), keys, p.nodes,
                                                     p.weight, p.min_threshold, p.multiplicity, group)
        pieces.finished(first + q, lsh_identity(q), piece)
        pieces.keep(first + q, piece)
        if progress:
            progress(first + partitions - len(todo) + k + 1, "pairs verified by partition")
