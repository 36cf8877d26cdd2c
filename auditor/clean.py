"""Clean splits: a copy of TEST without the records that leak into it from the
training side(s), optionally without internal duplicates, in the original rows and
columns; plus a report of every dropped row and why."""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from .errors import AuditorError
from .leakage import LeakSettings, RoleNames, leak
from .prepare import prepare
from .settings import NearSettings


@dataclass(frozen=True)
class CleanResult:
    kept: list           # original rows of TEST
    dropped: list        # [{row, reason, against, matches}] (+ differs: internal duplicates)
    source: str
    records: int
    notices: tuple = ()

    def summary(self) -> dict:
        from .report import clean as report
        return report.summary(self)


def clean(test, against: list, *, near: bool = False, dedup: bool = False, threshold: float = 0.7,
          config=None, split=None, text=None, answer=None, max_rows=None, token=None, engine: str = "local",
          ray_address=None, shard_dir=None, quiet: bool = False) -> CleanResult:
    """TEST without what leaks into it from each ``against`` source. TEST is prepared (loaded, its
    roles read, normalised) once and compared with every training side as it is. ``engine="ray"``:
    each training side's files are compared on Ray (``distributed.leak``; one session for all)."""
    import contextlib
    import os
    if engine not in ("local", "ray"):
        raise AuditorError("usage", f"Unknown engine {engine!r:.40}.", "Use local or ray.")
    if isinstance(against, (str, os.PathLike)):
        against = [against]                # one training source, not a list of its characters
    settings = LeakSettings(near=NearSettings(threshold=threshold), roles_a=RoleNames(text, answer)).validated()
    if not against:
        raise AuditorError("usage", "Nothing to clean against.", "Give --against TRAIN (repeatable).")
    if engine == "ray":
        from .outputs import check_shard_dir
        check_shard_dir(shard_dir, [test, *against], "leak")
    side = prepare(test, config=config, split=split, max_rows=max_rows, token=token, text=text, answer=answer,
                   default_split="test")        # TEST is an evaluation set: its test split by default
    reasons: dict[int, dict] = {}
    session = contextlib.nullcontext()
    if engine == "ray":
        from .distributed.leak import ray_leak
        from .distributed.runtime import ray_session
        session = ray_session(ray_address, quiet=quiet)
    with session:
        results = ((ray_leak(other, side, settings=settings, max_rows=max_rows, token=token, address=ray_address,
                             shard_dir=shard_dir, quiet=quiet) if engine == "ray" else
                    leak(other, side, max_rows=max_rows, token=token, settings=settings)) for other in against)
        for result in results:
            _drop_leaks(result, reasons, near)
    notices: tuple = ()
    if dedup:
        first: dict[str, int] = {}
        # An internal duplicate with another answer is a conflicting label, not a copy: it is dropped
        # (the text is what leaks), but named (differs) and counted, as auditor.dedup does.
        answers = side.normalized("answer", "default")
        conflicts = 0
        for i, key in enumerate(side.normalized("text")):
            if key is None:
                continue
            if key in first and i not in reasons:
                differs = [] if answers is None or answers[i] == answers[first[key]] else ["answer"]
                reasons[i] = {"row": i, "reason": "internal_duplicate", "against": None, "matches": [first[key]],
                              "differs": differs}
                conflicts += bool(differs) and answers[i] is not None
            first.setdefault(key, i)
        if conflicts:
            notices = (f"{conflicts:,} internal duplicate(s) dropped hold another answer than the row kept "
                       "(their 'differs' names it): review them, the kept answer is the first row's.",)
    kept = [row for i, row in enumerate(side.table.rows) if i not in reasons]
    return CleanResult(kept=kept, dropped=[reasons[i] for i in sorted(reasons)], source=side.table.source,
                       records=len(side.table.rows), notices=notices)


def drop_reason(match: dict, near: bool) -> tuple[str, list] | None:
    """Why a B record with these leak matches (``LeakResult.matches[row]``) leaves a clean copy, and
    the A rows behind it; None keeps it. Dropped: its text is an A text (after normalisation), or,
    with ``near``, a near duplicate of one. A shared answer alone is kept: short answers ("4",
    "yes") repeat by chance. The one rule for ``clean`` and the app's clean download."""
    if match.get("identical_text"):
        return "identical_text", match["identical_text"]
    if near and match.get("near_duplicate"):
        return f"near_duplicate (Jaccard {match['jaccard']:.4f})", match["near_duplicate"]
    return None


def _drop_leaks(result, reasons: dict, near: bool) -> None:
    """B rows of one leak result to drop, with why (a row already dropped keeps its first reason)."""
    for b_row, m in result.matches.items():
        why = None if b_row in reasons else drop_reason(m, near)
        if why:
            reasons[b_row] = {"row": b_row, "reason": why[0], "against": result.a.table.source, "matches": why[1]}


def write_rows(rows: list, path: str | Path, fmt: str | None = None, *, before_replace=None) -> list[str]:
    """Rows to .jsonl, .json (an array), .csv, .tsv or .parquet, by the file's extension or ``fmt``
    (jsonl, json, csv, tsv, parquet); returns notices. The file is written atomically
    (``outputs.atomic_write``, which runs ``before_replace``): complete at ``path``, or the previous
    file kept."""
    try:
        return _write_rows(rows, Path(path), fmt, before_replace)
    except OSError as exc:
        from .outputs import write_error
        raise write_error(str(path), exc) from None


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
    from .outputs import CSV_LINE_END, atomic_write
    suffix = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "tsv": ".tsv", "parquet": ".parquet"}.get(
        fmt or "", path.suffix.lower())
    if suffix in (".jsonl", ".ndjson"):
        with atomic_write(path, errors="backslashreplace", before_replace=before_replace) as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    elif suffix == ".json":
        with atomic_write(path, errors="backslashreplace", before_replace=before_replace) as fh:
            fh.write("[")
            for i, r in enumerate(rows):
                fh.write(("\n" if not i else ",\n") + json.dumps(r, ensure_ascii=False, default=str))
            fh.write("\n]\n")
    elif suffix in (".csv", ".tsv"):
        columns = list(dict.fromkeys(k for r in rows for k in r))
        with atomic_write(path, errors="backslashreplace", newline="", before_replace=before_replace) as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, lineterminator=CSV_LINE_END,
                                    delimiter="\t" if suffix == ".tsv" else ",")
            _refuse_nul(columns, path, "a column name")
            writer.writeheader()
            for i, r in enumerate(rows):
                # (json.dumps escapes a NUL inside a list or object; a plain text value keeps it)
                _refuse_nul(r.values(), path, f"written record {i}")
                writer.writerow({k: (json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v)
                                 for k, v in r.items()})
    elif suffix in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq
        columns = list(dict.fromkeys(k for r in rows for k in r))
        arrays, notices = {}, []
        for name in columns:
            values = [r.get(name) for r in rows]
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
                # Parquet needs one type per column; a column mixing types is kept as JSON text.
                arrays[name] = pa.array([None if v is None else json.dumps(v, ensure_ascii=False, default=str)
                                         for v in values])
                notices.append(f"column {name!r} mixes types: written as JSON text")
        table = pa.table(arrays)
        with atomic_write(path, "wb", before_replace=before_replace) as fh:
            pq.write_table(table, fh)
        return notices
    else:
        raise AuditorError("usage", f"Cannot write {path.name}: unknown extension.",
                          "Use .jsonl, .json, .csv, .tsv or .parquet.")
    return []
