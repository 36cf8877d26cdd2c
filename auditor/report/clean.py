"""A clean run's report: ``summary``, the JSON written beside the clean copy (every dropped row
and why)."""
from __future__ import annotations


def summary(result) -> dict:
    # Counted by kind: a near duplicate's reason carries its Jaccard ("near_duplicate (Jaccard
    # 0.7778)"), which would otherwise split one reason into a count per score.
    reasons: dict[str, int] = {}
    for d in result.dropped:
        kind = d["reason"].split(" (", 1)[0]
        reasons[kind] = reasons.get(kind, 0) + 1
    reasons = dict(sorted(reasons.items()))
    return {"kind": "clean", "source": result.source, "records": result.records, "kept": len(result.kept),
            "dropped": len(result.dropped), "by_reason": reasons, "notices": list(result.notices),
            "dropped_rows": result.dropped}
