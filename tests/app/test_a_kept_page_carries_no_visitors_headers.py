"""A page or config sent from the cache (ui/page_cache.py) carries only the headers this request earns: the
layers around the cache (Gradio's CORS and compression middleware) edit the messages they are handed in place,
so a kept message handed on as it is keeps each visitor's edits.

From the session-47 review: the kept response start was the very dict Gradio's CORS layer had edited, so a
request without an Origin got the first visitor's Access-Control-Allow-Origin, and every cached answer to a
request with one appended ", Origin" to the kept Vary header (it grew without bound: 3 requests, 3 Origins)."""
from __future__ import annotations

import itertools
import urllib.request

pytest_plugins = ["app_server"]

_unique = itertools.count()


def headers_of(url: str, headers: dict) -> dict:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as answer:
        assert answer.status == 200
        answer.read()
        return {name.lower(): answer.headers.get_all(name) for name in answer.headers.keys()}


def test_a_kept_answer_takes_no_cors_headers_from_an_earlier_request(app_url):
    for path in ("/config", "/"):
        address = {"X-Forwarded-Host": f"cors-{next(_unique)}.example"}
        origin = {**address, "Origin": "http://localhost:5173"}   # a local origin, allowed by Gradio's CORS
        answers = [headers_of(app_url + path, origin) for _ in range(3)]
        for got in answers:
            assert got["access-control-allow-origin"] == ["http://localhost:5173"]
            assert got["vary"] == ["Origin"], got["vary"]
        plain = headers_of(app_url + path, address)
        assert "access-control-allow-origin" not in plain and "vary" not in plain
