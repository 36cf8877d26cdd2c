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
import threading
from copy import copy


NOT_MADE = object()     # a description not made yet: its key holds its place in the page's order


class ComponentConfigs(dict):
    """A session's ``config_values``: every key from the start, in the page's order, as in Gradio's
    dict; a key's description made when that key's value is first read (``[key]``, ``get``, and every
    pending one before anything reads the values whole). Made under a lock: Gradio reads the whole set
    in a worker thread (``/gradio_api/deep_link``) while events on the loop read and set single keys."""

    def __init__(self, configs, keys: list):
        super().__init__(dict.fromkeys(keys, NOT_MADE))
        self._configs, self._lock = configs, threading.Lock()

    def _made(self, key):
        with self._lock:
            value = dict.__getitem__(self, key)
            if value is NOT_MADE:
                value = self._configs.config_for_block(key, [], self._configs.blocks[key])
                dict.__setitem__(self, key, value)          # in its place: the key is already there
            return value

    def _whole(self) -> None:
        for key, value in list(dict.items(self)):
            if value is NOT_MADE:
                self._made(key)

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        return self._made(key) if value is NOT_MADE else value

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __setitem__(self, key, value) -> None:
        with self._lock:                # never overwritten by a description made from the block before
            dict.__setitem__(self, key, value)

    def __iter__(self):                 # (a dict() or ** of this one then reads each value through [key])
        return dict.__iter__(self)


def _reads_whole(name: str):
    method = getattr(dict, name)

    def read(self, *args, **kwargs):
        self._whole()
        return method(self, *args, **kwargs)
    read.__name__ = name
    return read


for _name in ("__eq__", "__ne__", "__repr__", "__or__", "__ror__", "values", "items", "copy", "pop", "popitem",
              "setdefault"):
    setattr(ComponentConfigs, _name, _reads_whole(_name))


def _session_init(self, blocks) -> None:
    """Gradio 6.31's ``SessionState.__init__`` with its ``config_values`` made lazily."""
    self.blocks_config = copy(blocks.default_config)
    self.config_values = ComponentConfigs(self.blocks_config, [k for k in self.blocks_config.blocks
                                                               if k in blocks.blocks])
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
