"""A lazy session (ui/sessions.py) read whole in one thread while another reads one of its keys: the key is
there each time, as in Gradio's own dict. Gradio reads the whole set in a worker thread (its
``/gradio_api/deep_link`` route) while the event loop reads and sets single keys for events.

From the session-47 review: reading the set whole put the descriptions back in the page's order by
emptying the dict and filling it again, and a key read between the two was missing (KeyError; a key set
there was lost): 171 KeyErrors in 300 sessions with a 1 us thread switch interval."""
from __future__ import annotations

import os
import sys
import threading

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gradio.state_holder import SessionState  # noqa: E402

from ui import layout, sessions  # noqa: E402
from ui.schemas import keep_schemas  # noqa: E402


def test_a_key_read_while_another_thread_reads_the_set_whole_is_always_there():
    keep_schemas()
    demo = layout.build()
    sessions.make_sessions_lazy()
    own = SessionState.__new__(SessionState)
    sessions.GRADIOS_INIT(own, demo)
    last = list(own.config_values)[-1]
    missing = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(100):
            lazy = SessionState(demo)
            lazy.config_values[last]                 # made before the others, out of the page's order
            done = threading.Event()

            def read_one(configs=lazy.config_values, key=last, done=done):
                while not done.is_set():
                    try:
                        configs[key]
                    except KeyError:
                        missing.append(key)

            reader = threading.Thread(target=read_one)
            reader.start()
            whole = list(lazy.config_values.items())     # as the deep-link route reads it
            done.set()
            reader.join()
            assert [k for k, _ in whole] == list(own.config_values)
    finally:
        sys.setswitchinterval(interval)
    assert missing == []
    assert dict(lazy.config_values) == {**lazy.config_values} == own.config_values
