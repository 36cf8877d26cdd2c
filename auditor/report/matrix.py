"""A matrix run's report: ``summary`` (summary.json) and ``markdown`` (REPORT.md) of a MatrixResult."""
from __future__ import annotations

from .common import SCHEMA_VERSION, md_cell, md_note


def summary(result) -> dict:
    return {"schema_version": SCHEMA_VERSION, "kind": "matrix",
            "groups": [{"name": g.name, "dataset": g.dataset, "split": g.split, "records": n,
                        **({"config": g.config} if g.config else {}),
                        # The field compared (named or guessed), and the records with no text in it.
                        **({"text": t[0], "text_guessed": t[1], "no_text": t[2]} if t else {})}
                       for g, n, t in zip(result.groups, result.records, result.texts or [()] * len(result.groups))],
            "split_matrix": result.split_matrix, "dataset_matrix": result.dataset_matrix,
            "near": None if result.near_split_matrix is None else
            {"threshold": result.threshold, "split_matrix": result.near_split_matrix,
             "dataset_matrix": result.near_dataset_matrix},
            "comparison": result.comparison,
            **({"notices": list(result.notices)} if result.notices else {})}


def markdown(result) -> str:
    lines = ["# Overlap matrices", "", "Cell [row][column]: records of the row that also occur in the column "
             "(exact text under the default normaliser). Diagonal: internal duplicates (split matrix) or "
             "records found in another split of the same dataset (dataset matrix).", ""]
    if result.texts:
        lines += ["Fields compared: " + "; ".join(
            f"{md_cell(g.name)} `{md_cell(field)}`{' (guessed)' if guessed else ''}"
            + (f", {no_text:,} of {n:,} records without text" if no_text else "")
            for g, n, (field, guessed, no_text) in zip(result.groups, result.records, result.texts))
            + ". Name the field with --text if a guess is wrong.", ""]
    lines += [line for notice in result.notices for line in (f"> Note: {md_note(notice)}", "")]
    for title, m in (("Split x split", result.split_matrix), ("Dataset x dataset", result.dataset_matrix),
                     ("Split x split, exact or near", result.near_split_matrix)):
        if m is None:
            continue
        cols = list(next(iter(m.values())))
        lines += [f"## {title}", "", "| | " + " | ".join(md_cell(c) for c in cols) + " |",
                  "|---" * (len(cols) + 1) + "|"]
        for row, cells in m.items():
            lines.append(f"| {md_cell(row)} | " + " | ".join(
                f"{c['count']:,} ({100 * c['fraction']:.1f}%)" for c in cells.values()) + " |")
        lines.append("")
    if result.comparison:
        keys = list(result.comparison[0])
        lines += ["## Comparison", "", "| " + " | ".join(keys) + " |", "|---" * len(keys) + "|"]
        for row in result.comparison:
            lines.append("| " + " | ".join(md_cell(row[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"
