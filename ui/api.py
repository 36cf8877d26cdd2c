"""Named endpoints for scripts (gradio_client), with exactly these parameters in this order:

- ``audit_json(dataset, config, split, text, answer, group, threshold)``: summary.json of an audit;
- ``leak_json(a_dataset, a_config, a_split, a_file, b_dataset, b_config, b_split, b_file, text, answer,
  threshold)``: the leak summary, the same JSON as ``auditor leak --json -``;
- ``dedup_file(dataset, config, split, file, text, answer, threshold, keep)``: the deduplicated file
  (the input's format) and its manifest.

Blank strings (or None) stand for what is not given; an uploaded file replaces the dataset id.
Errors are raised as ``gr.Error`` with the library's message (escaped: it may quote the input).
"""
from __future__ import annotations

import html
import json

import gradio as gr

import auditor
from auditor import AuditorError
from auditor.dedup import dedup, input_format, write_dedup
from auditor.io.copies import local_stamps
from auditor.leakage import leak
from auditor.report import to_json

from . import state, workers
from .jobs import JOBS, visitor_of


def _raise(exc: AuditorError, what: str):
    message = exc.message + (f" {exc.hint}" if exc.hint else "")
    # gr.Error may be shown as HTML: the message quotes user input, so it is escaped.
    raise gr.Error(html.escape(message, quote=False), title=f"{what} failed ({exc.code})",
                   print_exception=False) from None


def _side(dataset, file, what: str) -> state.Source:
    if file:
        return state.upload_source(file, move=True)     # out of Gradio's cache, into the bounded store
    if not (dataset or "").strip():
        raise AuditorError("usage", f"No dataset or file for {what}.", f"Give {what} a hub id, example:NAME or a file.")
    if dataset.strip().startswith("upload:"):
        raise AuditorError("usage", f"{what}: 'upload:' names a file of the page; send the file itself.",
                           "Pass the file in the file parameter.")
    return state.resolve_source(dataset)


def job_slot(kind: str, request):
    """A slot of the work queue for an API call (its visitor: the caller's address)."""
    visitor, session = visitor_of(request)
    return lambda: JOBS.slot(kind, visitor, session)


def audit_json(dataset: str, config: str = "", split: str = "", text: str = "", answer: str = "", group: str = "",
               threshold: float = state.DEFAULT_THRESHOLD, request: gr.Request = None) -> dict:
    """summary.json of the audit of ``dataset`` (a hub id or example:NAME); errors are raised as gr.Error."""
    try:
        req = state.make_request(dataset, config, split, text, answer, group, [], threshold, None)
        a = state.run_audit(req, slot=job_slot("audit", request))
        return json.loads(to_json(a.result.summary(req.threshold)))
    except AuditorError as exc:
        _raise(exc, "Audit")


def leak_json(a_dataset: str = "", a_config: str = "", a_split: str = "", a_file=None, b_dataset: str = "",
              b_config: str = "", b_split: str = "", b_file=None, text: str = "", answer: str = "",
              threshold: float = state.DEFAULT_THRESHOLD, request: gr.Request = None) -> dict:
    """Records of B that occur in A: the summary ``auditor leak --json -`` prints. A source compared
    with itself (same id, config and split, or the same file bytes) is an error."""
    try:
        t = state.check_threshold(threshold)
        a_src, b_src = _side(a_dataset, a_file, "A"), _side(b_dataset, b_file, "B")
        with job_slot("leakage", request)():
            return workers.run(leak_summary, (a_src, a_config, a_split), (b_src, b_config, b_split), text, answer, t)
    except AuditorError as exc:
        _raise(exc, "Leakage check")


def leak_summary(a, b, text, answer, t: float) -> dict:
    """The leak summary of B ``(source, config, split)`` in A (a job's body, in its own process)."""
    tables = []
    for src, config, split in (a, b):
        upload = src.kind == "upload"
        tables.append(auditor.load(src.value, None if upload else state.blank(config),
                                   None if upload else state.blank(split), max_rows=state.ROW_CAP,
                                   token=False, kind=src.library_kind))
    a_table, b_table = tables
    if state.same_data(a[0], b[0]) and (a_table.config, a_table.split) == (b_table.config, b_table.split):
        raise AuditorError("usage", "B is the same data as A: every record would match itself.",
                           "Compare two different splits, datasets or files.")
    result = leak(a_table, b_table, text=state.blank(text), answer=state.blank(answer), threshold=t)
    if result.a.fingerprint == result.b.fingerprint:
        raise AuditorError("usage", "B holds exactly the same records as A: every record would match itself.",
                           "Compare two different splits, datasets or files.")
    return json.loads(to_json(result.summary()))


def dedup_file(dataset: str = "", config: str = "", split: str = "", file=None, text: str = "", answer: str = "",
               threshold: float = state.DEFAULT_THRESHOLD, keep: str = "first",
               request: gr.Request = None) -> tuple[str, str]:
    """(deduplicated file, manifest): one record kept per near-duplicate cluster at ``threshold``."""
    try:
        upload = state.upload_source(file, move=True).upload_id if file else None
        name = f"upload:{state.kept_upload(upload).name}" if upload else dataset
        req = state.make_request(name, config, split, text, answer, "", [], threshold, None)
        slot = job_slot("dedup", request)
        a = state.run_audit(req, upload, slot=slot)
        result, src, key = a.result, a.source, a.key
        keep = (keep or "first").strip()
        fmt = input_format(result.table)
        stem = state.download_stem(src.name)
        folder = state.folder_for("api-dedup", key, req.threshold, keep)
        path, manifest = folder / f"{stem}.dedup.{fmt}", folder / f"{stem}.dedup.manifest.json"
        if not manifest.exists():
            with state.writer_of(folder), slot(), state.copy_fetch(folder) as into:
                if not manifest.exists():        # (written by another visitor's job meanwhile)
                    workers.run(dedup_copy, result, req.threshold, keep, src, path, manifest, into)
        return str(path), str(manifest)
    except AuditorError as exc:
        _raise(exc, "Deduplication")


def dedup_copy(result, threshold: float, keep: str, src, path, manifest, fetch_into=None) -> None:
    """The deduplicated copy and its manifest (a job's body, in its own process); a Hub split's
    Parquet files fetched into ``fetch_into`` (``state.copy_fetch``)."""
    d = dedup(result, threshold=threshold, keep=keep)
    copy = state.upload_file(src)
    # (no token: the endpoint takes none, and the server's own is never lent to a visitor)
    write_dedup(result, d, str(path), manifest_path=str(manifest), source=copy,
                stamps=copy and local_stamps(copy, None), token=False, fetch_into=fetch_into)


# The endpoints wait for work in jobs.JOBS (bounded there: slots, per visitor, waiting), never in a
# Gradio concurrency group: a cached audit_json sharing one with jobs waiting for a slot queued behind
# them (p50 8.8 s, p95 15.8 s among 50 visitors in bench/app_load.py).
UNLIMITED = {"concurrency_limit": None}


def endpoints() -> None:
    """Hidden components and buttons that carry the three named endpoints (inside a Blocks)."""
    with gr.Row(visible=False):
        audit_in = [gr.Textbox(label="dataset")] + [gr.Textbox("", label=n)
                                                    for n in ("config", "split", "text", "answer", "group")]
        audit_t = gr.Number(state.DEFAULT_THRESHOLD, label="threshold")
        audit_out = gr.JSON(label="summary")
        audit_btn = gr.Button("audit_json")
        leak_in = [gr.Textbox("", label="a_dataset"), gr.Textbox("", label="a_config"),
                   gr.Textbox("", label="a_split"), gr.File(label="a_file", type="filepath"),
                   gr.Textbox("", label="b_dataset"), gr.Textbox("", label="b_config"),
                   gr.Textbox("", label="b_split"), gr.File(label="b_file", type="filepath"),
                   gr.Textbox("", label="text"), gr.Textbox("", label="answer"),
                   gr.Number(state.DEFAULT_THRESHOLD, label="threshold")]
        leak_out = gr.JSON(label="leak summary")
        leak_btn = gr.Button("leak_json")
        dedup_in = [gr.Textbox("", label="dataset"), gr.Textbox("", label="config"), gr.Textbox("", label="split"),
                    gr.File(label="file", type="filepath"), gr.Textbox("", label="text"),
                    gr.Textbox("", label="answer"), gr.Number(state.DEFAULT_THRESHOLD, label="threshold"),
                    gr.Textbox("first", label="keep")]
        dedup_out = [gr.File(label="deduplicated file"), gr.File(label="manifest")]
        dedup_btn = gr.Button("dedup_file")
    audit_btn.click(audit_json, audit_in + [audit_t], audit_out, api_name="audit_json", **UNLIMITED,
                    api_description="The summary.json of an audit. dataset: a Hugging Face dataset id or "
                                    "example:NAME; blank config, split and roles are chosen or guessed.")
    leak_btn.click(leak_json, leak_in, leak_out, api_name="leak_json", **UNLIMITED,
                   api_description="Records of B that occur in A (the JSON of `auditor leak --json -`). a_file / "
                                   "b_file replace the dataset ids when given; a source compared with itself is an "
                                   "error.")
    dedup_btn.click(dedup_file, dedup_in, dedup_out, api_name="dedup_file", **UNLIMITED,
                    api_description="The input with one record kept per near-duplicate cluster at the threshold "
                                    "(keep: first, longest or most_common_answer), in the input's format, and a "
                                    "manifest of what was dropped and why.")
