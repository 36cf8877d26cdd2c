"""A visitor's session made without describing every component up front.

Gradio makes a session (``SessionState``) on a visitor's first event, on the server's event loop,
and describes each of the page's 192 components for it (``config_for_block``): 12 ms a session on
a quiet machine, all of it holding the loop. Those descriptions are read only when a deep link is
saved (the whole set) or an event updates a component (its own), so here each is made when first
read: the same dict, the same values, in the same order, made later or never. Under
bench/app_load.py's 50 visitors the sessions held the GIL for 3.7 of 31 s (BENCHMARKS.md).

``make_sessions_lazy`` patches Gradio's ``SessionState.__init__`` (Gradio is pinned; a test compares a
lazy session with Gradio's own, key by key and in order).
"""
from __future__ import annotations

import os
from copy import copy


class ComponentConfigs(dict):
    """A session's ``config_values``: a key's description made when that key is read (``[key]``,
    ``get``), every pending one, in the page's order, before anything reads them all."""

    def __init__(self, state, keys: list):
        super().__init__()
        self._state, self._order, self._pending = state, keys, set(keys)

    def _make(self, key) -> None:
        configs = self._state.blocks_config
        dict.__setitem__(self, key, configs.config_for_block(key, [], configs.blocks[key]))
        self._pending.discard(key)

    def _whole(self) -> None:
        if not self._pending:
            return
        for key in self._order:
            if key in self._pending:
                self._make(key)
        # Gradio's dict had every key from the start, so a key set since keeps its first place.
        first = {key: dict.__getitem__(self, key) for key in self._order}
        later = [(key, value) for key, value in dict.items(self) if key not in first]
        dict.clear(self)
        dict.update(self, first)
        dict.update(self, later)

    def __getitem__(self, key):
        if key in self._pending:
            self._make(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __contains__(self, key) -> bool:
        return key in self._pending or dict.__contains__(self, key)

    def __setitem__(self, key, value) -> None:
        self._pending.discard(key)        # its place among the others is kept by ``_whole``
        dict.__setitem__(self, key, value)

    def __delitem__(self, key) -> None:
        self._whole()
        dict.__delitem__(self, key)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._pending)


def _reads_whole(name: str):
    method = getattr(dict, name)

    def read(self, *args, **kwargs):
        self._whole()
        return method(self, *args, **kwargs)
    read.__name__ = name
    return read


for _name in ("__iter__", "__reversed__", "__eq__", "__ne__", "__repr__", "__or__", "__ior__", "keys", "values",
              "items", "copy", "pop", "popitem", "setdefault", "update", "clear"):
    setattr(ComponentConfigs, _name, _reads_whole(_name))


def _session_init(self, blocks) -> None:
    """Gradio 6.31's ``SessionState.__init__`` with its ``config_values`` made lazily."""
    self.blocks_config = copy(blocks.default_config)
    self.config_values = ComponentConfigs(self, [k for k in self.blocks_config.blocks if k in blocks.blocks])
    self.state_data = {}
    self._state_ttl = {}
    self.is_closed = False
    self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


def make_sessions_lazy() -> None:
    """New sessions describe their components when read (module docstring); twice is once."""
    from gradio.state_holder import SessionState
    global GRADIOS_INIT
    if SessionState.__init__ is not _session_init:
        GRADIOS_INIT = SessionState.__init__
        SessionState.__init__ = _session_init


GRADIOS_INIT = None    # Gradio's own, once replaced
