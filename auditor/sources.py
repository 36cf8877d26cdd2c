"""Step 1, load: turn a source string into a ``Table`` of rows.

A source is one of
- ``example:NAME`` — a real dataset bundled with the package (works offline);
- a local file, directory or glob of JSONL / JSON / CSV / TSV / Parquet (optionally compressed:
  ``.gz``, ``.bz2``, ``.xz``, ``.zst``, ``.lz4``, ``.br``);
- a Hugging Face dataset id, loaded through ``datasets`` (imported only then).

Every loading failure is raised here as an ``AuditorError`` that names the file,
line or split, so no caller has to interpret library exceptions. Reading is bounded by a byte
budget (``AUDITOR_MAX_BYTES``) enforced while streaming, and a row cap stops it (see "bounded
reading" below).
"""
from __future__ import annotations

import bz2
import codecs
import csv
import glob
import gzip
import io
import itertools
import json
import lzma
import os
import re
import sys
import zlib
from pathlib import Path, PurePosixPath

from .errors import AuditorError
from .table import Table, choose_split  # noqa: F401  (Table re-exported: auditor.sources.Table)

EXAMPLES_DIR = Path(__file__).parent / "examples"
SUPPORTED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".pq")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


# --------------------------------------------------------------------------- entry point

def load(source: str | os.PathLike, config: str | None = None, split: str | None = None, *,
         max_rows: int | None = None, token=None, kind: str = "auto", default_split: str = "train",
         revision: str | None = None) -> Table:
    """Load ``source`` (see module docstring). ``max_rows`` caps the rows read;
    a capped load says so in ``Table.truncated``. ``token`` (or ``HF_TOKEN``; pass False to
    ignore the environment) is used for gated hub sets only and is never stored.
    ``kind`` ("auto", "example", "local" or "hub") forces how the source is read: a
    server should pass "hub" for a typed-in id, so a name never reads a local path.
    ``default_split``: the split read when none is given and the source has several (a
    benchmark's is "test"); the report says which was used. ``revision``: a Hub dataset's commit
    sha, branch or tag (default: its latest commit; ``Table.revision`` is the commit read)."""
    source = source_text(source)
    check_max_rows(max_rows)
    source = source.strip()
    if kind not in ("auto", "example", "local", "hub"):
        raise AuditorError("usage", f"Unknown source kind {kind!r}.", "Use auto, example, local or hub.")
    if revision is not None and (not isinstance(revision, str) or not REVISION.match(revision)):
        raise AuditorError("usage", f"Revision {revision!r:.60} is not a commit sha, branch or tag name.",
                           "Give a Hub dataset's commit sha (as a report's input.revision shows it), or a "
                           "branch or tag of it.")
    if source.startswith("example:") and kind in ("auto", "example"):
        _refuse_revision(source, revision)
        return _load_example(source, config, split, max_rows, default_split)
    if kind == "local" or (kind == "auto" and looks_local(source)):
        _refuse_local_config(source, config)
        _refuse_revision(source, revision)
        return _load_local(source, split, max_rows, default_split)
    if kind in ("auto", "hub") and HUB_ID.match(source):
        from .hub import load_hub  # imports `datasets`: only when a hub id is given
        return load_hub(source, config, split, max_rows, token, default_split, revision=revision)
    raise AuditorError("not_found", f"No file, directory or glob matches {source!r}, and it is not a "
                       "valid Hugging Face dataset id.",
                       "Check the path, or use an id like 'openai/gsm8k' or a bundled set like 'example:gsm8k'.")


MAX_ROWS_LIMIT = sys.maxsize
# A Hub revision: a commit sha, or a branch or tag name (git's rules, roughly: no spaces, no "..").
REVISION = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


def _refuse_revision(source: str, revision) -> None:
    if revision is not None:
        raise AuditorError("usage", f"{source}: a revision applies to Hugging Face datasets only.",
                           "Leave the revision out for files and bundled examples.")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def check_max_rows(max_rows) -> None:
    """A row cap is a whole number from 1 to 2^63-1 (None: no cap)."""
    if max_rows is None:
        return
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise AuditorError("usage", f"max_rows must be a positive whole number, got {max_rows!r:.40}.",
                           "Leave it out to read every row.")
    if max_rows > MAX_ROWS_LIMIT:
        raise AuditorError("usage", f"max_rows {max_rows:,} is more than any source can hold (at most "
                           f"{MAX_ROWS_LIMIT:,}).", "Leave it out to read every row.")


def source_text(source) -> str:
    """A source as a string: paths (``pathlib.Path``, ``os.PathLike``) are accepted as they are;
    URLs are refused with the kinds of source that are supported."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
        if isinstance(source, bytes):
            source = os.fsdecode(source)
    if not isinstance(source, str) or not source.strip():
        what = "" if source is None or isinstance(source, str) else f" (got {type(source).__name__} {source!r:.40})"
        rows = " Rows in memory (a list of dicts, a DataFrame's to_dict(\"records\")): pass " \
            "auditor.Table(rows=ROWS, source=\"NAME\")." if what else ""
        raise AuditorError("usage", f"No dataset given{what}.",
                           "Pass a Hugging Face dataset id, a local file path, or example:gsm8k." + rows)
    url = _URL.match(source.strip())
    if url:
        hub = re.search(r"/datasets/([\w.-]+/[\w.-]+)", source)
        suggestion = f" For a Hub dataset pass its id: {hub.group(1)!r}." if hub else ""
        raise AuditorError("usage", f"{source.strip()!r}: {url.group(1)}:// sources are not supported.",
                           "Supported: a local file, directory or glob of JSONL / JSON / CSV / TSV / Parquet "
                           "(optionally .gz), a Hugging Face dataset id (owner/name), or a bundled example:NAME. "
                           f"Download the file first.{suggestion}")
    return source


def looks_local(source: str) -> bool:
    if os.path.exists(source) or any(c in source for c in "*?["):
        return True
    # A path-like string that does not exist is a missing file, not a hub id.
    return source.startswith((".", "/", "~")) or os.sep + os.sep in source or \
        source.lower().endswith(DATA_SUFFIXES)


# --------------------------------------------------------------------------- bundled examples

def example_names() -> list[str]:
    return sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.is_dir()) if EXAMPLES_DIR.exists() else []


def example_layout(name: str) -> dict[str, dict[str, Path]]:
    """{config: {split: path}} of a bundled example (files are CONFIG/SPLIT.jsonl.gz)."""
    root = EXAMPLES_DIR / name
    layout: dict[str, dict[str, Path]] = {}
    for path in sorted(root.glob("*/*.jsonl.gz")):
        layout.setdefault(path.parent.name, {})[path.name[: -len(".jsonl.gz")]] = path
    return layout


def _load_example(source: str, config, split, max_rows, default_split: str = "train") -> Table:
    name = source.split(":", 1)[1].strip().lower()
    if name not in example_names():
        raise AuditorError("not_found", f"There is no bundled example called {name!r}.",
                           f"Bundled examples: {', '.join('example:' + n for n in example_names())}.")
    layout = example_layout(name)
    notices = []
    if config is None:
        config = "default" if "default" in layout else sorted(layout)[0]
        if len(layout) > 1:
            notices.append(f"config not given: using '{config}' (available: {', '.join(sorted(layout))})")
    if config not in layout:
        raise AuditorError("bad_config", f"example:{name} has no config {config!r}.",
                           f"Available configs: {', '.join(sorted(layout))}.")
    splits = layout[config]
    split, note = choose_split(split, list(splits), f"example:{name}", default_split)
    if note:
        notices.append(note)
    rows, truncated = read_file(splits[split], max_rows)
    return Table(rows=rows, source=f"example:{name}", config=config, split=split,
                 files=(f"example:{name}/{config}/{split}",), row_cap=max_rows, truncated=truncated,
                 splits=tuple(splits), configs=tuple(sorted(layout)), notices=tuple(notices))


# --------------------------------------------------------------------------- local files

def local_files(source: str, split: str | None = None, *, default: str = "train") -> tuple:
    """(the files of a local source to read, the split they hold or None, notices, every split's
    name): ``split_files`` of ``expand_local``'s files."""
    listed: list = []
    paths = expand_local(source, listed)
    paths, split, notices, splits = split_files(paths, [str(p) for p in paths], split, f"{source!r}", default)
    return paths, split, listed + notices, splits


def split_files(items: list, paths: list[str], split: str | None, what: str, default: str = "train") -> tuple:
    """(the items of the split to read, that split or None, notices, every split's name), for both
    engines (``items``: files or shards; ``paths``: theirs, "/"-separated). Files named or filed as
    splits (``split_of``, on each path below the folder they share) act as splits, as on the Hub:
    a given ``split`` selects its files; without one, the ``default`` split (train; an evaluation
    side's: test) when the files hold train or test among several, else every file is read."""
    common = os.path.commonpath(paths) if len(paths) > 1 else None
    by_split: dict[str, list] = {}
    for item, path in zip(items, paths):
        relative = PurePosixPath(path).relative_to(common) if common else PurePosixPath(PurePosixPath(path).name)
        by_split.setdefault(split_of(relative), []).append(item)
    notices = []
    if split is not None or (len(items) > 1 and len(by_split) > 1 and {"train", "test"} & set(by_split)):
        split, note = choose_split(split, sorted(by_split), what, default)
        notices += [note] if note else []
        items = by_split[split]
    return items, split, notices, tuple(sorted(by_split))


def _refuse_local_config(source: str, config) -> None:
    """A config names a Hub dataset's (or bundled example's) subset: a local source has none, and a
    config given for one must not be silently ignored."""
    if config is not None and not (isinstance(config, str) and not config.strip()):
        raise AuditorError("usage", f"{display_name(source)!r} is a local source: it has no configs "
                           f"(config {config!r:.60} given).",
                           "Leave the config out for local files; use the split (train.jsonl, test.jsonl ...) "
                           "or point at the file you want.")


def _load_local(source: str, split, max_rows, default_split: str = "train") -> Table:
    paths, split, notices, splits = local_files(source, split, default=default_split)
    rows: list = []
    truncated = False
    budget = Budget(max_rows)                # one reading budget for all the files of the source
    for path in paths:
        remaining = None if max_rows is None else max_rows - len(rows)
        if remaining is not None and remaining <= 0:
            truncated = True
            break
        part, part_truncated = read_file(path, remaining, budget, notices)
        rows.extend(part)
        truncated = truncated or part_truncated
    if not rows:
        names = ", ".join(p.name for p in paths)
        raise AuditorError("empty_input", f"{names}: no records found.",
                           "The file is empty or holds only a header; check that it is the right file.")
    return Table(rows=rows, source=display_name(source), split=split, files=tuple(p.name for p in paths),
                 row_cap=max_rows, truncated=truncated, splits=splits,
                 notices=tuple(notices))


def display_name(source: str) -> str:
    """A source as shown in reports: no directories of this machine, just the name."""
    return Path(source).name or source


def split_of(relative: PurePosixPath) -> str:
    """The split a data file holds, by its path below the folder its source's files share (both
    engines use this): a folder named as a split (train/0000.parquet, the Hub's converted Parquet
    layout), else its name less any shard number (train.jsonl, test-00000-of-00002.parquet,
    train_1.jsonl, Train.jsonl: train)."""
    for folder in reversed(relative.parts[:-1]):
        if folder.lower() in SPLIT_KEYS:
            return folder.lower()
    stem = relative.name.split(".")[0]
    name = re.split(r"[-_](?:\d+|of)(?=[-_]|$)", stem)[0] or stem
    return name.lower() if name.lower() in SPLIT_KEYS else name


# What the ``datasets`` library writes beside the data (a Hub repo's dataset_infos.json, a
# save_to_disk folder's state.json): read as data, each was one more record (a folder of
# data.jsonl and dataset_infos.json audited 301 records) or, alone, the whole "dataset".
DATASETS_METADATA = frozenset({"dataset_info.json", "dataset_infos.json", "dataset_dict.json", "state.json"})


def is_datasets_metadata(name: str) -> bool:
    """Whether a file in a folder or glob is ``datasets``' metadata, not data (skipped there; a
    file given by name is still read)."""
    return name.lower() in DATASETS_METADATA


# What Spark, Hadoop, Dask and Delta write beside the part files of a folder, as pyarrow.dataset and
# Spark read it (names starting with "." or "_" are not data): hidden files (.part-0000.parquet.crc)
# are skipped by both engines as before, and so are _SUCCESS, _committed_*, _started_*, _metadata
# and _common_metadata (they have no data suffix). A folder whose name starts with "_" is not data
# either: _temporary/ (a running or failed job's attempt files), _delta_log/ (Delta's JSON commit
# log). (Read as data, _temporary/'s attempt files added a failed job's rows to the folder's: 30
# rows in a folder of 20 part rows.) A *file* named "_part.jsonl" has a data suffix and is read, as
# it always was (no writer puts metadata in one; tests/test_ray_hostile.py relies on it).
def unlisted_part(parts, pattern=()) -> str | None:
    """The first folder of ``parts`` (a discovered file's path below the folder or glob prefix the
    user named, its name last) whose name starts with "_", or None: a file below one is skipped.
    A folder that a component of the glob ``pattern`` starting with "_" matches ("out/_data/*.jsonl",
    "out/_*/x.jsonl") was asked for, and is read; so is anything the user names (a folder "_data"
    given as the source is above ``parts``)."""
    import fnmatch
    asked = [q for q in pattern if q.startswith("_")]
    for part in list(parts)[:-1]:
        if part.startswith("_") and not any(fnmatch.fnmatchcase(part, q) for q in asked):
            return part
    return None


def unlisted_notice(where: str, skipped: list[str], success: bool | None = None) -> str | None:
    """What the report says of the data files (``skipped``: "/"-separated paths below ``where``)
    that a listing skipped by ``unlisted_part``: a _temporary/ folder holding files is a Spark /
    Hadoop write that has not finished (or failed), which the user must know; other "_" names are
    named, with how to read one. ``success``: whether the folder holds _SUCCESS (None: unknown)."""
    if not skipped:
        return None
    temporary = [s for s in skipped if "_temporary" in s.split("/")[:-1]]
    other = [s for s in skipped if s not in set(temporary)]
    said = []
    if temporary:
        unfinished = " and there is no _SUCCESS file" if success is False else ""
        said.append(f"{len(temporary):,} data file(s) in _temporary/ not read (e.g. {temporary[0]!r}): the attempt "
                    f"files of a Spark / Hadoop write that has not finished or failed{unfinished}; only the "
                    "committed part files are read. Check that the job completed.")
    if other:
        said.append(f"{len(other):,} data file(s) in folders whose names start with '_' not read (e.g. "
                    f"{', '.join(map(repr, other[:3]))}): such folders hold metadata, not data (Spark, Hadoop, "
                    "Delta, pyarrow). Name the folder (or the file) to read it.")
    return f"{where}: " + " ".join(said)


def _unlisted_hint(skipped: list[str]) -> str:
    return (f" {len(skipped):,} data file(s) in folders whose names start with '_' were skipped (e.g. "
            f"{skipped[0]!r}): Spark / Hadoop attempt files (_temporary/) or metadata; name the folder to read it."
            if skipped else "")


def _refuse_saved_dataset(folder: str, files: list[Path]) -> None:
    """A folder written by ``datasets``' save_to_disk keeps its records in Arrow files, which are
    not read: without this its state.json and dataset_info.json were audited as two records."""
    names = {p.name.lower() for p in files}
    if ("state.json" in names or "dataset_dict.json" in names) and any(n.endswith(".arrow") for n in names):
        raise AuditorError("bad_format", f"{display_name(folder)!r} is a folder saved by the datasets library "
                           "(save_to_disk): its records are in .arrow files, which are not read here.",
                           "Load it with datasets.load_from_disk(FOLDER) and write each split with "
                           ".to_parquet('train.parquet') or .to_json('train.jsonl'), or audit the Hub id it "
                           "came from.")


def _glob_files(pattern: str) -> list[str]:
    """What ``glob.glob(pattern, recursive=True)`` lists, each path once. A "**" folder is walked
    here: glob listed a file once per "**" that could match its folders ("data/**/**/*.jsonl" read
    every file twice: every record an exact duplicate), took time exponential in the number of
    "**", and followed a symbolic link to a folder above it for ever (a link loop hung the run).
    Each real folder is walked once (links followed); hidden files and folders are skipped, as glob
    skips them."""
    parts = pattern.split(os.sep)
    parts = [p for i, p in enumerate(parts) if not (p == "**" and i and parts[i - 1] == "**")]
    if "**" not in parts:
        return list(dict.fromkeys(glob.glob(os.sep.join(parts), recursive=True)))
    from .outputs import glob_parts_match
    cut = parts.index("**")
    head, tail = os.sep.join(parts[:cut]), tuple(parts[cut:])
    if cut and not head:
        head = os.sep                                      # "/**/x.jsonl"
    roots = [head] if not head or not glob.has_magic(head) else glob.glob(head)
    found, seen = {}, set()
    for root in roots:
        for folder, dirs, files in os.walk(root or os.curdir, followlinks=True):
            try:
                st = os.stat(folder)
            except OSError:
                dirs[:] = []
                continue
            if (st.st_dev, st.st_ino) in seen:             # met before: through a link, or a loop
                dirs[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            below = os.path.relpath(folder, root or os.curdir).split(os.sep)
            below = [] if below == [os.curdir] else below
            for name in files:
                if not name.startswith(".") and glob_parts_match(tail, (*below, name)):
                    found.setdefault(os.path.join(root, *below, name) if root else os.path.join(*below, name))
    return list(found)


def expand_local(source: str, notices: list | None = None) -> list[Path]:
    """The data files of a local file, directory or glob, sorted. A file the user names is read
    whatever its name; in a directory or a glob's matches, hidden files and folders, folders whose
    names start with "_" (``unlisted_part``: Spark's _temporary/ ...) and the datasets library's
    metadata are skipped; ``notices`` gets what the report must say of skipped data files."""
    expanded = os.path.expanduser(source)
    if os.path.isdir(expanded):
        # Hidden files and folders (.git, .ipynb_checkpoints, .cache) are not the dataset: skipped.
        visible = [p for p in Path(expanded).rglob("*")
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(expanded).parts)]
        _refuse_saved_dataset(source, visible)
        # Spark's / Hadoop's / Dask's "_" entries (_temporary/, _SUCCESS, _metadata) are not data either
        data = [p for p in visible if format_of(p) and not is_datasets_metadata(p.name)]
        skipped = [p.relative_to(expanded).as_posix() for p in data if unlisted_part(p.relative_to(expanded).parts)]
        found = sorted(p for p in data if not unlisted_part(p.relative_to(expanded).parts))
        if not found:
            raise AuditorError("not_found", f"Directory {display_name(source)!r} holds no JSONL, JSON, CSV or "
                               "Parquet files." + _unlisted_hint(sorted(skipped)),
                               "Point at a file, or a directory of data files (hidden files and folders, folders "
                               "whose names start with '_' such as Spark's _temporary/, and the datasets "
                               "library's dataset_info.json and state.json, are skipped).")
        if notices is not None and skipped:
            success = any(p.name == "_SUCCESS" and p.parent == Path(expanded) for p in visible)
            notices.append(unlisted_notice(repr(display_name(source)), sorted(skipped), success))
        return found
    if os.path.isfile(expanded):
        if format_of(Path(expanded)) is None:
            raise AuditorError("bad_format", f"{display_name(source)}: unsupported file type.",
                               "Use .jsonl, .json, .csv, .tsv or .parquet (optionally .gz, .bz2, .xz, .zst, .lz4 or .br).")
        return [Path(expanded)]
    if any(c in source for c in "*?["):
        data = [p for p in _glob_files(expanded)
                if os.path.isfile(p) and format_of(Path(p)) and not is_datasets_metadata(Path(p).name)]
        # "_" folders matched by a wildcard are skipped as in a folder ("out/**/*.parquet" and
        # _temporary/); a "_" folder the pattern spells ("out/_data/*", "out/_*/*.jsonl") is read.
        components = expanded.split(os.sep)
        first = next(k for k, c in enumerate(components) if glob.has_magic(c))
        prefix, wild = os.sep.join(components[:first]) or (os.sep if expanded.startswith(os.sep) else os.curdir), \
            components[first:]
        below = {p: os.path.relpath(p, prefix).split(os.sep) for p in data}
        skipped = sorted("/".join(below[p]) for p in data if unlisted_part(below[p], wild))
        found = sorted(Path(p) for p in data if not unlisted_part(below[p], wild))
        if not found:
            raise AuditorError("not_found", f"The pattern {source!r} matches no data files." + _unlisted_hint(skipped),
                               "Check the pattern; supported: .jsonl .json .csv .tsv .parquet (optionally .gz, "
                               ".bz2, .xz, .zst, .lz4 or .br); hidden files, and folders whose names start with "
                               "'_' matched by a wildcard, are skipped.")
        if notices is not None and skipped:
            notices.append(unlisted_notice(repr(source), skipped))
        return found
    if os.path.exists(expanded):           # a FIFO, socket or device: no size, and may never end
        raise AuditorError("bad_format", f"{display_name(source)!r} is not a regular file (a pipe, socket or "
                           "device).", "Save the data to a file first and point at that file.")
    if os.path.islink(expanded):
        raise AuditorError("not_found", f"{display_name(source)!r} is a symbolic link to a file that does not "
                           "exist.", "Fix the link, or point at the data file itself.")
    raise AuditorError("not_found", f"File not found: {display_name(source)!r}.",
                       "Check the path (relative paths start from the current folder).")


# Stream codecs, decompressed as read, by both engines: suffix -> (name in messages, pyarrow's codec;
# None: Python's own, xz having none in Arrow).
CODECS = {".gz": ("gzip", "gzip"), ".bz2": ("bzip2", "bz2"), ".xz": ("xz", None), ".zst": ("zstd", "zstd"),
          ".lz4": ("lz4", "lz4"), ".br": ("brotli", "brotli")}
COMPRESSED = tuple(CODECS)
DATA_SUFFIXES = SUPPORTED_SUFFIXES + tuple(s + c for s in SUPPORTED_SUFFIXES for c in COMPRESSED)   # plain or compressed


def codec_of(path) -> str | None:
    """The compression suffix (a key of CODECS) of a file name or path, or None."""
    name = (path.name if isinstance(path, Path) else os.path.basename(str(path))).lower()
    return next((c for c in COMPRESSED if name.endswith(c)), None)


def format_of(path: Path) -> str | None:
    name = path.name.lower()
    codec = codec_of(path)
    if codec:
        name = name[:-len(codec)]
    for suffix, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"), (".csv", "csv"),
                        (".tsv", "tsv"), (".parquet", "parquet"), (".pq", "parquet")):
        if name.endswith(suffix):
            return fmt
    return None


# --------------------------------------------------------------------------- bounded reading
#
# Every local file is read as a stream of decompressed chunks, and each chunk is charged to the
# load's Budget before it is parsed: a gzip bomb is refused after at most the budget, never after
# decompressing it all, and one line may hold at most a share of it. A row cap stops reading as
# soon as it is reached, for every format (JSON arrays and Parquet batches included).

DEFAULT_MAX_BYTES = 1024 ** 3   # sized for a free Space (16 GB RAM, 2 vCPU); AUDITOR_MAX_BYTES overrides
MAX_BYTES: int | None = None    # when set (tests), overrides AUDITOR_MAX_BYTES
RECORD_BYTES = 256              # charged per record on top of its bytes: a record costs memory as an object
# A value (a list item, an object's or a row's field) costs a Python object or a slot, whatever its
# length in the file: "[]," is 3 bytes and about 64 in memory, an empty CSV cell 1 byte and a dict slot.
# A chunk is charged at least this per separator (",", or a TSV's tab; a Parquet batch: per value),
# so a file of tiny values costs what it will hold in memory. Prose, with a comma every few dozen
# bytes, costs its bytes as before.
VALUE_BYTES = 48
LINE_SHARE = 16                 # one line (or JSON item) may take at most 1/16 of the budget
CHUNK = 1 << 20                 # decompressed bytes read at a time
MIN_LINE_CAP = 64 * 1024


def max_bytes() -> int:
    """The reading budget of one load: AUDITOR_MAX_BYTES (read when called), default 1 GiB."""
    if MAX_BYTES is not None:
        return MAX_BYTES
    from .env import env_bytes
    return env_bytes("AUDITOR_MAX_BYTES", DEFAULT_MAX_BYTES)


class Budget:
    """What one load may read: decompressed bytes plus RECORD_BYTES per record (so a file of a
    billion empty objects costs what it would cost in memory, not 3 bytes each). ``limited=False``
    (a corpus streamed through in batches) keeps only the per-line cap."""

    def __init__(self, max_rows: int | None = None, *, cap: int | None = None, limited: bool = True):
        self.cap = max_bytes() if cap is None else cap
        self.max_rows = max_rows
        self.limited = limited
        self.used = 0
        self.line_cap = max(self.cap // LINE_SHARE, MIN_LINE_CAP)

    def take(self, nbytes: int, records: int, name: str, values: int = 0) -> None:
        self.used += max(nbytes, VALUE_BYTES * values) + RECORD_BYTES * records
        if self.limited and self.used > self.cap:
            raise self.error(name)

    def error(self, name: str) -> AuditorError:
        from .env import format_bytes
        if self.max_rows is None:
            hint = ("Audit a prefix with --max-rows (max_rows= in Python), or raise AUDITOR_MAX_BYTES "
                    "(e.g. AUDITOR_MAX_BYTES=4G) if the machine has the memory.")
        else:
            hint = (f"The row cap ({self.max_rows:,} rows) was not reached within that limit: lower it, or raise "
                    "AUDITOR_MAX_BYTES (e.g. AUDITOR_MAX_BYTES=4G) if the machine has the memory.")
        return AuditorError("too_large", f"{name}: more data than the reading limit of {format_bytes(self.cap)} "
                            f"(AUDITOR_MAX_BYTES: decompressed bytes, at least {VALUE_BYTES} per value, plus "
                            f"{RECORD_BYTES} per record).", hint)

    def long_line(self, name: str, line: int, what: str = "line") -> AuditorError:
        from .env import format_bytes
        return AuditorError("too_large", f"{name}, {what} {line}: longer than {format_bytes(self.line_cap)}, "
                            f"the limit for one {what} (1/{LINE_SHARE} of AUDITOR_MAX_BYTES, "
                            f"{format_bytes(self.cap)}).",
                            "Check that the file is really one record per line; raise AUDITOR_MAX_BYTES if "
                            "records this large are intended.")


_MAGIC = ((b"\x1f\x8b", "gzip-compressed: name it with a .gz suffix"),
          (b"PAR1", "a Parquet file: name it .parquet"),
          (b"PK\x03\x04", "a zip archive: unpack it first"),
          (b"\xff\xfe\x00\x00", "UTF-32 text: re-encode it as UTF-8"),
          (b"\x00\x00\xfe\xff", "UTF-32 text: re-encode it as UTF-8"),
          (b"\xff\xfe", "UTF-16 text: re-encode it as UTF-8"),
          (b"\xfe\xff", "UTF-16 text: re-encode it as UTF-8"))


class _Counted:
    """The decompressed bytes of a file, a chunk at a time, each charged to a Budget (records
    estimated by counting ``marker`` bytes) before anyone parses it. A text file is refused as
    soon as it shows it is not UTF-8 text: a NUL byte, a UTF-16/32 byte-order mark, or the magic
    bytes of gzip, Parquet or zip in a file named as text."""

    def __init__(self, inner, budget: Budget, name: str, marker: bytes | None, separator: bytes = b","):
        self.inner, self.budget, self.name, self.marker = inner, budget, name, marker
        self.separator = separator      # between values: counted to charge VALUE_BYTES each
        self.compressed = False     # decompressed as read: its size on disk says nothing of its bytes
        self.offset = 0
        self.size = min(CHUNK, budget.line_cap)

    def chunk(self, size: int | None = None) -> bytes:
        data = self.inner.read(size or self.size)
        if data:
            self._check(data, 0, len(data))
        return data

    def chunk_into(self, buf: bytearray, start: int, size: int) -> int:
        """``chunk`` into ``buf[start:start + size]`` (a caller's buffer, reused: no new bytes per
        chunk, whose fresh pages cost more than reading them): the bytes read, 0 at the end."""
        view = memoryview(buf)[start:start + size]
        got = 0
        while got < size:
            n = self.inner.readinto(view[got:])
            if not n:
                break
            got += n
        view.release()
        if got:
            self._check(buf, start, start + got)
        return got

    def _check(self, data, start: int, end: int) -> None:
        """Charge and check data[start:end], the next bytes of the stream (bytes or a bytearray)."""
        if self.marker is None:             # binary (a gzip'd Parquet file): bytes only
            self.budget.take(end - start, 0, self.name)
            self.offset += end - start
            return
        if not self.offset:
            for magic, what in _MAGIC:
                # (a CSV header may start with "PAR1"; a Parquet file also holds NUL bytes)
                if data.startswith(magic, start, end) and (magic != b"PAR1" or data.find(b"\x00", start, end) >= 0):
                    if magic == b"\x1f\x8b" and self.name.lower().endswith(".gz"):
                        what = "gzip-compressed twice: decompress it once (gunzip) and keep the .gz suffix"
                    raise AuditorError("bad_format", f"{self.name}: not UTF-8 text: the file is {what}.",
                                       "Every text format (JSONL, JSON, CSV, TSV) is read as UTF-8.")
        nul = data.find(b"\x00", start, end)
        if nul >= 0:
            raise AuditorError("bad_format", f"{self.name}: byte {self.offset + nul - start} is a NUL byte: the file "
                               "is binary or UTF-16/UTF-32 text, not UTF-8.",
                               "Re-encode it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8), or check it is the right file.")
        # Records and values are estimated only where the budget binds (a streamed corpus is not held).
        if self.budget.limited:
            self.budget.take(end - start, data.count(self.marker, start, end), self.name,
                             data.count(self.separator, start, end))
        else:
            self.budget.take(end - start, 0, self.name)
        self.offset += end - start

    def close(self) -> None:
        self.inner.close()


def _open_stream(path: Path, budget: Budget, marker: bytes | None, separator: bytes = b",") -> _Counted:
    try:
        inner = _open_decompressed(path)
    except OSError as exc:
        raise _read_error(exc, path) from None
    stream = _Counted(inner, budget, path.name, marker, separator)
    stream.compressed = codec_of(path) is not None
    return stream


def _open_decompressed(path: Path):
    """A binary file object of ``path``'s bytes, decompressed as they are read (by its suffix)."""
    codec = codec_of(path)
    if codec is None:
        return open(path, "rb")
    python = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(codec)   # their errors are mapped below
    if python:
        return python(path, "rb")
    import pyarrow as pa             # zstd, lz4, brotli: pyarrow's, no further package
    return pa.input_stream(str(path), compression=CODECS[codec][1])


READ_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)   # a broken file or stream (pyarrow: OSError)


def _read_error(exc: BaseException, path: Path) -> AuditorError:
    """What a failed read of ``path`` means, for the person who gave the file."""
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return AuditorError("not_found", f"{path.name}: cannot be read ({exc.strerror}).",
                            "Check the file exists and is readable.")
    codec = codec_of(path) or ".gz"
    kind = CODECS[codec][0]
    if isinstance(exc, EOFError):
        return AuditorError("bad_format", f"{path.name}: the {kind} stream ends early: the file is truncated ({exc}).",
                            f"Download or copy it again; `{kind} -t FILE` checks a {codec} file.")
    if isinstance(exc, (gzip.BadGzipFile, zlib.error, lzma.LZMAError)) or (
            codec_of(path) and isinstance(exc, OSError)):
        return AuditorError("bad_format", f"{path.name}: not a valid {kind} file ({str(exc)[:200]}).",
                            f"Decompress it to check it, or remove the {codec} suffix if it is not compressed.")
    return AuditorError("bad_format", f"{path.name}: cannot be read ({type(exc).__name__}: {str(exc)[:200]}).",
                        "Check the file is complete and readable.")


def read_file(path: Path, max_rows: int | None = None, budget: Budget | None = None,
              notices: list | None = None) -> tuple[list[dict], bool]:
    """Rows of one local file (format by extension) and whether the row cap cut it. ``budget``
    (one per load, shared by its files) bounds what is read; ``notices`` collects what the report
    must say about the file. Reading stops as soon as the row cap is passed."""
    budget = budget or Budget(max_rows)
    if max_rows is None and budget.limited and not codec_of(path) \
            and format_of(path) != "parquet":
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise _read_error(exc, path) from None
        if budget.used + size > budget.cap:       # refused before reading a byte
            raise budget.error(path.name)
    rows: list = []
    batches = file_batches(path, budget, notices, stream_json=max_rows is not None, batch=max_rows)
    try:
        for part in batches:
            if rows:
                rows.extend(part)
            else:
                rows = part
            if max_rows is not None and len(rows) > max_rows:   # one more than the cap: it was cut
                return rows[:max_rows], True
    finally:
        batches.close()
    return rows, False


def file_rows(path: Path, budget: Budget, notices: list | None = None):
    """Records of one local file, one at a time (a corpus streamed through)."""
    batches = file_batches(path, budget, notices)
    try:
        for part in batches:
            yield from part
    finally:
        batches.close()


def file_batches(path: Path, budget: Budget, notices: list | None = None, *, stream_json: bool = True,
                 batch: int | None = None):
    """Lists of records of one local file, read in bounded chunks. ``stream_json``: parse a JSON
    list item by item (else whole, which is faster when every row is wanted); ``batch``: the
    rows wanted, when few (Parquet then reads small batches)."""
    fmt = format_of(path)
    if fmt == "parquet":
        yield from _parquet_batches(path, budget, batch, notices)
        return
    stream = _open_stream(path, budget, b"{" if fmt == "json" else b"\n", b"\t" if fmt == "tsv" else b",")
    try:
        size = 4096 if batch is None else max(1, min(batch + 1, 4096))   # records per list
        if fmt == "jsonl":
            yield from _jsonl_batches(stream, path.name, batch)
        elif fmt == "json":
            yield from _json_batches(stream, path.name, stream_json, size, notices)
        else:
            yield from _csv_batches(stream, path.name, "\t" if fmt == "tsv" else ",", budget, notices, size)
    except READ_ERRORS as exc:
        raise _read_error(exc, path) from None
    finally:
        stream.close()


_LINE_END = re.compile(rb"[\r\n]")


def _line_blocks(stream: _Counted, name: str, state: dict, csv_ends: bool = False):
    """Whole text lines of a UTF-8 stream, an iterable per chunk. JSONL (``csv_ends`` False): a
    list of lines split at "\\n", without it. CSV: lines that end at "\\r\\n", "\\r" or "\\n" and
    keep it, as the csv module wants. A line longer than the budget's line cap is refused as soon as it is,
    before it is all read; ``state["open"]`` is set to the number of a last line with no end."""
    budget = stream.budget
    parts: list[bytes] = []    # the pieces of the line still open at the end of the last chunk
    open_len = done = 0        # its length; lines yielded so far
    start = 0                  # byte offset of the block being decoded
    first = True
    while True:
        data = stream.chunk()
        if first:
            first = False
            if data.startswith(b"\xef\xbb\xbf"):      # a UTF-8 byte-order mark is legitimate; drop it
                data, start = data[3:], 3
        if not data:
            break
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) if csv_ends else data.rfind(b"\n")
        if cut < 0:                                  # the open line goes on
            parts.append(data)
            open_len += len(data)
            if open_len > budget.line_cap:
                raise budget.long_line(name, done + 1)
            continue
        if parts and open_len + _LINE_END.search(data).start() > budget.line_cap:
            raise budget.long_line(name, done + 1)
        if csv_ends:
            block = b"".join(parts) + data[:cut + 1] if parts else data[:cut + 1]
        else:
            block = b"".join(parts) + data[:cut] if parts else data[:cut]
        parts = [data[cut + 1:]] if cut + 1 < len(data) else []
        open_len = len(data) - cut - 1
        text = _decode(block, name, start, done)
        if csv_ends:        # StringIO(newline="") splits at "\r\n", "\r" and "\n" only, as csv wants
            done += block.count(b"\n")
            yield io.StringIO(text, newline="")
        else:
            lines = text.split("\n")
            done += len(lines)
            yield lines
        start += len(block) + (0 if csv_ends else 1)
    if parts:
        state["open"] = done + 1
        yield [_decode(b"".join(parts), name, start, done)]


def _decode(block: bytes, name: str, start: int, lines_before: int) -> str:
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + block.count(b"\n", 0, exc.start) + 1
        raise AuditorError("bad_format", f"{name}: not valid UTF-8 (byte {start + exc.start}, line {line}).",
                           "Re-encode the file as UTF-8, or check that it is a text file and not binary.") from None


def _jsonl_batches(stream: _Counted, name: str, want: int | None = None):
    """Records of a JSONL stream, a list per chunk. The common case (every line an object) runs
    without per-line Python; a bad line is then found again line by line, to name it (unless the
    ``want`` rows the caller needs come before it)."""
    state: dict = {}
    loads, done, kept, held = json.loads, 0, 0, None
    try:
        for lines in _line_blocks(stream, name, state):
            try:
                rows = list(map(loads, filter(str.strip, lines)))   # split("\n"): U+2028 may sit in a string
                good = set(map(type, rows)) <= {dict}
            except (ValueError, RecursionError):
                good = False
            if not good:
                rows = list(itertools.islice(jsonl_rows(lines, name, done + 1),
                                             None if want is None else want + 1 - kept))
            done += len(lines)
            if held is not None:
                yield held
                held = None
            elif kept == 0 and len(rows) == 1 and _wraps_records(rows[0]):
                held = rows                 # yielded if another record follows, refused if none does
                kept = 1
                continue
            kept += len(rows)
            yield rows
        if held is not None:
            key = next(k for k, v in held[0].items() if isinstance(v, list))
            raise AuditorError("bad_format", f"{name}: its one line is an object whose {key!r} holds "
                               f"{len(held[0][key]):,} records: one JSON document, not JSON Lines.", _ONE_DOCUMENT)
    except AuditorError as exc:
        if state.get("open") and exc.message.startswith(f"{name}, line {state['open']}: not valid JSON") \
                and "carriage return" not in exc.hint:
            raise AuditorError(exc.code, exc.message, "That is the last line and it has no line end: the file "
                               "looks cut short (a truncated download or copy?).") from None
        raise


def jsonl_rows(lines, name: str, start: int = 1):
    """Records of JSONL lines, one at a time, with errors that name the line."""
    loads = json.loads
    for lineno, line in enumerate(lines, start):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError as exc:
            snippet = line.strip()[:60]
            hint = "Fix or remove that line; every line of a JSONL file must be one JSON object."
            if re.search(r"[}\]]\s*\r\s*[{\[]", line):
                hint = ("Its records are separated by a lone carriage return (\\r, old Mac line ends): convert "
                        "the line ends to \\n (e.g. tr '\\r' '\\n').")
            elif lineno == 1 and line.strip() in ("[", "{"):
                hint = _ONE_DOCUMENT
            elif line.lstrip(" \t\r").startswith("\ufeff"):
                hint = ("That line starts with a byte-order mark (U+FEFF): files saved with one were joined "
                        "together (cat a.jsonl b.jsonl)? Remove the marks, e.g. sed 's/^\\xEF\\xBB\\xBF//'.")
            raise AuditorError("bad_format", f"{name}, line {lineno}: not valid JSON ({exc.args[0].split(':')[0]}): "
                               f"{snippet!r}", hint) from None
        except RecursionError:
            raise _too_deep(f"{name}, line {lineno}") from None
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}, line {lineno}: a JSON {type(row).__name__}, not an object.",
                               _ONE_DOCUMENT if lineno == 1 and isinstance(row, list) else
                               "Every line of a JSONL file must be a JSON object like {\"text\": ...}.")
        yield row


_CONTAINERS = frozenset({"data", "rows", "records", "examples", "instances", "items", "samples"})   # and SPLIT_KEYS


def _wraps_records(row: dict) -> bool:
    """Whether a record is a document's wrapper of records ({"version": ..., "data": [{...}, ...]},
    SQuAD's layout): in a file of one line, it is a JSON document named .jsonl, and one record."""
    lists = [k for k, v in row.items() if isinstance(v, (list, dict))]
    value = row[lists[0]] if len(lists) == 1 else None
    return (str(lists[0]).lower() in _CONTAINERS | SPLIT_KEYS and isinstance(value, list) and len(value) > 1
            and all(isinstance(x, dict) for x in value)) if value is not None else False


# A JSON document named .jsonl (json.dump of a list, pretty-printed or not): its first line is "[".
_ONE_DOCUMENT = ("The file looks like one JSON document (a list of records, or an object over several lines), "
                 "not JSON Lines (one object per line): name it .json.")


def _too_deep(where: str) -> AuditorError:
    return AuditorError("bad_format", f"{where}: JSON nested too deeply to read (several hundred levels of "
                        "lists or objects).", "Flatten the records; no dataset field needs that depth.")


_WS = re.compile(r"[ \t\n\r]*")


class _JsonText:
    """The decoded text of a JSON stream, read a chunk at a time on demand."""

    def __init__(self, stream: _Counted, name: str, head: bytes):
        self.stream, self.name = stream, name
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.eof, self.read = "", False, 0
        self._add(head)

    def more(self, at_least: int = 0) -> None:
        self._add(self.stream.chunk(max(self.stream.size, at_least)))

    def _add(self, data: bytes) -> None:
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise _not_utf8(self.name, self.read + exc.start) from None
        self.read += len(data)
        self.buf += text
        self.eof = not data


def _trailing_comma(name: str, where: str) -> AuditorError:
    return AuditorError("bad_format", f"{name}, {where}: a comma before the closing bracket (a trailing comma, "
                        "which JSON does not allow).", "Remove that comma.")


def _not_utf8(name: str, byte: int) -> AuditorError:
    return AuditorError("bad_format", f"{name}: not valid UTF-8 (byte {byte}).",
                        "Re-encode the file as UTF-8, or check that it is a text file and not binary.")


def _json_batches(stream: _Counted, name: str, item_by_item: bool, size: int = 1024, notices: list | None = None):
    """Records of a JSON file. A top-level list is parsed item by item when ``item_by_item`` (a row
    cap then stops reading when it is reached); anything else is read whole, within the budget,
    and parsed at once (``notices``: what the report must say of its shape)."""
    budget = stream.budget
    # Read whole: a plain file (its size already checked against the budget) in one read; a
    # compressed one chunk by chunk, each charged before the next is decompressed.
    whole = 0 if item_by_item or stream.compressed or not budget.limited else \
        budget.cap - budget.used + 1
    parts = [stream.chunk(max(stream.size, whole))]
    if item_by_item:
        bom = 3 if parts[0].startswith(b"\xef\xbb\xbf") else 0   # a UTF-8 byte-order mark; dropped
        while parts[-1] and not parts[-1][bom if len(parts) == 1 else 0:].strip():
            parts.append(stream.chunk())                          # leading whitespace
        head = b"".join(parts)[bom:]
        if head.lstrip().startswith(b"["):
            batch: list = []
            for row in _json_items(_JsonText(stream, name, head), name):
                batch.append(row)
                if len(batch) >= size:
                    yield batch
                    batch = []
            yield batch
            return
    while parts[-1]:
        parts.append(stream.chunk(max(stream.size, whole)))
    parts = [p for p in parts if p]
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    parts.clear()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_utf8(name, exc.start) from None
    del data                              # one copy of the text in memory while it is parsed
    yield _parse_json(text, name, None, notices)[0]


def _json_items(text: _JsonText, name: str):
    raw_decode = json.JSONDecoder().raw_decode
    budget = text.stream.budget
    buf = text.buf
    pos = _WS.match(buf).end() + 1            # past "["
    index, expect = 0, "first"                # expect: "first" item or "]", an "item", or a "separator"
    while True:
        pos = _WS.match(buf, pos).end()
        if pos >= len(buf):
            if text.eof:
                raise AuditorError("bad_format", f"{name}: the JSON list stops after item {index - 1}, without its "
                                   "closing ']': the file looks cut short.", "Download or copy it again.")
            text.buf = ""
            text.more()
            buf, pos = text.buf, 0
            continue
        if expect == "separator":
            if buf[pos] == ",":
                expect, pos = "item", pos + 1
                continue
            if buf[pos] == "]":
                return
            raise AuditorError("bad_format", f"{name}: after item {index - 1} of the list comes "
                               f"{buf[pos:pos + 20]!r} instead of ',' or ']'.", "Check the file is valid JSON.")
        if expect == "first" and buf[pos] == "]":
            return
        if expect == "item" and buf[pos] == "]":
            raise _trailing_comma(name, f"after item {index - 1}")
        try:
            row, end = raw_decode(buf, pos)
            complete = end < len(buf) or text.eof
        except json.JSONDecodeError as exc:
            if text.eof:
                cut = exc.pos >= len(buf) - 1 or exc.msg.startswith("Unterminated")
                raise AuditorError("bad_format", f"{name}: item {index} of the list is not valid JSON ({exc.msg}, line "
                                   f"{exc.lineno} of what was read)" + (": the file looks cut short." if cut else "."),
                                   "Check the file is complete and valid JSON.") from None
            complete = False
        except RecursionError:
            raise _too_deep(f"{name}, item {index}") from None
        if not complete:                      # the item goes on in the next chunk
            if len(buf) - pos > budget.line_cap:
                raise budget.long_line(name, index, "item")
            text.buf = buf[pos:]
            text.more(len(buf) - pos)         # read at least as much again: linear in the item's size
            buf, pos = text.buf, 0
            continue
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}: item {index} of the list is a {type(row).__name__}, "
                               "not an object.", "Every record must be a JSON object like {\"text\": ...}.")
        yield row
        index, pos, expect = index + 1, end, "separator"


ROLE_SAMPLE = 1000      # records read ahead to guess a streamed source's roles


def peek_records(source, config: str | None = None, split: str | None = None, *, token: str | None = None,
                 ahead: int = ROLE_SAMPLE) -> tuple[list, object]:
    """(the first ``ahead`` records, an iterator over every record from the first): a streamed
    source's head for guessing roles, without reading the head twice."""
    import itertools
    stream = iter_records(source, config, split, token=token)
    head = list(itertools.islice(stream, ahead))
    return head, itertools.chain(head, stream)


def iter_records(source, config: str | None = None, split: str | None = None, *, token: str | None = None):
    """Records one at a time, for corpora larger than memory: local files stream (JSONL, CSV, TSV
    and Parquet without a total byte limit, since nothing is kept; every line still bounded); other
    sources are loaded whole. Files named as splits are chosen as ``load`` chooses them (train by
    default): a folder of train.jsonl and test.jsonl is a dataset, not one corpus."""
    source = source_text(source)
    if not source.startswith("example:") and looks_local(source):
        _refuse_local_config(source, config)
        for path in local_files(source, split)[0]:
            yield from file_rows(path, Budget(limited=format_of(path) == "json"))
        return
    yield from load(source, config, split, token=token).rows


def _parse_jsonl(text: str, name: str, max_rows) -> tuple[list[dict], bool]:
    # split("\n"), not splitlines(): U+2028 and friends may sit inside a JSON string.
    rows: list[dict] = []
    for row in jsonl_rows(text.split("\n"), name):
        if max_rows is not None and len(rows) >= max_rows:
            return rows, True
        rows.append(row)
    return rows, False


SPLIT_KEYS = {"train", "test", "validation", "valid", "val", "dev", "eval", "evaluation"}   # {split: [records]}


def _notice(notices: list | None, text: str) -> None:
    if notices is not None:
        notices.append(text)


COLUMN_EXTRA_CHARS = 200    # a longer text beside equal-length lists is a record's content: one record


def _columns_and_values(data: dict, lists: dict) -> bool:
    """Whether an object holding other values beside its lists is a table of columns plus values
    for the whole file ({"question": [...], "answer": [...], "version": "1.0"}): two or more lists
    of one length (at least 2), and no other value a text (longer than COLUMN_EXTRA_CHARS, or over
    several lines), which makes it one record ({"id": 3, "text": "...", "tokens": [...], "tags": [...]}),
    nor a record's id ({"id": 3, "tokens": [...], "ner_tags": [...]}: one document of a folder)."""
    from .roles import GUESSES
    sizes = {len(v) for v in lists.values()}
    if len(lists) < 2 or len(sizes) != 1 or sizes.pop() < 2:
        return False
    others = {k: v for k, v in data.items() if k not in lists}
    if any(str(k).lower() in GUESSES["id"] for k in others):
        return False
    return not any(isinstance(v, str) and (len(v) > COLUMN_EXTRA_CHARS or "\n" in v) for v in others.values())


def _nesting(rows: list, sample: int = 100) -> str | None:
    """"KEY -> KEY2" when each of the first records holds, under the same key, a list of objects
    that hold lists of objects themselves (SQuAD's paragraphs -> qas in a layout not quite its
    own), else None. (One level, a chat's messages, is an ordinary record; so are messages whose
    content is a list of parts, [{"type": "text", "text": ...}].)"""
    def path(row) -> str | None:
        for key, value in row.items():
            if isinstance(value, list) and value and all(isinstance(x, dict) for x in value) \
                    and not {"role", "from"} & set(value[0]):
                for key2, value2 in value[0].items():
                    if isinstance(value2, list) and value2 and all(isinstance(y, dict) for y in value2):
                        return f"{key!r} -> {key2!r}"
        return None
    paths = {path(row) for row in rows[:sample]}
    return paths.pop() if len(paths) == 1 and None not in paths else None


def _squad_records(data: dict, records: list):
    """(one record per question, the number of articles) of a file in SQuAD's layout ({"version":
    ..., "data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [{"id", "question",
    "answers", ...}]}]}]}), or None for any other object. Read as its "data" list, each article was
    one record, and the text guessed was its title. A question's record is its own fields with its
    paragraph's context and its article's title, as the Hub's squad sets lay them out."""
    if records != ["data"]:
        return None
    articles = data["data"]
    for article in articles:
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list) or not all(
                isinstance(p, dict) and isinstance(p.get("context"), str) and isinstance(p.get("qas"), list)
                and all(isinstance(q, dict) and isinstance(q.get("question"), str) for q in p["qas"])
                for p in paragraphs):
            return None
    out = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                record = {"id": qa["id"]} if "id" in qa else {}
                if "title" in article:
                    record["title"] = article["title"]
                record["context"] = paragraph["context"]
                record.update(qa)
                out.append(record)
    return out, len(articles)


def _parse_json(text: str, name: str, max_rows, notices: list | None = None) -> tuple[list[dict], bool]:
    if not text.strip():
        return [], False
    try:
        data = json.loads(text)
    except ValueError as exc:
        if "Extra data" in str(exc):  # several objects, one per line: it is really JSONL
            return _parse_jsonl(text, name, max_rows)
        body = text.rstrip()
        if text[exc.pos:exc.pos + 1] in ("]", "}") and text[:exc.pos].rstrip().endswith(","):
            raise _trailing_comma(name, f"line {exc.lineno}")
        cut = exc.pos >= len(body) or exc.msg.startswith("Unterminated") or not body.endswith(("]", "}"))
        raise AuditorError("bad_format", f"{name}: not valid JSON ({exc})" +
                           (": it does not end with ']' or '}', so it looks cut short." if cut else "."),
                           "Check the file is complete and valid JSON.") from None
    except RecursionError:
        raise _too_deep(name) from None
    frame = _pandas_frame(data, name)
    if frame is not None:
        data = frame
    squad = None
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        records = [k for k, v in lists.items() if v and all(isinstance(x, dict) for x in v)]
        only_lists = bool(lists) and len(lists) == len(data)
        splits = [k for k in lists if str(k).strip().lower() in SPLIT_KEYS]
        if len(splits) > 1:
            # {"train": [...], "test": [...]}: pairing them up as columns, or reading one, would mix or
            # drop splits (other keys beside them, such as a version, change nothing)
            raise AuditorError("bad_format", f"{name}: the JSON object holds one list per split "
                               f"({', '.join(map(repr, splits[:5]))}{' ...' if len(splits) > 5 else ''}).",
                               "Save each as its own file (train.jsonl, test.jsonl ...) in one "
                               "folder: files named like splits are read as splits.")
        squad = _squad_records(data, records)
        if squad is not None:
            data, articles = squad
            _notice(notices, f"{name}: SQuAD layout (data -> paragraphs -> qas): read as one record per question "
                             f"({len(data):,} questions in {articles:,} articles), each with its paragraph's "
                             "context and its article's title")
        elif only_lists and len({len(v) for v in lists.values()}) == 1:
            if len(lists) == 1 and records:
                data = next(iter(lists.values()))          # {"data": [{...}, ...]}
            else:                                            # an object of equal-length columns
                data = [dict(zip(lists, values)) for values in zip(*lists.values())]
        elif _columns_and_values(data, lists):
            # {"question": [...], "answer": [...], "version": "1.0"}: the columns of a table, as
            # without the version (read as one record, every question was one value of it)
            extra = [f"{k!r}: {json.dumps(v, ensure_ascii=False)[:40]}" for k, v in data.items() if k not in lists]
            data = [dict(zip(lists, values)) for values in zip(*lists.values())]
            one = len(extra) == 1
            _notice(notices, f"{name}: a JSON object of equal-length lists, read as the columns "
                             f"{', '.join(map(repr, list(lists)[:5]))}{' ...' if len(lists) > 5 else ''} "
                             f"({len(data):,} records); {'its other value' if one else 'its other values'} "
                             f"({'; '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}) "
                             f"{'is' if one else 'are'} one value for the whole file, not in the records. "
                             "If the file is one record, save it as one line of JSONL.")
        elif len(records) == 1:
            data = lists[records[0]]                       # {"version": 2, "data": [{...}]}
        elif only_lists and len(lists) > 1:
            # Columns of different lengths: read as one record, every column would be one value.
            sizes = ", ".join(f"{k!r}: {len(v):,}" for k, v in list(lists.items())[:5])
            raise AuditorError("bad_format", f"{name}: the JSON object holds lists of different lengths ({sizes}"
                               f"{' ...' if len(lists) > 5 else ''}), so they are not the columns of one table.",
                               "Use a list of objects, an object of equal-length lists, or JSONL.")
        else:
            data = [data]                                    # one record
    if not isinstance(data, list):
        raise AuditorError("bad_format", f"{name}: the JSON holds a {type(data).__name__}, not records.",
                           "Use a list of objects, an object of equal-length lists, or JSONL.")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}: item {i} of the list is a {type(row).__name__}, "
                               "not an object.", "Every record must be a JSON object like {\"text\": ...}.")
    nested = _nesting(data) if notices is not None and squad is None else None
    if nested:
        _notice(notices, f"{name}: its records hold records nested two levels deep ({nested}): each of its "
                         f"{len(data):,} top-level items is read as one record, with the nested lists as its values "
                         "(so the text guessed may be a title or a name). To audit the nested items, write them "
                         "one per line as JSONL first (e.g. with jq -c).")
    truncated = max_rows is not None and len(data) > max_rows
    return (data[:max_rows] if truncated else data), truncated


_INDEX_LABEL = re.compile(r"-?\d+")


def _pandas_frame(data, name: str) -> list | None:
    """The records of a DataFrame saved by pandas' ``to_json`` in its "columns" (the default:
    {"question": {"0": ..., "1": ...}}), "index" ({"0": {"question": ...}}) or "split"
    ({"columns": [...], "data": [[...]]}) layout, or None for any other JSON. (Read as one
    record, "columns" held every question in one text, and "index" was a record of records.)"""
    if not isinstance(data, dict) or not data:
        return None
    keys = list(data)
    if {"columns", "data"} <= set(keys) <= {"columns", "index", "data"}:
        columns, values = data["columns"], data["data"]
        if isinstance(columns, list) and isinstance(values, list) and all(
                isinstance(c, (str, int, float)) for c in columns) and all(
                isinstance(v, list) and len(v) == len(columns) for v in values):
            header = _unique_columns([str(c) for c in columns], name, None)
            return [dict(zip(header, v)) for v in values]
        return None
    if not all(isinstance(v, dict) for v in data.values()):
        return None
    if all(_INDEX_LABEL.fullmatch(k) for k in keys):                     # orient="index"
        return list(data.values())
    labels = list(next(iter(data.values())))
    if labels and all(_INDEX_LABEL.fullmatch(k) for k in labels) and all(list(v) == labels for v in data.values()):
        return [{column: values[label] for column, values in data.items()} for label in labels]   # "columns"
    return None


CONTINUED_LINES = 1000      # lines of the first record read to judge the delimiter (a quoted value's newlines)
CONTINUED_CHARS = 1 << 20   # and characters


def _csv_batches(stream: _Counted, name: str, delimiter: str, budget: Budget, notices: list | None,
                 size: int = 4096):
    # Values stay strings: no type inference, so "007" stays "007". strict: a quote left open is
    # an error that names its line, not a record that silently swallows the rest of the file.
    csv.field_size_limit(min(budget.line_cap, sys.maxsize))  # a long value is data, not a quoting error
    lines = itertools.chain.from_iterable(_line_blocks(stream, name, {}, csv_ends=True))
    # Blank lines before the header are counted, not kept (memory), and line numbers in messages
    # are the file's (``skipped`` added). A header of one blank name ("") is a header, not a blank line.
    skipped, first, excel = 0, None, None
    for line in lines:
        if line.strip():
            # Excel's "sep=;" line names the delimiter and is not the header (read as one, the
            # header became a record and the columns "sep=" and "Unnamed: 1").
            if excel is None and (excel := _EXCEL_SEP.fullmatch(line)):
                skipped += 1
                continue
            first = line
            break
        skipped += 1
    if first is None:
        return
    following = next(lines, None)                          # the first record's line, for the delimiter
    continued: list = []
    if following is not None:
        # A quoted value holding a newline (Alpaca's input, code) continues the first record on the
        # next lines: the delimiter is judged on the whole record (its first line alone, a quote
        # left open, held fewer values than the header: a semicolon file was read as one column).
        record = following
        while record.count('"') % 2 and len(continued) < CONTINUED_LINES and len(record) < CONTINUED_CHARS \
                and (more := next(lines, None)) is not None:
            continued.append(more)
            record += more
    if excel:
        delimiter = excel.group(1)
        if notices is not None:
            notices.append(f"{name}: its first line, {excel.group(0).strip()!r}, names the delimiter (Excel)")
    else:
        delimiter = _delimiter(first, following, delimiter, name, notices,
                               following + "".join(continued) if continued else None)
    reader = csv.reader(itertools.chain([first], [] if following is None else [following], continued, lines),
                        delimiter=delimiter, strict=True)
    last = 0                                               # the line the previous record ended on
    try:
        header = next(reader)
        if _json_line(header, delimiter):
            raise AuditorError("bad_format", f"{name}: the first line is a JSON object, not a header: the file "
                               "looks like JSON Lines named as CSV/TSV.",
                               "Name it .jsonl (one JSON object per line) or .json, or check it is the right file.")
        written = header                                   # as in the file, to know it when it repeats
        header = _unique_columns(header, name, notices)
        width = len(header)
        last = reader.line_num
        rows: list = []
        repeats: list = []                                 # lines that repeat the header
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                last = reader.line_num
                continue
            if width > 1 and (row == written or (row[0][:1] == "\ufeff" and [row[0][1:], *row[1:]] == written)):
                # CSV files joined with cat: each one's header (and byte-order mark) is not a record
                repeats.append(reader.line_num + skipped)
                last = reader.line_num
                continue
            if len(row) != width:
                at, end = last + 1 + skipped, reader.line_num + skipped
                if end - at > 0:
                    raise AuditorError("bad_format", f"{name}, lines {at}-{end}: one record of "
                                       f"{len(row)} values, but the header has {width} columns.",
                                       f"A quote opened on line {at} may not be closed where it should be.")
                raise AuditorError("bad_format", f"{name}, line {end}: {len(row)} values but the "
                                   f"header has {width} columns.", "Check quoting and delimiters on that line.")
            last = reader.line_num
            rows.append(dict(zip(header, row)))
            if len(rows) >= size:
                yield rows
                rows = []
        if repeats and notices is not None:
            notices.append(f"{name}: {len(repeats):,} line(s) repeat the header (files joined together?), not read "
                           f"as records: line {', '.join(map(str, repeats[:5]))}{' ...' if len(repeats) > 5 else ''}")
        yield rows
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            raise AuditorError("bad_format", f"{name}, line {last + 1 + skipped}: a quoted value opened there is never "
                               "closed (the file ends inside it).", "Close the quote, or check the file is "
                               "complete.") from None
        if "field larger than field limit" in str(exc):
            raise budget.long_line(name, last + 1 + skipped, "value") from None
        hint = "Check quoting on that line."
        if delimiter == "\t" and "expected after '\"'" in str(exc):
            # GLUE and many lab TSVs are written without quoting: a text that starts with a quote
            hint += (" Tab-separated files are often written without quoting, where a value that starts with "
                     "a quote is still plain text: convert it, e.g. pandas.read_csv(FILE, sep='\\t', quoting=3)"
                     ".to_json('data.jsonl', orient='records', lines=True).")
        raise AuditorError("bad_format", f"{name}, line {reader.line_num + skipped}: unreadable CSV ({exc}).",
                           hint) from None


def _json_line(header: list, delimiter: str) -> bool:
    """Whether a CSV "header" is really a JSON object (a JSONL file read as CSV would otherwise
    pass as columns named '{"id": 1' and so on, a silent audit of garbage)."""
    line = delimiter.join(header).strip()
    if not (line.startswith("{") and line.endswith("}")):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_EXCEL_SEP = re.compile(r"sep=([^\r\n\"])\r?\n?")


def _delimiter(first_line: str, next_line: str | None, expected: str, name: str, notices: list | None,
               record: str | None = None) -> str:
    """The delimiter of a CSV/TSV file: the one its extension says, unless its header line holds
    none of it but another (a semicolon-separated .csv saved by a European Excel, a tab-separated
    .csv) and the first record's line splits by that one into as many values: then that one, with a
    notice. (Read the other way, every record would be one value; a one-column file whose header
    happens to hold a semicolon stays one column.)"""
    if expected in first_line:
        return expected
    counts = {d: first_line.count(d) for d in _NAMES if d != expected}
    other = max(counts, key=counts.get)
    if not counts[other]:
        return expected
    if next_line is not None and next_line.strip():
        # (not strict, NUL bytes refused before; the record may span lines, its quoted newlines kept:
        # a newline outside quotes, after a stray quote, fails and keeps the extension's delimiter)
        def width(text):
            try:
                return len(next(csv.reader([text], delimiter=other), []))
            except csv.Error:
                return -1
        header = width(first_line)
        # ``record``: the first record's lines while a quote was left open (a quoted newline)
        if header not in (width(next_line), *(() if record is None else (width(record),))):
            return expected
    if notices is not None:
        notices.append(f"{name}: the header has no {_NAMES[expected]} but {_NAMES[other]}s: read as "
                       f"{_NAMES[other]}-separated")
    return other


def _unique_columns(header: list, name: str, notices: list | None) -> list:
    """Column names made unique as pandas does (text, text.1), with a notice: a repeated name
    must never silently drop a column. A blank name (an index column written without one) is
    named as pandas names it, "Unnamed: 0", so that it can be given as a role."""
    blank = [i for i, col in enumerate(header) if isinstance(col, str) and not col.strip()]
    if blank:
        header = list(header)
        for i in blank:
            header[i] = f"Unnamed: {i}"
        if notices is not None:
            notices.append(f"{name}: {len(blank):,} column(s) without a name; read as "
                           + ", ".join(f"'Unnamed: {i}'" for i in blank[:5]) + (" ..." if len(blank) > 5 else ""))
    if len(set(header)) == len(header):
        return header
    taken, out, renamed = set(header), [], []
    seen: set = set()
    next_k: dict = {}                # per name, the suffix to try next: linear in a wide header
    for col in header:
        new = col
        if col in seen:
            k = next_k.get(col, 1)
            while f"{col}.{k}" in taken:
                k += 1
            next_k[col] = k + 1
            new = f"{col}.{k}"
            taken.add(new)
            renamed.append(new)
        seen.add(col)
        out.append(new)
    if notices is not None:
        more = f" and {len(renamed) - 10:,} more" if len(renamed) > 10 else ""
        notices.append(f"{name}: repeated column names; the repeats are read as {', '.join(renamed[:10])}{more}")
    return out


def _read_all(path: Path, budget: Budget) -> bytes:
    stream = _open_stream(path, budget, None)
    try:
        parts = []
        while True:
            data = stream.chunk()
            if not data:
                return b"".join(parts)
            parts.append(data)
    except READ_ERRORS as exc:
        raise _read_error(exc, path) from None
    finally:
        stream.close()


def parquet_batches(pf, batch_size: int, name: str, notices: list | None = None):
    """The record batches of an open ``pyarrow.parquet.ParquetFile``, with repeated column names
    (which would collapse into one key of each record) and blank ones renamed as for CSV (text,
    text.1; "Unnamed: 0"): the one reading of Parquet columns for both engines."""
    names = pf.schema_arrow.names
    unique = _unique_columns(names, name, notices)
    for part in pf.iter_batches(batch_size=batch_size):
        yield part.rename_columns(unique) if unique != names else part


def _arrow_values(array) -> int:
    """The Python objects ``to_pylist`` makes of an Arrow array: one per item, nested ones included
    (a row holding a list of 20,000 small numbers is 20,001)."""
    import pyarrow as pa
    kind = array.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind) \
            or pa.types.is_map(kind):
        return len(array) + _arrow_values(array.flatten())
    if pa.types.is_struct(kind):
        return len(array) + sum(map(_arrow_values, array.flatten()))
    return len(array)


def _parquet_batches(path: Path, budget: Budget, batch: int | None, notices: list | None = None):
    """Rows of a Parquet file, a batch at a time; the row groups' declared size is checked first,
    then every batch's real size is charged as it is read."""
    import pyarrow.parquet as pq
    name = path.name
    try:
        gz = codec_of(path) is not None
        pf = pq.ParquetFile(io.BytesIO(_read_all(path, Budget(budget.max_rows, cap=budget.cap))) if gz else path)
        meta = pf.metadata
        declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        # (a value per row and leaf column at least: 5,000 boolean columns are a few bits a row on disk)
        declared = max(declared, VALUE_BYTES * meta.num_rows * meta.num_columns)
        if batch is None and budget.limited and budget.used + declared + RECORD_BYTES * meta.num_rows > budget.cap:
            raise budget.error(name)
        for part in parquet_batches(pf, 65536 if batch is None else max(1, min(batch + 1, 65536)), name, notices):
            # charged before the batch becomes Python objects (to_pylist), with every nested value
            budget.take(part.nbytes, part.num_rows, name, sum(map(_arrow_values, part.columns)))
            yield part.to_pylist()
    except AuditorError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError...: all mean "bad file"
        raise AuditorError("bad_format", f"{name}: not a readable Parquet file ({type(exc).__name__}: "
                           f"{str(exc)[:200]}).", "The file may be truncated or not Parquet at all; "
                           "re-export it.") from None
