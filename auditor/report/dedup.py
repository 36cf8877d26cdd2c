"""A deduplication's reports: ``summary`` (summary.json's figures), ``manifest`` (the JSON beside the
deduplicated file: every dropped row and why) and ``review`` (the review marks file that
``dedup.load_review`` reads back)."""
from __future__ import annotations

import json

SUMMARY_DROPPED = 100        # dropped rows listed in summary.json (the manifest lists every one)
MANIFEST_KIND = "auditor-dedup-manifest"
REVIEW_KIND = "auditor-review"
REVIEW_VERSION = 1


def summary(result) -> dict:
    reasons: dict[str, int] = {}
    for d in result.dropped:
        reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
    return {"kind": "dedup", "source": result.source, "fingerprint": result.fingerprint,
            "threshold": result.threshold, "keep": result.keep, "records": result.records,
            "clusters": result.clusters, "records_in_clusters": result.records_in_clusters,
            "kept": len(result.kept_rows), "dropped": len(result.dropped), "by_reason": reasons,
            "not_duplicates": result.not_duplicates,
            **({"kept_apart": result.kept_apart} if result.kept_apart else {}),
            **({"splits": result.splits} if result.splits else {}),
            "exact": result.exact, "notices": list(result.notices),
            "dropped_rows": [dict(d) for d in result.dropped[:SUMMARY_DROPPED]],
            "dropped_rows_listed": min(len(result.dropped), SUMMARY_DROPPED)}


def manifest(dataset: str, fingerprint: str, result, rows: list) -> str:
    """The JSON manifest of a deduplicated file (``rows``: one dict per dropped row)."""
    doc = {"kind": MANIFEST_KIND, "version": 1, "dataset": dataset,
           "fingerprint": fingerprint, "threshold": result.threshold, "keep": result.keep,
           "records": result.records, "kept": len(result.kept_rows), "dropped": len(rows),
           "not_duplicates": result.not_duplicates, "exact": result.exact,
           "notices": list(result.notices),
           "note": "jaccard is between the dropped row and the kept row; a cluster is a connected component, "
                   "so members may be joined through other members and score below the threshold directly.",
           "dropped_rows": rows}
    return json.dumps(doc, ensure_ascii=False, indent=1, default=str) + "\n"


def review(dataset: str, fingerprint: str, threshold: float, marks: list, keep_apart: list = (),
           splits: list = ()) -> str:
    """The review decisions as a small JSON document (``dedup.load_review_file`` reads it back): pairs
    marked not duplicates, and (additive keys, only when there are any) rows kept apart and clusters
    split as ``[row, threshold]``."""
    doc = {"kind": REVIEW_KIND, "version": REVIEW_VERSION, "dataset": dataset,
           "fingerprint": fingerprint, "threshold": threshold, "not_duplicates": marks}
    if keep_apart:
        doc["keep_apart"] = list(keep_apart)
    if splits:
        doc["splits"] = list(splits)
    return json.dumps(doc, ensure_ascii=False) + "\n"
