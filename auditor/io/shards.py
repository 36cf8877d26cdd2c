"""A sharded corpus as both engines list and read it: local files, folders and globs, and any
``scheme://`` URI that pyarrow or fsspec understands (s3://, gs://, hf://, file://).

``list_shards(source)`` gives (filesystem, shards) in a stable order (local shards sorted as the
local loader sorts them); ``split_shards`` chooses a split as the local loader does; a ``Shard``'s
``identity`` is what a resumed run's saved result must match. A URI's glob (``*``, ``**``,
``[...]``; ``?`` starts pyarrow's query options, e.g. ``?endpoint_override=HOST:PORT``) is matched
against one listing by the filesystem that reads the shards, so it needs no further package (no
s3fs); reports show a URI without credentials or options (``shown_uri``). ``open_shard`` and
``record_batches`` read a shard's records with the local parsers (``formats.stream_batches``).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pyarrow as pa

from ..errors import AuditorError
from ..env import format_bytes
from .budget import CHUNK, max_bytes, strict_streams
from .formats import flattened, stream_batches
from .listing import (
    CODECS,
    codec_of,
    display_name,
    is_datasets_metadata,
    split_files,
    unlisted_hint,
    unlisted_notice,
    unlisted_part,
)
from .listing import glob_files as local_glob
from .table import head_of

FORMATS = ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"), (".parquet", "parquet"), (".pq", "parquet"))
# Whole records (``record_batches``, the leak engine's reader) also come from CSV and TSV, as locally.
RECORD_FORMATS = FORMATS + ((".csv", "csv"), (".tsv", "tsv"))
URI = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
# A URI as shown: without user:secret@ and ?query (pyarrow's credentials and options).
_SHOWN = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^/@?]*@)?([^?#]*).*$", re.DOTALL)
# How long pyarrow's GCS client may retry a request (or the credentials lookup) before it fails.
GCS_RETRY_SECONDS = 60


@dataclass(frozen=True)
class Shard:
    index: int
    path: str           # as the filesystem below knows it (a local absolute path, or bucket/key)
    name: str           # as shown in messages and reports: the path relative to the source
    format: str         # jsonl | json | parquet
    size: int           # bytes on disk (compressed)
    location: str = ""  # where it is, whatever the source's spelling: an absolute path, or scheme://bucket/key
    mtime_ns: int | None = None     # last modified, when the filesystem says
    ctime_ns: int | None = None     # a local file's status change time (set by the system, not by `touch`)

    def identity(self) -> dict:
        """What a saved per-shard result must match to be reused (resume): the same file, unchanged
        as far as its location, size, modification time and (a local file) status change time tell;
        a shard of the same name and size in another folder, or rewritten since, is scanned again.
        The change time because the modification time is the user's to set: a shard rewritten
        with the same size and its old time put back (``touch -r``, ``cp -p``, ``rsync -t``) kept
        its stale result, and a resumed report missed the items it now holds."""
        return {"shard": self.name, "location": self.location, "size": self.size, "mtime_ns": self.mtime_ns,
                "ctime_ns": self.ctime_ns}


def shard_format(name: str, formats: tuple = FORMATS) -> str | None:
    lower = name.lower()
    lower = lower[:len(lower) - len(codec_of(lower) or "")]
    for suffix, fmt in formats:
        if lower.endswith(suffix):
            return fmt
    return None


def shown_uri(source: str) -> str:
    """A source as reports and messages show it: a URI without its credentials (``user:secret@``) and
    query options (``?endpoint_override=...``), which summary.json must never carry."""
    if not URI.match(source) or source.startswith("file://"):
        return source
    return _SHOWN.sub(r"\1\2", source)


def split_glob(source: str) -> tuple[str, str]:
    """(the URI up to the last folder before its first glob component, with its query; the
    components from there on). ``?`` in a URI starts its query (as pyarrow reads it), so the glob
    characters of a URI are ``*`` and ``[...]``."""
    parts = urlsplit(source)
    components = parts.path.split("/")
    first = next((k for k, c in enumerate(components) if any(ch in c for ch in "*[")), None)
    if first is None:
        return source, ""
    base = "/".join(components[:first]) or "/"
    return urlunsplit(parts._replace(path=base)), "/".join(components[first:])


def filesystem_of(source: str):
    """(pyarrow filesystem, path within it, is_uri) for a source string."""
    from pyarrow import fs as pafs
    if not URI.match(source) or source.startswith("file://"):
        local = source[len("file://"):] if source.startswith("file://") else source
        return pafs.LocalFileSystem(), os.path.expanduser(local), False
    # The filesystem is resolved from the URI's folder part, so a glob (which neither resolver
    # parses) is matched against that folder's listing, by the same filesystem that reads the shards.
    shown = shown_uri(source)
    try:
        base, pattern = split_glob(source)
    except ValueError as exc:       # e.g. "[" in the bucket's name
        raise AuditorError("usage", f"{shown!r}: not a URI ({exc}).", "Check the URI.") from None
    # Two resolvers, tried in order: pyarrow's own (s3, gs, hdfs, and hf:// through fsspec in the
    # pyarrow pinned here), then fsspec's for the schemes pyarrow does not know. Neither is a stand-in
    # for the other: a URI neither opens is refused with both reasons, so a credentials or typo
    # problem is never reported as "unknown scheme" (tests/test_ray_leak_sources.py).
    bounded = _bounded_retries(base)
    try:
        filesystem, path = pafs.FileSystem.from_uri(bounded)
        return filesystem, _join(path, pattern), True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        reason = str(exc).replace(bounded, shown_uri(base)).replace(base, shown_uri(base))
        arrow_reason = f"pyarrow: {reason}"     # never the URI's secrets
    except OSError as exc:      # e.g. S3's region lookup for the bucket: unreachable, or no such bucket
        raise AuditorError("not_found", f"Cannot open {shown!r}: {exc}",
                           "Check the URI, the network and the credentials (for S3: AWS_ENDPOINT_URL, "
                           "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION).") from None
    try:
        import fsspec
        fs, path = fsspec.core.url_to_fs(base)
    except (ImportError, ValueError) as exc:
        raise AuditorError("usage", f"{shown!r}: no filesystem for this URI ({arrow_reason}; fsspec: {exc}).",
                           "Use a local path, or a URI pyarrow or fsspec understands (s3://, gs://, hf://), "
                           "with that filesystem's package installed.") from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), _join(path, pattern), True


def _bounded_retries(uri: str) -> str:
    """A gs:// URI with pyarrow's ``retry_limit_seconds`` option (``GCS_RETRY_SECONDS`` unless it has
    one): pyarrow's GCS client otherwise retries an endpoint that does not answer, or a credentials
    lookup with no metadata server, for many minutes (measured: over 5 minutes on a closed port),
    where the run must stop with the URI named. The filesystem carries it to the Ray workers."""
    parts = urlsplit(uri)
    if parts.scheme not in ("gs", "gcs") or "retry_limit_seconds" in parse_qs(parts.query):
        return uri
    query = "&".join(q for q in (parts.query, f"retry_limit_seconds={GCS_RETRY_SECONDS}") if q)
    return urlunsplit(parts._replace(query=query))


def _join(path: str, pattern: str) -> str:
    return f"{path.rstrip('/')}/{pattern}" if pattern else path


def _filesystem_glob(filesystem, path: str) -> list:
    """The files under ``path``'s folder part that its glob matches (``*`` within a folder, ``**``
    across folders, as ``glob`` and fsspec match), listed by ``filesystem`` in one recursive listing
    (one paginated listing of the prefix on an object store); None when the folder part does not exist."""
    from fsspec.utils import glob_translate
    from pyarrow import fs as pafs
    components = path.split("/")
    first = next(k for k, c in enumerate(components) if any(ch in c for ch in "*?["))
    base = "/".join(components[:first])
    if filesystem.get_file_info(base).type == pafs.FileType.NotFound:
        return None
    matches = re.compile(glob_translate(path)).match
    infos = filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
    return [i for i in infos if matches(i.path)]


def list_shards(source: str, formats: tuple = FORMATS, notices: list | None = None) -> tuple[object, list[Shard]]:
    """(filesystem, shards) of a file, directory or glob (local or URI), sorted by path (local
    paths as ``pathlib`` sorts them, as the local engine does). ``formats``: the readable
    (suffix, format) pairs (``RECORD_FORMATS`` adds CSV and TSV). In a directory or a glob's
    matches, files in folders whose names start with "_" (Spark's _temporary/, Delta's _delta_log/)
    are skipped as the local engine skips them (``listing.unlisted_part``); ``notices`` gets what
    the report must say of skipped data files (``listing.unlisted_notice``)."""
    from pyarrow import fs as pafs
    filesystem, path, is_uri = filesystem_of(source)
    shown = shown_uri(source) if is_uri else Path(path).name
    pattern = any(c in path for c in "*?[")
    folder = ""                 # the directory listed, or a glob's literal folder part
    explicit = False            # a glob that names a hidden folder itself (".cache/*/x.jsonl" after a wildcard)
    wild: list = []             # a glob's components from its first wildcard (a "_" name they spell is read)
    if pattern:
        parts = path.split("/")
        first = next(k for k, c in enumerate(parts) if any(ch in c for ch in "*?["))
        folder = "/".join(parts[:first]) + "/" if first else ""
        explicit = any(p.startswith(".") for p in parts[first:-1])
        wild = parts[first:]
    try:
        if pattern:
            if is_uri:
                infos = _filesystem_glob(filesystem, path)
                if infos is None:
                    raise AuditorError("not_found", f"Not found: {shown!r} (nothing at the folder part of the glob).",
                                       "Check the bucket (or repository) and the folder before the glob.")
            else:
                # the local engine's glob: each file once, however many "**" (and a link loop ends)
                infos = [filesystem.get_file_info(p) for p in sorted(local_glob(path))]
        else:
            info = filesystem.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                if not is_uri and os.path.islink(path):
                    raise AuditorError("not_found", f"{shown!r} is a symbolic link to a file that does not exist.",
                                       "Fix the link, or point at the data file itself.")
                raise AuditorError("not_found", f"Not found: {shown!r}.",
                                   "Check the path or URI (relative paths start from the current folder).")
            if info.type not in (pafs.FileType.Directory, pafs.FileType.File):
                # a FIFO, socket or device, as the local engine refuses it: no size, and may never end
                raise AuditorError("bad_format", f"{shown!r} is not a regular file (a pipe, socket or device).",
                                   "Save the data to a file first and point at that file.")
            if info.type == pafs.FileType.Directory:
                folder = path.rstrip("/") + "/"
                if is_uri:
                    infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
                else:
                    # As the local engine lists a folder (Path.rglob): a link to a file is read, a
                    # link to a folder is not entered (Arrow's recursive listing enters it, so a
                    # folder linked in was read twice over, or a corpus's rows counted twice). Hidden
                    # folders (.git) are not listed: nothing in them is a shard (``hidden`` below).
                    files_found = []
                    for root, dirs, names in os.walk(path):
                        dirs[:] = [d for d in dirs if not d.startswith(".")]
                        files_found += [os.path.join(root, name) for name in names]
                    infos = filesystem.get_file_info(files_found)
            else:
                infos = [info]
    except AuditorError:
        raise
    except Exception as exc:        # noqa: BLE001 - an fsspec filesystem raises its own client's errors
        if not (is_uri or isinstance(exc, OSError)):
            raise
        raise AuditorError("not_found", f"Cannot list {shown!r}: {type(exc).__name__}: {exc}",
                           "Check the path, the URI, the network and the credentials.") from None

    def hidden(info) -> bool:
        # Hidden files, and files in hidden folders of a directory (.git, .ipynb_checkpoints), are
        # not the dataset, as for the local engine (listing.expand_local), which reads a file
        # named _part.jsonl: so does this one (Spark's _SUCCESS and _metadata have no data suffix).
        # A glob skips hidden folders below its literal part, as glob.glob does locally.
        inside = info.path[len(folder):] if folder and info.path.startswith(folder) else ""
        return info.base_name.startswith(".") or (not explicit and any(p.startswith(".") for p in inside.split("/")[:-1]))

    def below(info) -> list:
        # the path below the folder listed (or the glob's literal part), in components
        if not (pattern or folder):
            return []           # a file the user named is read, whatever its name
        if folder and info.path.startswith(folder):
            return info.path[len(folder):].split("/")
        return info.path.split("/") if is_uri else os.path.relpath(info.path, folder or os.curdir).split(os.sep)

    # (the datasets library's dataset_info.json and state.json are metadata, skipped as locally)
    data = [i for i in infos if i.type == pafs.FileType.File and shard_format(i.base_name, formats)
            and not hidden(i) and not ((pattern or folder) and is_datasets_metadata(i.base_name))]
    skipped = sorted("/".join(below(i)) for i in data if unlisted_part(below(i), wild))
    files = sorted((i for i in data if not unlisted_part(below(i), wild)),
                   key=lambda i: i.path if is_uri else Path(i.path))
    if not files:
        kinds = "JSONL, JSON, CSV, TSV or Parquet" if "csv" in {f for _, f in formats} else "JSONL, JSON or Parquet"
        if not pattern and not folder and len(infos) == 1 and infos[0].type == pafs.FileType.File:
            raise AuditorError("bad_format", f"{shown}: unsupported file type for --engine ray.",
                               f"Use {kinds} shards (optionally compressed: .gz, .zst, .bz2).")
        if pattern:             # named as given (its last component alone, "*.jsonl", says little)
            raise AuditorError("not_found", f"The pattern {shown_uri(source)!r} matches no {kinds} shards."
                               + unlisted_hint(skipped), "Check the pattern (e.g. 'data/*.jsonl.gz'); hidden "
                               "files and folders, and folders whose names start with '_' matched by a "
                               "wildcard, are skipped.")
        raise AuditorError("not_found", f"{shown!r} holds no {kinds} shards." + unlisted_hint(skipped),
                           "Point at a shard, a directory of shards or a glob (e.g. 'data/*.jsonl.gz'); hidden "
                           "files and folders, and folders whose names start with '_' (Spark's _temporary/), are "
                           "skipped.")
    if notices is not None and skipped:
        success = None if pattern else any(i.path == folder + "_SUCCESS" for i in infos)
        notices.append(unlisted_notice(repr(shown_uri(source)) if pattern else repr(shown), skipped, success))
    root = path if not pattern and len(files) > 1 else os.path.dirname(files[0].path) if len(files) == 1 else \
        os.path.commonpath([f.path for f in files]) if not is_uri else ""
    shards = []
    for index, info in enumerate(files):
        name = os.path.relpath(info.path, root) if root and not is_uri else info.path
        location = f"{source.split('://', 1)[0]}://{info.path}" if is_uri else os.path.abspath(info.path)
        shards.append(Shard(index, info.path, name, shard_format(info.base_name, formats), info.size or 0,
                            location, info.mtime_ns, None if is_uri else ctime_ns(info.path)))
    return filesystem, shards


def ctime_ns(path: str) -> int | None:
    try:
        return os.stat(path).st_ctime_ns
    except OSError:         # gone since it was listed: its read fails, naming it
        return None


def split_shards(source: str, split, formats: tuple = FORMATS) -> tuple[object, list[Shard], str | None, list]:
    """(filesystem, shards, split, notices): ``list_shards``, with the split chosen as the local
    loader chooses it (``listing.split_files``), so both engines read the same rows and say so in
    the same words."""
    listed: list = []
    filesystem, shards = list_shards(source, formats, listed)
    chosen, split, notices, _ = split_files(shards, [s.path for s in shards], split, repr(shown_uri(source)))
    return filesystem, [replace(s, index=i) for i, s in enumerate(chosen)], split, listed + notices


def open_shard(filesystem, shard: Shard):
    """A shard opened for ``record_batches``: decompressed as a stream (codec from the name), or
    random access for Parquet (a compressed Parquet file is decompressed whole, as locally)."""
    suffix = codec_of(shard.path)
    codec = CODECS[suffix][1] if suffix else None
    if suffix and codec is None:               # xz: no codec in Arrow, Python's over the raw stream
        stream = strict_streams(filesystem.open_input_stream(shard.path), suffix)     # every stream, or an error
        if shard.format != "parquet":
            return stream
        with stream:
            return pa.BufferReader(_whole(stream, shard))
    if shard.format != "parquet":
        return filesystem.open_input_stream(shard.path, compression=codec)
    if codec is None:
        return filesystem.open_input_file(shard.path)
    with filesystem.open_input_stream(shard.path, compression=codec) as f:
        return pa.BufferReader(_whole(f, shard))


def _whole(stream, shard: Shard) -> bytearray:
    """A compressed Parquet shard decompressed into memory (Parquet is read by random access), a
    chunk at a time and at most the reading limit (AUDITOR_MAX_BYTES), as the local engine reads one."""
    limit, held = max_bytes(), bytearray()
    while chunk := stream.read(CHUNK):
        if len(held) + len(chunk) > limit:
            raise AuditorError("too_large", f"{shard.name}: a compressed Parquet shard is decompressed whole "
                               f"(Parquet is read by random access), and this one holds more than the reading "
                               f"limit of {format_bytes(limit)} (AUDITOR_MAX_BYTES).",
                               "Store it as plain .parquet (its columns are compressed inside), or raise "
                               "AUDITOR_MAX_BYTES (e.g. AUDITOR_MAX_BYTES=4G) if each worker has the memory.")
        held += chunk
    return held


def record_batches(f, shard: Shard, parquet_rows: int = 65536, notices: list | None = None):
    """Lists of whole records of an open shard, parsed by the local engine's own readers
    (``auditor.io.formats.stream_batches``: ``json.loads`` per line, the item-by-item JSON reader, the CSV reader,
    Parquet's ``to_pylist``), so every record is the dict the local engine reads, keys, types and
    errors included (Arrow's JSON reader would type fields by the block and fill missing keys);
    ``notices`` gets what those readers say of the file (a delimiter guessed, a column renamed).
    Memory: one chunk of the stream (1 MiB, or 4,096 JSON items, or 65,536 Parquet rows) at a time."""
    yield from stream_batches(f, shard.name, shard.format, notices, parquet_rows=parquet_rows)


def head_records(filesystem, shards: list) -> list[dict]:
    """The first records of the shards, in order, within ``table.head_of``'s bounds (what roles are
    guessed from), read on the driver by the tasks' reader (``record_batches``: the local engine's
    parsers, so a first line longer than any fixed head, a JSON object of columns or a compressed
    Parquet file read as they do in the tasks), a few Parquet rows at a time."""
    def records():
        for shard in shards:
            try:
                with open_shard(filesystem, shard) as f:
                    yield from flattened(record_batches(f, shard, HEAD_PARQUET_ROWS))
            except AuditorError:
                raise
            except Exception as exc:        # noqa: BLE001 - the shard's fault, named
                raise shard_error(shard, exc) from None

    stream = records()
    try:
        return head_of(stream)
    finally:
        stream.close()


HEAD_PARQUET_ROWS = 64      # Parquet rows read at a time for the head (a task reads 65,536)


def shard_error(shard: Shard, exc: BaseException) -> AuditorError:
    return AuditorError("bad_format", f"Shard {shard.name!r} cannot be read: {type(exc).__name__}: {str(exc)[:300]}",
                        "Fix or remove the shard (a truncated download, or not JSON / Parquet) and re-run.")


def source_name(source: str) -> str:
    """A source as reports and messages show it: a local one by its name (as the local engine shows
    it, never this machine's folders), a URI without credentials or options."""
    local = "://" not in source or source.startswith("file://")
    return display_name(source.removeprefix("file://")) if local else shown_uri(source)
