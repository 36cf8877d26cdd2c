"""The page and its config, made once per address the visitor reached the app by.

Gradio answers every page load (``/``) and every client's ``/config`` by deep-copying its whole
page config (261 KB: 192 components, their API schemas and the events) and rewriting every file
URL in it for the request's root URL: about 30 ms of the server's Python each, holding the GIL.
Under bench/app_load.py's 50 visitors that was a fifth of all the time the server held the GIL,
and cheap requests (a cached audit) waited behind it. The answer depends only on the path, the query
parameters Gradio reads (``page``, ``all_endpoints``; not a share link's own, which the page reads
in the browser), and the request parts Gradio derives the root URL from
(``route_utils.get_root_url``: the URL's scheme and host, ``X-Forwarded-Host``,
``X-Forwarded-Proto``, ``X-Gradio-Server`` and the ASGI root path), and the config does not change
once the app is served. So the first answer
for each such key is kept and sent again as it was, on the event loop, without Gradio's work.

Only whole 200 answers without cookies are kept, and none when the app asks for a login (the page
then names its visitor); a deep link (``deep_link=``: a saved state Gradio
reads from disk) and any method but GET go to Gradio each time. At most ``MAX_PAGES`` answers are
kept (the least recently used go first), so addresses a client makes up cost at most that.
"""
from __future__ import annotations

from collections import OrderedDict
from urllib.parse import parse_qsl

MAX_PAGES = 64                 # answers kept: about 280 KB each, 18 MB in all
CACHED_PATHS = ("/", "/config", "/config/")
ROOT_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server")
GRADIO_PARAMETERS = ("page", "all_endpoints")     # the query parameters its / and /config read (and deep_link)


class PageCache:
    """ASGI middleware: ``/`` and ``/config`` answered from the first answer for their key (above)."""

    def __init__(self, app, max_pages: int = MAX_PAGES):
        self.app, self.max_pages = app, max_pages
        self.pages: OrderedDict[tuple, list[dict]] = OrderedDict()   # the answer's messages
        self.hits = self.misses = 0

    async def __call__(self, scope, receive, send):
        key = _key(scope)
        if key is None:
            return await self.app(scope, receive, send)
        kept = self.pages.get(key)
        if kept is not None:
            self.pages.move_to_end(key)
            self.hits += 1
            for message in _fresh(kept):
                await send(message)
            return
        self.misses += 1
        sent: list[dict] = []

        async def keep(message):
            sent.append(_fresh([message])[0])   # as Gradio made it, before the layers above edit it
            await send(message)

        await self.app(scope, receive, keep)
        answer = _whole_answer(sent)
        if answer is not None:
            self.pages[key] = answer
            while len(self.pages) > self.max_pages:
                self.pages.popitem(last=False)


def _key(scope) -> tuple | None:
    """What Gradio's answer depends on, or None for a request that is not kept."""
    if scope["type"] != "http" or scope["method"] != "GET":
        return None
    app = scope.get("app")
    if getattr(app, "auth", None) or getattr(app, "auth_dependency", None):
        return None             # behind a login the page names its visitor: never kept
    root_path = scope.get("root_path", "")
    path = scope["path"][len(root_path):] if root_path and scope["path"].startswith(root_path) else scope["path"]
    if path not in CACHED_PATHS:
        return None
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))     # as Gradio reads it: names decoded
    if any(name == "deep_link" and value for name, value in query):
        return None
    # Only the parameters Gradio's answer reads: a share link's own (dataset, roles, threshold) and a
    # host's (a Space's per-visitor __sign) are read by the page in the browser, and must not make
    # each visitor's page a new one.
    read = tuple((name, value) for name, value in query if name in GRADIO_PARAMETERS)
    headers = tuple(value for name in ROOT_HEADERS
                    for value in [b",".join(v for n, v in scope["headers"] if n == name)])
    return scope["path"], read, scope.get("scheme"), root_path, tuple(scope.get("server") or ()), headers


def _fresh(messages) -> list[dict]:
    """Copies of ASGI messages: Gradio's CORS and compression layers, above this one, edit the messages
    they are handed in place (headers added, the body compressed), and a kept one must not keep them."""
    return [{**m, "headers": list(m["headers"])} if "headers" in m else dict(m) for m in messages]


def _whole_answer(sent: list[dict]) -> list[dict] | None:
    """The answer's messages if it is a complete 200 without cookies, else None."""
    if not sent or sent[0].get("type") != "http.response.start" or sent[0].get("status") != 200:
        return None
    if any(name.lower() == b"set-cookie" for name, _ in sent[0].get("headers", ())):
        return None
    bodies = sent[1:]
    if not bodies or any(m.get("type") != "http.response.body" for m in bodies) or bodies[-1].get("more_body"):
        return None
    return sent
