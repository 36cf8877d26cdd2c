"""``auditor contamination --engine ray --decontaminate OUT``: the Ray scan of the corpus's shards
(``distributed.contamination``, which also returns, per shard, the rows that share an n-gram with
an item), then every shard copied by a read task of its own into the folder OUT, as one JSONL file
per shard (its name, with ``.jsonl`` for its format and compression), without those rows.

A JSONL shard (plain or compressed) is copied line by line, each kept record's bytes as written, as
the local engine copies local JSONL files; other shards are parsed by the local engine's readers
(``runtime.map_shards``) and each kept record written as the auditor reads it. Each file is written
atomically and refused whole (no file) if the shard holds another number of records than it did
when scanned.
The driver holds only the matching rows, never a record. OUT must be a folder every node can write
to (a shared filesystem on a cluster); the manifest beside it (OUT.dropped.json) lists the dropped
rows, numbered over the corpus as the local engine numbers them, and each shard's file.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..decontaminate import MANIFEST_KIND, DecontaminationResult
from ..errors import AuditorError


def ray_decontaminate(corpus, benchmark: str, out_dir, *, manifest=None, corpus_split=None, corpus_text=None,
                      benchmark_config=None, benchmark_split=None, benchmark_text=None, ngram="auto", token=None,
                      progress=None, address=None, num_cpus=None, shard_dir=None,
                      quiet=False) -> DecontaminationResult:
    """Copy a sharded ``corpus`` into the folder ``out_dir`` without its records that share an
    n-gram with ``benchmark`` (settings as ``ray_contamination``'s)."""
    from ..contamination import BENCHMARKS
    from ..outputs import check_out_dir, check_outputs, write_text
    from ..sources import source_text
    from .contamination import _scan
    from .runtime import map_shards, run
    out_dir = os.fspath(out_dir)
    if "://" in out_dir:
        raise AuditorError("usage", f"The decontaminated shards are written to a folder, not {out_dir!r:.80}.",
                           "Give a folder every node of the cluster can write to (a shared filesystem).")
    out_dir = check_out_dir(out_dir, "--decontaminate")
    manifest = os.fspath(manifest) if manifest else f"{out_dir.rstrip(os.sep)}.dropped.json"
    bench = BENCHMARKS.get(benchmark, (source_text(benchmark),))[0]
    probe = os.path.join(out_dir, "shard.jsonl")        # a file in OUT stands for every copy
    try:
        check_outputs([corpus.removeprefix("file://") if isinstance(corpus, str) else corpus, bench],
                      [("--decontaminate", probe), ("--manifest", manifest)], make_dirs=[out_dir])
    except AuditorError as exc:         # named as given: the folder, not a file the user never wrote
        raise AuditorError(exc.code, exc.message.replace(repr(probe), f"{out_dir!r} (a folder of copies)"),
                           exc.hint) from None
    refuse_outputs_inside(out_dir, [("--manifest", manifest), ("--shard-dir", shard_dir)])
    _refuse_other_data(out_dir, corpus, corpus_split)
    done: dict = {}             # what the copy saw: the shards, their join, records written per shard

    def copy(filesystem, shards, join) -> None:
        names = copy_names(shards)
        for name in names.values():
            check_outputs([], [("--decontaminate", os.path.join(out_dir, name))], make_dirs=[out_dir])
        tasks = _CopyFn(filesystem, out_dir, names,
                        {s.index: (join.records[s.index], join.matched[s.index]) for s in shards})
        ds = map_shards(filesystem, shards, tasks)
        written = {}
        for batch in run(lambda: list(ds.iter_batches(batch_format="pyarrow", batch_size=None))):
            written.update(zip(batch.column("shard").to_pylist(), batch.column("written").to_pylist()))
        done.update(shards=shards, join=join, written=written)

    result = _scan(corpus, benchmark, corpus_split=corpus_split, corpus_text=corpus_text,
                   benchmark_config=benchmark_config, benchmark_split=benchmark_split, benchmark_text=benchmark_text,
                   ngram=ngram, token=token, progress=progress, address=address, num_cpus=num_cpus,
                   shard_dir=shard_dir, quiet=quiet, after=copy)
    shards, join, written = done["shards"], done["join"], done["written"]
    names = copy_names(shards)
    files, dropped, offset = [], [], 0
    for s in shards:
        rows = np.asarray(sorted(join.matched[s.index]), dtype=np.int64)
        dropped.append(rows + offset)
        files.append({"shard": s.name, "file": names[s.index], "records": join.records[s.index],
                      "kept": written[s.index], "dropped_rows": rows.tolist()})
        offset += join.records[s.index]
    dropped_rows = np.concatenate(dropped) if dropped else np.zeros(0, dtype=np.int64)
    doc = {"kind": MANIFEST_KIND, "version": 1, "corpus": result.corpus, "benchmark": result.benchmark,
           "ngram": result.n, "records": result.corpus_records, "kept": result.corpus_records - int(dropped_rows.size),
           "dropped": int(dropped_rows.size),
           "note": "dropped_rows are 0-based corpus rows (shards in order) sharing at least one n-gram with a "
                   "benchmark item; files lists each shard's copy and its dropped rows within the shard.",
           "dropped_rows": dropped_rows.tolist(), "files": files}
    write_text(manifest, json.dumps(doc, ensure_ascii=False, indent=1) + "\n", errors="backslashreplace")
    return DecontaminationResult(contamination=result, dropped_rows=dropped_rows, out=out_dir, manifest=manifest)


def refuse_outputs_inside(out_dir: str, outputs) -> None:
    """Other outputs ((label, path) pairs: the manifest, reports, saved shard results) inside the
    folder of copies would be read with them as the decontaminated corpus: refused."""
    folder = os.path.realpath(os.path.expanduser(out_dir))
    for label, path in outputs:
        if path and path != "-" and os.path.commonpath(
                [folder, os.path.realpath(os.path.expanduser(os.fspath(path)))]) == folder:
            raise AuditorError("output_path", f"{label} {os.fspath(path)!r} is inside the --decontaminate folder "
                               f"{out_dir!r}: its files would be read as copies of the corpus.",
                               "Give --decontaminate a folder of its own (the manifest goes beside it: "
                               "OUT.dropped.json).")


def _refuse_other_data(out_dir: str, corpus, split) -> None:
    """An OUT folder that already holds data files this copy will not replace (a former run's
    shard, contaminated records and all) is refused: read as the decontaminated corpus, they would
    come back with the copies while the report counts only these. Hidden files are no data (as
    the readers skip them)."""
    from .contamination import _source_text_or_uri
    from .runtime import RECORD_FORMATS, shard_format, split_shards
    # Listed before the scan, also so that two shards with one copy's name fail before it.
    names = copy_names(split_shards(_source_text_or_uri(corpus), split, RECORD_FORMATS)[1])
    held = []
    for root, dirs, files in os.walk(out_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        held += [os.path.relpath(os.path.join(root, f), out_dir).replace(os.sep, "/") for f in files
                 if not f.startswith(".") and shard_format(f, RECORD_FORMATS)]
    other = sorted(set(held) - set(names.values()))
    if other:
        more = f" and {len(other) - 1:,} more" if len(other) > 1 else ""
        raise AuditorError("output_path", f"--decontaminate {out_dir!r} already holds {other[0]!r}{more}, which no "
                           "shard of this corpus is copied to: it would be read with the copies as the "
                           "decontaminated corpus.", "Give a new or empty folder, or remove those files.")


def copy_names(shards) -> dict:
    """Each shard's copy, relative to the output folder: its name with ``.jsonl`` in place of its
    format's suffix and compression (part-2.jsonl.gz and part-3.parquet: part-2.jsonl, part-3.jsonl)."""
    from ..sources import codec_of
    names = {}
    for s in shards:
        name = s.name[:len(s.name) - len(codec_of(s.name) or "")]
        stem, dot, suffix = name.rpartition(".")
        names[s.index] = f"{stem if dot else name}.jsonl"
    seen: dict = {}
    for s in shards:
        other = seen.setdefault(names[s.index], s.name)
        if other != s.name:
            raise AuditorError("usage", f"Shards {other!r} and {s.name!r} would both be copied to {names[s.index]!r}.",
                               "Rename one of them, or decontaminate them apart.")
    return names


class _CopyFn:
    """The copy tasks' function (``runtime.map_shards``): one shard's records -> its file in the
    output folder without the matching rows; one row out (shard, records written)."""

    def __init__(self, filesystem, out_dir: str, names: dict, plan: dict):
        self.filesystem, self.out_dir, self.names, self.plan = filesystem, out_dir, names, plan

    def __call__(self, shard, parts):
        import pyarrow as pa
        from ..outputs import atomic_write
        records, matched = self.plan[shard.index]
        drop = set(matched)
        path = os.path.join(self.out_dir, self.names[shard.index])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        row = written = 0
        if shard.format == "jsonl":             # the lines themselves (``parts`` is left unread)
            items = self._lines(shard)
        else:
            items = (json.dumps(record, ensure_ascii=False, default=str) for part in parts for record in part)
        with atomic_write(path, errors="backslashreplace") as fh:
            for item in items:
                if row not in drop:
                    fh.write(item + "\n")
                    written += 1
                row += 1
            if row != records:          # raised inside the write: the shard's file is not left behind
                raise AuditorError("bad_format", f"Shard {shard.name!r} held {records:,} records when scanned and "
                                   f"{row:,} when copied: it changed while it was read.",
                                   "Run again once the corpus is no longer being written.")
        yield pa.table({"shard": pa.array([shard.index], pa.int64()), "written": pa.array([written], pa.int64())})

    def _lines(self, shard):
        """A JSONL shard's record lines (not blank), through the local engine's checked stream."""
        from .. import sources
        from ..decontaminate import stream_record_lines
        from .runtime import open_shard, shard_error
        with open_shard(self.filesystem, shard) as f:
            stream = sources._Counted(f, sources.Budget(limited=False), shard.name, b"\n")
            try:
                yield from stream_record_lines(stream, shard.name)
            except AuditorError:
                raise
            except Exception as exc:        # noqa: BLE001 - a read failure is this shard's (as runtime's readers)
                raise shard_error(shard, exc) from None
