"""Group concentration: how much of the data the biggest sources (databases, subjects...) hold."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

TOP = 10


@dataclass(frozen=True)
class Concentration:
    field: str
    groups: int
    mean_per_group: float
    largest: dict        # {value, records, share}
    top: list            # [{value, records, share}] biggest first
    hhi: float           # Herfindahl index: sum of squared shares (1/groups when even, 1 when one group)
    records_without_group: int


def concentration(field: str, values: list) -> Concentration | None:
    counts = Counter(v for v in values if v is not None and v.strip())
    total = sum(counts.values())
    if not total:
        return None
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    entry = (lambda value, records: {"value": value, "records": records, "share": round(records / total, 4)})
    return Concentration(
        field=field, groups=len(counts), mean_per_group=round(total / len(counts), 4),
        largest=entry(*ranked[0]), top=[entry(v, c) for v, c in ranked[:TOP]],
        hhi=round(sum((c / total) ** 2 for c in counts.values()), 6),
        records_without_group=len(values) - total)
