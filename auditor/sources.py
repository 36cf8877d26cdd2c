"""Step 1, load: turn a source string into a ``Table`` of rows.

A source is one of
- ``example:NAME`` — a real dataset bundled with the package (works offline);
- a local file, directory or glob of JSONL / JSON / CSV / TSV / Parquet (optionally ``.gz``);
- a Hugging Face dataset id, loaded through ``datasets`` (imported only then).

Every loading failure is raised here as an ``AuditorError`` that names the file,
line or split, so no caller has to interpret library exceptions.
"""
from __future__ import annotations

import csv
import glob
import gzip
import io
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AuditorError

EXAMPLES_DIR = Path(__file__).parent / "examples"
SUPPORTED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".pq")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class Table:
    """Rows as loaded, plus where they came from. Rows are plain dicts."""

    rows: list = field(repr=False)
    source: str
    config: str | None = None
    split: str | None = None
    files: tuple = ()              # display names only (never a server path)
    row_cap: int | None = None     # the cap that applied, if any
    truncated: bool = False        # True when the source had more rows than the cap
    splits: tuple = ()             # splits the source offers
    configs: tuple = ()            # configs the source offers (hub sets, examples)
    notices: tuple = ()            # things the report must say (defaults chosen, files skipped)

    @property
    def columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.rows[:1000]:
            seen.update(dict.fromkeys(row))
        return list(seen)


# --------------------------------------------------------------------------- entry point

def load(source: str, config: str | None = None, split: str | None = None, *,
         max_rows: int | None = None, token=None, kind: str = "auto") -> Table:
    """Load ``source`` (see module docstring). ``max_rows`` caps the rows read;
    a capped load says so in ``Table.truncated``. ``token`` (or ``HF_TOKEN``; pass False to
    ignore the environment) is used for gated hub sets only and is never stored.
    ``kind`` ("auto", "example", "local" or "hub") forces how the source is read: a
    server should pass "hub" for a typed-in id, so a name never reads a local path."""
    if not isinstance(source, str) or not source.strip():
        raise AuditorError("usage", "No dataset given.",
                           "Pass a Hugging Face dataset id, a local file, or example:gsm8k.")
    if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
        raise AuditorError("usage", f"max_rows must be a positive whole number, got {max_rows!r}.",
                           "Leave it out to read every row.")
    source = source.strip()
    if kind not in ("auto", "example", "local", "hub"):
        raise AuditorError("usage", f"Unknown source kind {kind!r}.", "Use auto, example, local or hub.")
    if source.startswith("example:") and kind in ("auto", "example"):
        return _load_example(source, config, split, max_rows)
    if kind == "local" or (kind == "auto" and _looks_local(source)):
        return _load_local(source, split, max_rows)
    if kind in ("auto", "hub") and HUB_ID.match(source):
        from .hub import load_hub  # imports `datasets`: only when a hub id is given
        return load_hub(source, config, split, max_rows, token)
    raise AuditorError("not_found", f"No file, directory or glob matches {source!r}, and it is not a "
                       "valid Hugging Face dataset id.",
                       "Check the path, or use an id like 'openai/gsm8k' or a bundled set like 'example:gsm8k'.")


def _looks_local(source: str) -> bool:
    if os.path.exists(source) or any(c in source for c in "*?["):
        return True
    # A path-like string that does not exist is a missing file, not a hub id.
    return source.startswith((".", "/", "~")) or os.sep + os.sep in source or \
        source.lower().endswith(SUPPORTED_SUFFIXES + tuple(s + ".gz" for s in SUPPORTED_SUFFIXES))


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


def _load_example(source: str, config, split, max_rows) -> Table:
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
    split, note = _choose_split(split, list(splits), f"example:{name}")
    if note:
        notices.append(note)
    rows, truncated = _read_jsonl(splits[split], max_rows)
    return Table(rows=rows, source=f"example:{name}", config=config, split=split,
                 files=(f"example:{name}/{config}/{split}",), row_cap=max_rows, truncated=truncated,
                 splits=tuple(splits), configs=tuple(sorted(layout)), notices=tuple(notices))


def _choose_split(split, available: list[str], what: str) -> tuple[str, str | None]:
    """The split to read; a default is announced so a report never hides it."""
    if split is None:
        chosen = "train" if "train" in available else available[0]
        note = (f"split not given: using '{chosen}' (available: {', '.join(available)})"
                if len(available) > 1 else None)
        return chosen, note
    if split not in available:
        raise AuditorError("bad_split", f"{what} has no split {split!r}.",
                           f"Available splits: {', '.join(available)}.")
    return split, None


# --------------------------------------------------------------------------- local files

def _load_local(source: str, split, max_rows) -> Table:
    paths = _expand_local(source)
    by_split: dict[str, list[Path]] = {}
    for p in paths:
        by_split.setdefault(_split_name(p), []).append(p)
    notices = []
    if split is not None or (len(paths) > 1 and len(by_split) > 1 and {"train", "test"} & set(by_split)):
        # Files named like train.jsonl / test-00000.parquet act as splits, as on the Hub.
        split, note = _choose_split(split, sorted(by_split), f"{source!r}")
        if note:
            notices.append(note)
        paths = by_split[split]
    rows: list = []
    truncated = False
    for path in paths:
        remaining = None if max_rows is None else max_rows - len(rows)
        if remaining is not None and remaining <= 0:
            truncated = True
            break
        part, part_truncated = read_file(path, remaining)
        rows.extend(part)
        truncated = truncated or part_truncated
    if not rows:
        names = ", ".join(p.name for p in paths)
        raise AuditorError("empty_input", f"{names}: no records found.",
                           "The file is empty or holds only a header; check that it is the right file.")
    return Table(rows=rows, source=_display(source), split=split, files=tuple(p.name for p in paths),
                 row_cap=max_rows, truncated=truncated, splits=tuple(sorted(by_split)),
                 notices=tuple(notices))


def _display(source: str) -> str:
    """A source as shown in reports: no directories of this machine, just the name."""
    return Path(source).name or source


def _split_name(path: Path) -> str:
    stem = path.name.split(".")[0]
    return re.split(r"[-_](\d{5}|of)", stem)[0] or stem


def _expand_local(source: str) -> list[Path]:
    expanded = os.path.expanduser(source)
    if os.path.isdir(expanded):
        found = sorted(p for p in Path(expanded).rglob("*")
                       if p.is_file() and not p.name.startswith(".") and _format_of(p))
        if not found:
            raise AuditorError("not_found", f"Directory {_display(source)!r} holds no JSONL, JSON, CSV or "
                               "Parquet files.", "Point at a file, or a directory of data files.")
        return found
    if os.path.isfile(expanded):
        if _format_of(Path(expanded)) is None:
            raise AuditorError("bad_format", f"{_display(source)}: unsupported file type.",
                               "Use .jsonl, .json, .csv, .tsv or .parquet (optionally .gz).")
        return [Path(expanded)]
    if any(c in source for c in "*?["):
        found = sorted(Path(p) for p in glob.glob(expanded, recursive=True)
                       if os.path.isfile(p) and _format_of(Path(p)))
        if not found:
            raise AuditorError("not_found", f"The pattern {source!r} matches no data files.",
                               "Check the pattern; supported: .jsonl .json .csv .tsv .parquet (optionally .gz).")
        return found
    raise AuditorError("not_found", f"File not found: {_display(source)!r}.",
                       "Check the path (relative paths start from the current folder).")


def _format_of(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"), (".csv", "csv"),
                        (".tsv", "tsv"), (".parquet", "parquet"), (".pq", "parquet")):
        if name.endswith(suffix):
            return fmt
    return None


MAX_BYTES = int(os.environ.get("AUDITOR_MAX_BYTES", str(2 * 1024 ** 3)))


def read_file(path: Path, max_rows: int | None = None) -> tuple[list[dict], bool]:
    """Rows of one local file (format by extension) and whether the cap cut it."""
    fmt = _format_of(path)
    if fmt == "parquet":
        return _read_parquet(path, max_rows)
    if fmt == "jsonl" and max_rows is not None:
        # Stream: a row cap on a huge file reads only the rows it keeps.
        rows = list(itertools.islice(_jsonl_file_rows(path), max_rows + 1))
        return rows[:max_rows], len(rows) > max_rows
    size = path.stat().st_size
    if max_rows is None and size > MAX_BYTES:
        raise AuditorError("too_large", f"{path.name} is {size / 1024 ** 3:.1f} GiB: too large to read whole "
                           f"(limit {MAX_BYTES / 1024 ** 3:.1f} GiB).",
                           "Audit a prefix with --max-rows (e.g. --max-rows 1000000), convert it to JSONL or "
                           "Parquet, or raise AUDITOR_MAX_BYTES if the machine has the memory.")
    text = _read_text(path)
    if fmt == "jsonl":
        return _parse_jsonl(text, path.name, max_rows)
    if fmt == "json":
        return _parse_json(text, path.name, max_rows)
    return _parse_csv(text, path.name, max_rows, delimiter="\t" if fmt == "tsv" else ",")


def _read_bytes(path: Path) -> bytes:
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except (gzip.BadGzipFile, EOFError, OSError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise AuditorError("not_found", f"{path.name}: cannot be read ({exc.strerror}).",
                               "Check the file exists and is readable.") from None
        raise AuditorError("bad_format", f"{path.name}: not a valid gzip file ({exc}).",
                           "Decompress it to check it, or remove the .gz suffix if it is not compressed.") from None


def _read_text(path: Path) -> str:
    data = _read_bytes(path)
    try:
        return data.decode("utf-8-sig")  # a UTF-8 byte-order mark is legitimate; drop it
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise AuditorError("bad_format", f"{path.name}: not valid UTF-8 (byte {exc.start}, line {line}).",
                           "Re-encode the file as UTF-8, or check that it is a text file and not binary.") from None


def _read_jsonl(path: Path, max_rows) -> tuple[list[dict], bool]:
    return _parse_jsonl(_read_text(path), path.name, max_rows)


def _parse_jsonl(text: str, name: str, max_rows) -> tuple[list[dict], bool]:
    # split("\n"), not splitlines(): U+2028 and friends may sit inside a JSON string.
    rows: list[dict] = []
    for row in jsonl_rows(text.split("\n"), name):
        if max_rows is not None and len(rows) >= max_rows:
            return rows, True
        rows.append(row)
    return rows, False


def jsonl_rows(lines, name: str):
    """Records of JSONL lines, one at a time, with errors that name the line."""
    loads = json.loads
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError as exc:
            snippet = line.strip()[:60]
            raise AuditorError("bad_format", f"{name}, line {lineno}: not valid JSON ({exc.args[0].split(':')[0]}): "
                               f"{snippet!r}", "Fix or remove that line; every line of a JSONL file must be one "
                               "JSON object.") from None
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}, line {lineno}: a JSON {type(row).__name__}, not an object.",
                               "Every line of a JSONL file must be a JSON object like {\"text\": ...}.")
        yield row


def _jsonl_file_rows(path: Path):
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="\n") as fh:
            yield from jsonl_rows((line.rstrip("\n") for line in fh), path.name)
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise AuditorError("bad_format", f"{path.name}: unreadable ({type(exc).__name__}: {str(exc)[:200]}).",
                           "Check that the file is UTF-8 JSONL (optionally gzip'd).") from None
    except OSError as exc:
        raise AuditorError("bad_format", f"{path.name}: cannot be read ({exc}).",
                           "Check the file is a complete, readable (gzip'd) JSONL file.") from None


def iter_records(source: str, config: str | None = None, split: str | None = None, *, token: str | None = None):
    """Records one at a time, for corpora larger than memory: local JSONL (plain or .gz) and
    Parquet stream; other sources are loaded whole."""
    if not source.startswith("example:") and _looks_local(source):
        for path in _expand_local(source):
            fmt = _format_of(path)
            if fmt == "jsonl":
                yield from _jsonl_file_rows(path)
            elif fmt == "parquet" and not path.name.lower().endswith(".gz"):
                import pyarrow.parquet as pq
                try:
                    for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
                        yield from batch.to_pylist()
                except Exception as exc:
                    raise AuditorError("bad_format", f"{path.name}: not a readable Parquet file ({exc}).",
                                       "Re-export the file.") from None
            else:
                yield from read_file(path)[0]
        return
    yield from load(source, config, split, token=token).rows


def _parse_json(text: str, name: str, max_rows) -> tuple[list[dict], bool]:
    if not text.strip():
        return [], False
    try:
        data = json.loads(text)
    except ValueError as exc:
        if "Extra data" in str(exc):  # several objects, one per line: it is really JSONL
            return _parse_jsonl(text, name, max_rows)
        raise AuditorError("bad_format", f"{name}: not valid JSON ({exc}).",
                           "Check the file is complete and valid JSON.") from None
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        if lists and len(lists) == len(data) and len({len(v) for v in lists.values()}) == 1:
            if len(lists) == 1 and all(isinstance(x, dict) for x in next(iter(lists.values()))):
                data = next(iter(lists.values()))          # {"data": [{...}, ...]}
            else:                                            # an object of equal-length columns
                data = [dict(zip(lists, values)) for values in zip(*lists.values())]
        elif len(lists) == 1 and all(isinstance(x, dict) for x in next(iter(lists.values()))):
            data = next(iter(lists.values()))              # {"version": 2, "data": [{...}]}
        else:
            data = [data]                                    # one record
    if not isinstance(data, list):
        raise AuditorError("bad_format", f"{name}: the JSON holds a {type(data).__name__}, not records.",
                           "Use a list of objects, an object of equal-length lists, or JSONL.")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}: item {i} of the list is a {type(row).__name__}, "
                               "not an object.", "Every record must be a JSON object like {\"text\": ...}.")
    truncated = max_rows is not None and len(data) > max_rows
    return (data[:max_rows] if truncated else data), truncated


def _parse_csv(text: str, name: str, max_rows, delimiter: str) -> tuple[list[dict], bool]:
    # Values stay strings: no type inference, so "007" stays "007".
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader, None)
        if header is None:
            return [], False
        rows: list[dict] = []
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != len(header):
                raise AuditorError("bad_format", f"{name}, line {reader.line_num}: {len(row)} values but the "
                                   f"header has {len(header)} columns.",
                                   "Check quoting and delimiters on that line.")
            if max_rows is not None and len(rows) >= max_rows:
                return rows, True
            rows.append(dict(zip(header, row)))
    except csv.Error as exc:
        raise AuditorError("bad_format", f"{name}, line {reader.line_num}: unreadable CSV ({exc}).",
                           "Check quoting on that line.") from None
    return rows, False


def _read_parquet(path: Path, max_rows) -> tuple[list[dict], bool]:
    import pyarrow.parquet as pq
    try:
        if path.name.lower().endswith(".gz"):
            pf = pq.ParquetFile(io.BytesIO(_read_bytes(path)))
        else:
            pf = pq.ParquetFile(path)
        total = pf.metadata.num_rows
        if max_rows is None or total <= max_rows:
            return pf.read().to_pylist(), False
        rows: list[dict] = []
        for batch in pf.iter_batches(batch_size=min(max_rows, 65536)):
            rows.extend(batch.to_pylist())
            if len(rows) >= max_rows:
                break
        return rows[:max_rows], True
    except AuditorError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError...: all mean "bad file"
        raise AuditorError("bad_format", f"{path.name}: not a readable Parquet file ({type(exc).__name__}: "
                           f"{str(exc)[:200]}).", "The file may be truncated or not Parquet at all; "
                           "re-export it.") from None
