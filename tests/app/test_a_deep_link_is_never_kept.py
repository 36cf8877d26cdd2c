"""A deep link (``deep_link=``: a saved state Gradio reads from disk) goes to Gradio each time, however its
name is written in the query (ui/page_cache.py).

From the session-47 review: the cache looked for the bytes ``deep_link`` in the raw query, so
``?deep%5Flink=...`` (the same parameter to Gradio, which decodes names) was kept and sent again."""
from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from ui.page_cache import PageCache


def test_a_deep_link_goes_to_gradio_each_time_however_its_name_is_written():
    read = []

    def page(request):
        read.append(request.query_params.get("deep_link"))
        return Response(f"state {len(read)}".encode())

    client = TestClient(PageCache(Starlette(routes=[Route("/", page)])))
    for query in ("deep_link=abc", "deep%5Flink=abc", "x=1&deep%5flin%6B=abc"):
        first, second = client.get(f"/?{query}").content, client.get(f"/?{query}").content
        assert first != second
    assert read == ["abc"] * 6
    client.get("/?x=1")
    client.get("/?x=1")
    assert len(read) == 7          # an address without one is kept
