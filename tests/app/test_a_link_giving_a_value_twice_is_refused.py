"""A share link that gives one of the page's values more than once (?threshold=0.5&threshold=0.5,
or 0.5 and 0.7) is refused with a message naming the key and its values, as the CLI refuses a
curve threshold given twice (``--thresholds 0.5,0.5``). The page's own links give each value
once (``urlencode`` of a dict). Keys that are not the page's (a host's ``__sign``) keep their last
value, as before.

From the round-9 review (a repeated threshold): the page read the query through ``dict()``, which
kept the last value without a word, so ?threshold=0.5&threshold=0.7 audited at 0.7."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from urllib.parse import parse_qsl

import pytest
from playwright.sync_api import expect

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from browser_support import TIMEOUT, status  # noqa: E402
from ui import handlers  # noqa: E402

pytest_plugins = ["app_server", "browser_support"]

BASE = "http://space.example/"
LINK = "dataset=example:gsm8k&config=main&split=test&text=question"


@pytest.mark.parametrize("query,said", [
    ("threshold=0.5&threshold=0.5", "threshold twice ('0.5', '0.5')"),
    ("threshold=0.5&threshold=0.50", "threshold twice ('0.5', '0.50')"),
    ("threshold=0.5&threshold=0.7", "threshold twice ('0.5', '0.7')"),
    ("threshold=0.5&b_threshold=0.6&b_threshold=0.6&b_threshold=0.6", r"b\_threshold 3 times"),  # (Markdown-escaped)
])
def test_a_value_given_twice_is_refused_by_name(query, said):
    params = handlers.link_params(parse_qsl(f"{LINK}&{query}"))
    out = handlers.page_load(params, BASE)
    status = out["status"]["value"]
    assert "error" in out["status"]["elem_classes"]
    assert said in status and "each value once" in status, status
    assert out["state"] is None                       # nothing audited, no previous result left


def test_the_query_is_read_whole():
    params = handlers.link_params(parse_qsl(f"{LINK}&threshold=0.7&__sign=a&__sign=b"))
    assert params["threshold"] == "0.7" and params["dataset"] == "example:gsm8k"
    assert params["__sign"] == "b"                    # the host's key: its last value, as dict() kept


@pytest.mark.browser
def test_the_page_opened_from_such_a_link_says_so(page, app_url):
    """The page's own load event sees every pair of the address (not a dict of one each)."""
    page.goto(f"{app_url}/?{LINK}&threshold=0.5&threshold=0.7")
    expect(status(page)).to_contain_text("This link gives threshold twice ('0.5', '0.7')", timeout=TIMEOUT)
