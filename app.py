"""Dataset Integrity Auditor: the Gradio Space.

A thin shell over the ``auditor`` library: it reads the form, calls the library and renders
what comes back. No analysis happens here.

    python app.py            # serves on 127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT)

Everything shown comes from untrusted data, so every value is escaped before it reaches
Markdown or HTML (``md`` / ``h`` below); tables and JSON go through components that show text.
"""
from __future__ import annotations

import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"   # before gradio is imported
# Every hub call passes the visitor's token or token=False (``user_token``); this second guard makes
# huggingface_hub itself refuse to fall back on the server's HF_TOKEN or saved login (read at import).
os.environ["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"

import atexit  # noqa: E402
import csv  # noqa: E402
import difflib  # noqa: E402
import hashlib  # noqa: E402
import html  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import secrets  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections import OrderedDict  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import urlencode  # noqa: E402

import gradio as gr  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
from plotly.subplots import make_subplots  # noqa: E402

import auditor  # noqa: E402
from auditor import AuditorError  # noqa: E402
from auditor.audit import DEFAULT_THRESHOLDS  # noqa: E402
from auditor.clusters import cluster_labels  # noqa: E402
from auditor.near.result import STRATUM_CAP  # noqa: E402
from auditor.contamination import BENCHMARKS, contamination  # noqa: E402
from auditor.hub import describe  # noqa: E402  (imports `datasets` only when called)
from auditor.leakage import leak  # noqa: E402
from auditor.outputs import atomic_write, write_text  # noqa: E402
from auditor.report import EXACT_KINDS, md_cell, overview_rows, pct, plural, roles_rows, to_json  # noqa: E402
from auditor.roles import available_fields, resolve_roles  # noqa: E402
from auditor.env import env_bytes, env_int  # noqa: E402
from auditor.sources import HUB_ID, SUPPORTED_SUFFIXES, example_layout, example_names  # noqa: E402

log = logging.getLogger("auditor.app")

ROW_CAP = env_int("AUDITOR_MAX_ROWS", 200_000, 1, sys.maxsize)   # rows read per dataset, at most
CACHE_SIZE = 32                # audited results kept in memory (the expensive pairs included), at most ...
CACHE_BYTES = env_bytes("AUDITOR_CACHE_BYTES", 2 * 1024 ** 3)   # ... and within this many (estimated) bytes
PAIR_ROWS = 500                # pairs listed in the table
CSV_PAIRS = STRATUM_CAP        # pairs written to pairs.csv: the best ones, exact up to the engine's sample
CLUSTER_ROWS = 200             # members listed for one cluster
SNIPPET = 160                  # characters of a text shown in a table cell
DETAIL_CHARS = 6000            # characters of a record shown in the side-by-side view
MIN_THRESHOLD = min(DEFAULT_THRESHOLDS)   # the lowest threshold the audit searches (the curve's floor)
DEFAULTS = {"dataset": "example:gsm8k", "config": "main", "split": "train", "text": "question",
            "answer": "answer", "group": "", "labels": [], "threshold": 0.7}
FILES_DIR = Path(tempfile.mkdtemp(prefix="auditor-app-"))   # download files; removed at exit
KEEP_FOLDERS = 256
atexit.register(shutil.rmtree, FILES_DIR, ignore_errors=True)


# --------------------------------------------------------------------------- escaping

def h(value) -> str:
    """Data for HTML: escaped, and with the characters of Gradio's HTML templates neutralised."""
    text = html.escape("" if value is None else str(value), quote=True)
    return text.replace("{", "&#123;").replace("}", "&#125;").replace("$", "&#36;").replace("`", "&#96;")


def md(value, limit: int | None = 200) -> str:
    """Data for Markdown: renders as the literal text (md_cell escapes markup, tables and HTML)."""
    text = "" if value is None else str(value)
    if limit is None:
        # md_cell cuts at 200 characters after escaping (which at most doubles a piece): 100 at a time.
        return "".join(md_cell(text[i:i + 100]) for i in range(0, len(text), 100))
    return md_cell(text[:limit]) + ("…" if len(text) > limit else "")


def snippet(value, limit: int = SNIPPET) -> str:
    text = " ".join(("" if value is None else str(value)).split())
    return text[:limit] + ("…" if len(text) > limit else "")


def shown(frame: pd.DataFrame) -> dict:
    """A table update that hides the table while it has no rows."""
    return gr.update(value=frame, visible=not frame.empty)


# --------------------------------------------------------------------------- sources and cache

@dataclass(frozen=True)
class Source:
    kind: str        # "example", "hub" or "upload"
    value: str       # what the library loads (for an upload: Gradio's temp path, never shown)
    name: str        # what the page shows
    stamp: tuple = ()


def resolve_source(dataset, upload=None) -> Source:
    """The dataset field -> a source. Only bundled examples, hub ids and this session's upload:
    a path on the server is never accepted."""
    dataset = (dataset or "").strip()
    if dataset.startswith("upload:"):
        if not upload:
            raise AuditorError("usage", "No uploaded file: upload a JSONL, JSON, CSV or Parquet file again.",
                               "Uploaded files are kept for this page only and cannot be shared by link.")
        path = Path(upload if isinstance(upload, str) else getattr(upload, "name", str(upload)))
        try:
            stat = path.stat()
            stamp = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            raise AuditorError("not_found", f"The uploaded file {path.name!r} is gone.", "Upload it again.") from None
        return Source("upload", str(path), path.name, stamp)
    if not dataset:
        raise AuditorError("usage", "No dataset given.",
                           "Type a Hugging Face dataset id (e.g. openai/gsm8k), pick a bundled example, "
                           "or upload a file.")
    if dataset.startswith("example:"):
        return Source("example", dataset, dataset)
    if not hub_like(dataset):
        raise AuditorError("not_found", f"{dataset!r} is not a Hugging Face dataset id.",
                           "Use an id like 'openai/gsm8k', pick a bundled example (example:gsm8k), "
                           "or upload a file.")
    return Source("hub", dataset, dataset)


def hub_like(dataset: str) -> bool:
    """Whether ``dataset`` may be a hub id, decided from the text alone. Never from the server's
    files: if a path of that name existing on the server changed the answer, the page would tell
    visitors which paths exist. A hub-like id is then read from the hub only (kind="hub"), so
    every id that is not a bundled example gets one of two answers, whatever the server holds."""
    if not HUB_ID.match(dataset) or ".." in dataset:
        return False
    if dataset.lower().endswith(SUPPORTED_SUFFIXES + tuple(s + ".gz" for s in SUPPORTED_SUFFIXES) + (".gz",)):
        return False                       # a data file's name
    return "/" in dataset or "." not in dataset   # "app.py", "README.md": a file name, not a dataset


class ResultCache:
    """An LRU of audit results keyed on the inputs (never the token), bounded by the estimated
    bytes of what it holds (``result_bytes``) and by a number of entries. The newest result is
    always kept, whatever its size: the page re-thresholds from it."""

    def __init__(self, max_bytes: int, size: int = 64):
        self.max_bytes, self.size = max_bytes, size
        self._items: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self.bytes = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key, value, nbytes: int | None = None) -> None:
        nbytes = result_bytes(value) if nbytes is None else nbytes
        with self._lock:
            self.bytes += nbytes - self._sizes.get(key, 0)
            self._items[key], self._sizes[key] = value, nbytes
            self._items.move_to_end(key)
            while len(self._items) > 1 and (self.bytes > self.max_bytes or len(self._items) > self.size):
                old, _ = self._items.popitem(last=False)
                self.bytes -= self._sizes.pop(old)


def result_bytes(result) -> int:
    """Estimated memory of a ScanResult: its rows (JSON size of a sample, times 3 for Python's
    objects and the extracted field texts) plus every numpy array it keeps (pairs, keys, groups)."""
    rows = getattr(getattr(result, "table", None), "rows", None) or []
    sample = rows[:: max(1, len(rows) // 200)][:200]
    per_row = sum(len(json.dumps(r, ensure_ascii=False, default=str)) for r in sample) / max(1, len(sample))
    return int(len(rows) * (3 * per_row + 300)) + _array_bytes(result)


def _array_bytes(obj, depth: int = 0) -> int:
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if depth > 4 or isinstance(obj, (str, bytes, int, float)):
        return 0
    if hasattr(obj, "__dataclass_fields__"):
        values = [getattr(obj, f, None) for f in obj.__dataclass_fields__ if f not in ("table", "fields")]
    elif isinstance(obj, dict):
        values = list(obj.values())
    elif isinstance(obj, (list, tuple)) and len(obj) <= 1000:
        values = list(obj)
    elif hasattr(obj, "__dict__"):
        values = list(vars(obj).values())
    else:
        return 0
    return sum(_array_bytes(v, depth + 1) for v in values)


CACHE = ResultCache(CACHE_BYTES, CACHE_SIZE)


@dataclass(frozen=True)
class Request:
    """One audit request as typed in the form (blank = guess / default)."""
    dataset: str
    config: str | None
    split: str | None
    text: str | None
    answer: str | None
    group: str | None
    labels: tuple
    threshold: float
    max_rows: int | None


def user_token(value) -> str | bool:
    """The token for one request: the one typed in the page, else False, which tells the library
    (and the hub clients under it) to send no token at all. Never None: that would mean "this
    machine's token", i.e. the HF_TOKEN of the server, lent to every visitor."""
    return (value.strip() or False) if isinstance(value, str) else False


def _blank(value):
    """A form value, stripped; blank -> None."""
    if isinstance(value, str):
        return value.strip() or None
    return value


def make_request(dataset, config, split, text, answer, group, labels, threshold, max_rows) -> Request:
    try:
        t = round(float(threshold if threshold not in (None, "") else 0.7), 4)
    except (TypeError, ValueError):
        raise AuditorError("usage", f"Threshold {threshold!r} is not a number.",
                           "Use a Jaccard threshold such as 0.7.") from None
    if not (MIN_THRESHOLD <= t <= 1.0):
        raise AuditorError("usage", f"Threshold {t:g} is outside [{MIN_THRESHOLD:g}, 1].",
                           f"Jaccard thresholds here run from {MIN_THRESHOLD:g} (loose) to 1 (identical shingles).")
    cap = None
    if max_rows not in (None, "", 0):
        try:
            try:
                value = float(max_rows.strip() if isinstance(max_rows, str) else max_rows)
            except OverflowError:          # a whole number too large for a float
                value = math.inf
            if isinstance(max_rows, bool) or math.isnan(value) or (math.isfinite(value) and value != int(value)):
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            raise AuditorError("usage", f"Max rows {max_rows!r:.40} is not a whole number.",
                               "Leave it blank to read every row.") from None
        if value < 1:
            raise AuditorError("usage", "Max rows must be at least 1.", "Leave it blank to read every row.")
        # Beyond what the app reads at most (infinity included): the app's cap, which the page states.
        cap = int(value) if value <= ROW_CAP else ROW_CAP
    if isinstance(labels, str):
        labels = [x for x in labels.split(",")]
    labels = tuple(x.strip() for x in (labels or []) if x and x.strip())
    return Request((dataset or "").strip(), _blank(config), _blank(split), _blank(text), _blank(answer),
                   _blank(group), labels, t, cap)


def run_audit(req: Request, upload=None, token=None, progress=None):
    """(result, source, cache key, seconds, cached) for a request; the library does the work."""
    token = user_token(token)
    src = resolve_source(req.dataset, upload)
    cap = min(req.max_rows or ROW_CAP, ROW_CAP)
    key = (src.kind, src.value, src.stamp, req.config, None if src.kind == "upload" else req.split, req.text,
           req.answer, req.group, req.labels, req.threshold, cap)
    if token:
        # A result read with a token may be private: it is kept for this page only, never shared.
        key = key + (("private", secrets.token_hex(8)),)
    hit = CACHE.get(key)
    if hit is not None:
        return hit, src, key, 0.0, True
    started = time.perf_counter()
    result = auditor.scan(src.value, config=req.config if src.kind != "upload" else None,
                          split=req.split if src.kind != "upload" else None,
                          text=req.text, answer=req.answer, group=req.group, labels=list(req.labels) or None,
                          settings=auditor.ScanSettings(threshold=req.threshold), max_rows=cap,
                          token=token, progress=progress,
                          kind={"example": "example", "hub": "hub", "upload": "local"}[src.kind])
    CACHE.put(key, result)
    return result, src, key, time.perf_counter() - started, False


def share_url(base: str, req: Request, src: Source | None, threshold: float | None = None) -> str:
    if src is not None and src.kind == "upload":
        return "Uploaded files cannot be shared by link: publish the file (e.g. on the Hub) and audit it by id."
    params = {"dataset": req.dataset, "config": req.config, "split": req.split, "text": req.text,
              "answer": req.answer, "group": req.group, "labels": ",".join(req.labels) or None,
              "threshold": f"{threshold if threshold is not None else req.threshold:g}",
              "max_rows": req.max_rows}
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{base.rstrip('/')}/?{query}"


def base_url(request: gr.Request | None) -> str:
    """The page's public address: the request's base URL, or what a proxy (a Space) says it is."""
    try:
        url, headers = str(request.request.base_url), request.request.headers
    except AttributeError:
        return "/"
    host = (headers.get("x-forwarded-host") or "").split(",")[0].strip()
    if host:
        url = f"http://{host}/"
    if (headers.get("x-forwarded-proto") or "").split(",")[0].strip() == "https":
        url = url.replace("http://", "https://", 1)
    return url


def error_text(exc: BaseException) -> str:
    if isinstance(exc, AuditorError):
        hint = f"  \n*{md(exc.hint, None)}*" if exc.hint else ""
        return f"**Could not audit:** {md(exc.message, None)}{hint}"
    log.exception("unexpected error in the app")
    return (f"**Something went wrong** ({md(type(exc).__name__)}). The audit could not finish; "
            "check the inputs and try again.")


def progress_adapter(progress):
    if progress is None:
        return None
    return lambda fraction, stage: progress(max(0.0, min(1.0, float(fraction))), desc=str(stage))


# --------------------------------------------------------------------------- rendering: overview

def stat_cards(result, near) -> str:
    n = result.records
    text_dup = result.exact.get("text")
    cards = [("records", f"{n:,}"),
             ("exact-duplicate texts", f"{text_dup.redundant:,}" if text_dup else "–"),
             (f"near-duplicate pairs at ≥ {near.threshold:g}", f"{near.pairs:,}"),
             ("near-duplicate clusters", f"{near.clusters:,}"),
             ("records in clusters", f"{near.records_in_clusters:,} ({pct(near.records_in_clusters, n)})")]
    body = "".join(f"<div class='stat'><div class='v'>{h(v)}</div><div class='l'>{h(label)}</div></div>"
                   for label, v in cards)
    return f"<div class='stat-cards'>{body}</div>"


def overview_markdown(result, threshold: float) -> str:
    d = result.summary(threshold)
    inp, near, ex, n = d["input"], d["near_duplicates"], d["exact_duplicates"], d["input"]["records"]
    where = " · ".join(f"{k} **{md(inp[k])}**" for k in ("config", "split") if inp[k])
    lines = [f"### {md(inp['source'])}", "",
             f"{n:,} records{' · ' + where if where else ''} · fingerprint {md(inp['fingerprint'])}", ""]
    if inp["truncated"]:
        lines += [f"> **Row cap:** only the first {inp['row_cap']:,} records were read; the dataset has more. "
                  "Every figure describes that prefix.", ""]
    for notice in inp["notices"]:
        lines += [f"> {md(notice, None)}", ""]
    if near["giant_cluster"]:
        g = near["giant_cluster"]
        lines += [f"> **Giant cluster:** one cluster holds {g['records']:,} records ({100 * g['share']:.1f}% of the "
                  "data), usually a shared template or boilerplate. Inspect it (Near-duplicate pairs tab) before "
                  f"trusting per-cluster counts. Sample rows: {', '.join(map(str, g['sample_rows']))}.", ""]
    # The overview and roles tables are REPORT.md's (auditor.report); only the escaping is ours.
    lines += ["| check | result |", "|---|---|"]
    lines += [f"| {md(check)} | {md(value)} |" for check, value in overview_rows(d)]
    lines += ["", "#### Roles", "", "| role | field | |", "|---|---|---|"]
    lines += [f"| {role} | {md(field) or '–'} | {note} |" for role, field, note in roles_rows(d)]
    m = d["method"]
    lines += ["", "#### Method", ""]
    if m["near_duplicates"] == "exact-all-pairs":
        lines.append(f"Near duplicates: **exact all-pairs** search over {m['distinct_texts']:,} distinct texts; "
                     f"{m['candidates']:,} candidate pairs scored. Expected recall: **1.0** at every threshold "
                     "(nothing is missed).")
    else:
        s = d["settings"]
        recall = " · ".join(f"{t}: {p:.3f}" for t, p in m["expected_recall"].items())
        lines.append(f"Near duplicates: **MinHash-LSH** ({s['num_perm']} permutations, {s['bands']} bands × "
                     f"{s['rows']} rows, seed {s['seed']}) over {m['distinct_texts']:,} distinct texts; "
                     f"{m['candidates']:,} candidates verified with their exact Jaccard. Expected recall of a pair "
                     f"exactly at each threshold: {recall}. Counts are lower bounds.")
    sh, answers = d["settings"]["shingle"], d["settings"]["answer_normalizer"]
    lines.append(f"  \nShingles: {md(sh['unit'])} {sh['size']}-grams; normaliser {md(d['settings']['normalizer'])}"
                 f"{', answers ' + md(answers) if answers else ''}."
                 " Overlap is lexical: paraphrases and translations are not detected.")
    if d["schema"]["issues"]:
        lines += ["", "#### Schema issues", "", "| field | issue | records | expected | found | rows |",
                  "|---|---|---|---|---|---|"]
        for i in d["schema"]["issues"][:20]:
            found = ", ".join(f"{md(k)}: {v}" for k, v in i["found"].items()) or "absent"
            lines.append(f"| {md(i['field'])} | {md(i['kind'])} | {i['records']:,} | {md(i['expected'])} | {found} | "
                         f"{', '.join(map(str, i['rows_sample'][:8]))} |")
    examples = [(label, ex[name]) for name, label in EXACT_KINDS if ex.get(name) and ex[name]["examples"]]
    if examples:
        text = result.fields.text
        lines += ["", "#### Exact-duplicate examples", "", "| duplicates of | rows | text (first row) |",
                  "|---|---|---|"]
        for label, g in examples:
            for rows in g["examples"][:3]:
                shown = ", ".join(map(str, rows[:8])) + (" …" if len(rows) > 8 else "")
                lines.append(f"| {label} | {shown} | {md(snippet(text[rows[0]], 120))} |")
    if d["label_conflicts"]:
        lc = d["label_conflicts"]
        lines += ["", f"**Label conflicts:** {lc['groups']:,} texts carry different labels "
                      f"({lc['records']:,} records)."]
    return "\n".join(lines)


# --------------------------------------------------------------------------- rendering: curve, pairs

def curve_figure(result, threshold: float) -> go.Figure:
    pts = result.curve
    x = [p.threshold for p in pts]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[p.clusters_per_1000 for p in pts], name="clusters per 1,000 records",
                             mode="lines+markers", line=dict(color="#4f46e5", width=3), marker=dict(size=8),
                             customdata=[[p.clusters, p.pairs] for p in pts],
                             hovertemplate="Jaccard ≥ %{x}<br>%{y:.2f} clusters per 1,000 records"
                                           "<br>%{customdata[0]:,} clusters<extra></extra>"),
                  secondary_y=False)
    fig.add_trace(go.Bar(x=x, y=[p.pairs for p in pts], name="near-duplicate pairs (right axis)",
                         marker=dict(color="rgba(245, 158, 11, 0.35)", line=dict(color="#f59e0b", width=1)),
                         width=0.05, hovertemplate="%{y:,} pairs<extra></extra>"),
                  secondary_y=True)
    fig.data = fig.data[::-1]   # bars behind the line
    fig.add_vline(x=threshold, line=dict(color="#9ca3af", dash="dash"),
                  annotation_text=f"selected {threshold:g}", annotation_position="top")
    fig.update_xaxes(title_text="Jaccard threshold (looser to the right)", autorange="reversed", dtick=0.1)
    fig.update_yaxes(title_text="clusters per 1,000 records", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="near-duplicate pairs", rangemode="tozero", showgrid=False, secondary_y=True)
    fig.update_layout(template="plotly_white", height=400, margin=dict(l=60, r=60, t=40, b=60),
                      legend=dict(orientation="h", yanchor="bottom", y=1.04, x=0), hovermode="x unified")
    return fig


def curve_table(result) -> pd.DataFrame:
    return pd.DataFrame([{"threshold": p.threshold, "pairs": p.pairs, "clusters": p.clusters,
                          "clusters per 1,000": p.clusters_per_1000,
                          "jump vs previous": "–" if p.jump_vs_previous is None else f"{p.jump_vs_previous:.2f}×"}
                         for p in result.curve])


def counts_markdown(result, threshold: float) -> str:
    near = result.near_duplicates(threshold)
    return (f"**At Jaccard ≥ {threshold:g}:** {plural(near.pairs, 'near-duplicate pair')} · "
            f"{plural(near.clusters, 'cluster')} ({near.identical_clusters:,} identical, "
            f"{plural(near.variant_clusters, 'variant')}) · "
            f"{plural(near.records_in_clusters, 'record')} in clusters · "
            f"largest cluster {near.largest_cluster:,}")


PAIR_HEADERS = ["a", "b", "jaccard", "text a", "text b"]


def pairs_frame(result, threshold: float) -> pd.DataFrame:
    text = result.fields.text
    rows = [[a, b, round(j, 4), snippet(text[a]), snippet(text[b])]
            for a, b, j in result.pairs.record_pair_sample(threshold, PAIR_ROWS)]
    return pd.DataFrame(rows, columns=PAIR_HEADERS)


def pairs_caption(result, threshold: float) -> str:
    total = result.pairs.record_pairs(threshold)
    shown = min(total, PAIR_ROWS)
    if not total:
        return (f"No near-duplicate pairs at Jaccard ≥ {threshold:g}. Lower the threshold on the curve tab to "
                "look further.")
    return (f"{plural(total, 'pair')} at Jaccard ≥ {threshold:g}"
            + (f"; the top {shown:,} are listed" if total > shown else "")
            + ". **Select a row** to compare the two records word by word. Rows are 0-based record positions.")


_TOKEN = re.compile(r"\s+|[^\s]+")


def diff_html(a: str, b: str) -> tuple[str, str]:
    """Both texts as escaped HTML, with the words one has and the other lacks marked."""
    ta, tb = _TOKEN.findall(a[:DETAIL_CHARS]), _TOKEN.findall(b[:DETAIL_CHARS])
    wa = [t for t in ta if not t.isspace()]
    wb = [t for t in tb if not t.isspace()]
    only_a, only_b = set(), set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op != "equal":
            only_a.update(range(i1, i2))
            only_b.update(range(j1, j2))

    def render(tokens, marked, cls):
        out, k = [], 0
        for t in tokens:
            if t.isspace():
                out.append(h(t))
                continue
            out.append(f"<mark class='{cls}'>{h(t)}</mark>" if k in marked else h(t))
            k += 1
        return "".join(out)

    more_a = "<span class='cut'> … (cut)</span>" if len(a) > DETAIL_CHARS else ""
    more_b = "<span class='cut'> … (cut)</span>" if len(b) > DETAIL_CHARS else ""
    return render(ta, only_a, "only-a") + more_a, render(tb, only_b, "only-b") + more_b


def pair_detail_html(result, a: int, b: int, jaccard) -> str:
    f = result.fields
    roles = result.roles
    parts = [f"<div class='pair-head'>Record <b>{h(a)}</b> vs record <b>{h(b)}</b> · Jaccard <b>{h(jaccard)}</b>"
             "<span class='legend'><mark class='only-a'>only in a</mark> <mark class='only-b'>only in b</mark>"
             "</span></div>"]
    for label, values in ((f"text ({roles.text})", f.text), (f"answer ({roles.answer})", f.answer),
                          (f"group ({roles.group})", f.group)):
        if values is None:
            continue
        left, right = diff_html(values[a] or "", values[b] or "")
        parts.append(f"<div class='field-name'>{h(label)}</div><div class='pair-view'>"
                     f"<div class='rec'><div class='rec-id'>a · record {h(a)}</div>{left}</div>"
                     f"<div class='rec'><div class='rec-id'>b · record {h(b)}</div>{right}</div></div>")
    return "<div class='pair-detail'>" + "".join(parts) + "</div>"


def cluster_view(result, record: int, threshold: float) -> tuple[str, pd.DataFrame]:
    label, sizes = cluster_labels(result.pairs, threshold)
    cid = int(label[record])
    if cid < 0:
        return f"Record {record} is in no cluster at Jaccard ≥ {threshold:g}.", pd.DataFrame()
    members = np.flatnonzero(label == cid)
    f = result.fields
    rows = []
    for r in members[:CLUSTER_ROWS].tolist():
        row = {"record": r, "text": snippet(f.text[r])}
        if f.answer is not None:
            row["answer"] = snippet(f.answer[r], 80)
        if f.group is not None:
            row["group"] = snippet(f.group[r], 40)
        rows.append(row)
    more = f"; the first {CLUSTER_ROWS} are listed" if members.size > CLUSTER_ROWS else ""
    return (f"**Cluster {cid}** at Jaccard ≥ {threshold:g}: {members.size:,} records{more}.", pd.DataFrame(rows))


# --------------------------------------------------------------------------- rendering: concentration

def concentration_view(result):
    conc = result.concentration
    if conc is None:
        return (None, "No group field chosen. Pick one (e.g. `db_id`, `subject`, `source`) under **Group** and run "
                      "the audit to see how much of the data its largest groups hold.", pd.DataFrame())
    top = conc.top
    labels = [html.escape(snippet(t["value"], 40), quote=False) for t in top]
    fig = go.Figure(go.Bar(x=[100 * t["share"] for t in top], y=labels, orientation="h", marker_color="#4f46e5",
                           text=[f"{t['records']:,} ({100 * t['share']:.1f}%)" for t in top], textposition="auto",
                           hovertemplate="%{y}<br>%{x:.1f}% of records<extra></extra>"))
    fig.update_yaxes(title_text=html.escape(f"group ({conc.field})", quote=False), autorange="reversed",
                     type="category")
    fig.update_xaxes(title_text="share of records (%)", rangemode="tozero")
    fig.update_layout(template="plotly_white", height=max(260, 60 + 34 * len(top)),
                      margin=dict(l=160, r=30, t=30, b=60))
    text = (f"**{plural(conc.groups, 'group')}** in **{md(conc.field)}**, {conc.mean_per_group:.1f} records per "
            f"group on average. The largest, **{md(snippet(conc.largest['value'], 80))}**, holds "
            f"{100 * conc.largest['share']:.1f}% of the "
            f"records. Herfindahl index {conc.hhi:.4f} (1/groups when even, 1 when one group holds everything)."
            + (f" {conc.records_without_group:,} records have no group." if conc.records_without_group else ""))
    table = pd.DataFrame([{"group": t["value"], "records": t["records"], "share": f"{100 * t['share']:.2f}%"}
                          for t in top])
    return fig, text, table


# --------------------------------------------------------------------------- downloads

def new_folder(name: str) -> Path:
    """A folder for download files; the oldest are removed beyond KEEP_FOLDERS (Gradio serves copies)."""
    folders = sorted((p for p in FILES_DIR.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in folders[:max(0, len(folders) - KEEP_FOLDERS)]:
        shutil.rmtree(old, ignore_errors=True)
    folder = FILES_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_downloads(result, key, threshold: float) -> tuple[str, str, str]:
    folder = new_folder(hashlib.sha256(repr((key, threshold)).encode()).hexdigest()[:16])
    summary = folder / "summary.json"
    if not summary.exists():
        # Each file atomic, summary.json last: a folder with a summary.json is complete.
        write_text(folder / "REPORT.md", result.markdown(threshold))
        with atomic_write(folder / "pairs.csv", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["a", "b", "jaccard", "text_a", "text_b"])
            text = result.fields.text
            for a, b, j in result.pairs.record_pair_sample(threshold, CSV_PAIRS):
                writer.writerow([a, b, f"{j:.4f}", text[a], text[b]])
        write_text(summary, to_json(result.summary(threshold)))
    return str(summary), str(folder / "REPORT.md"), str(folder / "pairs.csv")


# --------------------------------------------------------------------------- the API

def audit_json(dataset: str, config: str = "", split: str = "", text: str = "", answer: str = "", group: str = "",
               threshold: float = 0.7) -> dict:
    """summary.json of the audit of ``dataset`` (a hub id or example:NAME); errors are raised as gr.Error."""
    try:
        req = make_request(dataset, config, split, text, answer, group, [], threshold, None)
        result, _, _, _, _ = run_audit(req)
        return json.loads(to_json(result.summary(req.threshold)))
    except AuditorError as exc:
        message = exc.message + (f" {exc.hint}" if exc.hint else "")
        # gr.Error may be shown as HTML: the message quotes user input, so it is escaped.
        raise gr.Error(html.escape(message, quote=False), title=f"Audit failed ({exc.code})",
                       print_exception=False) from None


# --------------------------------------------------------------------------- the page

CSS = """
.gradio-container {max-width: 1280px !important; margin: 0 auto;}
#title h1 {margin-bottom: 0.1em;}
#title p {color: var(--body-text-color-subdued); margin-top: 0;}
#inputs {border: 1px solid var(--border-color-primary); border-radius: 12px; padding: 6px;}
#status {min-height: 1.5em;}
#status.ok, #status.error, #leak-status.ok, #leak-status.error {border-radius: 8px; padding: 8px 12px;}
#status.ok, #leak-status.ok {background: var(--background-fill-secondary); border-left: 4px solid #22c55e;}
#status.error, #leak-status.error {background: #fef2f2; border-left: 4px solid #dc2626; color: #7f1d1d;}
.stat-cards {display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 10px; margin: 4px 0 10px;}
.stat {border: 1px solid var(--border-color-primary); border-radius: 10px; padding: 10px 14px;
       background: var(--background-fill-secondary);}
.stat .v {font-size: 1.55em; font-weight: 700; line-height: 1.2;}
.stat .l {font-size: 0.85em; color: var(--body-text-color-subdued);}
.pair-detail .pair-head {margin: 4px 0 8px; display: flex; gap: 16px; flex-wrap: wrap; align-items: center;}
.pair-detail .legend {font-size: 0.85em;}
.pair-detail .field-name {font-weight: 600; margin: 10px 0 4px; color: var(--body-text-color-subdued);}
.pair-view {display: grid; grid-template-columns: 1fr 1fr; gap: 12px;}
.pair-view .rec {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px;
                 white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow: auto;
                 background: var(--background-fill-secondary); font-size: 0.92em; line-height: 1.5;}
.pair-view .rec-id {font-size: 0.8em; color: var(--body-text-color-subdued); margin-bottom: 4px;}
mark.only-a {background: #fecaca; color: #7f1d1d; border-radius: 3px; padding: 0 1px;}
mark.only-b {background: #bbf7d0; color: #14532d; border-radius: 3px; padding: 0 1px;}
.cut {color: var(--body-text-color-subdued);}
"""

HEADER = ("# Dataset Integrity Auditor\n"
          "Is a benchmark redundant, and does its training data overlap what it is tested on? Audit a dataset for "
          "exact and near duplicates, see how the near-duplicate count moves with the threshold, check group "
          "concentration, and test a second split or a public benchmark for leakage.")


def build() -> gr.Blocks:
    examples = example_names()
    example_choices = [("— pick a bundled benchmark —", "")] + [(f"{n}", f"example:{n}") for n in examples]
    with gr.Blocks(title="Dataset Integrity Auditor", delete_cache=(3600, 7200)) as demo:
        gr.Markdown(HEADER, elem_id="title")
        with gr.Column(elem_id="inputs"):
            with gr.Row(equal_height=False):
                with gr.Column(scale=5):
                    with gr.Row(equal_height=True):
                        dataset = gr.Textbox(label="Dataset",
                                             placeholder="hub id such as openai/gsm8k, or example:gsm8k",
                                             info="A Hugging Face dataset id, a bundled example or an uploaded file",
                                             scale=3, elem_id="dataset")
                        example = gr.Dropdown(example_choices, value="", label="Bundled benchmark",
                                              info="real data shipped with the tool, works offline", scale=2,
                                              elem_id="example")
                    with gr.Row(equal_height=True):
                        config = gr.Dropdown([], label="Config", allow_custom_value=True, elem_id="config", scale=2)
                        split = gr.Dropdown([], label="Split", allow_custom_value=True, elem_id="split", scale=2)
                        load_btn = gr.Button("Load fields", variant="secondary", elem_id="load-fields", scale=1,
                                             min_width=120)
                with gr.Column(scale=2, min_width=240):
                    upload = gr.File(label="Or upload a file (JSONL, JSON, CSV, Parquet)", type="filepath",
                                     file_types=[".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".gz"],
                                     height=168, elem_id="upload")
            with gr.Row(equal_height=True):
                text = gr.Dropdown([], label="Text field", allow_custom_value=True, elem_id="text",
                                   info="compared for near duplicates (blank: guess)")
                answer = gr.Dropdown([], label="Answer field", allow_custom_value=True, elem_id="answer",
                                     info="optional")
                group = gr.Dropdown([], label="Group field", allow_custom_value=True, elem_id="group",
                                    info="optional: source, subject, db_id...")
                labels = gr.Dropdown([], label="Label fields", multiselect=True, allow_custom_value=True,
                                     elem_id="labels", info="optional")
            with gr.Row(equal_height=True):
                threshold = gr.Slider(MIN_THRESHOLD, 1.0, value=0.7, step=0.05,
                                      label="Near-duplicate threshold (Jaccard)",
                                      info="pairs whose word 3-gram sets overlap at least this much", scale=3,
                                      elem_id="threshold")
                max_rows = gr.Textbox(label="Max rows", placeholder=f"all (cap {ROW_CAP:,})", scale=1, min_width=120,
                                      elem_id="max-rows", info="read only the first N")
                token = gr.Textbox(label="HF token", type="password", scale=2, info="gated sets only",
                                   placeholder="used for this request only, never stored", elem_id="token")
                run_btn = gr.Button("Run audit", variant="primary", scale=1, min_width=140, elem_id="run")
        status = gr.Markdown("", elem_id="status", latex_delimiters=[])
        share = gr.Textbox(label="Share link (opens this audit; the token is never in it)", interactive=False,
                           buttons=["copy"], elem_id="share")
        state = gr.State(None)
        # The dataset the config/split/role fields were filled for. A paste does not fire the
        # textbox's input event, so on_run compares instead of trusting the fields.
        fields_for = gr.State(DEFAULTS["dataset"])

        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Overview", id="overview"):
                cards = gr.HTML("", elem_id="cards")
                overview = gr.Markdown("", elem_id="overview", latex_delimiters=[])
            with gr.Tab("Threshold curve", id="curve"):
                gr.Markdown("How many near-duplicate clusters appear as the Jaccard threshold loosens. A sudden jump "
                            "marks where templates or shared stems start to merge. Move the slider to re-count from "
                            "the cached pairs (no new search).")
                curve_threshold = gr.Slider(MIN_THRESHOLD, 1.0, value=0.7, step=0.05, label="Inspect threshold",
                                            elem_id="curve-threshold")
                counts = gr.Markdown("", elem_id="counts", latex_delimiters=[])
                curve_plot = gr.Plot(show_label=False, elem_id="curve-plot")
                curve_df = gr.Dataframe(label="Curve", interactive=False, elem_id="curve-table")
            with gr.Tab("Near-duplicate pairs", id="pairs"):
                pairs_info = gr.Markdown("", elem_id="pairs-info", latex_delimiters=[])
                pairs_df = gr.Dataframe(headers=PAIR_HEADERS, datatype=["number", "number", "number", "str", "str"],
                                        interactive=False, wrap=True, max_height=420, elem_id="pairs-table",
                                        column_widths=["7%", "7%", "8%", "39%", "39%"], show_search="search")
                pair_view = gr.HTML("<p class='cut'>Select a pair above to compare the two records.</p>",
                                    elem_id="pair-view")
                cluster_info = gr.Markdown("", elem_id="cluster-info", latex_delimiters=[])
                cluster_df = gr.Dataframe(interactive=False, wrap=True, max_height=320, elem_id="cluster-table",
                                          visible=False)
            with gr.Tab("Concentration", id="concentration"):
                conc_text = gr.Markdown("", elem_id="conc-text", latex_delimiters=[])
                conc_plot = gr.Plot(show_label=False, elem_id="conc-plot")
                conc_df = gr.Dataframe(interactive=False, elem_id="conc-table", visible=False)
            with gr.Tab("Leakage", id="leakage"):
                gr.Markdown("Does a second split (**B**) repeat records of the audited dataset (**A**)? And does the "
                            "audited data contain a public benchmark? The clean download is B without its leaking "
                            "rows.")
                with gr.Row(equal_height=True):
                    leak_dataset = gr.Textbox(label="B: dataset", placeholder="same as A when blank", scale=3,
                                              elem_id="leak-dataset")
                    leak_config = gr.Dropdown([], label="B: config", allow_custom_value=True, elem_id="leak-config")
                    leak_split = gr.Dropdown([], label="B: split", allow_custom_value=True, elem_id="leak-split")
                    leak_text = gr.Textbox(label="B: text field", placeholder="same as A", elem_id="leak-text")
                with gr.Row(equal_height=True):
                    benchmark = gr.Dropdown([("— none —", "")] + [(b, b) for b in BENCHMARKS], value="",
                                            label="Contamination: bundled benchmark to look for in A",
                                            elem_id="benchmark", scale=3)
                    leak_btn = gr.Button("Check leakage", variant="primary", elem_id="leak-run", scale=1)
                leak_status = gr.Markdown("", elem_id="leak-status", latex_delimiters=[])
                leak_md = gr.Markdown("", elem_id="leak-summary", latex_delimiters=[])
                leak_df = gr.Dataframe(interactive=False, wrap=True, max_height=360, elem_id="leak-table",
                                       visible=False)
                with gr.Row():
                    dl_evidence = gr.DownloadButton("Evidence CSV", value=None, interactive=False,
                                                    elem_id="dl-evidence")
                    dl_clean = gr.DownloadButton("Clean B split (JSONL)", value=None, interactive=False,
                                                 elem_id="dl-clean")
                contam_md = gr.Markdown("", elem_id="contam-summary", latex_delimiters=[])
                contam_df = gr.Dataframe(interactive=False, wrap=True, max_height=360, elem_id="contam-table",
                                         visible=False)
            with gr.Tab("Downloads", id="downloads"):
                gr.Markdown("The report files of the current audit at the inspected threshold. `summary.json` is the "
                            "machine-readable contract (the same as the CLI's), `REPORT.md` the readable report, "
                            "`pairs.csv` every near-duplicate pair with both texts.")
                with gr.Row():
                    dl_summary = gr.DownloadButton("summary.json", value=None, interactive=False, elem_id="dl-summary")
                    dl_report = gr.DownloadButton("REPORT.md", value=None, interactive=False, elem_id="dl-report")
                    dl_pairs = gr.DownloadButton("pairs.csv", value=None, interactive=False, elem_id="dl-pairs")

        # The API endpoint: summary.json for (dataset, config, split, text, answer, group, threshold).
        with gr.Row(visible=False):
            api_in = [gr.Textbox(label="dataset")] + [gr.Textbox("", label=n)
                                                      for n in ("config", "split", "text", "answer", "group")]
            api_threshold = gr.Number(0.7, label="threshold")
            api_out = gr.JSON(label="summary")
            api_btn = gr.Button("audit_json")

        form = [dataset, config, split, text, answer, group, labels, threshold, max_rows]
        result_outputs = [status, share, state, cards, overview, curve_threshold, counts, curve_plot, curve_df,
                          pairs_info, pairs_df, pair_view, cluster_info, cluster_df, conc_text, conc_plot, conc_df,
                          dl_summary, dl_report, dl_pairs, config, split, text, answer, group, labels,
                          leak_dataset, leak_config, leak_split, leak_status, leak_md, leak_df, contam_md,
                          contam_df, dl_evidence, dl_clean, fields_for]

        def fail(message: str) -> dict:
            return {status: gr.update(value=message, elem_classes=["error"])}

        def choices_of(values, blank=True):
            out = [("— none —", "")] if blank else []
            return out + [(v, v) for v in values]

        def render(result, src, key, req, seconds, cached, base) -> dict:
            t = req.threshold
            table = result.table
            fields = available_fields(table.rows)
            roles = result.roles
            how = "from the cache" if cached else f"in {seconds:.1f} s"
            where = " / ".join(md(x) for x in (table.config, table.split) if x)
            msg = f"Audited **{md(src.name)}**{' (' + where + ')' if where else ''}: {result.records:,} records, {how}."
            if table.truncated:
                msg += f"  \n**Row cap:** only the first {table.row_cap:,} rows were read; the dataset has more."
            summary_path, report_path, pairs_path = write_downloads(result, key, t)
            conc_fig, conc_md, conc_table = concentration_view(result)
            other_splits = [s for s in table.splits if s != table.split]
            near = result.near_duplicates(t)
            return {
                status: gr.update(value=msg, elem_classes=["ok"]),
                share: share_url(base, req, src),
                state: {"key": key, "request": req, "source": src, "base": base},
                fields_for: req.dataset,
                cards: stat_cards(result, near),
                overview: overview_markdown(result, t),
                curve_threshold: t,
                counts: counts_markdown(result, t),
                curve_plot: curve_figure(result, t),
                curve_df: curve_table(result),
                pairs_info: pairs_caption(result, t),
                pairs_df: pairs_frame(result, t),
                pair_view: "<p class='cut'>Select a pair above to compare the two records.</p>",
                cluster_info: "",
                cluster_df: shown(pd.DataFrame()),
                conc_text: conc_md,
                conc_plot: gr.update(value=conc_fig, visible=conc_fig is not None),
                conc_df: shown(conc_table),
                dl_summary: gr.update(value=summary_path, interactive=True),
                dl_report: gr.update(value=report_path, interactive=True),
                dl_pairs: gr.update(value=pairs_path, interactive=True),
                config: gr.update(choices=list(table.configs) or ([table.config] if table.config else []),
                                  value=table.config or ""),
                split: gr.update(choices=list(table.splits) if src.kind != "upload" else [],
                                 value=(table.split or "") if src.kind != "upload" else ""),
                text: gr.update(choices=choices_of(fields, blank=False), value=roles.text or ""),
                answer: gr.update(choices=choices_of(fields), value=roles.answer or ""),
                group: gr.update(choices=choices_of(fields), value=roles.group or ""),
                labels: gr.update(choices=fields, value=list(roles.labels)),
                leak_dataset: "" if src.kind == "upload" else src.name,
                leak_config: gr.update(choices=list(table.configs), value=table.config or ""),
                leak_split: gr.update(choices=list(table.splits), value=other_splits[0] if other_splits else ""),
                leak_status: "", leak_md: "", leak_df: shown(pd.DataFrame()), contam_md: "",
                contam_df: shown(pd.DataFrame()),
                dl_evidence: gr.update(value=None, interactive=False),
                dl_clean: gr.update(value=None, interactive=False),
            }

        def on_run(dataset_v, config_v, split_v, text_v, answer_v, group_v, labels_v, threshold_v, max_rows_v,
                   upload_v, token_v, fields_for_v, request: gr.Request, progress=gr.Progress()):
            try:
                if (dataset_v or "").strip() != (fields_for_v or "").strip():
                    # Fields left from another dataset: let the library choose and guess afresh.
                    config_v = split_v = text_v = answer_v = group_v = ""
                    labels_v = []
                req = make_request(dataset_v, config_v, split_v, text_v, answer_v, group_v, labels_v, threshold_v,
                                   max_rows_v)
                result, src, key, seconds, cached = run_audit(req, upload_v, token_v, progress_adapter(progress))
                return render(result, src, key, req, seconds, cached, base_url(request))
            except Exception as exc:  # noqa: BLE001 - every failure becomes a message, never a trace
                return fail(error_text(exc))

        def on_load(request: gr.Request, progress=gr.Progress()):
            params = dict(request.query_params) if request is not None else {}
            values = dict(DEFAULTS)
            if params.get("dataset"):
                values = {"dataset": params["dataset"], "threshold": params.get("threshold", 0.7)}
                for name in ("config", "split", "text", "answer", "group"):
                    values[name] = params.get(name, "")
                values["labels"] = [x for x in params.get("labels", "").split(",") if x.strip()]
                values["max_rows"] = params.get("max_rows")
            filled = {dataset: values["dataset"], config: values.get("config") or "",
                      split: values.get("split") or "", text: values.get("text") or "",
                      answer: values.get("answer") or "", group: values.get("group") or "",
                      labels: gr.update(choices=values["labels"], value=values["labels"]),
                      fields_for: values["dataset"]}
            try:   # only values the slider and the number box can show (no NaN, no infinity)
                t = float(values["threshold"])
                if MIN_THRESHOLD <= t <= 1:
                    filled[threshold] = t
            except (TypeError, ValueError, OverflowError):
                pass
            try:
                m = float(values.get("max_rows") or 0)
                if 1 <= m <= ROW_CAP and m == int(m):
                    filled[max_rows] = int(m)
            except (TypeError, ValueError, OverflowError):
                pass
            try:
                req = make_request(values["dataset"], values.get("config"), values.get("split"), values.get("text"),
                                   values.get("answer"), values.get("group"), values["labels"], values["threshold"],
                                   values.get("max_rows"))
                result, src, key, seconds, cached = run_audit(req, None, None, progress_adapter(progress))
                return {**filled, **render(result, src, key, req, seconds, cached, base_url(request))}
            except Exception as exc:  # noqa: BLE001
                return {**filled, **fail(error_text(exc))}

        def on_load_fields(dataset_v, config_v, upload_v, token_v):
            try:
                src = resolve_source(dataset_v, upload_v)
                if src.kind == "hub":
                    try:
                        info = describe(src.value, config=_blank(config_v), token=user_token(token_v))
                    except AuditorError as exc:
                        if exc.code != "bad_config" or not _blank(config_v):
                            raise
                        # a config left over from the previous dataset: list this one's instead
                        info = describe(src.value, config=None, token=user_token(token_v))
                    configs, splits, columns = list(info.get("configs") or []), list(info.get("splits") or []), \
                        list(info.get("columns") or [])
                    # Roles are guessed from sample rows when describe() gives them, else from the names alone.
                    rows = info.get("rows") or [dict.fromkeys(columns, "")]
                    chosen_config = info.get("config") or (configs[0] if len(configs) == 1 else "")
                    chosen_split = "train" if "train" in splits else (splits[0] if splits else "")
                else:
                    conf = _blank(config_v) if src.kind == "example" else None
                    if src.kind == "example" and conf is not None:
                        name = src.value.split(":", 1)[1].strip().lower()
                        if conf not in example_layout(name):
                            conf = None
                    tbl = auditor.load(src.value, conf, None, max_rows=50)
                    configs, splits = list(tbl.configs), (list(tbl.splits) if src.kind != "upload" else [])
                    rows = tbl.rows
                    columns = available_fields(rows)
                    chosen_config, chosen_split = tbl.config or "", (tbl.split or "") if splits else ""
                fields = available_fields(rows) if rows and any(rows[0].values()) else columns
                try:
                    guessed = resolve_roles(rows)
                except AuditorError:
                    guessed = None
                msg = (f"Fields of **{md(src.name)}**: {', '.join(md(c, 60) for c in fields[:30])}"
                       f"{' …' if len(fields) > 30 else ''}. Roles are pre-selected where they could be guessed; "
                       "press **Run audit**.")
                return {status: gr.update(value=msg, elem_classes=[]), fields_for: dataset_v,
                        config: gr.update(choices=configs, value=chosen_config or ""),
                        split: gr.update(choices=splits, value=chosen_split),
                        text: gr.update(choices=choices_of(fields, blank=False),
                                        value=(guessed.text if guessed else "") or ""),
                        answer: gr.update(choices=choices_of(fields), value=(guessed.answer if guessed else "") or ""),
                        group: gr.update(choices=choices_of(fields), value=(guessed.group if guessed else "") or ""),
                        labels: gr.update(choices=fields, value=[])}
            except Exception as exc:  # noqa: BLE001
                return fail(error_text(exc).replace("Could not audit", "Could not read the dataset"))

        fields_outputs = [status, config, split, text, answer, group, labels, fields_for]

        def cleared() -> dict:
            """A new dataset: the config, split and roles of the previous one no longer apply."""
            return {config: gr.update(value="", choices=[]), split: gr.update(value="", choices=[]),
                    text: gr.update(value="", choices=[]), answer: gr.update(value="", choices=[]),
                    group: gr.update(value="", choices=[]), labels: gr.update(value=[], choices=[])}

        def on_example(choice):
            return {dataset: choice, **cleared()} if choice else {}

        def on_upload(path):
            return {dataset: f"upload:{Path(path).name}", **cleared()} if path else {}

        def on_rethreshold(st, t):
            if not st:
                return {}
            result = CACHE.get(st["key"])
            if result is None:
                return fail("This audit has expired from the cache: press **Run audit** again.")
            t = round(float(t), 4)
            summary_path, report_path, pairs_path = write_downloads(result, st["key"], t)
            return {counts: counts_markdown(result, t), curve_plot: curve_figure(result, t),
                    pairs_info: pairs_caption(result, t), pairs_df: pairs_frame(result, t),
                    pair_view: "<p class='cut'>Select a pair above to compare the two records.</p>",
                    cluster_info: "", cluster_df: shown(pd.DataFrame()),
                    cards: stat_cards(result, result.near_duplicates(t)),
                    share: share_url(st["base"], st["request"], st["source"], t),
                    dl_summary: summary_path, dl_report: report_path, dl_pairs: pairs_path}

        def on_pair_select(st, t, evt: gr.SelectData):
            if not st:
                return {}
            result = CACHE.get(st["key"])
            if result is None:
                return fail("This audit has expired from the cache: press **Run audit** again.")
            row = evt.row_value or []
            try:
                a, b, j = int(row[0]), int(row[1]), row[2]
            except (TypeError, ValueError, IndexError):
                return {}
            if not (0 <= a < result.records and 0 <= b < result.records):
                return {}
            info, members = cluster_view(result, a, round(float(t), 4))
            return {pair_view: pair_detail_html(result, a, b, j), cluster_info: info, cluster_df: shown(members)}

        def on_leak(st, b_dataset, b_config, b_split, b_text, bench, upload_v, token_v, progress=gr.Progress()):
            empty = {leak_md: "", leak_df: shown(pd.DataFrame()), contam_md: "", contam_df: shown(pd.DataFrame()),
                     dl_evidence: gr.update(value=None, interactive=False),
                     dl_clean: gr.update(value=None, interactive=False)}
            if not st:
                return {**empty, leak_status: gr.update(value="Run an audit first: it is dataset **A**.",
                                                        elem_classes=["error"])}
            req, src = st["request"], st["source"]
            out = dict(empty)
            notes = []
            leak_done = False
            cap = min(req.max_rows or ROW_CAP, ROW_CAP)
            report = progress_adapter(progress)
            try:
                if src.kind == "upload":
                    src = resolve_source(req.dataset, upload_v)
                audited = CACHE.get(st["key"])
                a_config = (audited.table.config if audited else req.config) if src.kind != "upload" else None
                a_split = (audited.table.split if audited else req.split) if src.kind != "upload" else None
                b_name = (b_dataset or "").strip() or (src.name if src.kind != "upload" else "")
                if b_name and (b_split or b_name != src.name or b_config):
                    b_src = resolve_source(b_name, upload_v if b_name.startswith("upload:") else None)
                    if b_src.kind == "upload":
                        # The page has one upload slot, and it holds A: "upload:..." as B would
                        # compare A with itself and report every record as leaked.
                        raise AuditorError("usage", "B cannot be an uploaded file: the one upload slot holds A.",
                                           "Give B a Hugging Face dataset id or a bundled example:NAME.")
                    if (b_src.value == src.value and (_blank(b_config) or a_config) == a_config
                            and (_blank(b_split) or a_split) == a_split):
                        raise AuditorError("usage", "B is the same data as A (same dataset, config and split): "
                                           "every record would match itself.",
                                           "Pick another split or dataset for B.")
                    lr = leak(src.value, b_src.value, config_a=a_config, split_a=a_split,
                              config_b=_blank(b_config) if b_src.kind != "upload" else None,
                              split_b=_blank(b_split) if b_src.kind != "upload" else None,
                              text=req.text, answer=req.answer, group=req.group,
                              text_b=_blank(b_text), threshold=req.threshold, max_rows=cap,
                              token=user_token(token_v), progress=report)
                    s = lr.summary()
                    out[leak_md] = leak_markdown(s, req.threshold)
                    evidence = [{**r, "match": str(r.get("match", "")).replace("+", " + ")} for r in lr.evidence_rows()]
                    out[leak_df] = shown(records_frame(evidence, ("b_row", "a_rows", "match", "jaccard")))
                    folder = new_folder("leak-" + secrets.token_hex(8))
                    write_text(folder / "leak_evidence.csv", lr.evidence_csv())
                    clean_name = f"clean_{re.sub(r'[^A-Za-z0-9_.-]+', '_', (_blank(b_split) or 'b'))}.jsonl"
                    with atomic_write(folder / clean_name) as fh:
                        for r in lr.clean_b_rows():
                            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
                    out[dl_evidence] = gr.update(value=str(folder / "leak_evidence.csv"), interactive=True)
                    out[dl_clean] = gr.update(value=str(folder / clean_name), interactive=True)
                    leak_done = True
                else:
                    notes.append("No B split chosen: leakage skipped.")
                if bench:
                    cr = contamination(src.value, bench, corpus_config=a_config, corpus_split=a_split,
                                       corpus_text=req.text, max_rows=cap,
                                       token=user_token(token_v), progress=report)
                    s = cr.summary()
                    out[contam_md] = contamination_markdown(s, bench)
                    out[contam_df] = shown(records_frame(s.get("items") or []))
                done = [x for x, flag in (("leakage", leak_done), ("contamination", bool(bench))) if flag]
                message = " ".join(notes + ([f"Checked {' and '.join(done)}."] if done else []))
                out[leak_status] = gr.update(value=message, elem_classes=["ok"] if done else [])
                return out
            except Exception as exc:  # noqa: BLE001
                message = error_text(exc).replace("Could not audit", "Could not check")
                return {**out, leak_status: gr.update(value=message, elem_classes=["error"])}

        # One progress bar, on the status line, rather than one on every output.
        run_btn.click(on_run, form + [upload, token, fields_for], result_outputs, api_visibility="private",
                      concurrency_id="audit", show_progress_on=status)
        demo.load(on_load, None, result_outputs + [dataset, threshold, max_rows], api_visibility="private",
                  concurrency_id="audit", show_progress_on=status)
        load_btn.click(on_load_fields, [dataset, config, upload, token], fields_outputs, api_visibility="private",
                       show_progress_on=status)
        dataset.submit(on_load_fields, [dataset, config, upload, token], fields_outputs, api_visibility="private",
                       show_progress_on=status)
        # In the browser, no round trip: a click right after typing already sees the cleared fields.
        dataset.input(None, None, fields_outputs[1:-1], js="() => ['', '', '', '', '', []]")
        example.input(on_example, example, [dataset] + fields_outputs[1:-1], api_visibility="private").then(
            on_load_fields, [dataset, config, upload, token], fields_outputs, api_visibility="private",
            show_progress_on=status)
        upload.upload(on_upload, upload, [dataset] + fields_outputs[1:-1], api_visibility="private").then(
            on_load_fields, [dataset, config, upload, token], fields_outputs, api_visibility="private",
            show_progress_on=status)
        config.input(on_load_fields, [dataset, config, upload, token], fields_outputs, api_visibility="private",
                     show_progress_on=status)
        curve_threshold.input(on_rethreshold, [state, curve_threshold],
                              [status, counts, curve_plot, pairs_info, pairs_df, pair_view, cluster_info, cluster_df,
                               cards, share, dl_summary, dl_report, dl_pairs],
                              api_visibility="private", trigger_mode="always_last", show_progress_on=counts)
        pairs_df.select(on_pair_select, [state, curve_threshold], [status, pair_view, cluster_info, cluster_df],
                        api_visibility="private", show_progress_on=pair_view)
        leak_btn.click(on_leak, [state, leak_dataset, leak_config, leak_split, leak_text, benchmark, upload, token],
                       [leak_status, leak_md, leak_df, contam_md, contam_df, dl_evidence, dl_clean],
                       api_visibility="private", concurrency_id="audit", show_progress_on=leak_status)
        api_btn.click(audit_json, api_in + [api_threshold], api_out, api_name="audit_json", concurrency_id="audit",
                      api_description="The summary.json of an audit. dataset: a Hugging Face dataset id or "
                                      "example:NAME; blank config, split and roles are chosen or guessed.")
    return demo


# --------------------------------------------------------------------------- leakage rendering

def records_frame(items: list, columns: tuple = ()) -> pd.DataFrame:
    """A list of dicts as a table of text cells (nested values as compact JSON)."""
    rows = []
    for item in items[:PAIR_ROWS]:
        if not isinstance(item, dict):
            item = {"value": item}
        rows.append({str(k): (v if isinstance(v, (int, float)) and not isinstance(v, bool) else
                              snippet(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)))
                     for k, v in item.items()})
    frame = pd.DataFrame(rows)
    if columns and not frame.empty:
        frame = frame[[c for c in columns if c in frame.columns] + [c for c in frame.columns if c not in columns]]
    return frame


def _share(block) -> str:
    if not isinstance(block, dict):
        return "–" if block is None else md(block)
    records = block.get("records", block.get("count"))
    fraction = block.get("fraction")
    out = f"{records:,}" if isinstance(records, int) else md(records)
    return out + (f" ({100 * fraction:.2f}%)" if isinstance(fraction, (int, float)) else "")


def leak_markdown(s: dict, threshold: float) -> str:
    def name(side):
        v = s.get(side)
        if isinstance(v, dict):
            where = " / ".join(md(v.get(k)) for k in ("config", "split") if v.get(k))
            records = f", {v['records']:,} records" if isinstance(v.get("records"), int) else ""
            return f"**{md(v.get('source'))}**" + (f" ({where}{records})" if where or records else "")
        return md(v)
    lines = [f"#### Leakage: does B repeat A?", "", f"A = {name('a')}  \nB = {name('b')}", "",
             "| B records that … | count |", "|---|---|",
             f"| repeat an A text exactly | {_share(s.get('identical_text'))} |",
             f"| repeat an A answer exactly | {_share(s.get('identical_answer'))} |",
             f"| repeat text AND answer of one A record (answerable from memory) | {_share(s.get('identical_both'))} |",
             f"| are near duplicates of an A text (Jaccard ≥ {threshold:g}) | {_share(s.get('near_duplicate'))} |"]
    if s.get("any_leak") is not None:
        lines.append(f"| **leak in any of these ways** | **{_share(s.get('any_leak'))}** |")
    groups = s.get("shared_groups")
    if isinstance(groups, dict) and groups.get("count"):
        values = ", ".join(md(v, 40) for v in (groups.get("values") or [])[:10])
        lines.append(f"| group values present on both sides | {groups['count']:,} ({values}) |")
    if s.get("pairs_sample"):
        lines += ["", "Leaking B records with the A rows they repeat (the evidence CSV holds the same, in full)."]
    return "\n".join(lines)


def contamination_markdown(s: dict, bench: str) -> str:
    b, c = s.get("benchmark") or {}, s.get("corpus") or {}
    n = (s.get("settings") or {}).get("ngram")
    where = " / ".join(md(b.get(k)) for k in ("config", "split") if b.get(k))
    lines = [f"#### Contamination: is {md(bench)} inside A?", "",
             f"Benchmark {md(b.get('source') or bench)}{' (' + where + ')' if where else ''}: "
             f"{b.get('records', 0):,} items; A: {c.get('records', 0):,} records"
             + (f", {c['tokens']:,} tokens" if isinstance(c.get("tokens"), int) else "")
             + (f". An item counts when it shares a {n}-token sequence with A." if n else "."), "",
             "| benchmark items | count |", "|---|---|",
             f"| share an n-gram with A (contaminated) | {_share(s.get('contaminated'))} |",
             f"| too short to check (not clean) | {_share(s.get('too_short'))} |"]
    if s.get("items"):
        lines += ["", "The table lists the contaminated items (benchmark row, the A rows that contain it, matched "
                      "n-grams)."]
    return "\n".join(lines)


# --------------------------------------------------------------------------- entry point

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
                theme=gr.themes.Soft(primary_hue="indigo"), css=CSS, ssr_mode=False, show_error=False)
