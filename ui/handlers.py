"""Handlers: pure functions from form values (and the cached audit) to view data.

Each returns a dict keyed by the names of the page's parts (``layout.PARTS``); a part left out
keeps what it shows. They never touch widgets, so a test calls them directly. Every failure
becomes a message in the status line (an error also clears the results it would contradict).
No analysis happens here: the ``auditor`` library's public API does the work.
"""
from __future__ import annotations

import re
import secrets
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import gradio as gr
import numpy as np
import pandas as pd

import auditor
from auditor import AuditorError, semantic
from auditor.contamination import BENCHMARKS, MAX_NGRAM, scan_corpus
from auditor.dedup import (
    MAX_REVIEW_ITEMS,
    dedup,
    input_format,
    pair_jaccard,
    review_json,
    write_dedup,
)
from auditor.dedup import load_review_file as read_review_file
from auditor.report.common import plural
from auditor.evidence import (
    contamination_evidence,
    evidence_csv,
    leak_evidence,
    leak_evidence_csv,
)
from auditor.io.copies import copier, files_copied, local_stamps, write_rows
from auditor.io.hub import describe
from auditor.io.outputs import write_text
from auditor.io.sources import example_layout
from auditor.io.table import choose_split, select
from auditor.leakage import leak
from auditor.prepare import in_source, prepare
from auditor.roles import (
    available_fields,
    extract,
    joined_text,
    resolve_roles,
    resolve_text_spec,
    text_column,
    text_fields,
)
from auditor.semantic import DEFAULT_THRESHOLD

from . import browse, clusters, curve_view, evidence, state, views, workers
from .browse import disabled, enabled
from .jobs import JobCancelled
from .state import CACHE, DEFAULTS, MIN_THRESHOLD, ROW_CAP, blank, user_token

PAGE_SIZE = 25                 # pairs per page of the review table
NO_FILTERS = {"jmin": 0.0, "jmax": 1.0, "hide_exact": False, "search": ""}
EXPIRED = "This audit has expired from the cache: press **Run audit** again."
# The query keys a share link carries, and the longest value one of them may hold (a link the page
# made stays far below: ids are at most 96 characters, marks at most SHARED_MARKS pairs).
LINK_KEYS = ("dataset", "upload", "config", "split", "rev", "text", "answer", "group", "labels", "threshold",
             "max_rows", "nd", "ka", "sp", "keep", "tab") + state.LEAK_LINK_KEYS
LINK_VALUE_CAP = 1000
# An uploaded benchmark's texts, at most (characters): the n-gram scan's index of them takes ~30 bytes
# a character, so a 2 MB gzip of 700 MiB of words (under the reading budget) took 21 GB.
BENCH_TEXT_CAP = 16 * 1024 ** 2
HEADLINE_WAITING = "<section class='headline pending' aria-label='Verdict'><p class='verdict'>…</p></section>"


def error(message: str, part: str = "status") -> dict:
    return {part: gr.update(value=message, elem_classes=["error"])}


def table(frame: pd.DataFrame) -> dict:
    """A table update that hides the table while it has no rows."""
    return gr.update(value=frame, visible=not frame.empty)


def choices_of(values, blank_choice=True):
    """A field list's choices: each field by name, shown as views.field_label (a 3,000-character
    name filled the open list; a right-to-left override reversed the names after it)."""
    out = [("— none —", "")] if blank_choice else []
    return out + [(views.field_label(v), v) for v in values]


# --------------------------------------------------------------------------- what an audit shows

# The Downloads tab's buttons, with their labels while empty.
DOWNLOAD_LABELS = {"dl_summary": "summary.json", "dl_report": "REPORT.md", "dl_pairs": "pairs.csv",
                   "dl_review": "review.json", "dl_dedup": "Deduplicated file", "dl_manifest": "Manifest (JSON)",
                   "dl_evidence": "Leak evidence CSV", "dl_clean": "Clean B split (JSONL)",
                   "dl_contam": "Contamination evidence CSV", "dl_decontam": "A without contaminated records"}


def cleared_results() -> dict:
    """Every result part empty: an error must never leave a previous audit under its banner."""
    return {"share": "", "state": None, "headline": "", "cards": "", "overview": "", "counts": "",
            "curve_plot": None, "curve_text": "", "curve_df": "",
            "pairs_info": "", "pairs_df": table(pd.DataFrame()), "pair_view": "",
            "clusters_info": "", "clusters_df": table(pd.DataFrame()), "review_panel": "",
            "cluster_view": "", "dedup_info": "",
            "conc_text": "", "conc_plot": gr.update(value=None, visible=False), "conc_df": table(pd.DataFrame()),
            "dl_info": "", **{k: disabled(label) for k, label in DOWNLOAD_LABELS.items()},
            **cleared_leak(), **cleared_paraphrases()}


def cleared_leak() -> dict:
    return {"leak_status": "", "leak_md": "", "leak_evidence": "", "contam_md": "", "contam_evidence": "",
            "contam_kind": gr.update(choices=contam_choices(None), value="all"),
            **{k: disabled(DOWNLOAD_LABELS[k]) for k in ("dl_evidence", "dl_clean", "dl_contam", "dl_decontam")}}


def review_marks(st) -> tuple:
    return tuple(map(tuple, st.get("marks") or ()))


def tallies(result, st: dict) -> tuple:
    """(clusters after the review, their counts, the clusters the audit found): every tab's counts."""
    review = clusters.review_of(st)
    ranked_now = clusters.ranked(result, st["key"], st["threshold"], st.get("keep", "first"), review)
    counts = clusters.tally(result, ranked_now)
    if review["marks"] or review["apart"] or review["splits"]:
        raw = clusters.tally(result, clusters.ranked(result, st["key"], st["threshold"], "first",
                                                     {"marks": [], "apart": [], "splits": []}))
    else:
        raw = counts
    return ranked_now, counts, raw


def headline(result, st: dict, counts: dict) -> str:
    near = result.near_duplicates(st["threshold"])
    point = curve_view.at(clusters.curve(result, st["key"]), st["threshold"])
    shown = replace(point, rows_dropped=counts["dropped"], rows_kept=counts["kept"])
    near = replace(near, clusters=counts["clusters"], largest_cluster=counts["largest"])
    name = views.source_label(st["source"], result.table)
    return views.headline_html(name, result.records, near, shown, st.get("leak_tally"), st.get("contam_tally"),
                               no_text=result.degenerate.by_role.get("text", 0))


def threshold_views(result, st: dict) -> dict:
    """Every part that depends on the threshold and the review: one value drives them all, and
    every tab shows the same counts (``tallies``)."""
    t, key, marks = st["threshold"], st["key"], review_marks(st)
    near = result.near_duplicates(t)
    ranked_now, counts, raw = tallies(result, st)
    st = {**st, "review_gain": counts["kept"] - raw["kept"]}
    points = clusters.curve(result, key)
    point = curve_view.at(points, t)
    pairs = state.pair_list(result, key, t)
    cluster_of = {int(r): c.cluster for c in ranked_now for r in c.rows}
    summary_path, report_path, pairs_path, in_csv = state.write_downloads(result, key, t, pairs, cluster_of, marks)
    out = {"threshold": t, "curve_threshold": t, "headline": headline(result, st, counts),
           "cards": views.stat_cards(result, near, counts), "overview": views.overview_markdown(result, t),
           "counts": curve_view.counts_markdown(near, point, result.records)
           + views.review_note(counts, raw),
           "curve_plot": curve_view.drawn(key, points, t, result.records),
           "curve_text": curve_view.explanation(points, t, result.records),
           "curve_df": curve_view.table_html(points, t, result.records),
           "share": share_of(st),
           "dl_summary": enabled(summary_path, "summary.json"), "dl_report": enabled(report_path, "REPORT.md"),
           "dl_pairs": enabled(pairs_path, f"pairs.csv · {browse.plural(in_csv, 'pair')}"),
           "dl_info": views.pairs_csv_note(in_csv, pairs.a.size, state.PAIRS_CSV_BYTES),
           "dedup_info": views.dedup_offer(counts, st.get("keep", "first"), t),
           "dl_dedup": disabled(DOWNLOAD_LABELS["dl_dedup"]), "dl_manifest": disabled(DOWNLOAD_LABELS["dl_manifest"]),
           **review_download(result, st),
           **browse.clusters_view(result, st, ranked_now, counts, raw["clusters"]),
           **browse.members_view(result, st, ranked_now),
           **pairs_page(result, {**st, "cursor": 0}, moved=False)}
    out["state"] = {**out["state"], "review_gain": st["review_gain"]}
    return out


def review_download(result, st: dict) -> dict:
    """review.json of the page's review (disabled while there is none)."""
    review = clusters.review_of(st)
    decisions = len(review["marks"]) + len(review["apart"]) + len(review["splits"])
    if not decisions:
        return {"dl_review": disabled(DOWNLOAD_LABELS["dl_review"])}
    return {"dl_review": enabled(write_review(result, st), f"review.json · {browse.plural(decisions, 'decision')}")}


def audited(a: state.Audited, req, base, review: dict | None = None, tab=None) -> dict:
    """All the parts of a fresh audit (status, form, results, the leakage tab's defaults); ``tab``:
    the result tab open, which the share link names; ``review``: a link's review decisions."""
    result, src, key = a.result, a.source, a.key
    table_ = result.table
    fields = available_fields(table_.rows)
    roles = result.roles
    t = req.threshold
    review = review or {}
    st = {"key": key, "request": req, "source": src, "base": base, "threshold": t,
          "commit": table_.revision, "newer": a.newer,
          "marks": [tuple(m) for m in review.get("marks", ())], "apart": list(review.get("apart", ())),
          "splits": [list(x) for x in review.get("splits", ())], "keep": review.get("keep") or "first",
          "cursor": 0, "filters": dict(NO_FILTERS), "tab": tab if tab in state.TABS else None,
          "clusters": {"page": 0, "filters": dict(clusters.NO_FILTERS), "open": None, "members_page": 0}}
    conc_fig, conc_md, conc_table = views.concentration_view(result)
    # B's defaults: A's dataset at its evaluation split (test, else validation ...: the split the
    # CLI and load_b read for B without one). An upload has no splits to offer: its file name stood
    # in as one, and a dataset typed into B's box was then read at a split it does not have.
    b_splits = list(table_.splits) if src.kind != "upload" else []
    other_splits = [s for s in b_splits if s != table_.split]
    b_config = (table_.config or "") if src.kind != "upload" else ""
    b_split = choose_split(None, other_splits, "B", "test")[0] if other_splits else ""
    st["b_offered"] = (b_config or None, b_split or None)
    out = {
        "status": gr.update(value=views.audited_message(src, table_, result.records, a.seconds, a.cached, a.newer),
                            elem_classes=["ok"]),
        "fields_for": req.dataset, "keep": st["keep"],     # the rule st holds, shown
        **threshold_views(result, st),
        "conc_text": conc_md, "conc_plot": gr.update(value=conc_fig, visible=conc_fig is not None),
        "conc_df": table(conc_table),
        "config": gr.update(choices=list(table_.configs) or ([table_.config] if table_.config else []),
                            value=table_.config or ""),
        "split": gr.update(choices=list(table_.splits) if src.kind != "upload" else [],
                           value=(table_.split or "") if src.kind != "upload" else ""),
        "text": gr.update(choices=choices_of(fields, blank_choice=False), value=roles.text or ""),
        "answer": gr.update(choices=choices_of(fields), value=roles.answer or ""),
        "group": gr.update(choices=choices_of(fields), value=roles.group or ""),
        "labels": gr.update(choices=choices_of(fields, blank_choice=False), value=list(roles.labels)),
        "leak_dataset": "" if src.kind == "upload" else src.name,
        "leak_config": gr.update(choices=list(table_.configs) if src.kind != "upload" else [], value=b_config),
        "leak_split": gr.update(choices=b_splits, value=b_split),
        "contam_fields": gr.update(choices=choices_of(fields, blank_choice=False), value=[]),
        "upload_id": src.upload_id, "b_upload_id": None, "bench_upload_id": None,
        "leak_upload": gr.update(label="Upload B's own file"), "bench_upload": gr.update(label="Upload a benchmark file"),
        **cleared_leak(), **cleared_paraphrases(),
    }
    out["form"] = gr.update(open=False, label=views.form_label(src, table_))
    return out


def run(dataset, config, split, text, answer, group, labels, threshold, max_rows, upload, token, fields_for,
        base, progress=None, collapse=True, tab=None, slot=None) -> dict:
    """Run audit: the form -> every result part (or an error that clears them); ``tab``: the result
    tab open (the share link keeps naming it); ``upload``: this page's upload (its id in the store,
    or a file path); ``slot``: waits for a free worker before computing (``jobs.JOBS.slot``)."""
    try:
        if (dataset or "").strip() != (fields_for or "").strip():
            # Fields left from another dataset: let the library choose and guess afresh.
            config = split = text = answer = group = ""
            labels = []
        req = state.make_request(dataset, config, split, text, answer, group, labels, threshold, max_rows)
        a = state.run_audit(req, upload, token, progress, slot)
        out = audited(a, req, base, tab=tab)
        if not collapse:
            out.pop("form")
        return out
    except Exception as exc:  # noqa: BLE001 - every failure becomes a message, never a trace
        out = {**cleared_results(), **error(views.error_text(exc))}
        if collapse:      # the form's title named the audit the error has just cleared
            out["form"] = gr.update(label=views.FORM_LABEL)
        return out


def link_values(params: dict) -> dict:
    """A share link's form values (blank where it has none)."""
    values = {"dataset": params.get("dataset") or "", "threshold": params.get("threshold", DEFAULTS["threshold"])}
    for name in ("config", "split", "text", "answer", "group", "rev"):
        values[name] = params.get(name, "")
    values["labels"] = [x for x in params.get("labels", "").split(",") if x.strip()]
    values["max_rows"] = params.get("max_rows")
    return values


def link_params(items) -> dict:
    """A page address's query, its (key, value) pairs in order, as ``page_load`` reads it: each
    key's value; a key of the page's links given more than once, all its values (a tuple), which
    ``page_load`` refuses (the last one was taken without a word: ?threshold=0.5&threshold=0.7
    audited at 0.7). Other keys (a host's __sign) keep their last value."""
    given: dict = {}
    for key, value in items:
        given.setdefault(key, []).append(value)
    return {k: tuple(v) if len(v) > 1 and k in LINK_KEYS else v[-1] for k, v in given.items()}


def page_load(params: dict, base, progress=None, slot=None) -> dict:
    """The page opened: a share link's values fill the form and are audited; else the default. An
    upload of the link is opened from the store (or said to have expired or been removed); a
    pinned Hub commit is read as it was, and the page says when the dataset has a newer one."""
    repeated = [k for k in LINK_KEYS if isinstance(params.get(k), tuple)]
    if repeated:    # as the CLI refuses a threshold given twice: never one of them chosen unsaid
        key, given = repeated[0], params[repeated[0]]
        shown = ", ".join(repr(str(v)[:40]) for v in given[:3]) + (", …" if len(given) > 3 else "")
        times = "twice" if len(given) == 2 else f"{len(given)} times"
        return {**cleared_results(), **error(views.error_text(AuditorError(
            "usage", f"This link gives {key} {times} ({shown}): the page's links give each value once, so which "
            "one was meant is not known.", "Open the link the Share box gives, or type the values in the form.")))}
    values = dict(DEFAULTS)
    linked = bool(params.get("dataset") or params.get("upload"))
    too_long = [k for k in LINK_KEYS if len(str(params.get(k) or "")) > LINK_VALUE_CAP]
    if too_long:   # refused whole: never poured into the form, nor quoted back at length
        return {**cleared_results(), **error(views.error_text(AuditorError(
            "usage", f"This link's {' and '.join(too_long)} {'is' if len(too_long) == 1 else 'are'} over "
            f"{LINK_VALUE_CAP:,} characters long: not a link this page made.",
            "Type the dataset id in the box, or open the page without the link's query.")))}
    upload = None
    if linked:
        values = link_values(params)
        if params.get("upload"):
            try:
                kept = state.kept_upload(str(params["upload"]))
            except AuditorError as exc:
                return {**cleared_results(), "dataset": "", "fields_for": "",
                        **error(views.error_text(exc, "open this link's upload"))}
            upload, values["dataset"] = kept.id, f"upload:{kept.name}"
    filled = {"dataset": values["dataset"], "config": values.get("config") or "",
              "split": values.get("split") or "", "text": values.get("text") or "",
              "answer": values.get("answer") or "", "group": values.get("group") or "",
              "labels": gr.update(choices=values["labels"], value=values["labels"]),
              "fields_for": values["dataset"]}
    # Only values the slider and the number boxes can show (no NaN, no infinity); a link's other
    # threshold or row cap is not applied (the default is, and the status line says so).
    left_out: list = []
    threshold, max_rows = values["threshold"], values.get("max_rows")
    try:
        t = float(threshold)
        if not MIN_THRESHOLD <= t <= 1:
            raise ValueError
        filled["threshold"] = filled["curve_threshold"] = threshold = t
    except (TypeError, ValueError, OverflowError):
        left_out.append(("threshold", threshold, f"not a threshold the slider shows ({MIN_THRESHOLD:g} to 1): "
                                                 f"{DEFAULTS['threshold']:g} is used"))
        threshold = DEFAULTS["threshold"]
    if max_rows not in (None, ""):
        try:
            m = float(max_rows)
            if not (1 <= m <= ROW_CAP and m == int(m)):
                raise ValueError
            filled["max_rows"] = max_rows = int(m)
        except (TypeError, ValueError, OverflowError):
            left_out.append(("max_rows", max_rows, f"not a row cap the page reads (a whole number, 1 to "
                                                   f"{ROW_CAP:,}): every row up to {ROW_CAP:,} is read"))
            max_rows = None
    try:
        req = state.make_request(values["dataset"], values.get("config"), values.get("split"), values.get("text"),
                                 values.get("answer"), values.get("group"), values["labels"], threshold,
                                 max_rows, values.get("rev"))
        a = state.run_audit(req, upload, None, progress, slot)
        ignored: list = list(left_out)
        review = linked_review(a.result, params, ignored) if linked else {}
        tab = params.get("tab") if linked and params.get("tab") in state.TABS else None
        if linked:
            ignored += ignored_link_values(params)
        out = {**filled, **audited(a, req, base, review, tab)}
        if ignored:     # a link value left out is said, never dropped without a word (plain text: md)
            out["status"] = gr.update(value=f"{out['status']['value']}  \n" + ignored_notice(ignored),
                                      elem_classes=["ok"])
        if linked and any(params.get(k) for k in state.LEAK_LINK_KEYS):
            leak_out = linked_leak(params, out["state"], a.result, progress, slot)
            note = leak_out.pop("status_note", None)
            out.update(leak_out)
            if note:     # said at the top too: the leakage tab may not be the one open
                out["status"] = gr.update(value=f"{out['status']['value']}  \n{note}", elem_classes=["ok"])
        if tab:
            out["tabs"] = gr.update(selected=tab)
        return out
    except Exception as exc:  # noqa: BLE001
        return {**filled, **cleared_results(), **error(views.error_text(exc))}


KEEP_RULES = ("first", "longest", "most_common_answer")
IGNORED_SHOWN = 5             # a link's values left out, quoted each; more are counted


def linked_review(result, params: dict, ignored: list | None = None) -> dict:
    """A link's review: its marks that are pairs of this audit, rows kept apart and splits within
    range, and the keep rule; each value left out is appended to ``ignored`` as (key, value, why)."""
    ignored = [] if ignored is None else ignored
    keep = params.get("keep") or "first"
    if keep not in KEEP_RULES:
        ignored.append(("keep", keep, "not a keep rule (first, longest or most_common_answer): first is used"))
        keep = "first"
    if keep == "most_common_answer" and result.fields.answer is None:
        ignored.append(("keep", keep, "this audit has no answer field: first is used"))
        keep = "first"
    n = result.records
    bad: list = []
    marks = linked_marks(result, params.get("nd"), bad)
    ignored += [("nd", part, "not a pair of rows, as 3-17") for part in bad]
    ignored += [("nd", f"{a}-{b}", f"not a near-duplicate pair of this audit (Jaccard ≥ {MIN_THRESHOLD:g})")
                for a, b in state.parse_marks(params.get("nd")) if (a, b) not in marks]
    bad = []
    apart = state.parse_rows(params.get("ka"), bad)
    ignored += [("ka", part, "not a row number") for part in bad]
    ignored += [("ka", r, f"beyond this audit's {n:,} records") for r in apart if r >= n]
    bad = []
    splits = state.parse_splits(params.get("sp"), bad)
    ignored += [("sp", part, "not a row and a threshold, as 30@0.8") for part in bad]
    low = result.pairs.min_threshold
    ignored += [("sp", f"{r}@{t:g}", f"beyond this audit's {n:,} records" if r >= n else
                 f"below the lowest threshold searched ({low:g})") for r, t in splits
                if r >= n or not low <= t <= 1]
    return {"marks": marks, "apart": tuple(r for r in apart if r < n),
            "splits": tuple((r, t) for r, t in splits if r < n and low <= t <= 1), "keep": keep}


def ignored_link_values(params: dict) -> list:
    """(key, value, why) of the link's values outside the review that the page leaves out."""
    # (keys beginning "_" are the host's: a Space adds __sign to the page's address)
    out = [(key, params[key], "not a value this page's links carry") for key in params
           if key not in LINK_KEYS and not str(key).startswith("_")]
    tab = params.get("tab")
    if tab and tab not in state.TABS:
        out.append(("tab", tab, f"not a result tab ({', '.join(state.TABS)})"))
    b_self = str(params.get("b_self") or "").strip()
    if b_self not in ("", "0", "1"):
        out.append(("b_self", b_self, "not 1 (compare a source with itself) or 0: read as 0"))
    # Values the side's source does not take (the page's links never carry them): a revision is a Hub
    # dataset's commit; an uploaded file is read whole, with no config or split.
    b = str(params.get("b") or "").strip()
    for prefix, upload, example in (("", bool(params.get("upload")), str(params.get("dataset") or "").strip()
                                     .startswith("example:")),
                                    ("b_", b.startswith("upload:"), b.startswith("example:"))):
        rev = str(params.get(prefix + "rev") or "").strip()
        if rev and (upload or example):
            out.append((prefix + "rev", rev, "a revision applies to Hugging Face datasets only"))
        for key in (prefix + "config", prefix + "split"):
            value = str(params.get(key) or "").strip()
            if value and upload:
                out.append((key, value, "an uploaded file is read whole: it has no configs or splits"))
    return out


def ignored_notice(ignored: list) -> str:
    """The page's words for a link's values left out: each key, value (as text, cut) and why."""
    shown = "; ".join(f"{views.md(key, 20)}={views.md(value, 60)} ({views.md(why, None)})"
                      for key, value, why in ignored[:IGNORED_SHOWN])
    more = f"; and {len(ignored) - IGNORED_SHOWN:,} more" if len(ignored) > IGNORED_SHOWN else ""
    return f"**This link's values left out:** {shown}{more}."


def linked_leak(params: dict, st: dict, result, progress=None, slot=None) -> dict:
    """A share link's leakage check: its values fill the leakage tab and the check runs again (without
    a token: never the server's). An uploaded B or benchmark is opened from the upload store by its
    id; one that has expired or been removed is said to be, and that side is left unchecked (never
    another dataset checked in its place)."""
    def value(key):
        return str(params.get(key) or "").strip()

    b, bench = value("b"), value("bench")
    fields = available_fields(result.table.rows)
    asked = [x.strip() for x in value("cfields").split(",") if x.strip()]
    cfields = [x for x in asked if x in fields]
    fill = {"leak_dataset": b, "leak_config": gr.update(value=value("b_config")),
            "leak_split": gr.update(value=value("b_split")), "leak_text": value("b_text"),
            "leak_self": value("b_self") == "1", "benchmark": bench if bench in BENCHMARKS else "",
            "bench_text": value("bench_text"), "ngram": value("ngram") or "auto",
            "contam_fields": gr.update(value=cfields)}
    notes, gone = [], []
    b_upload = bench_upload = None
    for side, what, box, label in (("b", "B", "leak_dataset", "leak_upload"),
                                   ("bench", "contamination benchmark", None, "bench_upload")):
        named = value(side)
        if not named.startswith("upload:"):
            continue
        try:
            kept = state.kept_upload(value(f"{side}_upload"))
        except AuditorError as exc:
            gone.append(what)
            notes.append(f"This link's {what} was an uploaded file (**{views.md(named[7:] or '?', 120)}**) that "
                         f"cannot be opened: {views.md(exc.message, None)} So it was not checked; upload it and "
                         "press **Check leakage**.")
            if box:
                fill.update({box: "", "leak_config": gr.update(value=""), "leak_split": gr.update(value="")})
            continue
        if side == "b":
            b_upload = kept.id
            fill.update({"leak_dataset": f"upload:{kept.name}", "leak_config": gr.update(value=""),
                         "leak_split": gr.update(value=""), "b_upload_id": kept.id,
                         label: gr.update(label=f"B's file: {kept.name} (replace)")})
        else:
            bench_upload = kept.id
            fill.update({"benchmark": "", "bench_upload_id": kept.id,
                         label: gr.update(label=f"Benchmark file: {kept.name} (replace)")})
    if len(cfields) < len(asked):
        notes.append(f"A has no field {', '.join(views.md(x, 60) for x in asked if x not in fields)}: "
                     "contamination searched " + (f"{', '.join(views.md(x, 60) for x in cfields)}." if cfields
                                                  else "A's text."))
    b_check = None if "B" in gone else (b if not b.startswith("upload:") else "")
    bench_check = None if "contamination benchmark" in gone or bench.startswith("upload:") else bench
    view = {}
    if b_check or b_upload or bench_check or bench_upload:
        view = leak_check(st, b_check, value("b_config"), value("b_split"), value("b_text"), b_upload,
                          value("b_self") == "1", bench_check, None, progress, contam_fields=cfields,
                          bench_upload=bench_upload, bench_text=value("bench_text") or None,
                          ngram=value("ngram") or "auto", b_threshold=value("b_threshold") or None,
                          b_revision=value("b_rev") or None, slot=slot)
    out = {**fill, **view}
    st = view.get("state") or st
    if gone:
        out["status_note"] = (f"This link's {' and '.join(gone)} {'was an uploaded file' if len(gone) == 1 else 'were uploaded files'} "
                              "that this server no longer keeps: see the **Leakage** tab.")
    elif "error" in ((view.get("leak_status") or {}).get("elem_classes") or ()):
        # Said at the top as well: whoever opens the link may never open the Leakage tab.
        asked = " and ".join(x for x, given in (("leakage", b), ("contamination", bench)) if given)
        out["status_note"] = f"This link's {asked} check could not be run: the **Leakage** tab says why."
    out.update({"state": st, "share": share_of(st)})
    if notes:
        status = view.get("leak_status")
        classes = status.get("elem_classes") if isinstance(status, dict) else []
        text = " ".join(notes + ([status["value"]] if isinstance(status, dict) and status.get("value") else []))
        out["leak_status"] = gr.update(value=text, elem_classes=classes if view else [])
    return out


def linked_marks(result, nd, rejected: list | None = None) -> tuple:
    """A link's "not a duplicate" marks that are pairs of this audit (Jaccard >= MIN_THRESHOLD): a
    mark on two unrelated records was counted as a reviewed pair in the captions and the manifest.
    ``rejected``: as ``state.parse_marks``'s."""
    marks = [(a, b) for a, b in state.parse_marks(nd, rejected) if b < result.records]
    scores = pair_jaccard(result, [a for a, _ in marks], [b for _, b in marks])
    return tuple(m for m, j in zip(marks, scores) if j is not None and j >= MIN_THRESHOLD - 1e-9)


def tab_chosen(st, tab: str) -> dict:
    """A result tab opened: the share link (and so the address bar) names it."""
    if not st or tab not in state.TABS or st.get("tab") == tab:
        return {}
    st = {**st, "tab": tab}
    return {"state": st, "share": share_of(st)}


def rethreshold(st, t) -> dict:
    """A new threshold (either slider): every view, the share link and the downloads follow."""
    if not st:
        return {}
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    try:
        t = state.check_threshold(t)
    except AuditorError as exc:
        return error(views.error_text(exc, "re-count"))
    st = {**st, "threshold": t, "cursor": 0, "clusters": {**(st.get("clusters") or {}), "page": 0, "members_page": 0}}
    return {"state": st, **threshold_views(result, st)}


# --------------------------------------------------------------------------- the form

def cleared_fields() -> dict:
    """A new dataset: the config, split and roles of the previous one no longer apply."""
    return {name: gr.update(value="", choices=[]) for name in ("config", "split", "text", "answer", "group")} | \
        {"labels": gr.update(value=[], choices=[])}


def pick_example(choice) -> dict:
    """The bundled-benchmark list: a pick fills the dataset box; the placeholder changes nothing."""
    if not choice:
        return {}
    return {"dataset": choice, **cleared_fields()}


def uploaded(path, slot: str = "A") -> dict:
    """A file uploaded as A: kept in the upload store (moved out of Gradio's cache, so it is counted
    once, within the store's bounds), named in the dataset box, its id in the page's state."""
    if not path:
        return {}
    try:
        kept = state.kept_upload(path, move=True)
    except AuditorError as exc:
        return {"upload_id": None, **error(views.error_text(exc, "keep the uploaded file"))}
    return {"dataset": f"upload:{kept.name}", "upload_id": kept.id, "fields_for": "",
            "upload": gr.update(label=f"Replace {views.field_label(kept.name, 60)}"),
            **cleared_fields()}


def side_uploaded(path, part: str, label: str) -> dict:
    """A file uploaded as B or as the benchmark: kept as A's is; ``part``: the state part for its id."""
    if not path:
        return {}
    try:
        kept = state.kept_upload(path, move=True)
    except AuditorError as exc:
        return {part: None, **error(views.error_text(exc, "keep the uploaded file"), "leak_status")}
    # (the box shows the name as uploaded: b_source checks the id's file against it)
    button = {"b_upload_id": "leak_upload", "bench_upload_id": "bench_upload"}[part]
    out = {part: kept.id, "leak_status": "",
           button: gr.update(label=f"{label}: {views.field_label(kept.name, 60)} (replace)")}  # noqa: E501
    if part == "b_upload_id":      # B's file replaces the dataset box (and its config and split)
        out.update({"leak_dataset": f"upload:{kept.name}", "leak_config": gr.update(value=""),
                    "leak_split": gr.update(value="")})
    else:                          # a benchmark file replaces the bundled pick
        out["benchmark"] = ""
    return out


def load_fields(dataset, config, upload, token) -> dict:
    """Load fields: the dataset's configs, splits and columns, with the roles guessed."""
    if not (dataset or "").strip():
        return {}     # nothing picked yet (e.g. the placeholder): nothing to load, nothing to complain about
    try:
        src = state.resolve_source(dataset, upload)
        if src.kind == "hub":
            try:
                info = describe(src.value, config=blank(config), token=user_token(token))
            except AuditorError as exc:
                if exc.code != "bad_config" or not blank(config):
                    raise
                # a config left over from the previous dataset: list this one's instead
                info = describe(src.value, config=None, token=user_token(token))
            configs, splits = list(info.get("configs") or []), list(info.get("splits") or [])
            columns = list(info.get("columns") or [])
            # Roles are guessed from sample rows when describe() gives them, else from the names alone.
            rows = info.get("rows") or [dict.fromkeys(columns, "")]
            chosen_config = info.get("config") or (configs[0] if len(configs) == 1 else "")
            chosen_split = "train" if "train" in splits else (splits[0] if splits else "")
        else:
            conf = blank(config) if src.kind == "example" else None
            if src.kind == "example" and conf is not None:
                name = src.value.split(":", 1)[1].strip().lower()
                if conf not in example_layout(name):
                    conf = None
            tbl = auditor.load(src.value, conf, None, max_rows=50, kind=src.library_kind)
            configs, splits = list(tbl.configs), (list(tbl.splits) if src.kind != "upload" else [])
            rows = tbl.rows
            columns = available_fields(rows)
            chosen_config, chosen_split = tbl.config or "", (tbl.split or "") if splits else ""
        fields = available_fields(rows) if rows and any(rows[0].values()) else columns
        try:
            guessed = resolve_roles(rows)
        except AuditorError:
            guessed = None
        msg = (f"Fields of **{views.md(src.name)}**: {', '.join(views.md(c, 60) for c in fields[:30])}"
               f"{' …' if len(fields) > 30 else ''}. Roles are pre-selected where they could be guessed; "
               "press **Run audit**." + views.upload_kept_note(src))
        return {"status": gr.update(value=msg, elem_classes=[]), "fields_for": dataset,
                "form": gr.update(open=True),
                "config": gr.update(choices=configs, value=chosen_config or ""),
                "split": gr.update(choices=splits, value=chosen_split),
                "text": gr.update(choices=choices_of(fields, blank_choice=False),
                                  value=(guessed.text if guessed else "") or ""),
                "answer": gr.update(choices=choices_of(fields), value=(guessed.answer if guessed else "") or ""),
                "group": gr.update(choices=choices_of(fields), value=(guessed.group if guessed else "") or ""),
                "labels": gr.update(choices=choices_of(fields, blank_choice=False), value=[])}
    except Exception as exc:  # noqa: BLE001
        return error(views.error_text(exc, "read the dataset"))


# --------------------------------------------------------------------------- pairs review

def filtered(result, pairs: state.PairList, filters: dict) -> np.ndarray:
    """Indices into ``pairs`` that pass the review filters (Jaccard range, exact copies, search)."""
    keep = np.ones(pairs.a.size, dtype=bool)
    lo, hi = filters.get("jmin", 0.0), filters.get("jmax", 1.0)
    if lo > 0:
        keep &= pairs.jaccard >= lo - 1e-9
    if hi < 1:
        keep &= pairs.jaccard <= hi + 1e-9
    if filters.get("hide_exact"):
        keep &= pairs.jaccard < 1.0 - 1e-9
    search = (filters.get("search") or "").strip().lower()
    if search:
        text = result.fields.text
        idx = np.flatnonzero(keep)
        hit = [search in (text[a] or "").lower() or search in (text[b] or "").lower()
               for a, b in zip(pairs.a[idx].tolist(), pairs.b[idx].tolist())]
        if idx.size:
            keep[idx[~np.array(hit, dtype=bool)]] = False
    return np.flatnonzero(keep)


def pairs_page(result, st: dict, moved: bool = True) -> dict:
    """The review table's page holding the cursor, its caption, and the cursor's pair side by side."""
    t = st["threshold"]
    pairs = state.pair_list(result, st["key"], t)
    filters = {**NO_FILTERS, **(st.get("filters") or {})}
    idx = filtered(result, pairs, filters)
    marks = set(map(tuple, st.get("marks") or ()))
    cursor = min(max(int(st.get("cursor") or 0), 0), max(idx.size - 1, 0))
    page, pages = cursor // PAGE_SIZE, max(1, -(-idx.size // PAGE_SIZE))
    on_page = idx[page * PAGE_SIZE:(page + 1) * PAGE_SIZE]
    is_filtered = filters != NO_FILTERS
    out = {"state": {**st, "cursor": cursor, "shown": bool(moved and idx.size)},
           "pairs_info": views.pairs_caption(t, pairs.total, int(pairs.a.size), int(idx.size), page, pages,
                                             is_filtered, filters.get("search"), len(marks)),
           "pairs_df": gr.update(value=views.pairs_frame(result, pairs.a[on_page], pairs.b[on_page],
                                                         pairs.jaccard[on_page], marks), visible=bool(on_page.size)),
           "pair_view": views.PLACEHOLDER_PAIR}
    if moved and idx.size:
        k = int(idx[cursor])
        a, b, j = int(pairs.a[k]), int(pairs.b[k]), round(float(pairs.jaccard[k]), 4)
        out["pair_view"] = views.pair_detail_html(result, a, b, j, f"pair {cursor + 1:,} of {idx.size:,}",
                                                  (a, b) in marks)
    return out


def pairs_event(st, action: str, jmin=None, jmax=None, hide_exact=False, search="", row: int | None = None) -> dict:
    """Review: next / previous pair or page, a filter change, a row picked in the table, a mark."""
    if not st:
        return {}
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    filters = {"jmin": _number(jmin, 0.0), "jmax": _number(jmax, 1.0), "hide_exact": bool(hide_exact),
               "search": (search or "").strip()}
    cursor = int(st.get("cursor") or 0)
    if filters != {**NO_FILTERS, **(st.get("filters") or {})}:
        cursor = 0
    elif action == "next":
        cursor += 1 if st.get("shown") else 0     # the first "next" shows the first pair
    elif action == "prev":
        cursor -= 1 if st.get("shown") else 0
    elif action == "next_page":
        cursor = (cursor // PAGE_SIZE + 1) * PAGE_SIZE
    elif action == "prev_page":
        cursor = max(0, (cursor // PAGE_SIZE - 1) * PAGE_SIZE)
    elif action == "select" and row is not None:
        cursor = (cursor // PAGE_SIZE) * PAGE_SIZE + int(row)
    st = {**st, "filters": filters, "cursor": cursor}
    out = pairs_page(result, st, moved=action != "filter")
    if action == "mark":
        return mark_current(result, out["state"])
    return out


def _number(value, default: float, high: float = 1.0) -> float:
    """A number from the form (blank or nonsense: the default), clipped to [0, high]."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return default
    return min(max(v, 0.0), high) if np.isfinite(v) else default


def mark_current(result, st: dict) -> dict:
    """Toggle "not a duplicate" on the cursor's pair; the clusters, downloads and link follow."""
    pairs = state.pair_list(result, st["key"], st["threshold"])
    idx = filtered(result, pairs, {**NO_FILTERS, **(st.get("filters") or {})})
    if not idx.size:
        return pairs_page(result, st)
    k = int(idx[min(st["cursor"], idx.size - 1)])
    pair = (int(pairs.a[k]), int(pairs.b[k]))
    marks = set(map(tuple, st.get("marks") or ()))
    marks ^= {pair}
    return with_marks(result, st, marks)


def with_marks(result, st: dict, marks) -> dict:
    if len(marks) + len(st.get("apart") or ()) + len(st.get("splits") or ()) > MAX_REVIEW_ITEMS:
        return error(f"**Could not mark the pair:** a review holds at most {MAX_REVIEW_ITEMS:,} decisions.")
    st = {**st, "marks": sorted(marks)}
    out = threshold_views(result, st)
    out.update(pairs_page(result, {**out["state"], "cursor": st.get("cursor", 0), "filters": st.get("filters"),
                                   "shown": st.get("shown")}))
    out["state"] = out["state"] | {"marks": sorted(marks)}
    return out


def write_review(result, st: dict) -> Path:
    review = clusters.review_of(st)
    folder = state.folder_for("review", st["key"], tuple(review["marks"]), tuple(review["apart"]),
                              tuple(review["splits"]))
    path = folder / "review.json"
    if not path.exists():
        write_text(path, review_json(result, review["marks"], st["threshold"], keep_apart=review["apart"],
                                     splits=review["splits"]))
    return path


def load_review_file(st, path) -> dict:
    """A review file downloaded before: its decisions (marks, rows kept apart, splits) apply to
    this audit again."""
    if not st or not path:
        return {}
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    try:
        review = read_review_file(str(state.upload_path(path)), result)
        st = {**st, "apart": list(review.keep_apart), "splits": [list(x) for x in review.splits]}
        out = with_marks(result, st, set(review.not_duplicates))
        what = [plural(len(review.not_duplicates), "“not a duplicate” mark")]
        if review.keep_apart:
            what.append(plural(len(review.keep_apart), "record kept apart", "records kept apart"))
        if review.splits:
            what.append(plural(len(review.splits), "cluster split"))
        out["status"] = gr.update(value=f"Loaded {' and '.join(what)} from the review file.", elem_classes=["ok"])
        return out
    except Exception as exc:  # noqa: BLE001
        return error(views.error_text(exc, "load the review file"))


# --------------------------------------------------------------------------- clusters and curation

def clusters_event(st, action: str, search="", min_size=None, max_size=None, kind="all", row=None) -> dict:
    """The cluster list: a filter change (search, size range, kind), a page, or a cluster selected."""
    if not st:
        return {}
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    view = dict(st.get("clusters") or {})
    filters = {"search": (search or "").strip()[:200], "min": max(2, int(_number(min_size, 2, 10 ** 9))),
               "max": int(_number(max_size, 0, 10 ** 9)), "kind": kind if kind in clusters.KINDS else "all"}
    ranked_now = clusters.ranked(result, st["key"], st["threshold"], st.get("keep", "first"), clusters.review_of(st))
    if action == "select":
        c = browse.cluster_on_page(result, st, ranked_now, row) if row is not None else None
        if c is None:
            return {}
        view.update({"open": int(c.rows[0]), "members_page": 0})
        st = {**st, "clusters": view}
        return {"state": st, **browse.members_view(result, st, ranked_now)}
    if filters != {**clusters.NO_FILTERS, **(view.get("filters") or {})}:
        view.update({"filters": filters, "page": 0})
    elif action in ("next", "prev"):
        view["page"] = max(0, int(view.get("page") or 0) + (1 if action == "next" else -1))
    st = {**st, "clusters": view}
    _, counts, raw = tallies(result, st)
    out = browse.clusters_view(result, st, ranked_now, counts, raw["clusters"])
    return {"state": st, **out}


def cluster_action(st, act, row) -> dict:
    """A button in the cluster view or the review panel: keep a record apart (or undo it), split a
    cluster at its weakest link (or undo it), clear the pair marks, or page through a cluster's
    records. The status says what the review changed, in rows kept."""
    if not st:
        return {}
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    try:
        row = int(row)
    except (TypeError, ValueError):
        return {}
    if not 0 <= row < result.records and act != "mpage":
        return {}
    view = dict(st.get("clusters") or {})
    if act == "mpage":
        view["members_page"] = max(0, row)
        st = {**st, "clusters": view}
        ranked_now = clusters.ranked(result, st["key"], st["threshold"], st.get("keep", "first"),
                                     clusters.review_of(st))
        return {"state": st, **browse.members_view(result, st, ranked_now)}
    apart, splits, marks = list(st.get("apart") or ()), [tuple(x) for x in st.get("splits") or ()], \
        sorted(map(tuple, st.get("marks") or ()))
    before = tallies(result, st)[1]["kept"]
    if act == "apart" and row not in apart:
        apart.append(row)
        done = f"Record {row} is kept apart"
    elif act == "unapart" and row in apart:
        apart.remove(row)
        done = f"Record {row} is back in its cluster"
    elif act == "split":
        ranked_now = clusters.ranked(result, st["key"], st["threshold"], st.get("keep", "first"),
                                     clusters.review_of(st))
        c = next((c for c in ranked_now if row in c.rows), None)
        offer = clusters.split_offer(result, c, st["threshold"]) if c is not None else None
        if offer is None:
            return error("**Could not split the cluster:** its records are identical texts (no link to cut).")
        splits = [x for x in splits if x[0] != row] + [(row, offer["cut"])]
        done = f"The cluster of record {row} is split at Jaccard ≥ {offer['cut']:g}"
    elif act == "unsplit":
        splits = [x for x in splits if x[0] != row]
        done = f"The split of record {row}'s cluster is undone"
    elif act == "unmark":
        marks, done = [], "The pair marks are cleared"
    else:
        return {}
    if len(marks) + len(apart) + len(splits) > MAX_REVIEW_ITEMS:
        return error(f"**Could not change the review:** a review holds at most {MAX_REVIEW_ITEMS:,} decisions.")
    st = {**st, "apart": sorted(apart), "splits": [list(x) for x in sorted(splits)]}
    out = with_marks(result, st, set(marks))
    after = tallies(result, out["state"])[1]["kept"]
    change = after - before
    effect = ("the deduplicated file keeps the same rows" if change == 0 else
              f"the deduplicated file keeps {abs(change):,} {'more' if change > 0 else 'fewer'} "
              f"row{'s' if abs(change) != 1 else ''} ({after:,} of {result.records:,})")
    out["status"] = gr.update(value=f"{done}: {effect}.", elem_classes=["ok"])
    return out


def keep_rule(st, keep) -> dict:
    if not st:
        return {}
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    before = st.get("keep", "first")
    if keep == "most_common_answer" and result.fields.answer is None:
        # (the library's hint names the CLI's --answer) The radio goes back to the rule in force.
        return {"keep": before, **error("**Could not keep the most common answer:** this audit has no answer "
                                        "field.  \n*Pick one under **Fields and options** (Answer field) and run "
                                        "the audit again, or keep first or longest.*")}
    st = {**st, "keep": keep or "first"}
    try:
        return {"state": st, **threshold_views(result, st)}
    except AuditorError as exc:
        return {"keep": before, **error(views.error_text(exc, "re-rank the clusters"))}


def build_dedup(st, upload=None, progress=None, slot=None, token=None) -> dict:
    """The deduplicated file (the input's format) and its manifest, at the page's threshold, keep
    rule and review, in Downloads with their row counts. ``token``: the page's, for this request only
    (a Hub split read from Parquet files is copied from those files, fetched again with it)."""
    if not st:
        return error("Run an audit first.")
    result = CACHE.get(st["key"])
    if result is None:
        return error(EXPIRED)
    try:
        review = clusters.review_of(st)
        keep = st.get("keep", "first")
        fmt = input_format(result.table)
        stem = state.download_stem(st["source"].name)
        folder = state.folder_for("dedup", st["key"], st["threshold"], keep, tuple(review["marks"]),
                                  tuple(review["apart"]), tuple(review["splits"]))
        path, manifest = folder / f"{stem}.dedup.{fmt}", folder / f"{stem}.dedup.manifest.json"
        with state.writer_of(folder), (slot() if slot is not None else nullcontext()), state.copy_fetch(folder) as into:
            d = workers.run(dedup_files, result, st, review, keep, path, manifest, progress=progress,
                            token=state.user_token(token), fetch_into=into)
        info = views.dedup_markdown({"kept": d["summary_kept"], "records": result.records, "keep": d["keep"],
                                     "dropped": d["dropped"], "exact": d["exact"], "notices": d["notices"]})
        return {"dedup_info": info,
                "dl_dedup": enabled(path, f"{path.name} · {browse.plural(d['kept'], 'record')}"),
                "dl_manifest": enabled(manifest, f"manifest · {browse.plural(d['dropped'], 'dropped row')}"),
                "status": gr.update(value=f"Built the deduplicated file: {d['kept']:,} of {result.records:,} "
                                          "records (Downloads).", elem_classes=["ok"])}
    except Exception as exc:  # noqa: BLE001
        return error(views.error_text(exc, "write the deduplicated file"))


def dedup_files(result, st, review, keep, path, manifest, progress=None, token=False, fetch_into=None) -> dict:
    """The deduplicated file and its manifest, unless written before (a job's body, in its own
    process): the counts the page shows, not the dropped rows' list (which can be long). A Hub
    split's Parquet files are fetched into ``fetch_into`` (``state.copy_fetch``)."""
    step = progress or (lambda fraction, text: None)
    step(0.05, "grouping the clusters")
    d = dedup(result, threshold=st["threshold"], keep=keep, not_duplicates=review["marks"],
              keep_apart=review["apart"], splits=review["splits"])
    if not manifest.exists():
        step(0.3, f"writing {len(d.kept_rows):,} records")
        upload_copy = state.upload_file(st["source"])
        write_dedup(result, d, str(path), manifest_path=str(manifest), source=upload_copy,
                    stamps=upload_copy and local_stamps(upload_copy, None), token=token, fetch_into=fetch_into)
    step(1.0, "done")
    return {"kept": len(d.kept_rows), "summary_kept": d.summary().get("kept", result.records - len(d.dropped)),
            "keep": d.keep, "dropped": len(d.dropped), "exact": d.exact, "notices": list(d.notices)}


# --------------------------------------------------------------------------- leakage

def b_source(dataset, upload) -> state.Source | None:
    """B: its own upload when one is given (and the box is blank or names it), else the box."""
    dataset = (dataset or "").strip()
    if upload and (not dataset or dataset.startswith("upload:")):
        return state.upload_source(upload)
    if dataset.startswith("upload:"):
        raise AuditorError("usage", "No file in B's upload slot.", "Upload B's file in the Leakage tab, "
                           "or give B a Hugging Face dataset id or a bundled example:NAME.")
    return state.resolve_source(dataset) if dataset else None


def load_b(st, result, b_src, b_config, b_split, allow_self, cap: int, token, revision=None):
    """B's table (at most ``cap`` rows; a Hub dataset at ``revision``, else its latest commit, the
    commit recorded); B the same data as A is refused unless ``allow_self``."""
    b_cfg = blank(b_config) if b_src.kind != "upload" else None
    b_spl = blank(b_split) if b_src.kind != "upload" else None
    same_data = state.same_data(st["source"], b_src)
    if (same_data and b_src.kind != "upload" and b_spl is None and result.table.splits
            and (b_cfg or result.table.config) == result.table.config):
        # B is the evaluation side: without a split, its test split (as the loader below, and the CLI, read it).
        b_spl = choose_split(None, list(result.table.splits), "B", "test")[0]
    same_split = (b_src.kind == "upload"
                  or ((b_cfg or result.table.config) == result.table.config
                      and (b_spl or result.table.split) == result.table.split))
    if same_data and same_split and not allow_self:
        raise AuditorError("usage", "B is the same data as A (same dataset, config and split): every "
                           "record would match itself.", "Pick another split, dataset or file for B, or "
                           "tick “compare a source with itself” if that is what you mean.")
    commit = None
    if b_src.kind == "hub":
        commit, _ = state.hub_commit(replace(b_src, revision=revision), user_token(token))

    def read(config, split):
        return auditor.load(b_src.value, config, split, max_rows=cap, token=token, kind=b_src.library_kind,
                            default_split="test", revision=commit)

    try:
        return read(b_cfg, b_spl)
    except AuditorError as exc:
        # Another dataset pasted into B's box (a paste fires no input event, so the browser kept
        # them) is read without the config and split offered for A's dataset, when it has not got them.
        offered = st.get("b_offered") or (None, None)
        if same_data or exc.code not in ("bad_config", "bad_split") or \
                (b_cfg, b_spl) == (None, None) or any(v not in (None, o) for v, o in zip((b_cfg, b_spl), offered)):
            raise
        return read(None, None)


def leak_check(st, b_dataset, b_config, b_split, b_text, b_upload, allow_self, bench, token, progress=None,
               contam_fields=(), bench_upload=None, bench_text=None, ngram="auto", b_threshold=None,
               b_revision=None, slot=None) -> dict:
    """Leakage of B into the audited A, and contamination of A by a bundled benchmark or an uploaded
    benchmark file (``bench_upload``, its text field ``bench_text``, blank: guessed), searched in
    ``contam_fields`` of A (each record's joined as one text; none: A's text) for shared ``ngram``-word
    sequences, with the evidence side by side (paged, filtered) and as CSV. A is the audited
    side from the cache (its roles resolved once, by the audit). ``b_threshold``: the Jaccard B is
    compared at (a share link's; blank: the page's); ``b_revision``: a link's pinned commit of B.
    The state records the check, so the share link carries it; ``slot`` waits for a free worker."""
    out = cleared_leak()
    if not st:
        return {**out, **error("Run an audit first: it is dataset **A**.", "leak_status")}
    result = CACHE.get(st["key"])
    if result is None:
        return {**out, **error(EXPIRED, "leak_status")}
    t = st["threshold"]
    cap = min(st["request"].max_rows or ROW_CAP, ROW_CAP)
    token = user_token(token)
    forgotten = {**st, "leak": None, "leak_tally": None, "contam_tally": None}   # a failed check
    failed = {"state": forgotten, "share": share_of(forgotten), "headline": headline_of(result, forgotten)}
    try:
        if b_threshold not in (None, ""):
            t = state.check_threshold(b_threshold)
        ngram = check_ngram(ngram)
        b_src = b_source(b_dataset, b_upload)
        side = bench_side(bench, bench_upload, bench_text, token)
        st = dict(st)
        with (slot() if slot is not None else nullcontext()):
            views_, st, notes, done, b_read, lists = workers.run(leak_body, st, result, b_src, side, b_config,
                                                                 b_split, b_text, allow_self, cap, token, b_revision,
                                                                 t, ngram, contam_fields, progress=progress)
        for list_id, rows in lists.items():     # kept where the page's later events read them
            evidence.keep_rows(rows, list_id)
        out.update(views_)
        unchecked = out.pop("contam_unchecked", None)
        message = " ".join(notes + ([f"Checked {' and '.join(done)}."] if done else []) + ([unchecked] if unchecked
                                                                                           else []))
        out["leak_status"] = gr.update(value=message, elem_classes=["ok"] if done else [])
        # B's config and split as read (the ones asked for may have been A's, which B has not got)
        b_read = (b_read[0] or blank(b_config), b_read[1] or blank(b_split), b_read[2]) if b_src else (None,) * 3
        link = state.leak_link(b_src, *b_read[:2], blank(b_text), bool(allow_self), t,
                               side and side["link"], blank(bench_text) if side and side["upload"] else None,
                               ngram, list(contam_fields or ()) if side else None,
                               b_revision=b_read[2]) if done else None
        st = {**st, "leak": link or None}
        if "leakage" not in done:
            st["leak_tally"] = None
        if "contamination" not in done:
            st["contam_tally"] = None
        out.update({"state": st, "share": share_of(st), "headline": headline_of(result, st)})
        return out
    except JobCancelled:
        raise
    except Exception as exc:  # noqa: BLE001
        return {**cleared_leak(), **failed, **error(views.error_text(exc, "check"), "leak_status")}


def leak_body(st, result, b_src, side, b_config, b_split, b_text, allow_self, cap, token, b_revision, t, ngram,
              contam_fields, progress=None) -> tuple:
    """A leakage check's work (a job's body, in its own process): (the leak and contamination parts,
    the page's state, notes, the checks done, B's config, split and commit as read, the evidence
    lists it made by their ids)."""
    step = progress or (lambda fraction, text: None)
    out, notes, done, b_read = {}, [], [], None
    a_src = st["source"]
    before = {v.get("id") for v in (st.get("evidence") or {}).values()}
    if b_src is not None:
        step(0.02, "reading B")
        b_table = load_b(st, result, b_src, b_config, b_split, allow_self, cap, token, b_revision)
        b_read = (b_table.config, b_table.split, b_table.revision)
        asked = [f"{what} {value!r}" for what, value, read in (("config", blank(b_config), b_table.config),
                                                               ("split", blank(b_split), b_table.split))
                 if value is not None and value != read]
        if asked:       # the values offered for A's dataset, which B has not got (load_b)
            notes.append(f"B has no {' or '.join(views.md(x) for x in asked)}: read at its own "
                         f"{'config ' + views.md(repr(b_table.config)) + ', ' if b_table.config else ''}"
                         f"split {views.md(repr(b_table.split))}.")
        req = st["request"]   # the roles as the user gave them (blank: guessed on each side)
        leak_progress = (lambda f, text: step(0.05 + 0.45 * f, f"leakage: {text}")) if side is not None \
            else (lambda f, text: step(0.05 + 0.85 * f, f"leakage: {text}"))
        lr = leak(result.side, b_side(b_table, req, blank(b_text), result), threshold=t, max_rows=cap,
                  token=token, progress=leak_progress)
        if lr.a.fingerprint == lr.b.fingerprint and not allow_self:
            raise AuditorError("usage", "B holds exactly the same records as A: every record would match "
                               "itself.", "Pick another split, dataset or file for B, or tick “compare a "
                               "source with itself” if that is what you mean.")
        step(0.5 if side is not None else 0.92, "writing the leak evidence and the clean split")
        views_, st = leak_views(lr, t, a_src, b_src, st)
        out.update(views_)
        done.append("leakage")
    if b_src is None and side is None:
        notes.append("No B chosen: give B a dataset id, a bundled example or a file.")
    if side is not None:
        contam_progress = lambda f, text: step((0.5 if b_src is not None else 0.02) + 0.45 * f,
                                               f"contamination: {text}")
        views_, st = contamination_views(result, side, token, contam_progress, fields=contam_fields,
                                         source=a_src, ngram=ngram, st=st)
        out.update(views_)
        done.append("contamination")
    made = {v.get("id") for v in (st.get("evidence") or {}).values()} - before - {None}
    return out, st, notes, done, b_read, {i: state.EVIDENCE.get(i) for i in made}


def headline_of(result, st: dict) -> str:
    """The headline of the page's state (its threshold, review, and checks)."""
    return headline(result, st, tallies(result, st)[1])


def share_of(st) -> str:
    """The share link of the page's state (its dataset and commit or upload, threshold, review, tab
    and leakage check)."""
    return state.share_url(st["base"], st["request"], st["source"], st["threshold"], review_marks(st),
                           st.get("tab"), st.get("leak"), commit=st.get("commit"), apart=st.get("apart") or (),
                           splits=[tuple(x) for x in st.get("splits") or ()], keep=st.get("keep"))


def check_ngram(ngram) -> str | int:
    """The contamination scan's n-gram size from the form or a link: "auto" (blank too) or a whole
    number from 1 to MAX_NGRAM."""
    text = str(ngram).strip() if ngram is not None else ""
    if text.lower() in ("", "auto"):
        return "auto"
    if text.isdecimal() and len(text) < 4 and 1 <= int(text) <= MAX_NGRAM:   # (isdigit: "²", int() fails)
        return int(text)
    raise AuditorError("usage", f"N-gram size {text!r:.40} is not a whole number from 1 to {MAX_NGRAM}.",
                       "Leave it at auto (8 to 13 words, from the benchmark's item lengths) or use e.g. 13, "
                       "as GPT-3 did.")


def bench_side(bench, upload, text, token) -> dict | None:
    """The benchmark of the contamination scan: the uploaded file when there is one, else the bundled
    benchmark picked (None: neither). ``name``: shown; ``scan``/``text``: what scan_corpus reads;
    ``texts``: its items' texts (the evidence); ``link``: what a share link says."""
    bench = (bench or "").strip()
    if upload:
        src = state.upload_source(upload)
        # As the main upload: the same readers, byte budget (AUDITOR_MAX_BYTES) and row cap.
        tbl = auditor.load(src.value, None, None, max_rows=ROW_CAP, kind="local", default_split="test")
        if tbl.truncated:
            raise AuditorError("usage", f"The benchmark file {src.name!r:.120} holds more than {ROW_CAP:,} items: "
                               "the most this page checks.", "Upload the test set alone (or its first "
                               f"{ROW_CAP:,} items); the CLI's `auditor contamination --benchmark FILE` reads all.")
        try:
            roles = resolve_roles(tbl.rows, text=blank(text))
        except AuditorError as exc:
            if blank(text):
                raise in_source(exc, src.name) from None
            raise AuditorError(exc.code, f"{src.name}: no text field could be guessed in the benchmark file.",
                               "Name it in the box “Benchmark file: text field” (fields: "
                               f"{', '.join(available_fields(tbl.rows)[:20]) or '(none)'}).") from None
        if roles.text is None:
            raise AuditorError("missing_field", f"{src.name}: no text field found in the benchmark file.",
                               f"Name its text field in the box (fields: "
                               f"{', '.join(available_fields(tbl.rows)[:20]) or '(none)'}).")
        texts = text_column(tbl.rows, roles)     # several fields named: each item's joined, as the scan reads them
        if not any(isinstance(x, str) and x.strip() for x in texts):
            raise AuditorError("empty_input", f"{src.name}: the text field {roles.text!r:.80} is blank in every "
                               "item.", "Name the field that holds the benchmark's questions or prompts.")
        chars = sum(len(x) for x in texts if isinstance(x, str))
        if chars > BENCH_TEXT_CAP:      # the scan's n-gram index takes ~30 bytes a character (728 MiB: 21 GB)
            raise AuditorError("usage", f"{src.name}: the benchmark's texts total {chars / 1024 ** 2:,.0f} MiB, more "
                               f"than the {BENCH_TEXT_CAP // 1024 ** 2} MiB this page scans (a test set is far "
                               "smaller: GSM8K's is 0.3 MiB).", "Upload the test set alone; the CLI's `auditor "
                               "contamination --benchmark FILE` scans larger ones on a machine with the memory.")
        return {"name": src.name, "scan": src.value, "text": roles.text, "texts": texts, "link": src,
                "upload": True}
    if not bench:
        return None
    if bench.startswith("upload:"):
        raise AuditorError("usage", "No file in the benchmark's upload slot.",
                           "Upload the benchmark file under Contamination, or pick a bundled benchmark.")
    if bench not in BENCHMARKS:
        raise AuditorError("usage", f"{bench!r:.60} is not a bundled benchmark.",
                           f"Pick one of {', '.join(BENCHMARKS)}, or upload a benchmark file.")
    return {"name": bench, "scan": bench, "text": None, "texts": benchmark_texts(bench, token), "link": bench,
            "upload": False}


def b_side(b_table, req, b_text, result=None):
    """B prepared with A's roles where B has those fields, its own guess where it has not (B blank
    took A's: HumanEval as B of a GSM8K audit failed, "The text field 'question' is in no record").
    Which of A's fields B has is read from B's field names, so B's roles are resolved once (by
    ``prepare``), not probed role by role first. ``result``: A's audit, whose resolved roles are A's."""
    fields = set(available_fields(b_table.rows))
    tops = {str(k) for row in b_table.rows[:1000] for k in row}

    def has(name) -> bool:
        if not name:
            return False
        parts = [x.strip() for x in str(name).split(",") if x.strip()]
        return all(p in fields or re.split(r"[.\[]", p, maxsplit=1)[0] in tops for p in parts)

    text = b_text or (req.text if has(req.text) else None)
    answer = req.answer if has(req.answer) else None
    group = req.group if has(req.group) else None
    return prepare(b_table, text=text, answer=answer, group=group)


def b_roles_note(lr) -> str:
    """A line naming B's fields where they are not A's (B lacks A's, or was given its own)."""
    a, b = lr.a.roles, lr.b.roles
    other = [f"{role} **{views.md(getattr(b, role))}**" for role in ("text", "answer", "group")
             if getattr(b, role) != getattr(a, role) and getattr(b, role)]
    return f"  \nB's fields differ from A's: {', '.join(other)}." if other else ""


def leak_views(lr, t: float, a_src, b_src, st: dict) -> tuple[dict, dict]:
    """(the leak parts, the page's state with the evidence list and the headline's counts)."""
    rows = leak_evidence(lr)
    folder = state.new_folder("leak-" + secrets.token_hex(8))
    write_text(folder / "leak_evidence.csv", leak_evidence_csv(lr, rows, encoded=True))   # the CLI's evidence.csv
    b_split = lr.b.table.split or "b"
    clean_name = f"clean_{re.sub(r'[^A-Za-z0-9_.-]+', '_', b_split)}.jsonl"
    # What `auditor clean --near` keeps (clean.drop_reason): answer-only matches stay.
    clean_rows = lr.clean_b_rows(near=True)
    write_rows(clean_rows, folder / clean_name, "jsonl")
    summary = lr.summary()
    st = {**st, "evidence": {**(st.get("evidence") or {}),
                             "leak": {"id": evidence.keep_rows(rows), "kind": "any_leak", "search": "", "page": 0,
                                      "total": len(rows), "threshold": t, "a": a_src.name, "b": b_src.name}},
          "leak_tally": {"b_name": b_src.name, "text_leak": (summary.get("text_leak") or {}).get("records", 0),
                         "b_records": lr.b.records}}
    note = views.b_roles_html(lr) + views.leak_notes_html(summary)
    st["evidence"]["leak"].update({"note": note, "summary": summary})
    return {"leak_md": evidence.leak_summary_html(summary, t, a_src.name, b_src.name, "any_leak", note),
            **browse.leak_list(st),
            "dl_evidence": enabled(folder / "leak_evidence.csv",
                                   f"leak_evidence.csv · {browse.plural(len(rows), 'leaking record')}"),
            "dl_clean": enabled(folder / clean_name, f"{clean_name} · {len(clean_rows):,} of {lr.b.records:,} "
                                                     "B records")}, st


def benchmark_texts(bench: str, token) -> list:
    source, config, split, field = BENCHMARKS[bench]
    tbl = auditor.load(source, config, split, token=token, kind="example" if source.startswith("example:") else "hub")
    return extract(tbl.rows, resolve_roles(tbl.rows, text=field)).text


def contamination_views(result, bench, token, progress=None, fields=(), source=None, ngram="auto",
                        st: dict | None = None) -> tuple[dict, dict]:
    """(the contamination parts of A by ``bench`` (a bundled benchmark's name, or a ``bench_side``),
    the page's state with the evidence list and the headline's counts)."""
    side = bench if isinstance(bench, dict) else bench_side(bench, None, None, token)
    bench = side["name"]
    # A's texts from the cached audit; other fields as `auditor contamination --text a,b` reads them.
    # A guessed text is the CLI's guess for a corpus (an instruction layout's every field).
    spec = resolve_text_spec(result.table.rows, list(fields) if fields else (
        None if "text" in result.roles.guessed else result.roles.text))
    names = text_fields(spec)
    corpus = (list(result.fields.text) if spec == result.roles.text
              else [joined_text(row, names, i) for i, row in enumerate(result.table.rows)])
    matched: list = []
    scan_progress = (lambda f, text: progress(0.85 * f, text)) if progress is not None else None
    cr = scan_corpus(corpus, side["scan"], benchmark_text=side["text"], ngram=ngram, token=token,
                     progress=scan_progress, matched_rows=matched)
    rows = contamination_evidence(cr, side["texts"], corpus)
    by_item = {it["benchmark_row"]: it for it in cr.items}
    for r in rows:          # each match with its item's coverage and verdict (copied, or a shared phrase)
        it = by_item.get(r["benchmark_row"], {})
        r.update({"coverage": it.get("coverage", 0.0), "verdict": it.get("verdict", "phrase"),
                  "item_ngrams": it.get("item_ngrams", 0)})
    if progress is not None:
        progress(0.9, "writing the evidence and A without the contaminated records")
    folder = state.new_folder("contam-" + secrets.token_hex(8))
    write_text(folder / "contamination_evidence.csv", evidence_csv(rows))
    # A without the records that share an n-gram with the benchmark (what `--decontaminate` writes),
    # in A's own format, each kept record as read.
    dropped = set(np.concatenate(matched).tolist()) if matched else set()
    fmt = input_format(result.table)
    stem = state.download_stem(result.table.source)
    copy = folder / f"{stem}.decontaminated.{fmt}"
    upload = state.upload_file(source) if source is not None else None
    files = files_copied([upload], fmt) if upload is not None else None
    if files:
        # an upload's records as the CLI copies them: JSONL lines' bytes (escapes, number forms), CSV/TSV
        # records as written (delimiter, quoting, header, byte-order mark), Parquet rows as stored; a
        # row cap's first records only, as dedup copies them
        copier(fmt, result.table.truncated)(files, np.asarray(sorted(dropped), dtype=np.int64), len(result.table.rows), copy,
                    source=result.table.source)
    else:
        records = result.table.rows          # CSV: written in 2 passes
        write_rows(select(records, [i for i in range(len(records)) if i not in dropped]), copy, fmt=fmt)
    note = (f"\n\n**A without them** (download): {len(result.table.rows) - len(dropped):,} of "
            f"{len(result.table.rows):,} records, the {len(dropped):,} sharing a {cr.n}-gram with "
            f"{views.md(bench)} left out.")
    if result.table.truncated:      # a cut A: the download must not pass for the whole dataset
        arg = "FILE" if side["upload"] else bench      # (an uploaded name, escaped, would show its backslashes)
        note += (f" A was read only up to its first {len(result.table.rows):,} records (the row cap): the records "
                 f"after them are not in the download; `auditor contamination A --benchmark {arg} "
                 "--decontaminate OUT` copies all of A.")
    summary = cr.summary()
    items, short = (summary.get("benchmark") or {}).get("records"), (summary.get("too_short") or {}).get("records")
    # Every item shorter than the n-gram (numbers, one-word answers): nothing was checked, which the
    # status must say ("Checked contamination." alone passed for a clean benchmark).
    unchecked = (f"But none of the benchmark's {items:,} items could be checked: each has fewer than {cr.n} words "
                 f"(the n-gram size), so they are too short to check, not clean. Name the field holding its "
                 "questions or prompts, or lower the n-gram size." if items and short == items else None)
    copied = (summary.get("copied") or {}).get("records", 0)
    phrase = (summary.get("phrase_only") or {}).get("records", 0)
    st = {**(st or {}), "contam_tally": {"bench": bench, "copied": copied, "phrase": phrase, "items": items or 0}}
    st["evidence"] = {**(st.get("evidence") or {}),
                      "contam": {"id": evidence.keep_rows(rows), "kind": "all", "sort": "coverage", "search": "",
                                 "page": 0, "total": len(rows)}}
    kept = len(result.table.rows) - len(dropped)
    return {"contam_md": views.contamination_markdown(summary, bench, names) + note,
            **browse.contam_list(st),
            "contam_kind": gr.update(choices=contam_choices(summary), value="all"),
            "dl_contam": enabled(folder / "contamination_evidence.csv",
                                 f"contamination_evidence.csv · {browse.plural(len(rows), 'match')}"),
            "dl_decontam": enabled(copy, f"{copy.name} · {kept:,} of {len(result.table.rows):,} records"),
            "contam_unchecked": unchecked}, st


def contam_choices(summary: dict | None) -> list:
    """The contamination filter's choices, with their counts once a scan has run."""
    if not summary:
        return [(label, key) for key, label in evidence.CONTAM_KINDS.items()]
    counts = {"all": (summary.get("contaminated") or {}).get("records", 0),
              "copied": (summary.get("copied") or {}).get("records", 0),
              "phrase": (summary.get("phrase_only") or {}).get("records", 0)}
    return [(f"{label} ({counts[key]:,} items)", key) for key, label in evidence.CONTAM_KINDS.items()]


def evidence_event(st, which: str, act=None, value=None, search=None, sort=None) -> dict:
    """An evidence list: a page, a kind picked (a summary row, or the filter), a search, a sort."""
    if not st or which not in ("leak", "contam"):
        return {}
    view = dict(((st.get("evidence") or {}).get(which)) or {})
    if not view:
        return {}
    if act == "page":
        try:
            view["page"] = max(0, int(value))
        except (TypeError, ValueError):
            return {}
    elif act == "kind":
        kinds = evidence.LEAK_KINDS if which == "leak" else evidence.CONTAM_KINDS
        view.update({"kind": value if value in kinds else ("any_leak" if which == "leak" else "all"), "page": 0})
    if search is not None:
        view.update({"search": str(search).strip()[:200], "page": 0 if search != view.get("search") else
                     view.get("page", 0)})
    if sort in evidence.CONTAM_SORTS:
        view["sort"] = sort
    st = {**st, "evidence": {**(st.get("evidence") or {}), which: view}}
    if which == "leak":
        out = browse.leak_list(st)
        out["leak_md"] = gr.skip()
        return {"state": st, **out, **leak_summary_part(st)}
    return {"state": st, **browse.contam_list(st)}


def leak_summary_part(st) -> dict:
    """The leak summary again, its chosen row marked (the rows are the list's filters)."""
    view = (st.get("evidence") or {}).get("leak") or {}
    summary = view.get("summary")
    if summary is None:
        return {}
    return {"leak_md": evidence.leak_summary_html(summary, view["threshold"], view["a"], view["b"],
                                                  view.get("kind") or "any_leak", view.get("note", ""))}





# --------------------------------------------------------------------------- paraphrases (semantic)

PARA_EXPIRED = "This paraphrase search has expired from the cache: press **Find paraphrases** again."


def semantic_ready() -> bool:
    """Whether the semantic extra (model and runtime) is installed: the view is offered only then."""
    return semantic.available()


def cleared_paraphrases() -> dict:
    return {"para_status": "", "para_md": "", "para_plot": gr.update(value=None, visible=False),
            "para_evidence": "", "dl_para": disabled(), "para_state": None, "para_search": ""}


def check_cosine(value) -> float:
    """The semantic threshold from the slider: a margin score in [0, 1] (blank: the calibrated default)."""
    try:
        t = round(float(DEFAULT_THRESHOLD if value in (None, "") else value), 4)
    except (TypeError, ValueError, OverflowError):
        raise AuditorError("usage", f"Semantic threshold {value!r:.40} is not a number.",
                           f"Use a margin score such as the default {DEFAULT_THRESHOLD:g}.") from None
    if not 0.0 <= t <= 1.0:        # (NaN fails this too)
        raise AuditorError("usage", f"Semantic threshold {t:g} is outside [0, 1].",
                           f"Use a margin score such as the default {DEFAULT_THRESHOLD:g}.")
    return t


def paraphrases(st, b_dataset, b_config, b_split, b_text, b_upload, allow_self, bench, threshold, token,
                progress=None) -> dict:
    """The semantic pass: the benchmark items (B, or a bundled benchmark) against the audited A from
    the cache; each item's best A match by cosine, and the items at or above ``threshold`` side by
    side. Bounded: at most SEMANTIC_ITEMS items against SEMANTIC_RECORDS A records, said so when cut."""
    out = cleared_paraphrases()
    if not st:
        return {**out, **error("Run an audit first: it is dataset **A**.", "para_status")}
    result = CACHE.get(st["key"])
    if result is None:
        return {**out, **error(EXPIRED, "para_status")}
    try:
        t = check_cosine(threshold)
        token = user_token(token)
        if not semantic.available():
            semantic.load_model()                       # raises the "not installed" error with its hint
        items_cap, records_cap = state.SEMANTIC_ITEMS, state.SEMANTIC_RECORDS
        private, field_note = (), ""
        if bench:
            if bench not in BENCHMARKS:
                raise AuditorError("usage", f"{bench!r} is not a bundled benchmark.",
                                   f"Pick one of {', '.join(BENCHMARKS)}.")
            texts = benchmark_texts(bench, token)
            cut_items, texts, name, side = len(texts) > items_cap, texts[:items_cap], bench, ("bundled", bench)
        else:
            b_src = b_source(b_dataset, b_upload)
            if b_src is None:
                raise AuditorError("usage", "No benchmark side chosen.", "Give B a dataset id, a bundled example "
                                   "or a file above, or pick a bundled benchmark for this view.")
            b_table = load_b(st, result, b_src, b_config, b_split, allow_self, items_cap, token)
            # B's own text field; blank: A's, when B has it, else guessed (the status names it)
            field = blank(b_text) or st["request"].text
            if not blank(b_text) and field not in available_fields(b_table.rows):
                field = None
            roles = resolve_roles(b_table.rows, text=field)
            texts = extract(b_table.rows, roles).text
            cut_items = b_table.truncated
            where = " / ".join(x for x in (b_table.config, b_table.split) if x and b_src.kind != "upload")
            name = b_src.name + (f" ({where})" if where else "")
            field_note = f" (text field **{views.md(roles.text)}**)"
            side = (b_src.kind, b_src.value, b_src.stamp, b_table.config, b_table.split, roles.text)
            if token and b_src.kind == "hub":
                private = (("private", secrets.token_hex(8)),)   # maybe private data: this page only
        corpus = list(result.fields.text[:records_cap])
        notices = []
        if cut_items:
            notices.append(f"Only the first {items_cap:,} benchmark items were checked: the app's cap on this view "
                           "(`auditor contamination --semantic` checks every item).")
        if result.records > records_cap:
            notices.append(f"Only the first {records_cap:,} of A's {result.records:,} records were searched: the "
                           "app's cap on this view (the CLI searches every record).")
        key = (st["key"], side, len(texts), len(corpus), semantic.DEFAULT_MODEL) + private
        sr = state.SEMANTIC.get(key)
        cached = sr is not None
        if sr is None:
            sr = workers.run(semantic.semantic_search, texts, corpus, threshold=t, k=state.SEMANTIC_K,
                             candidates=state.SEMANTIC_CANDIDATES, progress=progress)
            size = sum(len(x or "") for x in sr.benchmark_texts) + sum(len(x) for x in sr.corpus_texts.values())
            state.SEMANTIC.put(key, sr, nbytes=2 * size + 200 * len(texts) * sr.k)
        pst = {"key": key, "threshold": t, "bench": name, "a": st["source"].name, "notices": notices}
        out.update(paraphrase_views(sr, pst))
        how = "from the cache" if cached else "embedded and searched"
        message = (f"Checked {len(texts):,} benchmark items of **{views.md(name)}**{field_note} against "
                   f"{len(corpus):,} records of A ({how}).")
        out["para_status"] = gr.update(value=message, elem_classes=["ok"])
        return out
    except Exception as exc:  # noqa: BLE001
        return {**cleared_paraphrases(), **error(views.error_text(exc, "search for paraphrases"), "para_status")}


def paraphrase_threshold(pst, threshold) -> dict:
    """A new semantic threshold: the flagged pairs, histogram line and CSV re-filtered from the
    cached result (nothing is embedded again)."""
    if not pst:
        return {}
    sr = state.SEMANTIC.get(pst["key"])
    if sr is None:
        return error(PARA_EXPIRED, "para_status")
    try:
        return paraphrase_views(sr, {**pst, "threshold": check_cosine(threshold)})
    except AuditorError as exc:
        return error(views.error_text(exc, "re-filter"), "para_status")


def flagged_pairs(sr, threshold: float) -> list:
    """The flagged items at ``threshold`` (``SemanticResult.flagged``) with both texts: the CSV's rows."""
    return [{**it, "benchmark_text": sr.benchmark_texts[it["benchmark_row"]] or "",
             "corpus_text": sr.corpus_texts.get(it["corpus_row"]) or ""} for it in sr.flagged(threshold)]


def paraphrase_views(sr, pst: dict) -> dict:
    """Every part of the view at ``pst``'s threshold; the list starts again on its first page."""
    t = pst["threshold"]
    pst = {**pst, "page": 0}
    rows = flagged_pairs(sr, t)
    path = state.folder_for("paraphrases", pst["key"], t) / "paraphrases.csv"
    columns = ["benchmark_row", "corpus_row", "score", "margin", "second", "gap", "anchors", "background",
               "benchmark_text", "corpus_text"]
    write_text(path, evidence_csv(rows, columns) if rows else ",".join(columns) + "\r\n")
    return {"para_state": pst,
            "para_md": views.paraphrase_markdown(sr, t, len(rows), pst["bench"], pst["a"], pst["notices"]),
            "para_plot": gr.update(value=views.paraphrase_figure(sr.distribution(), t, sr.gap()), visible=True),
            "para_evidence": browse.para_list(rows, pst, t),
            "dl_para": enabled(path)}


def paraphrase_list_event(pst, act=None, value=None, search=None) -> dict:
    """The flagged list: a page (a pager button), a search, or "show all" (the search cleared)."""
    if not pst:
        return {}
    sr = state.SEMANTIC.get(pst["key"])
    if sr is None:
        return error(PARA_EXPIRED, "para_status")
    view = dict(pst)
    if act == "page":
        try:
            view["page"] = max(0, int(value))
        except (TypeError, ValueError):
            return {}
    elif act == "kind":                       # "show all": the pager's way out of a search
        view.update({"search": "", "page": 0})
    if search is not None:
        words = str(search).strip()[:200]
        view.update({"search": words, "page": 0 if words != view.get("search") else view.get("page", 0)})
    out = {"para_state": view, "para_evidence": browse.para_list(flagged_pairs(sr, view["threshold"]), view,
                                                                 view["threshold"])}
    if act == "kind":
        out["para_search"] = ""
    return out
