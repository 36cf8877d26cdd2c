"""Dataset Integrity Auditor: the Gradio Space (its entry point).

    python app.py            # serves on 127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT)

The page lives in the ``ui`` package (layout, handlers, views, state, api); this file builds it,
pre-audits the opening dataset and serves it.
"""
from __future__ import annotations

import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"   # before gradio is imported
# Every hub call passes the visitor's token or token=False (``user_token``); this second guard makes
# huggingface_hub itself refuse to fall back on the server's HF_TOKEN or saved login (read at import).
os.environ["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"

import logging  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

import gradio as gr  # noqa: E402

from auditor import AuditorError  # noqa: E402
from auditor.env import env_int  # noqa: E402
from ui.api import audit_json, dedup_file, leak_json  # noqa: E402,F401  (the named endpoints)
from ui.layout import CSS, HEAD, build  # noqa: E402
from ui.state import (  # noqa: E402,F401
    DEFAULTS,
    ROW_CAP,
    ResultCache,
    make_request,
    resolve_source,
    result_bytes,
    run_audit,
)

log = logging.getLogger("auditor.app")
demo = build()

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)   # no per-request logs (URLs of other services, inputs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # a clean exit, so the atexit clean-up runs
    try:  # audit the opening dataset before serving, so the first page shows it at once
        run_audit(make_request(DEFAULTS["dataset"], DEFAULTS["config"], DEFAULTS["split"], DEFAULTS["text"],
                               DEFAULTS["answer"], DEFAULTS["group"], DEFAULTS["labels"], DEFAULTS["threshold"], None))
    except AuditorError as exc:
        log.warning("could not pre-audit the opening dataset: %s", exc.message)
    demo.queue(default_concurrency_limit=4, max_size=64)
    demo.launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=env_int("GRADIO_SERVER_PORT", 7860, 1, 65535),
                theme=gr.themes.Soft(primary_hue="indigo"), css=CSS, head=HEAD, ssr_mode=False, show_error=False)
