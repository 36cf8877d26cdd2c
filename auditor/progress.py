"""Progress and timing of a run's stages, in one place.

A command declares its stages once, as (name, label, share of the run); ``Progress`` turns
them into the fractions its caller's ``progress(fraction, stage)`` callback receives, and
times each stage:

    run = Progress(progress, (("load", "loading", 0.4), ("search", "searching", 0.6)))
    with run.stage("load"):
        ...
    with run.stage("search"):
        find_pairs(..., progress=run.within)      # a step's own 0..1 maps into its share
    run.done()
    run.timings                                   # {"load": seconds, "search": seconds}
"""
from __future__ import annotations

import time
from contextlib import contextmanager

from .errors import AuditorError


def _silent(fraction: float, stage: str) -> None:
    return None


class Progress:
    def __init__(self, callback, stages: tuple):
        if callback is not None and not callable(callback):
            raise AuditorError("usage", f"progress must be a function progress(fraction, stage), got "
                               f"{type(callback).__name__}.", "Leave it out for no progress reports.")
        self.callback = callback or _silent
        self.timings: dict[str, float] = {}
        self._span: dict[str, tuple[float, float, str]] = {}
        start = 0.0
        for name, label, share in stages:
            self._span[name] = (start, share, label)
            start += share
        self._current = next(iter(self._span), None)

    @contextmanager
    def stage(self, name: str, label: str | None = None, at: float = 0.0):
        """Report the stage (``at``: how far into its share it starts), run the block, time it.
        A stage entered again (one per input, say) adds to its time."""
        self._current = name
        self.at(at, label)
        clock = time.perf_counter()
        try:
            yield self
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - clock, 4)

    def at(self, fraction: float, label: str | None = None) -> None:
        """``fraction`` (0..1) of the current stage is done."""
        start, share, default = self._span[self._current]
        self.callback(start + share * fraction, label or default)

    def within(self, fraction: float, label: str) -> None:
        """A callback for a step's own progress, in the current stage's share."""
        self.at(fraction, label)

    def done(self) -> None:
        self.callback(1.0, "done")
