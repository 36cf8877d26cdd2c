"""Clean splits: a copy of TEST without the records that leak into it from the
training side(s), optionally without internal duplicates, in the original rows and
columns; plus a report of every dropped row and why."""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from .errors import AuditorError
from .exact import normalized
from .leakage import leak, prepare_side


@dataclass(frozen=True)
class CleanResult:
    kept: list           # original rows of TEST
    dropped: list        # [{row, reason, against, matches}]
    source: str
    records: int

    def summary(self) -> dict:
        reasons: dict[str, int] = {}
        for d in self.dropped:
            reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
        return {"kind": "clean", "source": self.source, "records": self.records, "kept": len(self.kept),
                "dropped": len(self.dropped), "by_reason": reasons, "dropped_rows": self.dropped}


def clean(test, against: list, *, near: bool = False, dedup: bool = False, threshold: float = 0.7,
          config=None, split=None, text=None, answer=None, max_rows=None, token=None) -> CleanResult:
    import os
    from .shingles import check_threshold
    if isinstance(against, (str, os.PathLike)):
        against = [against]                # one training source, not a list of its characters
    threshold = check_threshold(threshold)
    if not against:
        raise AuditorError("usage", "Nothing to clean against.", "Give --against TRAIN (repeatable).")
    side = prepare_side(test, config, split, text, answer, None, max_rows, token)
    reasons: dict[int, dict] = {}
    for other in against:
        result = leak(other, side.table, text=text, answer=answer, threshold=threshold, max_rows=max_rows,
                      token=token)
        for b_row, m in result.matches.items():
            if b_row in reasons:
                continue
            if m.get("identical_text"):
                reasons[b_row] = {"row": b_row, "reason": "identical_text", "against": result.a.table.source,
                                  "matches": m["identical_text"]}
            elif near and m.get("near_duplicate"):
                reasons[b_row] = {"row": b_row, "reason": f"near_duplicate (Jaccard {m['jaccard']:.4f})",
                                  "against": result.a.table.source, "matches": m["near_duplicate"]}
    if dedup:
        first: dict[str, int] = {}
        for i, key in enumerate(normalized(side.fields.text, "default")):
            if key is None:
                continue
            if key in first and i not in reasons:
                reasons[i] = {"row": i, "reason": "internal_duplicate", "against": None, "matches": [first[key]]}
            first.setdefault(key, i)
    kept = [row for i, row in enumerate(side.table.rows) if i not in reasons]
    return CleanResult(kept=kept, dropped=[reasons[i] for i in sorted(reasons)], source=side.table.source,
                       records=len(side.table.rows))


def write_rows(rows: list, path: str | Path) -> list[str]:
    """Rows to .jsonl, .csv or .parquet, by the file's extension; returns notices. The file is
    written atomically (``outputs.atomic_write``): complete at ``path``, or the previous file kept."""
    try:
        return _write_rows(rows, Path(path))
    except OSError as exc:
        from .outputs import write_error
        raise write_error(str(path), exc) from None


def _write_rows(rows: list, path: Path) -> list[str]:
    from .outputs import atomic_write
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        with atomic_write(path, errors="backslashreplace") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    elif suffix == ".csv":
        columns = list(dict.fromkeys(k for r in rows for k in r))
        with atomic_write(path, errors="backslashreplace", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
            writer.writeheader()
            for r in rows:
                writer.writerow({k: (json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v)
                                 for k, v in r.items()})
    elif suffix in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq
        columns = list(dict.fromkeys(k for r in rows for k in r))
        arrays, notices = {}, []
        for name in columns:
            values = [r.get(name) for r in rows]
            try:
                arrays[name] = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                # Parquet needs one type per column; a column mixing types is kept as JSON text.
                arrays[name] = pa.array([None if v is None else json.dumps(v, ensure_ascii=False, default=str)
                                         for v in values])
                notices.append(f"column {name!r} mixes types: written as JSON text")
        table = pa.table(arrays)
        with atomic_write(path, "wb") as fh:
            pq.write_table(table, fh)
        return notices
    else:
        raise AuditorError("usage", f"Cannot write {path.name}: unknown extension.", "Use .jsonl, .csv or .parquet.")
    return []
