"""The loaded-rows type every source returns (``Table``) and the split choice every loader
shares. Its own module so ``sources`` (local files, examples) and ``hub`` (Hugging Face) both
import it without importing each other."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import AuditorError


@dataclass(frozen=True)
class Table:
    """Rows as loaded, plus where they came from. Rows are plain dicts."""

    rows: list = field(repr=False)
    source: str
    config: str | None = None
    split: str | None = None
    files: tuple = ()              # display names only (never a server path)
    row_cap: int | None = None     # the cap that applied, if any
    truncated: bool = False        # True when the source had more rows than the cap
    splits: tuple = ()             # splits the source offers
    configs: tuple = ()            # configs the source offers (hub sets, examples)
    notices: tuple = ()            # things the report must say (defaults chosen, files skipped)
    revision: str | None = None    # a Hub dataset's commit read (None for files and examples)

    @property
    def columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.rows[:1000]:
            seen.update(dict.fromkeys(row))
        return list(seen)


# An evaluation side without a test split: its held-out split by one of these names, before train.
EVALUATION_FALLBACKS = ("validation", "valid", "dev", "val")


def choose_split(split, available: list[str], what: str, default: str = "train") -> tuple[str, str | None]:
    """The split to read; a default (``default`` when there is one, else train, else the first:
    a benchmark's default is its test split, or without one its validation split) is announced so
    a report never hides it. (Spider and many Hub sets hold train and validation only: falling back
    to train made leak compare train with itself, every record a "leak".)"""
    if split is None:
        preferred = (default, *EVALUATION_FALLBACKS) if default == "test" else (default,)
        chosen = next((s for s in (*preferred, "train") if s in available), available[0])
        note = (f"split not given: using '{chosen}' (available: {', '.join(available)})"
                if len(available) > 1 else None)
        return chosen, note
    if split not in available:
        raise AuditorError("bad_split", f"{what} has no split {split!r}.",
                           f"Available splits: {', '.join(available)}.")
    return split, None
