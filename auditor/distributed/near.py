"""Near duplicates on Ray: the search's pieces (``near.pieces``: template groups, join
partitions by prefix shingle, LSH band partitions) mapped over Ray workers, and merged on the
driver from their bounded results, never from all pairs.

The driver plans (``pieces.plan``: collapsing, classes, prefixes, template groups; linear in
the collection) and each piece runs as a task: a template group or a join partition, which
slices its rows from the plan's arrays put in the object store once (``pieces.shared_arrays``),
or, for ``lsh``, signatures in tasks and every (node, band) row routed to its partition through
Ray Data's ``groupby``. Each piece's pair sample is folded as it arrives (``pieces.Pieces``); the
driver merges the forests and counts in the plan's order (``pieces.merge``), so the ``Pairs`` has
the local meaning: the same counts at every threshold, the same components (clusters, curve),
the same pair sample.

Resume (``shard_dir``): each finished piece is saved by the driver as it arrives
(``pieces.PieceStore``: ``near-KEY-NNNNN.json``, written atomically, signed and bound to the plan:
the shingle matrix's fingerprint, the search's settings, the partition count and the code
version). A re-run with the same plan reads the finished pieces back and computes only the
others; a file that fails a check is computed again. The local engine's resumable search
(``pieces.find_pairs_in_pieces``) saves the same pieces.
"""
from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .. import parallel
from ..errors import AuditorError
from ..near import Pairs, choose_bands, minhash_signatures, pieces
from ..near.lsh import band_keys
from ..near.result import checked_search
from ..near.pieces import EMPTY, Pieces, PieceStore, lsh_identity
from ..shingles import ShingleSpec, shingle_matrix
from .runtime import ray_session

PARTITIONS_PER_CPU = 2        # default partitions per cluster CPU: evens out unequal partitions
LSH_BLOCK_NODES = 50_000      # nodes per signature task and per block of band rows
# Ray Data's groupby as a sort-based shuffle with plain tasks. Its default (hash shuffle on
# aggregator actors) aborted workers here ("Mutex corrupt") and ran 3x slower on 2 CPUs.
SHUFFLE = "sort_shuffle_pull_based"


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
    checked_search(threshold, method)          # before a dataset is read and shingled
    if partitions is None:
        partitions = PARTITIONS_PER_CPU * max(1, int(ray.cluster_resources().get("CPU", 1)))
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise AuditorError("usage", f"partitions must be a whole number >= 1, got {partitions!r:.40}.",
                           "Leave it unset for two per CPU.")
    matrix = _as_matrix(matrix_or_dataset, text, shingle)
    p = pieces.plan(matrix, threshold, method)
    store = PieceStore(shard_dir, pieces.run_key(matrix, p, partitions, num_perm, seed)) if shard_dir else None
    ray_pieces = _RayPieces(store)
    arrays = pieces.shared_arrays(p)
    shared = ray_pieces.share(arrays)
    # From here the plan reads its arrays from the store (zero-copy), so the driver holds one copy.
    nodes, prefixes, joined = ray.get(shared)[:3]
    p = replace(p, nodes=nodes, prefixes=prefixes, joined=joined)
    del arrays, nodes, prefixes, joined
    pieces.submit_groups(p, ray_pieces, shared)
    if p.method == "exact":
        pieces.submit_joins(p, ray_pieces, partitions, shared)
        fields = dict(method="exact-all-pairs")
    else:
        bands, rows = choose_bands(p.min_threshold, num_perm)
        lsh_pieces(p, bands, rows, seed, partitions, ray_pieces, shared, first=len(p.groups))
        fields = dict(method="minhash-lsh", num_perm=num_perm, bands=bands, rows=rows, seed=seed)
    merged = ray_pieces.collect()
    if stats is not None:
        stats.update(partitions=len(merged), partitions_resumed=ray_pieces.resumed)
    return pieces.merge(p, merged, ray_pieces.samples, **fields, **pieces.dense_groups_field(p))


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


# --------------------------------------------------------------------------- tasks

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


def _join_task_fn(*args):
    _one_thread()
    return pieces.join_piece(*args)


def _dense_task_fn(*args):
    _one_thread()
    return pieces.dense_piece(*args)


def _signature_task_fn(nodes, num_perm: int, seed: int) -> np.ndarray:
    _one_thread()
    return minhash_signatures(nodes, num_perm, seed)


_join_task = _Lazy(_join_task_fn)
_dense_task = _Lazy(_dense_task_fn)
_signature_task = _Lazy(_signature_task_fn)
_TASKS = {pieces.join_piece: _join_task, pieces.dense_piece: _dense_task}


class _RayPieces(Pieces):
    """``Pieces`` whose computed ones run as Ray tasks: saved as each arrives, merged in the
    plan's order whichever finished first."""

    def __init__(self, store: PieceStore | None):
        super().__init__(store)
        self.pending = {}

    def share(self, value):
        """``value`` put in Ray's object store once; each task slices its rows from it."""
        import ray
        return ray.put(value)

    def submit(self, index: int, identity: dict, ids: np.ndarray, fn, *args) -> None:
        piece = self.load(index, identity)
        if piece is not None:
            self.keep(index, piece)
        else:
            self.pending[_TASKS[fn].remote(*args)] = (index, identity, ids)

    def collect(self) -> list[dict]:
        import ray
        while self.pending:
            ready, _ = ray.wait(list(self.pending), num_returns=1)
            for ref in ready:
                index, identity, ids = self.pending.pop(ref)
                piece = pieces.map_ids(ids, ray.get(ref))
                self.finished(index, identity, piece)
                self.keep(index, piece)
        return super().collect()


# --------------------------------------------------------------------------- LSH: band keys through groupby

def lsh_pieces(p: pieces.PiecePlan, bands: int, rows: int, seed: int, partitions: int, ray_pieces: _RayPieces,
               shared, *, first: int) -> None:
    """Signatures in tasks; (node, band) rows grouped by their partition (``pieces.band_partitions``)
    with Ray Data's groupby; each group's first-band candidates verified in its worker
    (``pieces.lsh_group``), which reads the band keys and shingle sets from the object store.
    Partition q is piece ``first + q``; the saved ones are read back and their rows left out of
    the groupby (when every partition is saved, nothing runs)."""
    import ray
    import ray.data

    nodes, n = p.nodes, p.nodes.shape[0]
    if n < 2:
        return
    done = set()
    for q in range(partitions):
        saved = ray_pieces.load(first + q, lsh_identity(q))
        if saved is not None:
            ray_pieces.keep(first + q, saved)
            done.add(q)
    if len(done) < partitions:
        spans = [(lo, min(lo + LSH_BLOCK_NODES, n)) for lo in range(0, n, LSH_BLOCK_NODES)]
        sig = np.concatenate(ray.get([_signature_task.remote(nodes[lo:hi], bands * rows, seed)
                                      for lo, hi in spans]))
        keys = np.ascontiguousarray(band_keys(sig, bands, rows))      # (nodes, bands): equal = same band values
        del sig
        keys_ref = ray.put(keys)        # the shingle sets are in ``shared`` (``pieces.shared_arrays``) already
        skip = np.array(sorted(done), np.int32)
        tables = [band_rows(keys, lo, hi, partitions) for lo, hi in spans]
        if skip.size:                   # finished partitions' rows are not shuffled again
            import pyarrow.compute as pc
            tables = [t.filter(pc.invert(pc.is_in(t["part"], value_set=pa_array(skip)))) for t in tables]
        context = ray.data.DataContext.get_current()
        strategy, context.shuffle_strategy = context.shuffle_strategy, SHUFFLE     # read when the plan is made
        try:
            grouped = ray.data.from_arrow(tables).groupby("part", num_partitions=partitions).map_groups(
                _lsh_group, fn_kwargs={"shared": shared, "band_table": keys_ref, "grouped": bool(p.groups),
                                       "min_threshold": p.min_threshold}, batch_format="numpy")
            for r in grouped.iter_rows():     # each saved as it arrives
                q = int(r["part"])
                piece = pickle.loads(r["piece"])
                ray_pieces.finished(first + q, lsh_identity(q), piece)
                ray_pieces.keep(first + q, piece)
                done.add(q)
        finally:
            context.shuffle_strategy = strategy
        for q in sorted(set(range(partitions)) - done):     # a partition no row was routed to: saved as empty
            ray_pieces.finished(first + q, lsh_identity(q), EMPTY)
            ray_pieces.keep(first + q, EMPTY)


def pa_array(values: np.ndarray):
    import pyarrow as pa
    return pa.array(values)


def band_rows(keys: np.ndarray, lo: int, hi: int, partitions: int):
    """The (node, band, partition) rows of nodes lo..hi-1, as an Arrow table."""
    import pyarrow as pa
    bands = keys.shape[1]
    return pa.table({"node": np.repeat(np.arange(lo, hi, dtype=np.int64), bands),
                     "band": np.tile(np.arange(bands, dtype=np.int32), hi - lo),
                     "part": pieces.band_partitions(keys, lo, hi, partitions)})


def _lsh_group(batch: dict, shared, band_table, grouped: bool, min_threshold: float) -> dict:
    # ``band_table``, not ``keys``: Ray Data's groupby passes its own ``keys`` argument.
    import ray
    _one_thread()
    nodes, _, _, group, weight, multiplicity = ray.get(shared)
    piece = pieces.lsh_group(batch["node"], batch["band"], ray.get(band_table), nodes, weight, min_threshold,
                             multiplicity, group if grouped else None)
    return {"part": np.array([int(batch["part"][0])], np.int64),
            "piece": np.array([pickle.dumps(piece, protocol=5)], dtype=object)}


def scan_pairs(matrix: sp.csr_matrix, settings, ray_address: str | None = None, *, quiet: bool = False,
               shard_dir=None, stats: dict | None = None) -> Pairs:
    """The scan's near-duplicate step on Ray (``audit.scan(..., engine="ray")``): joins the
    cluster at ``ray_address`` / RAY_ADDRESS, or starts a local Ray for the step. ``shard_dir``:
    finished partitions kept there and reused on a re-run (``stats``: see ``ray_find_pairs``)."""
    with ray_session(ray_address, quiet=quiet):
        return ray_find_pairs(matrix, settings.min_threshold, settings.method, num_perm=settings.num_perm,
                              seed=settings.seed, shard_dir=shard_dir, stats=stats)
