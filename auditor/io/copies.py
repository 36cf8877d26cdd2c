"""Copies of records: rows written in a format (``write_rows``), and a local corpus's records
copied line for line less some rows (``copy_record_lines``: decontaminate's, dedup's and the Ray
copy tasks' one way of writing a kept record; ``copy_csv_records``: a CSV/TSV file's records as
written, in its own dialect), checked against the files as they were scanned. Every write is
atomic (``outputs.atomic_write``)."""
from __future__ import annotations

import csv
import json
import os
import re
from functools import partial
from pathlib import Path

import numpy as np

from ..errors import AuditorError
from .budget import READ_ERRORS, Budget, max_bytes, open_stream, read_error
from .columns import utf8_text
from .formats import csv_batches, file_batches, line_blocks
from .hub import FetchInto, FetchTooLarge, fetch_parquet
from .listing import codec_of, format_of, local_files
from .outputs import CSV_LINE_END, atomic_write, write_error
from .sources import looks_local, source_text
from .table import HubParquet


def write_rows(rows: list, path: str | Path, fmt: str | None = None, *, before_replace=None) -> list[str]:
    """Rows to .jsonl, .json (an array), .csv, .tsv or .parquet, by the file's extension or ``fmt``
    (jsonl, json, csv, tsv, parquet); returns notices. The file is written atomically
    (``outputs.atomic_write``, which runs ``before_replace``): complete at ``path``, or the previous
    file kept."""
    try:
        return _write_rows(rows, Path(path), fmt, before_replace)
    except OSError as exc:
            raise write_error(str(path), exc) from None


def json_value(value):
    """json.dumps' fallback for a value JSON has no type for (``default=``): bytes as their UTF-8 text (a
    Parquet binary column of text, which the audit read as text; str() wrote "b'...'"), other bytes
    refused; dates, decimals and the like as their text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = utf8_text(value)
        if text is None:
            raise AuditorError("usage", f"A record holds binary data that is not UTF-8 text ({bytes(value)[:12]!r}"
                               "...: an image, audio), which JSON Lines, JSON and CSV cannot carry.",
                               "Write .parquet, which keeps it.")
        return text
    return str(value)


def _csv_cell(value):
    """A value as a CSV cell: lists and objects as their JSON, bytes as their text (``json_value``)."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=json_value)
    return json_value(value) if isinstance(value, (bytes, bytearray, memoryview)) else value


_SURROGATE = re.compile("[\ud800-\udfff]")        # a lone surrogate (valid UTF-8 holds none)


def _escape_surrogates(value):
    """``value`` with every lone surrogate written as a backslash escape (nested values too)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, (list, tuple)):
        return [_escape_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_escape_surrogates(k): _escape_surrogates(v) for k, v in value.items()}
    return value


def _refuse_nul(values, path: Path, where: str) -> None:
    """A NUL character (a JSON "\\u0000") written raw in a CSV/TSV file makes it a binary file, which
    no CSV reader (this tool's included) reads back: refused, inside the write, so nothing is left."""
    for v in values:
        if isinstance(v, str) and "\x00" in v:
            raise AuditorError("usage", f"Cannot write {path.name}: {where} holds a NUL character (\\u0000) in "
                               f"{v[:40]!r}, which a CSV or TSV file cannot carry (it would be read as binary).",
                               "Write .jsonl, .json or .parquet instead, which keep it.")


def _write_rows(rows: list, path: Path, fmt: str | None = None, before_replace=None) -> list[str]:
    suffix = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "tsv": ".tsv", "parquet": ".parquet"}.get(
        fmt or "", path.suffix.lower())
    if suffix in (".jsonl", ".ndjson"):
        with atomic_write(path, errors="backslashreplace", before_replace=before_replace) as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False, default=json_value) + "\n")
    elif suffix == ".json":
        with atomic_write(path, errors="backslashreplace", before_replace=before_replace) as fh:
            fh.write("[")
            for i, r in enumerate(rows):
                fh.write(("\n" if not i else ",\n") + json.dumps(r, ensure_ascii=False, default=json_value))
            fh.write("\n]\n")
    elif suffix in (".csv", ".tsv"):
        columns = list(dict.fromkeys(k for r in rows for k in r))
        with atomic_write(path, errors="backslashreplace", newline="", before_replace=before_replace) as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, lineterminator=CSV_LINE_END,
                                    delimiter="\t" if suffix == ".tsv" else ",")
            _refuse_nul(columns, path, "a column name")
            writer.writeheader()
            escaped = 0
            for i, r in enumerate(rows):
                # (json.dumps escapes a NUL inside a list or object; a plain text value keeps it)
                cells = {k: _csv_cell(v) for k, v in r.items()}
                _refuse_nul(cells.values(), path, f"written record {i}")
                writer.writerow(cells)
                # A lone surrogate is written as \uXXXX text (the file is UTF-8): unlike JSON's escape,
                # a CSV reader reads those six characters back, so it is said (as the Parquet writer does).
                escaped += any(isinstance(v, str) and not v.isascii() and _SURROGATE.search(v) is not None
                               for v in cells.values())
        if escaped:
            return [f"{escaped:,} record(s) hold text with lone surrogates (not valid Unicode): written as "
                    "\\uXXXX text"]
    elif suffix in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq
        columns = list(dict.fromkeys(k for r in rows for k in r))
        arrays, notices = {}, []
        for name, values in _columns(rows, columns):
            if _escape_surrogates(name) != name:
                notices.append(f"column name {name!r} holds a lone surrogate: written with \\uXXXX escapes")
                name = _escape_surrogates(name)
            try:
                try:
                    arrays[name] = pa.array(values)
                except UnicodeEncodeError:
                    # Parquet text must be valid UTF-8 (Arrow refuses a lone surrogate, nested too):
                    # escaped as the JSONL and CSV writers do; only then is the column walked again.
                    values = [_escape_surrogates(v) for v in values]
                    notices.append(f"column {name!r} holds text with lone surrogates (not valid Unicode): "
                                   "written with \\uXXXX escapes")
                    arrays[name] = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                try:
                    # NaN, pandas' missing value (a CSV's NaN cell, a JSON NaN), among texts: a null
                    arrays[name] = pa.array(values, from_pandas=True)
                    notices.append(f"column {name!r}: its NaN values (missing) written as null")
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, UnicodeEncodeError):
                    # Parquet needs one type per column; a column mixing types is kept as JSON text.
                    arrays[name] = pa.array([None if v is None else
                                             json.dumps(v, ensure_ascii=False, default=json_value) for v in values])
                    notices.append(f"column {name!r} mixes types: written as JSON text")
        table = pa.table(arrays)
        with atomic_write(path, "wb", before_replace=before_replace) as fh:
            pq.write_table(table, fh)
        return notices
    else:
        raise AuditorError("usage", f"Cannot write {path.name}: unknown extension.",
                          "Use .jsonl, .json, .csv, .tsv or .parquet.")
    return []


PARQUET_COLUMN_GROUP = 64     # columns gathered per pass over the records
PARQUET_COPY_ROWS = 65536     # rows of a Parquet file copied at a time (copy_parquet_records)
COPIED_AS_WRITTEN = ("jsonl", "csv", "tsv", "parquet")   # formats a local file's copy keeps as written


def _columns(rows, columns: list):
    """(name, values) of each column, gathered ``PARQUET_COLUMN_GROUP`` columns per pass over
    ``rows``: packed records (``io.table.PackedRows``) are decoded once a pass, not once a column
    (2,000 records of 200 fields took 7.5 s to write, 0.5 s as a list), while a pass holds only its
    group's values."""
    for lo in range(0, len(columns), PARQUET_COLUMN_GROUP):
        group = columns[lo:lo + PARQUET_COLUMN_GROUP]
        gathered = [[] for _ in group]
        for r in rows:
            for name, values in zip(group, gathered):
                values.append(r.get(name))
        yield from zip(group, gathered)


def copy_record_lines(files, dropped_rows: np.ndarray, records: int, out, *, as_array: bool = False,
                      source: str = "the corpus", stamps=(), before_replace=None, notices: list | None = None,
                      truncated: bool = False) -> None:
    """Write the records of the local ``files`` to ``out`` as JSON Lines (a JSON array with
    ``as_array``), less the ascending 0-based ``dropped_rows``: a JSONL file's (plain or compressed)
    each kept line's bytes as they are, another format's records as the auditor reads them (as the
    Ray copy tasks write a shard). The files must still hold the ``records`` records that were
    scanned (and ``stamps``: (path, stamp) pairs, be unchanged), else AuditorError, and no file;
    ``truncated``: the records scanned were the files' first ``records`` (a row cap), the copy holds
    only those. ``before_replace``: as ``outputs.atomic_write``'s; ``notices``: what the readers say
    of the files (a CSV's renamed columns, NaN cells), appended as they read."""
    write_lines(kept_items(record_lines([Path(f) for f in files], notices), np.asarray(dropped_rows), records, source,
                           stamps, truncated), os.fspath(out), as_array, before_replace)


def kept_items(items, dropped: np.ndarray, records: int, source: str, stamps=(), truncated: bool = False):
    """``items`` (records or their lines) less the ``dropped`` rows; raises inside the write (so no
    copy is left behind) when they are not the ``records`` scanned, or a stamped file changed. When
    ``truncated`` (a row cap cut the scan), only the first ``records`` items are read."""
    if truncated:
        items = _first(items, records)
    at = row = 0            # the next dropped row (ascending); rows read
    for row, item in enumerate(items, 1):
        if at < dropped.size and dropped[at] == row - 1:
            at += 1
            continue
        yield item
    check_read_again(row, records, source, stamps)


def _first(items, most: int):
    """The first ``most`` of ``items``; the rest are never read (the reader is closed: its file too)."""
    try:
        for count, item in enumerate(items if most > 0 else (), 1):
            yield item
            if count == most:
                return
    finally:
        getattr(items, "close", lambda: None)()


def check_read_again(row: int, records: int, source: str, stamps=()) -> None:
    """Raise when a copy's second reading found ``row`` records, not the ``records`` scanned, or a
    stamped file changed (inside the write: no copy is left behind)."""
    if row != records:
        raise AuditorError("bad_format", f"{source} held {records:,} records when scanned and {row:,} when read "
                           "again: it changed while it was read.", "Run again once the corpus is no longer being written.")
    changed = [path for path, stamp in stamps if file_stamp(path) != stamp]
    if changed:
        raise AuditorError("bad_format", f"{changed[0]} changed while it was read (its size or change time is "
                           "not what it was when the scan began): the rows found may not be the rows "
                           "written.", "Run again once the corpus is no longer being written.")


def local_stamps(corpus, split) -> list:
    """(path, stamp) of each local file of the corpus, to tell a file rewritten between two passes
    with as many records (a copy of one version with the rows found in the other)."""
    corpus = source_text(corpus)
    if corpus.startswith("example:") or not looks_local(corpus):
        return []      # a Hub dataset is read from its cache, which is written once
    return [(os.fspath(path), file_stamp(path)) for path in local_files(corpus, split)[0]]


def file_stamp(path) -> tuple | None:
    # The change time too: `touch -r` can put a modification time back, never a change time. A
    # file gone has no stamp: changed.
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def local_source_files(corpus: str, split):
    """The local files the scan read; None for another source (a dataset id, a bundled set)."""
    if corpus.startswith("example:") or not looks_local(corpus):
        return None
    return local_files(corpus, split)[0]


def record_line(record) -> str:
    """A record read from a file that is not JSONL, as a JSONL line (``clean.write_rows``'s form)."""
    return json.dumps(record, ensure_ascii=False, default=json_value)


def record_lines(files, notices: list | None = None):
    """Each record's line (without its line end), in order. JSONL: the lines the row reader reads
    as records (``formats.jsonl_rows``: every line that is not blank), through the same checked
    stream (UTF-8, line cap, decompression); other formats: ``record_line`` of each record read."""
    for path in files:
        if format_of(path) != "jsonl":
            for batch in file_batches(path, Budget(limited=False), notices):
                yield from map(record_line, batch)
            continue
        stream = open_stream(path, Budget(limited=False), b"\n")
        try:
            yield from stream_record_lines(stream, path.name)
        except READ_ERRORS as exc:
            raise read_error(exc, path) from None
        finally:
            stream.close()


def stream_record_lines(stream, name: str):
    """The record lines of a checked JSONL stream (``budget.CountedStream``): every line not blank,
    without its line end, as ``formats.jsonl_rows`` counts records."""
    for lines in line_blocks(stream, name, {}):
        yield from filter(str.strip, lines)


def write_lines(lines, out: str, as_array: bool, before_replace=None) -> None:
    # (a lone surrogate of a JSON escape, as the backslash escape it was: the line stays valid JSON)
    with atomic_write(out, errors="backslashreplace", before_replace=before_replace) as fh:
        if not as_array:
            for line in lines:
                fh.write(line + "\n")
            return
        fh.write("[")
        for i, line in enumerate(lines):
            fh.write(("\n" if not i else ",\n") + line.strip())
        fh.write("\n]\n")


def files_copied_as_written(source, split, fmt: str, truncated: bool, notices: list | None = None):
    """The local files (plain or compressed) of ``source`` when every record read came from them
    and a copy in ``fmt`` can be their records as written: JSONL files, CSV/TSV files that begin
    alike (``csv_files_copied``) or Parquet files whose schemas unify (``parquet_files_copied``); a cut
    read's first records too (``copier(fmt, truncated)``: a local read with a row cap is the files'
    first records, in order). Else None (another format, a dataset id): the records are then written
    anew (``write_rows``). ``notices``: what the copy changes or cannot keep, appended. dedup's and
    clean's one rule."""
    if not isinstance(source, (str, os.PathLike)) or fmt not in COPIED_AS_WRITTEN:
        return None
    return files_copied(local_source_files(source_text(source), split) or [], fmt, notices)


def files_copied(files, fmt: str, notices: list | None = None):
    """``files`` (local paths) when a copy in ``fmt`` can be their records as written
    (``files_copied_as_written``'s rule for files already listed, such as the app's upload); else None."""
    if fmt == "parquet":
        return parquet_files_copied(files, notices)
    if fmt in ("csv", "tsv"):
        return csv_files_copied(files, fmt)
    files = [Path(p) for p in files]
    return files if fmt == "jsonl" and files and all(format_of(p) == "jsonl" for p in files) else None


def copier(fmt: str, truncated: bool = False):
    """The function that copies ``files_copied``' (or ``hub_files_copied``') files, less some rows, to
    a ``fmt`` output as written: JSONL lines, CSV/TSV record texts, Parquet rows as stored (only the
    first ``records`` when the read was ``truncated``: a row cap's first rows, local or a Hub split's).
    Each takes (files, dropped_rows, records, out, *, source, stamps, before_replace). dedup's, clean's
    and the app's one choice."""
    copy = {"parquet": copy_parquet_records, "jsonl": copy_record_lines, "csv": copy_csv_records,
            "tsv": copy_csv_records}[fmt]
    return partial(copy, truncated=truncated)


def parquet_files_copied(files, notices: list | None = None):
    """``files`` (local paths) when a copy can be their rows as stored: all plain Parquet files whose
    schemas unify (``copy_schema``: one schema, or columns missing from some files, or types widened
    without loss, which is said in ``notices``); else None: the records are then written anew from the
    values read, which ``notices`` is told names the columns whose types differ between the files."""
    if not files or any(format_of(Path(p)) != "parquet" or codec_of(p) for p in files):
        return None
    schema, said = copy_schema(files)
    if notices is not None:
        notices.extend(said)
    return None if schema is None else [Path(p) for p in files]


def copy_schema(files) -> tuple:
    """(the schema a copy of the Parquet ``files`` is written in, notices). One schema when the files
    share it; else their union (a part file with an extra column: ordinary schema evolution), each
    column in its stored type, a column some files lack nullable (its rows there are nulls); a column
    whose types differ only by a lossless widening (int32 and int64, string and large_string) in the
    wider type, said. (None, notice) when types truly conflict (text in one file, integers in
    another): the copy is then rebuilt from the values read, whose types may differ from the stored."""
    import pyarrow as pa
    schemas = [_stored_schema(p) for p in files]
    if all(s.equals(schemas[0]) for s in schemas[1:]):
        return schemas[0], []
    try:
        union = pa.unify_schemas(schemas)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        union = _widened_union(schemas)
    if union is None:
        return None, [_conflict_notice(files, schemas)]
    union = _nullable_where_missing(union, schemas)
    # (a column all null in some file, typed null there, keeps its values: no notice)
    widened = [f.name for f in union
               if any(not (t is None or t.equals(f.type) or pa.types.is_null(t))
                      for t in (_field_type(s, f.name) for s in schemas))]
    return union, [f"column {name!r} has a narrower type in some Parquet files than in others: copied as "
                   f"{union.field(name).type}, which holds every value" for name in widened]


def _widened_union(schemas):
    """The files' schemas unified with lossless type widening (pyarrow's permissive promotion, checked
    by ``_widens``); None when some column's types would lose values or cannot be joined."""
    import pyarrow as pa
    try:
        union = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):        # (TypeError: no promote_options)
        return None
    for schema in schemas:
        for field in schema:
            if not _widens(field.type, union.field(field.name).type):
                return None
    return union


def _widens(old, new) -> bool:
    """Whether every ``old`` value is kept, unchanged, as a ``new`` value (and Arrow casts it). A
    timestamp's unit is not widened: a finer unit's range is shorter (nanoseconds end in 2262)."""
    import pyarrow as pa
    t = pa.types
    if old.equals(new) or t.is_null(old):
        return True
    if t.is_integer(old) and t.is_integer(new):
        fits = t.is_signed_integer(old) <= t.is_signed_integer(new)        # no signed into unsigned
        sign_bit = t.is_unsigned_integer(old) and t.is_signed_integer(new)
        lossless = fits and old.bit_width + sign_bit <= new.bit_width
    elif (t.is_integer(old) or t.is_floating(old)) and t.is_floating(new):
        # a float's mantissa holds every integer of half its width
        lossless = old.bit_width * (1 if t.is_floating(old) else 2) <= new.bit_width
    elif t.is_decimal(old) and t.is_decimal(new):
        lossless = new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    elif t.is_string(old) or t.is_binary(old):
        lossless = t.is_large_string(new) if t.is_string(old) else t.is_large_binary(new)
    elif (t.is_list(old) or t.is_large_list(old)) and (t.is_list(new) or t.is_large_list(new)):
        lossless = (t.is_large_list(new) or t.is_list(old)) and _widens(old.value_type, new.value_type)
    elif t.is_struct(old) and t.is_struct(new):
        names = [new.field(i).name for i in range(new.num_fields)]
        lossless = all(old.field(i).name in names and _widens(old.field(i).type, new.field(old.field(i).name).type)
                       for i in range(old.num_fields))
    elif t.is_dictionary(old) and t.is_dictionary(new):
        lossless = _widens(old.index_type, new.index_type) and _widens(old.value_type, new.value_type)
    else:
        return False
    return lossless and _casts(old, new)


def _casts(old, new) -> bool:
    import pyarrow as pa
    try:
        pa.array([], type=old).cast(new)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False
    return True


def _field_type(schema, name: str):
    index = schema.get_field_index(name)
    return None if index < 0 else schema.field(index).type


def _nullable_where_missing(union, schemas):
    """``union`` with each column some schema lacks made nullable: those files' rows hold nulls there."""
    for i, field in enumerate(union):
        if not field.nullable and any(s.get_field_index(field.name) < 0 for s in schemas):
            union = union.set(i, field.with_nullable(True))
    return union


def _conflict_notice(files, schemas) -> str:
    """The notice of a copy written anew because the files' column types conflict, naming the columns."""
    first, clashes = {}, {}
    for path, schema in zip(files, schemas):
        for field in schema:
            name, typed = first.setdefault(field.name, (Path(path).name, field.type))
            if not typed.equals(field.type):
                clashes.setdefault(field.name, f"{typed} in {name}, {field.type} in {Path(path).name}")
    named = "; ".join(f"{name!r}: {detail}" for name, detail in clashes.items())
    why = f"column types conflict ({named})" if named else "columns are named twice in a file"
    return (f"the Parquet files' {why}, so the copy's records are written anew from the values read: those "
            "columns, and any of a type Python values do not keep (nanosecond timestamps, unsigned or narrow "
            "integers, dictionaries), may change type")


# A copy of a Hub split's Parquet files may fetch at most this many times the reading budget: a
# capped read of the first rows of one huge file would otherwise fetch the whole file (the loader
# read only the bytes it needed), and the Space's disk has no room for that.
COPY_FETCH_BUDGETS = 2
MB = 1 << 20


def hub_files_copied(files: HubParquet | None, fmt: str | None, records: int, truncated: bool,
                     token=None, into: FetchInto | None = None) -> tuple[list | None, list]:
    """(local paths, notices): a Hub split's Parquet files (``Table.hub_parquet``), fetched at the commit
    read (``hub.fetch_parquet``: a file that cannot be fetched is an error, no copy made otherwise;
    ``into``: a server's folder for them, not huggingface_hub's cache), when a ``fmt`` copy of its
    ``records`` rows read (the first ones when ``truncated``) is to be their rows as stored: a .parquet
    copy, the files of one schema, at most ``COPY_FETCH_BUDGETS`` reading budgets of them. Else (None,
    notices): another format or source, or files of several schemas or past that size (said), whose
    records are written anew (``write_rows``)."""
    if fmt != "parquet" or files is None:
        return None, []
    most = COPY_FETCH_BUDGETS * max_bytes()
    try:
        paths = fetch_parquet(files, token, records if truncated else None, most, into)
    except FetchTooLarge as large:
        return None, [f"{files.repo_id}: the Parquet files holding the rows read are {large.needed / MB:,.0f} MB, "
                      f"more than a copy may fetch ({most / MB:,.0f} MB: {COPY_FETCH_BUDGETS} times the reading "
                      "budget, AUDITOR_MAX_BYTES), so the copy's records are written anew, as the datasets library "
                      "read them (one type per column)"]
    schema, said = copy_schema(paths)
    said = [f"{files.repo_id}: {notice}" for notice in said]
    return (None if schema is None else [Path(p) for p in paths]), said


def _parquet_read_errors() -> tuple:
    import pyarrow as pa
    return (*READ_ERRORS, pa.ArrowException)


def _stored_schema(path):
    import pyarrow.parquet as pq
    try:
        return pq.read_schema(path)
    except _parquet_read_errors() as exc:       # changed or cut short since the scan read it
        raise read_error(exc, Path(path)) from None


def _stored_batches(path):
    """A Parquet file's batches as stored; a failed read is the file's error (a failed write of the
    copy, in the caller, is not caught here)."""
    import pyarrow.parquet as pq
    try:
        with pq.ParquetFile(path) as stored:
            yield from stored.iter_batches(batch_size=PARQUET_COPY_ROWS)
    except _parquet_read_errors() as exc:
        raise read_error(exc, Path(path)) from None


def copy_parquet_records(files, dropped_rows: np.ndarray, records: int, out, *, source: str = "the data",
                         stamps=(), before_replace=None, truncated: bool = False) -> None:
    """The rows of the local Parquet ``files`` (``parquet_files_copied``'s, ``hub_files_copied``'s) to
    ``out`` less the ascending 0-based ``dropped_rows``, as stored: the column types (nanosecond
    timestamps, unsigned and narrow integers, decimals, dictionaries) and names (repeated or blank
    ones) as in the files, which values rebuilt from Python lost (microseconds, int64, JSON text,
    'Unnamed: 0'). ``truncated``: the ``records`` rows read were the files' first ones (a row cap),
    the copy holds only those. Files of several schemas are written in their union (``copy_schema``),
    each batch fitted to it. A batch at a time; checked as ``copy_record_lines`` checks
    (``check_read_again``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    dropped = np.asarray(dropped_rows, dtype=np.int64)
    row = 0
    schema = copy_schema(files)[0]
    if schema is None:          # (the files changed since parquet_files_copied's look)
        raise AuditorError("bad_format", f"{source}'s Parquet files changed while they were read: their column "
                           "types no longer join.", "Run again once the corpus is no longer being written.")
    with atomic_write(out, "wb", before_replace=before_replace) as fh:
        with pq.ParquetWriter(fh, schema) as writer:
            for stored in _stored_rows(files, records if truncated else None):
                batch = _fitted(stored, schema)
                keep = np.ones(batch.num_rows, dtype=bool)
                lo, hi = np.searchsorted(dropped, [row, row + batch.num_rows])
                keep[dropped[lo:hi] - row] = False
                row += batch.num_rows
                if keep.any():      # (no empty row group: readers that size batches by the first fail)
                    writer.write_batch(batch.filter(pa.array(keep)))
        check_read_again(row, records, source, stamps)


def _fitted(batch, schema):
    """``batch`` in the copy's ``schema``: as stored when it is already; else each column cast to its
    (lossless, ``_widens``) union type, a column the file lacks as nulls."""
    import pyarrow as pa
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        column = pa.nulls(batch.num_rows, field.type) if index < 0 else batch.column(index)
        columns.append(column if column.type.equals(field.type) else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _stored_rows(files, most: int | None):
    """The batches of ``files`` as stored, in order; with ``most``, only the first ``most`` rows."""
    left = most
    for path in files:
        for batch in _stored_batches(path):
            if left is not None:
                if batch.num_rows >= left:
                    yield batch.slice(0, left)
                    return
                left -= batch.num_rows
            yield batch


def csv_files_copied(files, fmt: str):
    """``files`` (local paths) when a copy in ``fmt`` can be their records' text as written: all are
    ``fmt`` (csv or tsv) and begin alike (byte-order mark, Excel's sep= line, header, line end), so
    one head serves them all; else None (the records are then written anew, ``write_rows``)."""
    if fmt not in ("csv", "tsv") or not files or any(format_of(Path(p)) != fmt for p in files):
        return None
    heads = set()
    for path in files:
        texts = csv_record_texts(Path(path))
        try:
            heads.add(next(texts, None))
        finally:
            texts.close()
        if len(heads) > 1:
            return None
    return None if heads == {None} else [Path(p) for p in files]


def csv_record_texts(path: Path):
    """(the byte-order mark, if any, and the head: Excel's sep= line and the header, as written),
    then each record's text as written (its line end included; quoted newlines kept): the records
    ``formats.csv_batches`` reads, in order. An empty file yields nothing."""
    fmt = format_of(path)
    budget = Budget(limited=False)
    stream = open_stream(path, budget, b"\n", b"\t" if fmt == "tsv" else b",")
    raw: dict = {}
    try:
        for _ in csv_batches(stream, path.name, "\t" if fmt == "tsv" else ",", budget, None, raw=raw):
            if "head" in raw:
                yield ("\ufeff" if raw["bom"] else "") + raw.pop("head")
            yield from raw["texts"]
    except READ_ERRORS as exc:
        raise read_error(exc, path) from None
    finally:
        stream.close()


def copy_csv_records(files, dropped_rows: np.ndarray, records: int, out, *, source: str = "the data",
                     stamps=(), before_replace=None, truncated: bool = False) -> None:
    """The records of the local CSV/TSV ``files`` (``csv_files_copied``'s) to ``out`` less the
    ascending 0-based ``dropped_rows``, each as written in its file, after the first file's head:
    the input's delimiter, quoting, line ends, byte-order mark and header names (repeated ones as
    they were) are kept, as a user expects of a copy of their file less some rows. ``truncated``: only
    the first ``records`` (a row cap's). Checked as ``copy_record_lines`` checks (``kept_items``)."""
    def texts():
        for k, path in enumerate(files):
            part = csv_record_texts(Path(path))
            head = next(part, None)
            if head is None:
                continue
            if not k:
                yield None, head
            yield from ((True, text) for text in part)

    items = texts()
    first = next(items, (None, ""))[1]
    end = re.search(r"\r\n|\r|\n", first)
    end = end.group(0) if end else CSV_LINE_END
    # A last record without a line end gets the head's when more records follow it.
    with atomic_write(out, newline="", before_replace=before_replace) as fh:
        fh.write(first)
        ended = first.endswith(("\r", "\n")) or not first
        for text in kept_items((t for _, t in items), np.asarray(dropped_rows), records, source, stamps,
                               truncated):
            if not ended:
                fh.write(end)
            fh.write(text)
            ended = text.endswith(("\r", "\n"))
