"""``auditor contamination --engine ray --decontaminate OUT``: the Ray scan of the corpus's shards
(``distributed.contamination``, which also returns, per shard, the rows that share an n-gram with
an item), then every shard copied by a read task (small shards several to a task,
``runtime.shard_groups``) into the folder OUT, as one JSONL file per shard (its name, with
``.jsonl`` for its format and compression), without those rows.

A JSONL shard (plain or compressed) is copied line by line, each kept record's bytes as written, as
the local engine copies local JSONL files; other shards are parsed by the local engine's readers
(``runtime.map_shards``) and each kept record written as the auditor reads it. Each file is written
atomically and refused whole (no file) if the shard holds another number of records than it did
when scanned.
The driver holds only the matching rows, never a record. OUT is a folder every node can write to:
a shared filesystem on a cluster, or a folder of an object store (s3://, gs://, any URI pyarrow or
fsspec writes), where each copy is written under a hidden temporary name and then moved to its own,
so a reader never meets a part-written copy there either. The manifest beside it (OUT.dropped.json,
on the same store) lists the dropped rows, numbered over the corpus as the local engine numbers
them, and each shard's file; a previous run's manifest is removed before any copy is replaced.
"""
from __future__ import annotations

import os
import posixpath
import secrets
from contextlib import contextmanager

import numpy as np

from ..contamination import BENCHMARKS
from ..decontaminate import DecontaminationResult
from ..errors import AuditorError
from ..io.budget import Budget, CountedStream
from ..io.copies import record_line, stream_record_lines
from ..io.listing import codec_of
from ..io.outputs import atomic_write, check_out_dir, check_outputs, retire, write_text
from ..io.shards import (
    RECORD_FORMATS,
    URI,
    ctime_ns,
    filesystem_of,
    open_shard,
    shard_error,
    shard_format,
    shown_uri,
    split_glob,
    split_shards,
)
from ..io.sources import source_text
from ..report import decontaminate as report
from .contamination import scan_shards, source_text_or_uri
from .runtime import map_shards, run


def ray_decontaminate(corpus, benchmark: str, out_dir, *, manifest=None, corpus_split=None, corpus_text=None,
                      benchmark_config=None, benchmark_split=None, benchmark_text=None, ngram="auto", token=None,
                      progress=None, address=None, num_cpus=None, shard_dir=None,
                      quiet=False) -> DecontaminationResult:
    """Copy a sharded ``corpus`` into the folder ``out_dir`` without its records that share an
    n-gram with ``benchmark`` (settings as ``ray_contamination``'s)."""
    out_dir = os.fspath(out_dir).removeprefix("file://")       # a local path, spelt as a URI
    manifest = os.fspath(manifest).removeprefix("file://") if manifest is not None else None
    if manifest is not None and is_remote(manifest):
        raise AuditorError("usage", f"--manifest {shown_uri(manifest)!r} is a URI: the manifest is written beside "
                           "OUT, or to a local file.", "Leave --manifest out, or give a local path.")
    folder = OutFolder(out_dir)
    if folder.remote:
        _refuse_folder_over_input(folder, corpus)
        if manifest is not None:
            check_outputs([corpus.removeprefix("file://") if isinstance(corpus, str) else corpus,
                           bench_source(benchmark)], [("--manifest", os.fspath(manifest))])
    else:
        out_dir = check_out_dir(out_dir, "--decontaminate")
        folder = OutFolder(out_dir)
        manifest = os.fspath(manifest) if manifest else f"{out_dir.rstrip(os.sep)}.dropped.json"
        bench = bench_source(benchmark)
        probe = os.path.join(out_dir, "shard.jsonl")        # a file in OUT stands for every copy
        try:
            check_outputs([corpus.removeprefix("file://") if isinstance(corpus, str) else corpus, bench],
                          [("--decontaminate", probe), ("--manifest", manifest)], make_dirs=[out_dir])
        except AuditorError as exc:         # named as given: the folder, not a file the user never wrote
            raise AuditorError(exc.code, exc.message.replace(repr(probe), f"{out_dir!r} (a folder of copies)"),
                               exc.hint) from None
        refuse_outputs_inside(out_dir, [("--manifest", manifest), ("--shard-dir", shard_dir)])
    _refuse_other_data(folder, corpus, corpus_split)
    done: dict = {}             # what the copy saw: the shards, their join, records written per shard

    def copy(filesystem, shards, join) -> None:
        names = copy_names(shards)
        if not folder.remote:
            for name in names.values():
                check_outputs([], [("--decontaminate", os.path.join(out_dir, name))], make_dirs=[out_dir])
        # The previous run's manifest goes before any copy is replaced: a run killed now leaves
        # copies without a manifest, never copies described by another run's.
        if manifest is not None:
            retire(manifest)
        else:
            folder.remove_sibling(folder.name + ".dropped.json")
        tasks = _CopyFn(filesystem, folder, names,
                        {s.index: (join.records[s.index], join.matched[s.index]) for s in shards})
        ds = map_shards(filesystem, shards, tasks)
        written = {}
        for batch in run(lambda: list(ds.iter_batches(batch_format="pyarrow", batch_size=None))):
            written.update(zip(batch.column("shard").to_pylist(), batch.column("written").to_pylist()))
        done.update(shards=shards, join=join, written=written)

    result = scan_shards(corpus, benchmark, corpus_split=corpus_split, corpus_text=corpus_text,
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
    text = report.manifest(result, dropped_rows, files=files)
    if manifest is None:        # a remote OUT's: beside it, on the same store
        with folder.open_sibling(folder.name + ".dropped.json") as fh:
            fh.write(text)
        manifest = folder.shown.rstrip("/") + ".dropped.json"
    else:
        write_text(manifest, text, errors="backslashreplace")
    return DecontaminationResult(contamination=result, dropped_rows=dropped_rows, out=folder.shown, manifest=manifest)


def bench_source(benchmark: str) -> str:
    return BENCHMARKS.get(benchmark, (source_text(benchmark),))[0]


def is_remote(path: str) -> bool:
    """A URI of another filesystem than the local one (s3://, gs://, ...; not file://)."""
    return bool(URI.match(path)) and not path.startswith("file://")


class OutFolder:
    """Where the copies go: a local folder (each file written atomically, ``outputs.atomic_write``),
    or a folder of an object store, where a copy is written under a hidden temporary name (one the
    readers skip) and then moved to its own: an object store has no rename, but a move there is a
    server-side copy, so the name holds a whole copy or nothing. Sent to the copy tasks whole."""

    def __init__(self, out_dir: str):
        self.remote = is_remote(out_dir)
        self.shown = shown_uri(out_dir)
        if self.remote and any(c in self.shown for c in "*?["):
            raise AuditorError("usage", f"--decontaminate {self.shown!r} is a pattern: the copies go to one folder.",
                               "Give the folder's URI, without * ? or [.")
        self.filesystem, self.path, _ = filesystem_of(out_dir) if self.remote else (None, out_dir, False)
        if self.remote:
            self.shown, self.path = self.shown.rstrip("/"), self.path.rstrip("/")
            if "/" not in self.path:        # the manifest goes beside the folder: not beside a bucket
                raise AuditorError("usage", f"--decontaminate {self.shown!r} is a whole bucket.",
                                   f"Give a folder inside it, e.g. {self.shown}/decontaminated/.")
        self.name = self.path.rstrip("/" + os.sep).rpartition("/" if self.remote else os.sep)[2]

    def data_files(self, is_data) -> list:
        """The files below the folder that ``is_data(name)`` takes for data, relative and "/"-separated;
        hidden files and folders are skipped, as the readers skip them."""
        if not self.remote:
            held = []
            for root, dirs, files in os.walk(self.path):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                held += [os.path.relpath(os.path.join(root, f), self.path).replace(os.sep, "/") for f in files
                         if not f.startswith(".") and is_data(f)]
            return held
        from pyarrow import fs as pafs
        try:
            info = self.filesystem.get_file_info(self.path)
            if info.type == pafs.FileType.File:
                raise AuditorError("output_path", f"--decontaminate {self.shown!r} is a file, not a folder.",
                                   "Give a folder (it is created when missing).")
            infos = self.filesystem.get_file_info(pafs.FileSelector(self.path, recursive=True, allow_not_found=True))
        except AuditorError:
            raise
        except Exception as exc:        # noqa: BLE001 - a store raises its own client's errors
            raise AuditorError("not_found", f"Cannot list {self.shown!r}: {type(exc).__name__}: {exc}",
                               "Check the URI, the network and the credentials.") from None
        relative = [i.path[len(self.path) + 1:] for i in infos if i.type == pafs.FileType.File]
        return [r for r in relative if not any(part.startswith(".") for part in r.split("/"))
                and is_data(r.rpartition("/")[2])]

    @contextmanager
    def open_copy(self, name: str):
        """A text file for the copy ``name`` (relative to the folder), written whole or not at all."""
        if not self.remote:
            path = os.path.join(self.path, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with atomic_write(path, errors="backslashreplace") as fh:
                yield fh
            return
        with self._remote_text(f"{self.path}/{name}") as fh:
            yield fh

    @contextmanager
    def open_sibling(self, name: str):
        """A text file beside the folder (its manifest), on the same store."""
        parent = self.path.rpartition("/")[0]
        with self._remote_text(f"{parent}/{name}" if parent else name) as fh:
            yield fh

    def remove_sibling(self, name: str) -> None:
        """Delete the file ``name`` beside the folder on the store, if there is one."""
        from pyarrow import fs as pafs
        parent = self.path.rpartition("/")[0]
        path = f"{parent}/{name}" if parent else name
        if self._store(path, self.filesystem.get_file_info, path).type == pafs.FileType.File:
            self._store(path, self.filesystem.delete_file, path)

    @contextmanager
    def _remote_text(self, final: str):
        parent, _, base = final.rpartition("/")
        temporary = f"{parent}/.{base}.{secrets.token_hex(4)}.tmp" if parent else f".{base}.{secrets.token_hex(4)}.tmp"
        raw = self._store(final, self.filesystem.open_output_stream, temporary, compression=None)
        moved = False
        try:
            writer = _Utf8Writer(lambda data: self._store(final, raw.write, data))
            yield writer
            writer.flush()
            self._store(final, raw.close)
            self._store(final, self.filesystem.move, temporary, final)
            moved = True
        finally:
            if not moved:       # the caller's error, or the store's, goes on; the temporary goes
                for undo in (raw.close, lambda: self.filesystem.delete_file(temporary)):
                    try:
                        undo()
                    except Exception:   # noqa: BLE001 - nothing to close, or the store is gone: the name stays hidden
                        pass

    def _store(self, final: str, operation, *args, **kwargs):
        """``operation`` on the store; its client's error becomes one that names the copy."""
        try:
            return operation(*args, **kwargs)
        except Exception as exc:        # noqa: BLE001 - a store raises its own client's errors
            shown = f"{self.shown.partition('://')[0]}://{final}"
            raise AuditorError("output_path", f"Cannot write {shown!r}: {type(exc).__name__}: {exc}",
                               "Check the URI, the network and the credentials, and that the store "
                               "accepts writes there.") from None


class _Utf8Writer:
    """``write(str)`` into ``send(bytes)``, in pieces of about 1 MiB (an object store's stream takes
    bytes, and one call per line would be one call per record)."""

    def __init__(self, send):
        self.send, self.parts, self.size = send, [], 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.send("".join(self.parts).encode("utf-8", "backslashreplace"))
            self.parts, self.size = [], 0


def _refuse_folder_over_input(folder: OutFolder, corpus) -> None:
    """A remote OUT that holds the corpus, or lies inside its folder, is refused: the copies would
    replace shards, or be read as shards next time."""
    corpus = source_text_or_uri(corpus)
    if not is_remote(corpus) or corpus.partition("://")[0] != folder.shown.partition("://")[0]:
        return
    base = filesystem_of(split_glob(corpus)[0])[1].rstrip("/")
    if any(a == b or a.startswith(b + "/") for a, b in ((folder.path, base), (base, folder.path))):
        raise AuditorError("output_path", f"--decontaminate {folder.shown!r} and the corpus share a folder: the "
                           "copies would be read as its shards, or replace them.",
                           "Write the copies to a folder of their own, outside the corpus's.")
    if base == f"{folder.path}.dropped.json":
        raise AuditorError("output_path", f"The manifest beside --decontaminate {folder.shown!r} would replace the "
                           "corpus.", "Write the copies to another folder.")


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


def _refuse_other_data(folder: OutFolder, corpus, split) -> None:
    """An OUT folder that already holds data files this copy will not replace (a former run's
    shard, contaminated records and all) is refused: read as the decontaminated corpus, they would
    come back with the copies while the report counts only these. Hidden files are no data (as
    the readers skip them)."""
    # Listed before the scan, also so that two shards with one copy's name fail before it.
    names = copy_names(split_shards(source_text_or_uri(corpus), split, RECORD_FORMATS)[1])
    held = folder.data_files(lambda name: shard_format(name, RECORD_FORMATS))
    other = sorted(set(held) - set(names.values()))
    if other:
        more = f" and {len(other) - 1:,} more" if len(other) > 1 else ""
        raise AuditorError("output_path", f"--decontaminate {folder.shown!r} already holds {other[0]!r}{more}, which no "
                           "shard of this corpus is copied to: it would be read with the copies as the "
                           "decontaminated corpus.", "Give a new or empty folder, or remove those files.")


def copy_names(shards) -> dict:
    """Each shard's copy, relative to the output folder: its name with ``.jsonl`` in place of its
    format's suffix and compression (part-2.jsonl.gz and part-3.parquet: part-2.jsonl, part-3.jsonl)."""
    # A URI's shards are named by their whole key (bucket/folder/part-0.jsonl): their copies, by
    # the key below the folder they share, as a local folder's are.
    remote = [s.path for s in shards if "://" in s.location]
    common = (posixpath.commonpath(remote) if len(remote) > 1 else posixpath.dirname(remote[0])) if remote else ""
    names = {}
    for s in shards:
        shown = posixpath.relpath(s.path, common) if common else s.name
        name = shown[:len(shown) - len(codec_of(shown) or "")]
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

    def __init__(self, filesystem, folder: OutFolder, names: dict, plan: dict):
        self.filesystem, self.folder, self.names, self.plan = filesystem, folder, names, plan

    def __call__(self, shard, parts, notices=None):
        import pyarrow as pa
        records, matched = self.plan[shard.index]
        drop = set(matched)
        row = written = 0
        if shard.format == "jsonl":             # the lines themselves (``parts`` is left unread)
            items = self._lines(shard)
        else:
            items = (record_line(record) for part in parts for record in part)
        with self.folder.open_copy(self.names[shard.index]) as fh:
            for item in items:
                if row not in drop:
                    fh.write(item + "\n")
                    written += 1
                row += 1
            if row != records:          # raised inside the write: the shard's file is not left behind
                raise AuditorError("bad_format", f"Shard {shard.name!r} held {records:,} records when scanned and "
                                   f"{row:,} when copied: it changed while it was read.",
                                   "Run again once the corpus is no longer being written.")
            if not self._unchanged(shard):  # as many records, rewritten: the rows found are another version's
                raise AuditorError("bad_format", f"Shard {shard.name!r} changed while it was read (its size, "
                                   "modification or change time is not what it was when listed).",
                                   "Run again once the corpus is no longer being written.")
        yield pa.table({"shard": pa.array([shard.index], pa.int64()), "written": pa.array([written], pa.int64())})

    def _unchanged(self, shard) -> bool:
        info = self.filesystem.get_file_info(shard.path)
        return (info.size or 0, info.mtime_ns) == (shard.size, shard.mtime_ns) and \
            ("://" in shard.location or ctime_ns(shard.path) == shard.ctime_ns)

    def _lines(self, shard):
        """A JSONL shard's record lines (not blank), through the local engine's checked stream."""
        with open_shard(self.filesystem, shard) as f:
            stream = CountedStream(f, Budget(limited=False), shard.name, b"\n")
            try:
                yield from stream_record_lines(stream, shard.name)
            except AuditorError:
                raise
            except Exception as exc:        # noqa: BLE001 - a read failure is this shard's (as runtime's readers)
                raise shard_error(shard, exc) from None
