"""``auditor contamination --engine ray``: the n-gram scan with the corpus's shards mapped by Ray Data.

The benchmark's index (``contamination.build_index``) is built once on the driver and put in the
object store; every read task scans its shard's rows, a fixed-size batch at a time, with the local
engine's own ``scan_batch`` (so tokens, windows and confirmations are the same code) and returns only its matches
and counts, per shard. The driver reduces them in shard order: per-shard row counts give each
match's global row number, and ``HitSet`` (reduced in the tasks already, so what travels is bounded
by the benchmark) builds the items exactly as the local engine does, so
the report is byte-identical to ``--engine local`` apart from summary.json's ``engine`` block
(shards, seconds, MB/s).

Resume: with a shard folder (``--shard-dir``, default OUT_DIR/shards when --out-dir is given), each
finished shard's counts and matches are written there atomically as soon as the shard is complete
(the dataset is consumed in shard order), keyed by the benchmark's fingerprint, the n-gram size, the
text field, and checked against the shard's identity (``Shard.identity``: name, location, size,
modification time); a re-run reads them and maps only the other shards.
Ray retries a task whose worker dies (Ray's default ``max_retries``, 3); a task's output depends
only on its input, so a retried task gives the same matches.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..contamination import (
    STAGES,
    ContaminationResult,
    HitSet,
    benchmark_texts,
    build_index,
    choose_n,
    scan_batch,
)
from ..errors import AuditorError
from ..io.outputs import atomic_write, check_shard_dir
from ..io.shards import RECORD_FORMATS, source_name, split_shards
from ..io.sources import source_text
from ..progress import Progress
from ..wordtokens import TOKENIZER
from ..io import resume
from .runtime import ray_session, read_dataset, resolve_text_field, run

BATCH_ROWS = 16384          # rows per scanned batch (Parquet; a JSONL block is at most 8 MiB): memory per task
SHARD_FILE_VERSION = 4          # 2: a shard's matches reduced to a HitSet (bounded by the benchmark); 3: + texts with
                                # no word; 4: + the rows that match (a decontaminated copy leaves them out)
# Fault injection for the tests: a worker exits on its first batch while this marker file does not
# exist (creating it), so Ray must retry the task; the driver is interrupted (KeyboardInterrupt,
# as by Ctrl-C) after writing this many shard results.
FAIL_ONCE_ENV = "AUDITOR_RAY_FAIL_ONCE"
STOP_AFTER_ENV = "AUDITOR_RAY_STOP_AFTER_SHARDS"
# A shard's counts (summed over its batches, then over the shards), beside its HitSet "hits".
COUNTS = ("records", "tokens", "no_words")


def _new_result() -> dict:
    return {**dict.fromkeys(COUNTS, 0), "hits": HitSet(), "matched": []}


def ray_contamination(corpus, benchmark: str, *, corpus_split=None, corpus_text=None, benchmark_config=None,
                      benchmark_split=None, benchmark_text=None, ngram="auto", token=None, progress=None,
                      address=None, num_cpus=None, shard_dir=None, quiet=False) -> ContaminationResult:
    """Benchmark items sharing an n-gram with a sharded ``corpus`` (a file, directory, glob or URI;
    shards named as splits, like train-*.parquet and test-*.parquet, are chosen as locally:
    ``corpus_split``, else train)."""
    return scan_shards(corpus, benchmark, corpus_split=corpus_split, corpus_text=corpus_text,
                 benchmark_config=benchmark_config, benchmark_split=benchmark_split, benchmark_text=benchmark_text,
                 ngram=ngram, token=token, progress=progress, address=address, num_cpus=num_cpus,
                 shard_dir=shard_dir, quiet=quiet)


def scan_shards(corpus, benchmark: str, *, corpus_split, corpus_text, benchmark_config, benchmark_split, benchmark_text,
          ngram, token, progress, address, num_cpus, shard_dir, quiet, after=None) -> ContaminationResult:
    """``ray_contamination``; ``after(filesystem, shards, join)`` runs in the Ray session once every
    shard is joined (``ray_decontaminate``'s copy)."""
    if ngram != "auto":
        choose_n([], ngram)
    corpus, benchmark = source_text_or_uri(corpus), source_text(benchmark)
    check_shard_dir(shard_dir, [corpus, benchmark], "contamination")     # a benchmark may be a local folder
    run_progress = Progress(progress, STAGES)
    with run_progress.stage("index"):
        bench_texts, bench_info = benchmark_texts(benchmark, benchmark_config, benchmark_split, benchmark_text,
                                                   None, token)
        index = build_index(bench_texts, ngram)
    with run_progress.stage("scan"):
        with ray_session(address, num_cpus, quiet=quiet) as ray:
            filesystem, shards, split, notices = split_shards(corpus, corpus_split, RECORD_FORMATS)  # CSV/TSV too
            field = resolve_text_field(filesystem, shards, corpus_text, corpus)
            # The matching rows themselves travel and are kept only for a copy (they grow with the
            # contaminated records, the rest with the benchmark); a saved result says which it holds.
            rows = after is not None
            key = _run_key(bench_info, index.n, field, rows)
            store = ShardStore(shard_dir, key) if shard_dir else None
            join = ShardJoin(shards, store)
            # A saved shard is checked now and read again when its turn in the join comes.
            resumed = {s.index for s in shards if store and store.load(s) is not None}
            for shard_index in sorted(resumed):
                join.add(shard_index, None)
            todo = [s for s in shards if s.index not in resumed]
            run_progress.at(0.0, f"scanning {len(todo)} of {len(shards)} shards on Ray")
            start = time.perf_counter()
            if todo:
                index_ref = ray.put(index)
                fail_once = os.environ.get(FAIL_ONCE_ENV) or None
                # The scan runs inside the read tasks (plain tasks, no actor pool; Ray's default
                # retries when a worker dies): texts never cross the object store, only matches do.
                results = read_dataset(corpus, field, global_rows=False, shards=(filesystem, todo),
                                       batch_rows=BATCH_ROWS, map_fn=_ScanFn(index_ref, fail_once, rows))
                stop_after = int(os.environ.get(STOP_AFTER_ENV) or 0)
                run(lambda: _reduce(results, todo, join, store, stop_after))
            seconds = time.perf_counter() - start
            cpus = ray.cluster_resources().get("CPU")
            if join.joined < len(shards):
                raise RuntimeError(f"only {join.joined} of {len(shards)} shards were joined")
            if after is not None:
                after(filesystem, shards, join)
    scanned_bytes = sum(s.size for s in todo)
    engine = {"name": "ray", "shards": len(shards), "shards_resumed": len(shards) - len(todo),
              "seconds": round(seconds, 3),
              "mb_per_s": round(scanned_bytes / 2 ** 20 / seconds, 1) if todo and seconds > 0 else None,
              "cpus": int(cpus) if cpus else None}
    info = {"source": source_name(corpus), "config": None, "split": split, "text": field,
            **({"notices": notices} if notices else {})}
    run_progress.done()
    return ContaminationResult(corpus=info, benchmark=bench_info, n=index.n, items=join.hits.items(index),
                               too_short=index.too_short, corpus_records=join.totals["records"],
                               corpus_tokens=join.totals["tokens"], corpus_no_words=join.totals["no_words"],
                               engine=engine)


class ShardJoin:
    """The shards' results joined in shard order as each one's turn comes (its rows follow the
    earlier shards' rows), so the driver holds one ``HitSet`` (bounded by the benchmark) whatever
    the number of shards, plus the results that arrived before their turn."""

    def __init__(self, shards, store):
        self.shards, self.store = shards, store
        self.hits, self.totals, self.joined = HitSet(), dict.fromkeys(COUNTS, 0), 0
        self.waiting: dict[int, dict | None] = {}
        # Per shard: its records and (for a copy) the rows within it that share an n-gram with an item.
        self.records: dict[int, int] = {}
        self.matched: dict[int, list] = {}

    def add(self, shard_index: int, result: dict | None) -> None:
        """A shard's result (None: saved in the store, read when its turn comes)."""
        self.waiting[shard_index] = result
        while self.joined < len(self.shards) and self.shards[self.joined].index in self.waiting:
            shard = self.shards[self.joined]
            result = self.waiting.pop(shard.index)
            if result is None:
                result = self.store.load(shard)
                if result is None:
                    raise AuditorError("output_path", f"The saved result of shard {shard.name} changed during the run.",
                                       "Run the command again.")
            self.hits.extend(result["hits"], self.totals["records"])
            for name in COUNTS:
                self.totals[name] += result[name]
            self.records[shard.index], self.matched[shard.index] = result["records"], result["matched"]
            self.joined += 1


def source_text_or_uri(corpus) -> str:
    """A corpus source: a path (str or os.PathLike) or a URI (s3://, gs://, hf://, file://)."""
    if isinstance(corpus, os.PathLike):
        corpus = os.fspath(corpus)
    if not isinstance(corpus, str) or not corpus.strip():
        raise AuditorError("usage", "No corpus given.", "Pass a file, directory, glob or URI of JSONL/Parquet shards.")
    return corpus


class _ScanFn:
    """The map function: one batch of (text, shard, row) -> per shard: records, tokens, texts
    with no word, and its matches reduced (``HitSet`` as JSON)."""

    def __init__(self, index_ref, fail_once: str | None, rows: bool = False):
        self.index_ref, self.fail_once, self.rows = index_ref, fail_once, rows

    def __call__(self, batch: pa.Table) -> pa.Table:
        import ray
        if self.fail_once and not os.path.exists(self.fail_once):
            Path(self.fail_once).write_text("failed once\n")
            os._exit(1)         # the worker dies mid-task: Ray must retry the task elsewhere
        index = _INDEX_CACHE.get(self.index_ref.hex())
        if index is None:
            _INDEX_CACHE.clear()
            index = _INDEX_CACHE[self.index_ref.hex()] = ray.get(self.index_ref)
        shard = batch.column("shard").to_numpy()
        row = batch.column("row").to_numpy()
        texts = batch.column("text")
        out = {name: [] for name in ("shard", "first_row", *COUNTS, "hits", "matched")}
        # A batch may span shards: split it where the shard changes (rows stay in order).
        cuts = np.flatnonzero(np.diff(shard)) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [shard.size])).tolist()):
            scanned = scan_batch(index, texts.slice(lo, hi - lo))
            first = int(row[lo])
            hits = HitSet()         # reduced in the task: what leaves it is bounded by the benchmark
            hits.extend(HitSet.from_batch(scanned, index), first)
            out["shard"].append(int(shard[lo]))
            out["first_row"].append(first)
            for name in COUNTS:
                out[name].append(getattr(scanned, name))
            out["hits"].append(json.dumps(hits.to_json()))
            out["matched"].append(json.dumps((np.flatnonzero(scanned.text_hit) + first).tolist() if self.rows else []))
        return pa.table({**{name: pa.array(out[name], pa.int64())
                            for name in ("shard", "first_row", *COUNTS)},
                         "hits": pa.array(out["hits"], pa.string()), "matched": pa.array(out["matched"], pa.string())})


_INDEX_CACHE: dict = {}


def _reduce(results, todo, join: ShardJoin, store, stop_after: int) -> None:
    """Consume the map's output in shard order; a shard is complete when a later shard's output (or
    the end) arrives, and is then saved (resume) and joined."""
    position = {s.index: k for k, s in enumerate(todo)}
    partial: dict[int, dict] = {}
    expected_row: dict[int, int] = {}
    finished = 0

    def finish_up_to(k: int) -> None:
        nonlocal finished
        while finished < k:
            shard = todo[finished]
            result = partial.pop(shard.index, None) or _new_result()
            join.add(shard.index, result)
            if store:
                store.save(shard, result)
                if stop_after and len(store.saved) >= stop_after:
                    raise KeyboardInterrupt(f"{STOP_AFTER_ENV}={stop_after}")   # fault injection: Ctrl-C
            finished += 1

    for batch in results.iter_batches(batch_format="pyarrow", batch_size=None):
        columns = {c: batch.column(c).to_pylist() for c in ("shard", "first_row", *COUNTS, "hits", "matched")}
        for at, (shard, first, hits) in enumerate(zip(columns["shard"], columns["first_row"], columns["hits"])):
            k = position[shard]
            finish_up_to(k)
            if expected_row.get(shard, 0) != first:      # order is what makes row numbers right: check it
                raise RuntimeError(f"shard {shard}: rows arrived out of order ({first} after {expected_row.get(shard, 0)})")
            expected_row[shard] = first + columns["records"][at]
            acc = partial.setdefault(shard, _new_result())
            for name in COUNTS:
                acc[name] += columns[name][at]
            acc["hits"].extend(HitSet.from_json(json.loads(hits)))     # rows within the shard, in order
            acc["matched"] += json.loads(columns["matched"][at])
    finish_up_to(len(todo))


def _run_key(bench_info: dict, n: int, field: str, rows: bool = False) -> str:
    """What a saved shard result depends on besides the shard itself (``rows``: it lists the
    matching rows, for a copy), and the code (``resume.run_key``)."""
    return resume.run_key({"benchmark": bench_info.get("fingerprint"), "records": bench_info.get("records"), "n": n,
                           "text": field, "tokenizer": TOKENIZER, "version": SHARD_FILE_VERSION, "rows": rows})


class ShardStore:
    """Per-shard results in a folder: ``contamination-KEY-NNNNN.json``, written atomically, signed and
    checked when read (``resume``): a file this run's code did not write for these inputs is not used."""

    def __init__(self, folder, key: str):
        self.folder, self.key = resume.shard_folder(folder), key
        self.saved: list[int] = []

    def path(self, shard) -> Path:
        return self.folder / f"contamination-{self.key}-{shard.index:05d}.json"

    def load(self, shard) -> dict | None:
        data = resume.load(self.path(shard), self.key, shard.identity())
        if data is None:
            return None                         # not ours, or not for this shard: scanned again
        try:
            return {**{name: int(data[name]) for name in COUNTS}, "hits": HitSet.from_json(data["hits"]),
                    "matched": [int(r) for r in data["matched"]]}
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, shard, result: dict) -> None:
        text = resume.dump(self.key, shard.identity(), {**{name: result[name] for name in COUNTS},
                                                        "hits": result["hits"].to_json(), "matched": result["matched"]})
        if text is None:
            return                              # no signing secret: nothing saved, nothing to trust later
        with atomic_write(self.path(shard), sync=False) as handle:     # a resume cache: checked when read
            handle.write(text)
        self.saved.append(shard.index)
