"""A clean run's report: ``summary``, the JSON written beside the clean copy (every dropped row
and why)."""
from __future__ import annotations


def summary(result) -> dict:
    reasons: dict[str, int] = {}
    for d in result.dropped:
        reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
    return {"kind": "clean", "source": result.source, "records": result.records, "kept": len(result.kept),
            "dropped": len(result.dropped), "by_reason": reasons, "dropped_rows": result.dropped}
