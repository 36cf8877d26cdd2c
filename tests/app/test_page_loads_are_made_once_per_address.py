"""The page and its config are made once per address (ui/page_cache.py), and a kept answer is the
one Gradio gave for that address: never another visitor's root URL, never a failure or a cookie,
never a deep link's saved state; the number kept is bounded.

Issue 34, item 4: a page load cost 24-33 ms of the server's Python (Gradio's deep copy of its
261 KB config), a fifth of the GIL under 50 visitors; kept, 1.4-4 ms (BENCHMARKS.md)."""
from __future__ import annotations

import itertools
import json
import re
import urllib.request

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from ui.page_cache import PageCache

pytest_plugins = ["app_server"]

_unique = itertools.count()


def get(url: str, headers: dict | None = None) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=60) as answer:
        assert answer.status == 200
        return answer.read()


def root_of(config: bytes) -> str:
    return json.loads(config)["root"]


def test_a_kept_answer_is_gradios_own_for_that_address(app_url):
    """The first request for a fresh address is made by Gradio; the next is sent from the cache and must
    be the same bytes. Each address keeps its own root: a forwarded host, https, or the plain one."""
    for path in ("/config", "/"):
        host = f"visitor-{next(_unique)}.example"
        forwarded = {"X-Forwarded-Host": host}
        first = get(app_url + path, forwarded)
        assert get(app_url + path, forwarded) == first
        secure = {**forwarded, "X-Forwarded-Proto": "https"}
        over_https = get(app_url + path, secure)
        assert get(app_url + path, secure) == over_https != first
        plain = get(app_url + path)
        if path == "/config":
            assert root_of(first) == f"http://{host}"
            assert root_of(over_https) == f"https://{host}"
            assert root_of(plain) == app_url.rstrip("/")
        else:
            assert f"http://{host}".encode() in first and f"https://{host}".encode() in over_https
            assert host.encode() not in plain
            assert re.search(rb"window\.gradio_config", plain)


def test_a_shared_links_query_is_the_same_page(app_url):
    """A share link's own parameters (and a host's, such as a Space's per-visitor __sign) are read by
    the page in the browser: Gradio's answer is the page at /, so one kept answer serves them all."""
    page = get(app_url + "/")
    for link in (f"/?dataset=openai/gsm8k&text=question&n={next(_unique)}", f"/?__sign=visitor{next(_unique)}"):
        assert get(app_url + link) == page


def counting_app(max_pages: int = 64):
    """A stand-in for Gradio's app with the cache in its middleware, as app.py serves it; answers by
    path and counts the calls that reached it."""
    calls = []

    def answer(request):
        calls.append((request.url.path, request.headers.get("x-forwarded-host")))
        host = request.headers.get("x-forwarded-host")
        if request.url.path == "/config" and host == "failing":
            return PlainTextResponse("no", status_code=500)
        if host == "cookie":
            response = Response(b"page")
            response.set_cookie("session", str(len(calls)))
            return response
        return Response(f"{request.url.path} {request.headers.get('x-forwarded-host')} {len(calls)}".encode())

    app = Starlette(routes=[Route(p, answer, methods=["GET", "POST"]) for p in ("/", "/config", "/other")],
                    middleware=[Middleware(PageCache, max_pages=max_pages)])
    return app, calls


def test_only_whole_successes_of_the_page_and_config_are_kept():
    app, calls = counting_app()
    client = TestClient(app)
    assert client.get("/").content == client.get("/").content == b"/ None 1"
    assert client.get("/", headers={"X-Forwarded-Host": "a"}).content == b"/ a 2"
    assert client.get("/config").content == client.get("/config").content == b"/config None 3"
    assert len(calls) == 3
    for path, host in (("/other", None), ("/config", "failing"), ("/", "cookie"), ("/?deep_link=abc", None)):
        for _ in range(2):
            client.get(path, headers={"X-Forwarded-Host": host} if host else {})
    client.post("/")
    client.post("/")
    assert len(calls) == 3 + 2 * 4 + 2            # each of those went to the app both times


def test_nothing_is_kept_behind_a_login():
    app, calls = counting_app()
    app.auth = {"visitor": "password"}             # as Gradio's App holds launch(auth=...)
    client = TestClient(app)
    assert client.get("/").content == b"/ None 1" and client.get("/").content == b"/ None 2"


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    app, calls = counting_app(max_pages=3)
    client = TestClient(app)
    for n in range(3):
        client.get(f"/?page=p{n}")
    client.get("/?page=p0")                       # used again: now the most recent
    client.get("/?page=p3")                       # drops p1
    made = len(calls)
    assert made == 4
    client.get("/?page=p0&dataset=x")             # a parameter Gradio does not read: the same page
    client.get("/?page=p2")
    client.get("/?page=p3")
    assert len(calls) == made
    client.get("/?page=p1")
    assert len(calls) == made + 1


def test_a_request_that_is_not_http_passes_through():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    call = PageCache(app)({"type": "lifespan"}, None, None)
    try:                     # driven by hand: a browser test before may hold this thread's event loop
        call.send(None)
    except StopIteration:
        pass
    assert seen == ["lifespan"]
