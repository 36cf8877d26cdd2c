"""Step 1, load: turn a source string into a ``Table`` of rows.

A source is one of
- ``example:NAME`` — a real dataset bundled with the package (works offline);
- a local file, directory or glob of JSONL / JSON / CSV / TSV / Parquet (optionally compressed:
  ``.gz``, ``.bz2``, ``.xz``, ``.zst``, ``.lz4``, ``.br``);
- a Hugging Face dataset id, loaded through ``datasets`` (imported only then).

Every loading failure is raised here as an ``AuditorError`` that names the file,
line or split, so no caller has to interpret library exceptions. Reading is bounded by a byte
budget (``AUDITOR_MAX_BYTES``, ``budget.py``) enforced while streaming, and a row cap stops it.
"""
from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

from ..errors import AuditorError
from ..settings import check_max_rows
from .budget import Budget
from .formats import file_rows, read_file
from .hub import load_hub  # imports `datasets` itself, only when a hub id is read
from .listing import DATA_SUFFIXES, display_name, expand_local, format_of, local_files  # noqa: F401
from .table import Table, choose_split, head_of, packed

EXAMPLES_DIR = Path(__file__).parent.parent / "examples"


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


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
        return load_hub(source, config, split, max_rows, token, default_split, revision=revision)
    raise AuditorError("not_found", f"No file, directory or glob matches {source!r}, and it is not a "
                       "valid Hugging Face dataset id.",
                       "Check the path, or use an id like 'openai/gsm8k' or a bundled set like 'example:gsm8k'.")


# A Hub revision: a commit sha, or a branch or tag name (git's rules, roughly: no spaces, no "..").
REVISION = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


def _refuse_revision(source: str, revision) -> None:
    if revision is not None:
        raise AuditorError("usage", f"{source}: a revision applies to Hugging Face datasets only.",
                           "Leave the revision out for files and bundled examples.")


URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def source_text(source) -> str:
    """A source as a string: paths (``pathlib.Path``, ``os.PathLike``) are accepted as they are;
    URLs are refused with the kinds of source that are supported."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
        if isinstance(source, bytes):
            source = os.fsdecode(source)
    if isinstance(source, Table):
        # (its hint told the caller to pass a Table: what it had done)
        raise AuditorError("usage", f"A loaded Table ({source.source!r:.60}) is not taken here: this reads its "
                           "source itself (a file, folder or glob, a Hub dataset id or example:NAME).",
                           "Pass the source the Table was loaded from, or write its rows to a JSONL file "
                           "(auditor.io.copies.write_rows(table.rows, 'rows.jsonl')) and pass that path.")
    if not isinstance(source, str) or not source.strip():
        what = "" if source is None or isinstance(source, str) else f" (got {type(source).__name__} {source!r:.40})"
        rows = " Rows in memory (a list of dicts, a DataFrame's to_dict(\"records\")): pass " \
            "auditor.Table(rows=ROWS, source=\"NAME\")." if what else ""
        raise AuditorError("usage", f"No dataset given{what}.",
                           "Pass a Hugging Face dataset id, a local file path, or example:gsm8k." + rows)
    url = URL_SCHEME.match(source.strip())
    if url:
        hub = re.search(r"/datasets/([\w.-]+/[\w.-]+)", source)
        suggestion = f" For a Hub dataset pass its id: {hub.group(1)!r}." if hub else ""
        raise AuditorError("usage", f"{source.strip()!r}: {url.group(1)}:// sources are not supported.",
                           "Supported: a local file, directory or glob of JSONL / JSON / CSV / TSV / Parquet "
                           "(optionally compressed: .gz, .bz2, .xz, .zst, .lz4, .br), a Hugging Face dataset id (owner/name), or a bundled example:NAME. "
                           f"Download the file first.{suggestion}")
    return source


def looks_local(source: str) -> bool:
    if os.path.exists(source) or any(c in source for c in "*?["):
        return True
    # A path-like string that does not exist is a missing file, not a hub id.
    return source.startswith((".", "/", "~")) or os.sep + os.sep in source or \
        source.lower().endswith(DATA_SUFFIXES)


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
    parts: list = []
    truncated = False
    budget = Budget(max_rows)                # one reading budget for all the files of the source
    for path in paths:
        remaining = None if max_rows is None else max_rows - sum(map(len, parts))
        if remaining is not None and remaining <= 0:
            truncated = True
            break
        part, part_truncated = read_file(path, remaining, budget, notices)
        parts.append(part)
        truncated = truncated or part_truncated
    rows = parts[0] if len(parts) == 1 else packed(parts)     # several files: one buffer
    if not rows:
        names = ", ".join(p.name for p in paths)
        raise AuditorError("empty_input", f"{names}: no records found.",
                           "The file is empty or holds only a header; check that it is the right file.")
    return Table(rows=rows, source=display_name(source), split=split, files=tuple(p.name for p in paths),
                 row_cap=max_rows, truncated=truncated, splits=splits,
                 notices=tuple(notices))


def peek_records(source, config: str | None = None, split: str | None = None, *,
                 token: str | None = None, notices: list | None = None) -> tuple[list, object]:
    """(the first records, ``table.head_of``'s, an iterator over every record from the first): a
    streamed source's head for guessing roles, without reading the head twice. ``notices``: what
    the readers say of local files (a CSV's renamed columns, NaN cells), appended as they read."""
    stream = iter_records(source, config, split, token=token, notices=notices)
    head = head_of(stream)
    return head, itertools.chain(head, stream)


def iter_records(source, config: str | None = None, split: str | None = None, *, token: str | None = None,
                 notices: list | None = None):
    """Records one at a time, for corpora larger than memory: local files stream (JSONL, CSV, TSV
    and Parquet without a total byte limit, since nothing is kept; every line still bounded); other
    sources are loaded whole. Files named as splits are chosen as ``load`` chooses them (train by
    default): a folder of train.jsonl and test.jsonl is a dataset, not one corpus."""
    source = source_text(source)
    if not source.startswith("example:") and looks_local(source):
        _refuse_local_config(source, config)
        for path in local_files(source, split)[0]:
            yield from file_rows(path, Budget(limited=format_of(path) == "json"), notices)
        return
    table = load(source, config, split, token=token)
    if notices is not None:
        notices.extend(getattr(table, "notices", ()))
    yield from table.rows
