"""Which files a local source names: files, folders and globs, the data formats and codecs by
suffix, files named or filed as splits, and the entries a listing skips (hidden files, Spark's
``_temporary/``, the datasets library's metadata). Both engines list local files with this."""
from __future__ import annotations

import fnmatch
import functools
import glob
import os
import re
from pathlib import Path, PurePosixPath

from ..errors import AuditorError
from .table import choose_split

SUPPORTED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".pq")


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


SPLIT_KEYS = {"train", "test", "validation", "valid", "val", "dev", "eval", "evaluation"}   # {split: [records]}


def split_of(relative: PurePosixPath) -> str:
    """The split a data file holds, by its path below the folder its source's files share (both
    engines use this): a folder named as a split (train/0000.parquet, the Hub's converted Parquet
    layout; or a Hive partition folder, split=train/, as Spark's partitionBy and pyarrow's
    partition_cols write it), else its name less any shard number (train.jsonl,
    test-00000-of-00002.parquet, train_1.jsonl, Train.jsonl: train)."""
    for folder in reversed(relative.parts[:-1]):
        # (a Hive folder's train and test were read as one dataset: split=train/ named no split)
        value = folder.partition("=")[2] if "=" in folder else folder
        if value.lower() in SPLIT_KEYS:
            return value.lower()
    stem = relative.name.split(".")[0]
    name = re.split(r"[-_](?:\d+|of)(?=[-_]|$)", stem)[0] or stem
    return name.lower() if name.lower() in SPLIT_KEYS else name


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
        chosen_for_me = split is None
        split, note = choose_split(split, sorted(by_split), what, default)
        notices += [note] if note else []
        # Files beside train or test whose names are no split's (corpus_a.jsonl) act as splits of
        # their own: said plainly, since none of their records is read.
        unnamed = sorted(name for name in by_split if name not in SPLIT_KEYS and name != split)
        if chosen_for_me and unnamed:
            files = sum(len(by_split[name]) for name in unnamed)
            shown = ", ".join(unnamed[:5]) + (f" and {len(unnamed) - 5:,} more" if len(unnamed) > 5 else "")
            notices.append(f"{files:,} file{'s' if files != 1 else ''} named as no split ({shown}) left out, beside "
                           f"the split files: give --split NAME to read one, or put the files to read together in "
                           f"a folder of their own")
        items = by_split[split]
    return items, split, notices, tuple(sorted(by_split))


def local_files(source: str, split: str | None = None, *, default: str = "train") -> tuple:
    """(the files of a local source to read, the split they hold or None, notices, every split's
    name): ``split_files`` of ``expand_local``'s files."""
    listed: list = []
    paths = expand_local(source, listed)
    paths, split, notices, splits = split_files(paths, [str(p) for p in paths], split, f"{source!r}", default)
    return paths, split, listed + notices, splits


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


def unlisted_hint(skipped: list[str]) -> str:
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


def glob_files(pattern: str) -> list[str]:
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


# Names of other data formats (or of read formats spelt otherwise): a folder's file by one of these
# is said left out, where a README or a licence beside the data is passed over without a word.
OTHER_DATA_SUFFIXES = frozenset({".jsonlines", ".jl", ".txt", ".arrow", ".feather", ".avro", ".orc", ".xlsx",
                                 ".xls", ".tfrecord", ".h5", ".hdf5", ".pkl", ".pickle", ".npy", ".npz", ".lance",
                                 ".ipc"})
DOCUMENT_STEMS = ("readme", "license", "licence", "citation", "changelog", "requirements", "notice")


def _suffix_of(path: Path) -> str:
    """A file's format suffix, less a compression suffix (``codec_of``: data.txt.gz is .txt)."""
    codec = codec_of(path)
    name = path.name.lower()
    return Path(name[:-len(codec)] if codec else name).suffix


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
                               "Parquet files." + unlisted_hint(sorted(skipped)),
                               "Point at a file, or a directory of data files (hidden files and folders, folders "
                               "whose names start with '_' such as Spark's _temporary/, and the datasets "
                               "library's dataset_info.json and state.json, are skipped).")
        if notices is not None and skipped:
            success = any(p.name == "_SUCCESS" and p.parent == Path(expanded) for p in visible)
            notices.append(unlisted_notice(repr(display_name(source)), sorted(skipped), success))
        if notices is not None:
            other = sorted(p.relative_to(expanded).as_posix() for p in visible
                           if not format_of(p) and _suffix_of(p) in OTHER_DATA_SUFFIXES
                           and not p.name.lower().startswith(DOCUMENT_STEMS))
            if other:
                notices.append(f"{len(other):,} file(s) in a format not read here left out ({', '.join(other[:5])}"
                               f"{', …' if len(other) > 5 else ''}): read formats are .jsonl, .json, .csv, .tsv and "
                               ".parquet; rename one whose content is such a format (a .jsonlines file is JSONL)")
        return found
    if os.path.isfile(expanded):
        if format_of(Path(expanded)) is None:
            raise AuditorError("bad_format", f"{display_name(source)}: unsupported file type.",
                               "Use .jsonl, .json, .csv, .tsv or .parquet (optionally .gz, .bz2, .xz, .zst, .lz4 or .br).")
        return [Path(expanded)]
    if any(c in source for c in "*?["):
        data = [p for p in glob_files(expanded)
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
            raise AuditorError("not_found", f"The pattern {source!r} matches no data files." + unlisted_hint(skipped),
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
    # A relative path as given ('../x' was shown as 'x'); an absolute one by its name only.
    shown = str(source) if not os.path.isabs(str(source)) else display_name(source)
    raise AuditorError("not_found", f"File not found: {shown[:200]!r}.",
                       "Check the path (relative paths start from the current folder).")


def display_name(source: str) -> str:
    """A source as shown in reports: no directories of this machine, just the name."""
    return Path(source).name or source


def glob_parts_match(pattern, parts) -> bool:
    """Whether a path's ``parts`` match a glob's ``pattern`` parts as glob.glob(recursive=True)
    matches them ("**": any number of folders; each other part by fnmatch)."""
    @functools.lru_cache(maxsize=None)      # without it, time exponential in the number of "**"
    def match(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(parts)
        if pattern[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(parts) + 1))
        return j < len(parts) and fnmatch.fnmatch(parts[j], pattern[i]) and match(i + 1, j + 1)
    return match(0, 0)
