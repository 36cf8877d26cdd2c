"""Dataset Integrity Auditor: the Gradio Space (its entry point).

    python app.py            # serves on 127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT;
                             # a Space sets 0.0.0.0 and 7860)

The page lives in the ``ui`` package (layout, handlers, views, state, api, jobs, uploads); this file
builds it, pre-audits the opening dataset and serves it. docs/space.md says how to host it.
"""
from __future__ import annotations

import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"   # before gradio is imported
# Gradio's queue rebuilds a pandas summary of its last 10,000 events after every event (10-16 ms),
# for a monitoring page the Space does not enable: 9% of the server's GIL under 50 visitors. Here it
# is rebuilt once in a million events.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")
# Every hub call passes the visitor's token or token=False (``user_token``); this second guard makes
# huggingface_hub itself refuse to fall back on the server's HF_TOKEN or saved login (read at import).
os.environ["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
# The Space reads at most 384 MiB per dataset unless told otherwise: a job's child peaks at up to 9x
# the bytes it reads plus a fixed base (docs/reliability.md), and the server holds the result it sends
# back, pickled and then rebuilt (up to 4.1x the bytes: 8-word records), so two job slots (5.3 GB
# each), the 2 GiB result cache and the server (~0.5 GB) stay within the free tier's 16 GB; the CLI
# keeps its 1 GiB.
os.environ.setdefault("AUDITOR_MAX_BYTES", str(384 * 1024 ** 2))

import faulthandler  # noqa: E402
import logging  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

from starlette.middleware import Middleware  # noqa: E402

from auditor import AuditorError, semantic  # noqa: E402
from auditor.env import env_int  # noqa: E402
from auditor.io.budget import max_bytes  # noqa: E402
from ui.api import audit_json, dedup_file, leak_json  # noqa: E402,F401  (the named endpoints)
from ui.layout import CSS, HEAD, build, theme  # noqa: E402
from ui.state import (  # noqa: E402,F401
    DEFAULTS,
    ROW_CAP,
    ResultCache,
    make_request,
    resolve_source,
    result_bytes,
    run_audit,
)
from ui.page_cache import PageCache  # noqa: E402
from ui.schemas import keep_schemas  # noqa: E402
from ui.sessions import make_sessions_lazy  # noqa: E402
from ui.uploads import keep_gradio_cache  # noqa: E402

log = logging.getLogger("auditor.app")
demo = build()
# Threads: cheap events run at once (each event up to CHEAP_EVENTS at a time); expensive ones wait
# for a slot in ui.jobs (at most AUDITOR_MAX_WAITING waiting), never for a thread.
CHEAP_EVENTS = 16
MAX_THREADS = 128

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)   # no per-request logs (URLs of other services, inputs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # a clean exit, so the atexit clean-up runs
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 PID`: every thread's stack, to the log
    try:  # audit the opening dataset before serving, so the first page shows it at once
        run_audit(make_request(DEFAULTS["dataset"], DEFAULTS["config"], DEFAULTS["split"], DEFAULTS["text"],
                               DEFAULTS["answer"], DEFAULTS["group"], DEFAULTS["labels"], DEFAULTS["threshold"], None))
    except AuditorError as exc:
        log.warning("could not pre-audit the opening dataset: %s", exc.message)
    if semantic.available():   # the Paraphrases view's static vectors, distilled in the background (~35 CPU s, once)
        semantic.warm_up()
    keep_gradio_cache()
    keep_schemas()
    make_sessions_lazy()
    demo.queue(default_concurrency_limit=CHEAP_EVENTS, max_size=None)
    # An upload larger than the reading budget could not be audited: Gradio refuses it while it
    # arrives (a 2 GiB upload was accepted and kept in its cache, outside every bound).
    demo.launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=env_int("GRADIO_SERVER_PORT", 7860, 1, 65535), max_threads=MAX_THREADS,
                max_file_size=max_bytes(), theme=theme(), css=CSS, head=HEAD, ssr_mode=False, show_error=False,
                # The page and its config made once per address (ui/page_cache.py), not per visitor.
                app_kwargs={"middleware": [Middleware(PageCache)]})
