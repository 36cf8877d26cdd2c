"""A decontaminated copy's reports: ``summary`` (its figures in summary.json), ``markdown`` (its
section of REPORT.md) and ``manifest`` (the JSON beside the copy: every dropped row), for both
engines."""
from __future__ import annotations

import json
import os

from .common import md_code, md_note

MANIFEST_KIND = "auditor-decontamination-manifest"


def summary(copy) -> dict:
    """The copy's figures (the manifest lists every dropped row)."""
    notices = list(copy.notices)
    return {"out": os.path.basename(copy.out.rstrip(os.sep)), "manifest": os.path.basename(copy.manifest),
            "records": copy.records, "kept": copy.kept, "dropped": int(copy.dropped_rows.size),
            **({"notices": notices} if notices else {})}


def markdown(copy) -> str:
    scan = copy.contamination
    notices = copy.notices
    text = (f"## Decontaminated copy\n\n{md_code(os.path.basename(copy.out.rstrip(os.sep)))} holds {copy.kept:,} of "
            f"the corpus's {copy.records:,} records, "
            + ("unchanged and in order" if not notices else "in order, as they were read (the notes below say how)")
            + f": the {copy.dropped_rows.size:,} records "
            f"sharing a {scan.n}-gram with any benchmark item were left out (their rows: "
            f"{md_code(os.path.basename(copy.manifest))}). Paraphrases stay in: see the caveat above.\n")
    text += "".join(f"\n> Note: {md_note(notice)}\n" for notice in notices)
    # Items shorter than n are never looked for: records holding them whole stay in the copy.
    if scan.too_short:
        text += (f"\n{len(scan.too_short):,} benchmark item(s) shorter than {scan.n} tokens were not looked for: "
                 "records holding them stay in the copy (a smaller --ngram checks them).\n")
    return text


def manifest(result, dropped_rows, *, notices=None, files=None) -> str:
    """The manifest of a copy of the corpus scanned in ``result`` (a ContaminationResult) less
    ``dropped_rows``; the Ray copy lists each shard's copy in ``files``, the local one its ``notices``."""
    dropped = int(dropped_rows.size)
    doc = {"kind": MANIFEST_KIND, "version": 1, "corpus": result.corpus, "benchmark": result.benchmark,
           "ngram": result.n, "records": result.corpus_records, "kept": result.corpus_records - dropped,
           "dropped": dropped}
    if files is None:
        doc.update({"notices": list(notices or ()),
                    "note": "dropped_rows are the 0-based corpus rows sharing at least one n-gram with a benchmark "
                            "item; the contamination report lists, per item, the rows that hold it.",
                    "dropped_rows": dropped_rows.tolist()})
    else:
        doc.update({"note": "dropped_rows are 0-based corpus rows (shards in order) sharing at least one n-gram "
                            "with a benchmark item; files lists each shard's copy and its dropped rows within the "
                            "shard.",
                    "dropped_rows": dropped_rows.tolist(), "files": files})
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
