"""A visitor's session describes its components when they are read (ui/sessions.py): what Gradio
reads from it is what Gradio's own session gives, value for value and in order, after the same
events; only the making is later.

Issue 34, item 4: a new session held the server's event loop for 12 ms (192 components described),
3.7 of the 31 s the server held the GIL under 50 visitors (BENCHMARKS.md)."""
from __future__ import annotations

import json
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gradio.state_holder import SessionState  # noqa: E402

from ui import layout, sessions  # noqa: E402
from ui.schemas import keep_schemas  # noqa: E402


def sessions_of(demo):
    """(Gradio's own session, a lazy one) of the page."""
    sessions.make_sessions_lazy()
    sessions.make_sessions_lazy()                         # twice: still one layer
    own = SessionState.__new__(SessionState)
    sessions.GRADIOS_INIT(own, demo)
    return own, SessionState(demo)


def made(configs) -> int:
    """How many of a lazy session's descriptions were made."""
    return sum(value is not sessions.NOT_MADE for value in dict.values(configs))


def as_text(state) -> str:
    return json.dumps(list(state.components), sort_keys=True, default=str)


def test_a_new_session_reads_as_gradios_own():
    keep_schemas()
    demo = layout.build()
    own, lazy = sessions_of(demo)
    assert isinstance(lazy.config_values, sessions.ComponentConfigs)
    assert made(lazy.config_values) == 0                  # nothing made yet
    assert len(lazy.config_values) == len(own.config_values) == len(demo.blocks)
    assert vars(own).keys() == vars(lazy).keys()
    assert lazy.STATE_TTL_WHEN_CLOSED == own.STATE_TTL_WHEN_CLOSED
    assert list(lazy.config_values) == list(own.config_values)
    assert as_text(lazy) == as_text(own)


def test_after_the_same_updates_the_same_descriptions_in_the_same_order():
    keep_schemas()
    demo = layout.build()
    own, lazy = sessions_of(demo)
    keys = list(own.config_values)
    textbox = next(k for k in keys if type(demo.blocks[k]).__name__ == "Textbox")
    markdown = next(k for k in keys if type(demo.blocks[k]).__name__ == "Markdown")
    for state in (own, lazy):
        state._update_value_in_config(textbox, "openai/gsm8k")          # an event's input, as Gradio records it
        assert state.config_values[textbox]["props"]["value"] == "openai/gsm8k"
        state[markdown] = type(demo.blocks[markdown])(value="**new**")   # an event's update of a component
        assert markdown in state.config_values and state.get(markdown) is not None
    assert made(lazy.config_values) == 2                               # only the two read or set were made
    assert as_text(lazy) == as_text(own)
    assert list(lazy.config_values.items()) == list(own.config_values.items())
    assert lazy.config_values == own.config_values


def test_reading_one_description_makes_only_that_one():
    demo = layout.build()
    own, lazy = sessions_of(demo)
    key = list(own.config_values)[5]
    assert lazy.config_values[key] == own.config_values[key]
    assert lazy.config_values.get(key) == own.config_values[key] and lazy.config_values.get(-1) is None
    assert made(lazy.config_values) == 1 and -1 not in lazy.config_values
