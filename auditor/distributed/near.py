"""Near duplicates on Ray: the local search (auditor/near) with candidate generation and
verification spread over Ray workers, and the result merged on the driver from bounded
per-partition pieces, never from all pairs.

The driver does the planning that needs the whole collection and is linear in it: identical
sets collapse into nodes (``collapse_identical``), prefixes under the global rare-first order
(``prefix_matrix``) and template groups (``dense.plan``), or MinHash signatures. Then:

- ``exact`` (prefix join partitioned by prefix shingle): the ranked prefix columns are cut into
  ranges of equal estimated work; a node goes to every partition holding one of its (joined)
  prefix shingles, with its shingle set. A pair is verified only in the partition of its
  smallest shared prefix shingle (it shares none ranked before the partition's range), so it
  is counted once. Candidates pass the local ``CandidateFilter`` with their exact shared-prefix
  count, so the candidates verified are the local search's, and each template group runs
  ``dense.process`` in a task of its own, as locally;
- ``lsh``: signatures computed in tasks; every (node, band) row is routed by a hash of its band
  key through Ray Data's ``groupby``; a partition groups its rows by the exact band values and
  emits a pair only in the first band where the two signatures agree (``band_first_pairs``),
  so the candidates are the local LSH's, each once.

Each task verifies its pairs (true Jaccard) into its own ``PairSink`` and returns that sink's
bounded result: score-bin counts, a maximum spanning forest (the union of per-partition
forests contains a maximum spanning forest of the whole graph) and the best pairs of each
0.01 stratum. The driver adds the counts and offers the forests and samples to one
``PairSink``, so the ``Pairs`` has the local meaning: the same counts at every threshold, the
same components (clusters, curve), the same pair sample and, for LSH, the same catch
probability. Only the forest's choice among equal-score edges may differ.

Resume (``shard_dir``): each finished piece (a template group, a join partition, an LSH
partition) is saved by the driver as it arrives, as ``near-KEY-NNNNN.json``: written atomically,
signed and checked when read by ``resume`` (KEY: the shingle matrix's fingerprint, the search's
settings, the partition count and the code version; NNNNN: the piece's place in the plan, whose
kind and bounds the file names too). A re-run with the same plan reads the finished pieces back
and computes only the others; a file that fails a check is computed again. Pieces are merged in
the plan's order whichever finished first, so the result is the uninterrupted run's.
"""
from __future__ import annotations

import base64
import hashlib
import os
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .. import parallel
from ..errors import AuditorError
from ..io.outputs import atomic_write
from ..near import (MAX_EXACT_CANDIDATES, PRODUCT_BUDGET, CandidateFilter, PairSink, Pairs, Verifier,
                    choose_bands, collapse_identical, dense, estimated_candidates, minhash_signatures,
                    prefix_matrix, searched_threshold, size_fits)
from ..near.classes import expand, node_classes
from ..near.lsh import BATCH, band_keys, group_runs, splitmix64
from ..near.result import SCORE_SCALE
from ..shingles import ShingleSpec, set_sizes, shingle_matrix
from . import resume
from .runtime import ray_session

PARTITIONS_PER_CPU = 2        # default partitions per cluster CPU: evens out unequal partitions
ENTRY_COST = 32              # join work of one (node, shared prefix shingle) entry, in product pairs
LSH_BLOCK_NODES = 50_000      # nodes per signature task and per block of band rows
# Ray Data's groupby as a sort-based shuffle with plain tasks. Its default (hash shuffle on
# aggregator actors) aborted workers here ("Mutex corrupt") and ran 3x slower on 2 CPUs.
SHUFFLE = "sort_shuffle_pull_based"
PIECE_FILE_VERSION = 1       # the saved piece's format (part of the run key)
# Fault injection for the resume tests: after saving this many pieces the driver waits (to be killed).
HOLD_AFTER_ENV = "AUDITOR_RAY_HOLD_AFTER_PARTITIONS"


def ray_find_pairs(matrix_or_dataset, threshold: float, method: str = "auto", *, num_perm: int = 128,
                   seed: int = 1, partitions: int | None = None, text: str = "text",
                   shingle=None, shard_dir=None, stats: dict | None = None) -> Pairs:
    """``auditor.near.find_pairs`` on the running Ray session (see the module docstring).
    ``matrix_or_dataset``: a shingle matrix (``shingles.shingle_matrix``), or a Ray Dataset
    whose ``text`` column holds the texts in record order (shingled on the driver with
    ``shingle``, since shingle ids come from one vocabulary). ``partitions``: candidate
    partitions (default: PARTITIONS_PER_CPU per CPU of the cluster). ``shard_dir``: keep each
    finished piece there and reuse the ones a run with the same plan saved (module docstring).
    ``stats``: filled with ``partitions`` (pieces in the plan) and ``partitions_resumed``."""
    import ray

    if not ray.is_initialized():
        raise AuditorError("usage", "The Ray near-duplicate search needs a running Ray session.",
                           "Run it inside auditor.distributed.runtime.ray_session(...).")
    if not (0 < threshold <= 1):
        raise AuditorError("usage", f"Threshold {threshold} is outside (0, 1].",
                           "Use a Jaccard threshold such as 0.7.")
    if method not in ("auto", "exact", "lsh"):
        raise AuditorError("usage", f"Unknown near-duplicate method {method!r}.", "Use auto, exact or lsh.")
    if partitions is None:
        partitions = PARTITIONS_PER_CPU * max(1, int(ray.cluster_resources().get("CPU", 1)))
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise AuditorError("usage", f"partitions must be a whole number >= 1, got {partitions!r:.40}.",
                           "Leave it unset for two per CPU.")
    matrix = _as_matrix(matrix_or_dataset, text, shingle)
    min_threshold = searched_threshold(threshold)
    node_of, node_weight, nodes = collapse_identical(matrix)
    # Nodes that only private shingles tell apart: searched once per class, as locally.
    classes = node_classes(nodes, node_weight)
    weight, mult = (node_weight, None) if classes is None else (classes.weight, classes.count)
    nodes = nodes if classes is None else nodes[classes.rep]
    nodes = nodes if nodes.has_sorted_indices else nodes.sorted_indices()
    prefixes = plan = None
    if method in ("auto", "exact"):
        prefixes = prefix_matrix(nodes, min_threshold)
        plan = dense.plan(nodes, prefixes)
    if method == "auto":
        method = "exact" if estimated_candidates(plan[1]) <= MAX_EXACT_CANDIDATES else "lsh"
    common = dict(n_records=matrix.shape[0], node_of=node_of, min_threshold=min_threshold)
    key = None
    if shard_dir is not None:
        lsh = method == "lsh"           # the plan: what the search reads, its settings and its cut
        key = resume.run_key({"matrix": matrix_fingerprint(matrix), "min_threshold": min_threshold,
                              "method": method, "num_perm": num_perm if lsh else None, "seed": seed if lsh else None,
                              "partitions": partitions, "version": PIECE_FILE_VERSION})
    pieces = _Pieces(PieceStore(shard_dir, key) if key else None)
    if method == "exact":
        groups = plan[0]
        for g, group in enumerate(groups):
            pieces.submit(g, {"kind": "dense", "nodes": int(group.ids.size)}, group.ids,
                          lambda group=group: _dense_task.remote(nodes[group.ids], weight[group.ids], min_threshold,
                                                                 _part(mult, group.ids)))
        for j, part in enumerate(exact_partitions(nodes, weight, prefixes, plan, partitions)):
            pieces.submit(len(groups) + j, {"kind": "join", "lo": part[6], "hi": part[7], "nodes": int(part[0].size)},
                          part[0], lambda part=part: _join_task.remote(*part, min_threshold, _part(mult, part[0])))
        merged = pieces.collect()
        fields = dict(method="exact-all-pairs", dense_groups=tuple(int(g.ids.size) for g in groups))
    else:
        bands, rows = choose_bands(min_threshold, num_perm)
        # Template groups by dense products, as locally; LSH proposes the pairs outside them.
        groups = (plan or dense.plan(nodes, prefix_matrix(nodes, min_threshold)))[0]
        for g, group in enumerate(groups):
            pieces.submit(g, {"kind": "dense", "nodes": int(group.ids.size)}, group.ids,
                          lambda group=group: _dense_task.remote(nodes[group.ids], weight[group.ids], min_threshold,
                                                                 _part(mult, group.ids)))
        group = dense.group_of(nodes.shape[0], groups) if groups else None
        merged = lsh_pieces(nodes, weight, min_threshold, bands, rows, seed, partitions, mult, group,
                            pieces=pieces, first=len(groups))
        merged += pieces.collect()
        fields = dict(method="minhash-lsh", num_perm=num_perm, bands=bands, rows=rows, seed=seed,
                      **({"dense_groups": tuple(int(g.ids.size) for g in groups)} if groups else {}))
    if stats is not None:
        stats.update(partitions=len(merged), partitions_resumed=pieces.resumed)
    pairs = _merge(weight, min_threshold, merged, common, mult, **fields)
    if classes is None:
        return pairs
    return expand(pairs, classes, weight=node_weight, **common, **{k: v for k, v in fields.items()},
                  candidates=pairs.candidates)


def _part(mult, ids):
    return None if mult is None else mult[ids]


def _as_matrix(data, text: str, shingle) -> sp.csr_matrix:
    if sp.issparse(data):
        return data.tocsr()
    import ray.data
    if isinstance(data, ray.data.Dataset):
        if text not in data.columns():
            raise AuditorError("usage", f"The dataset has no {text!r} column.",
                               f"Its columns: {', '.join(data.columns())}.")
        columns = [text] + (["row"] if "row" in data.columns() else [])
        texts, order = [], []
        for batch in data.select_columns(columns).iter_batches(batch_format="numpy", batch_size=65536):
            texts += batch[text].tolist()
            order.append(batch["row"] if "row" in batch else np.zeros(0, np.int64))
        if "row" in columns:              # record order is the global row number, however blocks arrive
            texts = [texts[i] for i in np.argsort(np.concatenate(order), kind="stable")]
        return shingle_matrix(texts, ShingleSpec.coerce(shingle))
    raise AuditorError("usage", f"Expected a shingle matrix or a Ray Dataset, got {type(data).__name__}.",
                       "Pass shingles.shingle_matrix(texts) or a Dataset with a text column.")


# --------------------------------------------------------------------------- exact: partitioned prefix join

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


def exact_partitions(nodes: sp.csr_matrix, weight: np.ndarray, prefixes: sp.csr_matrix, plan, partitions: int):
    """Yields, per partition: (node ids, their shingle sets, prefixes, joined prefixes, dense group,
    weights, column range). A node goes to a partition when one of its joined prefix shingles
    in the range is held by another node too (a shingle held once makes no pair)."""
    groups, joined = plan
    n, m = prefixes.shape
    group = dense.group_of(n, groups) if groups else np.full(n, -1, np.int64)
    joined = joined if joined.has_sorted_indices else joined.sorted_indices()
    df = np.bincount(joined.indices, minlength=m)
    entry_row = np.repeat(np.arange(n), np.diff(joined.indptr))
    useful = df[joined.indices] >= 2
    for lo, hi in column_ranges(df, partitions):
        inside = useful & (joined.indices >= lo) & (joined.indices < hi)
        ids = np.unique(entry_row[inside])
        if ids.size >= 2:
            # One at a time: the caller ships each to the object store before the next is cut.
            yield ids, nodes[ids], prefixes[ids], joined[ids], group[ids], weight[ids], lo, hi


def _remote(fn):
    import ray
    return ray.remote(num_cpus=1, max_retries=3)(fn)


class _Lazy:
    """A Ray remote function made on first use, so importing this module does not need Ray."""

    def __init__(self, fn):
        self.fn, self.remote_fn = fn, None

    def remote(self, *args):
        if self.remote_fn is None:
            self.remote_fn = _remote(self.fn)
        return self.remote_fn.remote(*args)


def _one_thread() -> None:
    """Each task holds one CPU; the local engine's thread pool would oversubscribe it."""
    parallel.WORKERS = 1


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
    part = _entries(joined, (cols >= lo) & (cols < hi))
    before = _entries(joined, cols < lo)
    after = _entries(joined, cols >= hi)
    after_len = np.diff(after.indptr)
    transposed = part.T.tocsr()
    bounds = np.cumsum(part @ np.diff(transposed.indptr).astype(np.float64))
    candidates, start = 0, 0
    while start < n:
        limit = (bounds[start - 1] if start else 0.0) + PRODUCT_BUDGET
        stop = max(start + 1, int(np.searchsorted(bounds, limit, side="right")))
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
        kept, count = verifier.verify_light(rows[keep], other[keep])
        verifier.add(kept)
        candidates += count
        start = stop
    return _bounded(sink, candidates)


def _intersections(matrix: sp.csr_matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|row a[i] & row b[i]| (sorted indices)."""
    out = np.empty(a.size, np.int64)
    if a.size:
        from ..kernels import intersections     # numba: compiled on first use
        intersections(matrix.indptr.astype(np.int64), matrix.indices, a, b, out)
    return out


def _entries(matrix: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
    """The matrix with only the entries ``keep`` (same shape, indices stay sorted)."""
    counts = np.bincount(np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))[keep],
                         minlength=matrix.shape[0])
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return sp.csr_matrix((matrix.data[keep], matrix.indices[keep], indptr), shape=matrix.shape)


def dense_group(nodes, weight, min_threshold: float, multiplicity=None) -> dict:
    """One template group (``dense.process``), its nodes numbered 0..k-1."""
    sink = PairSink(weight, min_threshold, multiplicity)
    scored = dense.process(nodes, dense.DenseGroup(ids=np.arange(nodes.shape[0]), heavy=np.zeros(0, np.int64)),
                           min_threshold, sink)
    return _bounded(sink, scored)


def _join_task_fn(*args):
    _one_thread()
    return join_partition(*args)


def _dense_task_fn(*args):
    _one_thread()
    return dense_group(*args)


_join_task = _Lazy(_join_task_fn)
_dense_task = _Lazy(_dense_task_fn)


# --------------------------------------------------------------------------- LSH: band keys through groupby

def lsh_pieces(nodes: sp.csr_matrix, weight: np.ndarray, min_threshold: float, bands: int, rows: int, seed: int,
               partitions: int, multiplicity=None, group=None, *, pieces=None, first: int = 0) -> list[dict]:
    """Signatures in tasks; (node, band) rows grouped by a hash of the band key with Ray Data's
    groupby (one group per partition); each group's first-band candidates verified in its
    worker, which reads the band keys and shingle sets from the object store. ``pieces``
    (``_Pieces``): partition p is piece ``first + p``; the saved ones are read back and their
    rows left out of the groupby (when every partition is saved, nothing runs)."""
    import ray
    import ray.data

    pieces = pieces or _Pieces(None)
    n = nodes.shape[0]
    if n < 2:
        return []
    identity = [{"kind": "lsh", "part": p} for p in range(partitions)]
    done = {p: pieces.load(first + p, identity[p]) for p in range(partitions)}
    done = {p: piece for p, piece in done.items() if piece is not None}
    if len(done) < partitions:
        spans = [(lo, min(lo + LSH_BLOCK_NODES, n)) for lo in range(0, n, LSH_BLOCK_NODES)]
        sig = np.concatenate(ray.get([_signature_task.remote(nodes[lo:hi], bands * rows, seed)
                                      for lo, hi in spans]))
        keys = np.ascontiguousarray(band_keys(sig, bands, rows))      # (nodes, bands): equal = same band values
        del sig
        shared = ray.put((keys, nodes, weight, multiplicity, group))
        skip = np.array(sorted(done), np.int32)
        tables = [band_rows(keys, lo, hi, partitions) for lo, hi in spans]
        if skip.size:                   # finished partitions' rows are not shuffled again
            import pyarrow.compute as pc
            tables = [t.filter(pc.invert(pc.is_in(t["part"], value_set=pa_array(skip)))) for t in tables]
        context = ray.data.DataContext.get_current()
        strategy, context.shuffle_strategy = context.shuffle_strategy, SHUFFLE     # read when the plan is made
        try:
            grouped = ray.data.from_arrow(tables).groupby("part", num_partitions=partitions).map_groups(
                _lsh_group, fn_kwargs={"shared": shared, "min_threshold": min_threshold}, batch_format="numpy")
            for r in grouped.iter_rows():     # each saved as it arrives
                p = int(r["part"])
                done[p] = pickle.loads(r["piece"])
                pieces.finished(first + p, identity[p], done[p])
        finally:
            context.shuffle_strategy = strategy
        for p in range(partitions):           # a partition no row was routed to: saved as empty
            if p not in done:
                done[p] = EMPTY
                pieces.finished(first + p, identity[p], EMPTY)
    return [done[p] for p in sorted(done) if done[p] is not EMPTY]


def pa_array(values: np.ndarray):
    import pyarrow as pa
    return pa.array(values)


def _shared(ref):
    import ray
    return ray.get(ref)


def band_rows(keys: np.ndarray, lo: int, hi: int, partitions: int):
    """The (node, band, partition) rows of nodes lo..hi-1, as an Arrow table; the partition is
    a hash of the band and its key, so nodes with equal band values meet in one partition."""
    import pyarrow as pa
    bands = keys.shape[1]
    route = splitmix64(keys[lo:hi].astype(np.uint64) ^ splitmix64(np.arange(bands, dtype=np.uint64)))
    return pa.table({"node": np.repeat(np.arange(lo, hi, dtype=np.int64), bands),
                     "band": np.tile(np.arange(bands, dtype=np.int32), hi - lo),
                     "part": (route.reshape(-1) % np.uint64(partitions)).astype(np.int32)})


def lsh_group(node: np.ndarray, band: np.ndarray, keys: np.ndarray, nodes: sp.csr_matrix, weight: np.ndarray,
              min_threshold: float, multiplicity=None, group=None) -> dict:
    """One partition of (node, band) rows: per band, the nodes with equal keys; a pair is
    proposed only in the first band where the two agree (``band_first_pairs``), then verified
    into a local sink."""

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
    return _map_ids(ids, _bounded(sink, candidates))


def _lsh_group(batch: dict, shared, min_threshold: float) -> dict:
    _one_thread()
    keys, nodes, weight, multiplicity, group = _shared(shared)
    piece = lsh_group(batch["node"], batch["band"], keys, nodes, weight, min_threshold, multiplicity, group)
    return {"part": np.array([int(batch["part"][0])], np.int64),
            "piece": np.array([pickle.dumps(piece, protocol=5)], dtype=object)}


def _signature_task_fn(nodes, num_perm: int, seed: int) -> np.ndarray:
    _one_thread()
    return minhash_signatures(nodes, num_perm, seed)


_signature_task = _Lazy(_signature_task_fn)


# --------------------------------------------------------------------------- resume: pieces saved by the driver

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
    when read (``resume``): a file this run's code did not write for this plan is not used."""

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


class _Pieces:
    """The plan's pieces on the driver: each read back from the store, or computed by a task and
    saved as soon as it arrives; returned in the plan's order, whichever finished first."""

    def __init__(self, store: PieceStore | None):
        self.store, self.done, self.pending = store, {}, {}
        self.resumed = self.saved = 0
        self.hold = int(os.environ.get(HOLD_AFTER_ENV) or 0)

    def load(self, index: int, identity: dict):
        piece = self.store.load(index, identity) if self.store else None
        self.resumed += piece is not None and piece is not EMPTY
        return piece

    def submit(self, index: int, identity: dict, ids: np.ndarray, start) -> None:
        """Piece ``index`` read back, or started (``start()``: its task's ref; its node ids ``ids``)."""
        piece = self.load(index, identity)
        if piece is not None:
            self.done[index] = piece
        else:
            self.pending[start()] = (index, identity, ids)

    def finished(self, index: int, identity: dict, piece: dict) -> None:
        if self.store and self.store.save(index, identity, piece):
            self.saved += 1
            if self.saved == self.hold:
                while True:                     # fault injection: wait here until killed
                    time.sleep(60)

    def collect(self) -> list[dict]:
        import ray
        while self.pending:
            ready, _ = ray.wait(list(self.pending), num_returns=1)
            for ref in ready:
                index, identity, ids = self.pending.pop(ref)
                self.done[index] = _map_ids(ids, ray.get(ref))
                self.finished(index, identity, self.done[index])
        out = [self.done[i] for i in sorted(self.done)]
        self.done = {}
        return out


# --------------------------------------------------------------------------- merge on the driver

def _bounded(sink: PairSink, candidates: int) -> dict:
    """What a task sends back: its sink's counts, forest and sample (bounded by its nodes)."""
    r = sink.result(n_records=0, node_of=np.zeros(0, np.int64), min_threshold=sink.base / SCORE_SCALE)
    return {"bins": r.counts.bins, "node_pairs": r.counts.node_pairs, "record_pairs": r.counts.record_pairs,
            "forest": (r.forest_a, r.forest_b, r.forest_jaccard), "sample": (r.a, r.b, r.jaccard),
            "complete": r.complete, "candidates": int(candidates)}


def _map_ids(ids, piece: dict) -> dict:
    """A piece's local node numbers (positions in the ascending ``ids``) as global ones; the
    order of ids is kept, so a < b and the sample's order still hold."""
    for key in ("forest", "sample"):
        a, b, j = piece[key]
        piece[key] = (ids[a], ids[b], j)
    return piece


def _merge(weight: np.ndarray, min_threshold: float, pieces: list[dict], common: dict, multiplicity=None,
           **fields) -> Pairs:
    """One Pairs from the pieces: counts added, forests and samples offered to one PairSink."""
    sink = PairSink(weight, min_threshold, multiplicity)
    size = sink.node_hist.size
    for piece in pieces:
        at = piece["bins"] - sink.base
        node_hist, record_hist = np.zeros(size, np.int64), np.zeros(size, np.int64)
        node_hist[at], record_hist[at] = piece["node_pairs"], piece["record_pairs"]     # bins are distinct
        sink.add_counts(node_hist, record_hist)
    for piece in pieces:
        sink.add(*piece["forest"], counted=True, sample=False)
    for piece in pieces:
        sink.add(*piece["sample"], counted=True)
    pairs = sink.result(**common, candidates=sum(p["candidates"] for p in pieces), **fields)
    return replace(pairs, complete=pairs.complete and all(p["complete"] for p in pieces))


def scan_pairs(matrix: sp.csr_matrix, settings, ray_address: str | None = None, *, quiet: bool = False,
               shard_dir=None, stats: dict | None = None) -> Pairs:
    """The scan's near-duplicate step on Ray (``audit.scan(..., engine="ray")``): joins the
    cluster at ``ray_address`` / RAY_ADDRESS, or starts a local Ray for the step. ``shard_dir``:
    finished partitions kept there and reused on a re-run (``stats``: see ``ray_find_pairs``)."""
    with ray_session(ray_address, quiet=quiet):
        return ray_find_pairs(matrix, settings.min_threshold, settings.method, num_perm=settings.num_perm,
                              seed=settings.seed, shard_dir=shard_dir, stats=stats)
