"""Requests, sources, the result cache and the download files: what the page keeps between events.

Nothing here draws anything. Sources are resolved from the text of the form alone (never from
the server's files), results are cached by their inputs (never the token), and download files
live in one temporary folder that is removed at exit.
"""
from __future__ import annotations

import atexit
import csv
import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

import auditor
from auditor import AuditorError
from auditor.env import env_bytes, env_int
from auditor.evidence import spreadsheet_text
from auditor.io.hub import FetchInto, resolve_revision
from auditor.io.listing import COMPRESSED, DATA_SUFFIXES
from auditor.io.outputs import atomic_write, write_text
from auditor.io.sources import HUB_ID, REVISION
from auditor.parallel import fork_safe
from auditor.report import to_json
from auditor.settings import DEFAULT_THRESHOLDS
from auditor.settings import check_max_rows as check_row_cap
from auditor.settings import check_threshold as check_jaccard

from . import workers
from .uploads import ID as UPLOAD_ID
from .uploads import STORE, size_text

ROW_CAP = env_int("AUDITOR_MAX_ROWS", 200_000, 1, sys.maxsize)   # rows read per dataset, at most
CACHE_SIZE = 32                # audited results kept in memory (the expensive pairs included), at most ...
CACHE_BYTES = env_bytes("AUDITOR_CACHE_BYTES", 2 * 1024 ** 3)   # ... and within this many (estimated) bytes
# The Paraphrases view embeds with a transformer (~45 texts per CPU second): a visitor's run is
# bounded to this many benchmark items and A records (the CLI's --semantic reads everything).
SEMANTIC_ITEMS = env_int("AUDITOR_SEMANTIC_ITEMS", 200, 1, sys.maxsize)
SEMANTIC_RECORDS = env_int("AUDITOR_SEMANTIC_RECORDS", 20_000, 1, sys.maxsize)
# ... and searches with a shorter stage-1 shortlist than the CLI (3 nearest records per item, 3 shortlisted):
# 200 items against 2,000 records: ~18 CPU s once the static vectors are warm (app.py starts that), the
# decision unchanged; a shortlist of 2 re-scores a quarter fewer records but missed planted rephrases
# (BENCHMARKS.md, semantic pass).
SEMANTIC_K = 3
SEMANTIC_CANDIDATES = 3
PAIR_LIMIT = 100_000           # pairs the review pages reach (the best ones; the engine's sample bounds it too)
# pairs.csv carries both records' texts: 100,000 pairs of long or templated records would be
# hundreds of MB per threshold. It holds the best pairs within this many bytes (the page says so).
PAIRS_CSV_BYTES = env_bytes("AUDITOR_PAIRS_CSV_BYTES", 64 * 1024 ** 2)
MIN_THRESHOLD = min(DEFAULT_THRESHOLDS)   # the lowest threshold the audit searches (the curve's floor)
DEFAULT_THRESHOLD = 0.7
DEFAULTS = {"dataset": "example:gsm8k", "config": "main", "split": "train", "text": "question",
            "answer": "answer", "group": "", "labels": [], "threshold": DEFAULT_THRESHOLD}
MAX_HUB_ID = 200               # "namespace/name": the Hub allows at most 96 characters each
SHARED_MARKS = 20              # review decisions of each kind carried by a share link, at most
REVISION_FRESH = 60            # seconds a Hub dataset's latest commit, once asked, is taken as still the latest
# The result tabs' ids (ui/layout.py), the first shown by default; a share link names the one open.
TABS = ("overview", "curve", "pairs", "clusters", "concentration", "leakage", "downloads")
FILES_DIR = Path(tempfile.mkdtemp(prefix="auditor-app-"))   # download files; removed at exit
KEEP_FOLDERS = 256
# ... and within this many bytes on disk, so visitors cannot fill the disk with downloads (Gradio's
# own copies of served files expire with delete_cache in ui/layout.py).
FILES_BYTES = env_bytes("AUDITOR_FILES_BYTES", 2 * 1024 ** 3)
atexit.register(shutil.rmtree, FILES_DIR, ignore_errors=True)


# --------------------------------------------------------------------------- sources

@dataclass(frozen=True)
class Source:
    kind: str        # "example", "hub" or "upload"
    value: str       # what the library loads (for an upload: its kept file, never shown)
    name: str        # what the page shows
    stamp: tuple = ()
    revision: str | None = None    # a Hub dataset's commit, when the link pins one
    upload_id: str | None = None   # an upload's id in the store (the link carries it)

    @property
    def library_kind(self) -> str:
        return {"example": "example", "hub": "hub", "upload": "local"}[self.kind]


def upload_path(upload) -> Path | None:
    if not upload:
        return None
    return Path(upload if isinstance(upload, str) else getattr(upload, "name", str(upload)))


def is_upload_id(value) -> bool:
    return isinstance(value, str) and bool(UPLOAD_ID.match(value))


def kept_upload(upload, move: bool = False):
    """An upload as the store keeps it: ``upload`` is an id (from this page's state or a link) or a
    file path (Gradio's copy, moved into the store when ``move``; a caller's own file, copied)."""
    if is_upload_id(upload):
        return STORE.get(upload)
    path = upload_path(upload)
    if path is None or isinstance(upload, str) and not os.path.isabs(upload):
        # a link's value that is no id of the store (never a path: the server's files are not offered)
        raise AuditorError("not_found", "This link names an uploaded file, but no upload id this server makes.",
                           "Ask for the link again, or upload the file yourself.")
    return STORE.keep(path, path.name, move=move and in_gradio_cache(path))


def in_gradio_cache(path: Path) -> bool:
    """Whether ``path`` is Gradio's own copy of an upload (its upload folder), the only file the app
    may move: a path given any other way (the Python API, a test) is the caller's, and is copied."""
    from gradio.utils import get_upload_folder
    try:
        return Path(path).resolve().is_relative_to(Path(get_upload_folder()).resolve())
    except OSError:
        return False


def resolve_source(dataset, upload=None, revision=None) -> Source:
    """The dataset field -> a source. Only bundled examples, hub ids and this page's upload (an id
    of the upload store): a path on the server is never accepted."""
    dataset = (dataset or "").strip()
    if dataset.startswith("upload:"):
        if not upload:
            raise AuditorError("usage", "No uploaded file: upload a JSONL, JSON, CSV or Parquet file again.",
                               "Upload the file with the button under Options.")
        src = upload_source(upload)
        named = dataset[len("upload:"):].strip()
        if named != src.name:   # a name typed by hand: never audit another file under it
            raise AuditorError("usage", f"The dataset box names the upload {named!r:.120}, but the file uploaded "
                               f"on this page is {src.name!r:.120}.",
                               "Upload that file again, or put the uploaded file's name back in the box.")
        return src
    if not dataset:
        raise AuditorError("usage", "No dataset given.",
                           "Type a Hugging Face dataset id (e.g. openai/gsm8k), pick a bundled example, "
                           "or upload a file.")
    if dataset.startswith("example:"):
        return Source("example", dataset, dataset)
    if not hub_like(dataset):
        raise AuditorError("not_found", f"{dataset!r:.120} is not a Hugging Face dataset id.",
                           "Use an id like 'openai/gsm8k', pick a bundled example (example:gsm8k), "
                           "or upload a file.")
    return Source("hub", dataset, dataset, revision=revision or None)


def upload_source(upload, move: bool = False) -> Source:
    """An upload as a source: kept in the store (by content: the same bytes uploaded twice are the
    same data), its stamp its size and id."""
    kept = kept_upload(upload, move)
    return Source("upload", kept.path, kept.name, (kept.size, kept.id), upload_id=kept.id)


def upload_file(source) -> str | None:
    """An uploaded source's kept file (the bytes audited: the store never changes a kept file), so
    copies are made of its own lines; None for other sources or a file since removed."""
    if source is None or source.kind != "upload":
        return None
    return source.value if os.path.exists(source.value) else None


def same_data(a: Source, b: Source) -> bool:
    """Whether two sources are the same bytes (uploads) or the same id (examples, hub)."""
    if a.kind == "upload" or b.kind == "upload":
        return a.kind == b.kind and a.upload_id == b.upload_id
    return a.kind == b.kind and a.value == b.value


def hub_like(dataset: str) -> bool:
    """Whether ``dataset`` may be a hub id, decided from the text alone. Never from the server's
    files: if a path of that name existing on the server changed the answer, the page would tell
    visitors which paths exist. A hub-like id is then read from the hub only (kind="hub"), so
    every id that is not a bundled example gets one of two answers, whatever the server holds."""
    if len(dataset) > MAX_HUB_ID or not HUB_ID.match(dataset) or ".." in dataset:
        return False
    if dataset.lower().endswith(DATA_SUFFIXES + COMPRESSED):
        return False                       # a data file's name
    return "/" in dataset or "." not in dataset   # "app.py", "README.md": a file name, not a dataset


# --------------------------------------------------------------------------- the cache

class ResultCache:
    """An LRU of audit results keyed on the inputs (never the token), bounded by the estimated
    bytes of what it holds (``result_bytes``) and by a number of entries. The newest result is
    always kept, whatever its size: the page re-thresholds from it."""

    def __init__(self, max_bytes: int, size: int = 64):
        self.max_bytes, self.size = max_bytes, size
        self._items: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self.bytes = 0
        self._lock = fork_safe(threading.Lock())

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
PAIR_LISTS = ResultCache(256 * 1024 ** 2, 16)   # (audit key, threshold) -> PairList
SEMANTIC = ResultCache(256 * 1024 ** 2, 16)     # (audit key, benchmark side, caps) -> a Paraphrases run
CLUSTERS = ResultCache(256 * 1024 ** 2, 16)     # (audit key, threshold, keep rule, review) -> ranked clusters
CURVES = ResultCache(64 * 1024 ** 2, 32)        # audit key -> what dedup does at every threshold
DRAWN = ResultCache(16 * 1024 ** 2, 512)        # (audit key, threshold) -> the curve's chart, drawn (12 KB for GSM8K)
EVIDENCE = ResultCache(256 * 1024 ** 2, 32)     # evidence list id -> its rows (leak pairs, contamination items)


# --------------------------------------------------------------------------- requests

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
    revision: str | None = None     # a Hub dataset's commit, pinned by a share link


def user_token(value) -> str | bool:
    """The token for one request: the one typed in the page, else False, which tells the library
    (and the hub clients under it) to send no token at all. Never None: that would mean "this
    machine's token", i.e. the HF_TOKEN of the server, lent to every visitor."""
    return (value.strip() or False) if isinstance(value, str) else False


def blank(value):
    """A form value, stripped; blank -> None."""
    if isinstance(value, str):
        return value.strip() or None
    return value


def check_threshold(threshold) -> float:
    """The threshold from the form or a link: text made a number here, then the CLI's own rules
    (``auditor.settings.check_threshold``) and the engine's resolution (6 decimals)."""
    value = DEFAULT_THRESHOLD if threshold in (None, "") else threshold
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise AuditorError("usage", f"Threshold {threshold!r:.40} is not a number.",
                               "Use a Jaccard threshold such as 0.7.") from None
        if value.is_integer():
            value = int(value)          # "7" is quoted back as 7, not 7.0
    t = round(check_jaccard(value), 6)
    if t < MIN_THRESHOLD:       # the page's range (its sliders and curve), not a rule of the setting
        raise AuditorError("usage", f"Threshold {t:g} is below {MIN_THRESHOLD:g}, the lowest this page shows.",
                           f"Use {MIN_THRESHOLD:g} to 1 here; `auditor scan --thresholds` searches lower.")
    return t


def check_max_rows(max_rows) -> int | None:
    """The row cap from the form or a link: text made a whole number here (beyond what the app
    reads: the app's cap, which the page states), then the library's rule."""
    if max_rows in (None, "", 0):
        return None
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
    cap = int(value) if value <= ROW_CAP else ROW_CAP
    check_row_cap(cap)
    return cap


def make_request(dataset, config, split, text, answer, group, labels, threshold, max_rows,
                 revision=None) -> Request:
    t = check_threshold(threshold)
    cap = check_max_rows(max_rows)
    if isinstance(labels, str):
        labels = [x for x in labels.split(",")]
    labels = tuple(x.strip() for x in (labels or []) if x and x.strip())
    revision = blank(revision)
    if revision is not None:
        if not REVISION.match(revision):
            raise AuditorError("usage", f"Revision {revision!r:.60} is not a commit sha, branch or tag name.",
                               "Open the link as it was shared, or leave the revision out to read the latest.")
    return Request((dataset or "").strip(), blank(config), blank(split), blank(text), blank(answer),
                   blank(group), labels, t, cap, revision)


@dataclass(frozen=True)
class Audited:
    """An audit as the page holds it: the result, its source, its cache key, how long it took,
    whether the cache answered, and (Hub data) the dataset's latest commit when it is not the one read."""
    result: object
    source: Source
    key: tuple
    seconds: float
    cached: bool
    newer: str | None = None


_REVISIONS: dict = {}
_REVISIONS_LOCK = fork_safe(threading.Lock())


def hub_commit(src: Source, token) -> tuple[str | None, str | None]:
    """(the commit to read, the latest commit) of a Hub source; the latest, once asked, is taken
    as still the latest for REVISION_FRESH seconds (a page load must not wait for the Hub)."""
    fresh = (src.value, src.revision)
    with _REVISIONS_LOCK:
        known = _REVISIONS.get(fresh)
    if known and not token and time.monotonic() - known[0] < REVISION_FRESH:
        return known[1], known[2]
    commit, latest = resolve_revision(src.value, src.revision, token)
    if not token:          # what a token reads may be private: never remembered for others
        with _REVISIONS_LOCK:
            if len(_REVISIONS) > 4096:
                _REVISIONS.clear()
            _REVISIONS[fresh] = (time.monotonic(), commit, latest)
    return commit, latest


def audit_key(req: Request, src: Source, commit: str | None = None) -> tuple:
    cap = min(req.max_rows or ROW_CAP, ROW_CAP)
    # No threshold in the key: the audit searches down to MIN_THRESHOLD (or the threshold, when
    # lower) whatever the threshold, so one result answers them all.
    return (src.kind, src.value if src.kind != "upload" else src.upload_id, src.stamp, commit, req.config,
            None if src.kind == "upload" else req.split, req.text, req.answer, req.group, req.labels, cap,
            min(req.threshold, MIN_THRESHOLD))


def cached_audit(req: Request, upload=None, token=None) -> Audited | None:
    """The audit of ``req`` when the cache holds it (a Hub id is asked for its latest commit, at
    most every REVISION_FRESH seconds), else None: what a page may show without taking a slot."""
    if user_token(token):
        return None
    src = resolve_source(req.dataset, upload, req.revision)
    commit, latest = hub_commit(src, False) if src.kind == "hub" else (None, None)
    hit = CACHE.get(audit_key(req, src, commit))
    if hit is None:
        return None
    return Audited(at_threshold(hit, req.threshold), src, audit_key(req, src, commit), 0.0, True,
                   latest if latest and latest != commit else None)


def run_audit(req: Request, upload=None, token=None, progress=None, slot=None) -> Audited:
    """The audit of ``req`` (from the cache, or by the library inside ``slot()``, a context manager
    that waits for a free worker: ``jobs.JOBS.slot``)."""
    token = user_token(token)
    src = resolve_source(req.dataset, upload, req.revision)
    commit, latest = hub_commit(src, token) if src.kind == "hub" else (None, None)
    key = audit_key(req, src, commit)
    if token:
        # A result read with a token may be private: it is kept for this page only, never shared.
        key = key + (("private", secrets.token_hex(8)),)
    newer = latest if latest and latest != commit else None
    hit = CACHE.get(key)
    if hit is not None:
        return Audited(at_threshold(hit, req.threshold), src, key, 0.0, True, newer)
    cap = min(req.max_rows or ROW_CAP, ROW_CAP)
    settings = auditor.ScanSettings(threshold=req.threshold)   # (searches down to min(threshold, 0.3))
    with (slot() if slot is not None else nullcontext()):
        started = time.perf_counter()
        result = workers.run(auditor.scan, src.value, config=req.config if src.kind != "upload" else None,
                             split=req.split if src.kind != "upload" else None,
                             text=req.text, answer=req.answer, group=req.group, labels=list(req.labels) or None,
                             settings=settings, max_rows=cap, token=token, progress=progress, kind=src.library_kind,
                             revision=commit if src.kind == "hub" else None)
        seconds = time.perf_counter() - started
    CACHE.put(key, result)
    return Audited(result, src, key, seconds, False, newer)


def at_threshold(result, threshold: float):
    """The result as audited at ``threshold``: the search reached down to MIN_THRESHOLD whatever the
    threshold, so only the setting differs, and summary.json / REPORT.md must state the threshold
    their figures are at (as a fresh audit at it would)."""
    if result.settings.threshold == threshold:
        return result
    return replace(result, settings=replace(result.settings, threshold=threshold))


# --------------------------------------------------------------------------- marks and share links

def _parts(text):
    """The comma-separated parts of a link value, blank ones left out (a trailing comma is no error)."""
    return [part.strip() for part in str(text or "").split(",") if part.strip()]


def parse_marks(text, rejected: list | None = None) -> tuple:
    """``"3-17,5-9"`` -> ((3, 17), (5, 9)): pairs marked "not a duplicate" (a < b, sorted, unique);
    anything malformed is left out (and appended to ``rejected``)."""
    out = set()
    for part in _parts(text):
        a, sep, b = part.partition("-")
        if sep and a.isdecimal() and b.isdecimal() and len(a) < 10 and len(b) < 10 and int(a) != int(b):
            out.add((min(int(a), int(b)), max(int(a), int(b))))
        elif rejected is not None:
            rejected.append(part)
    return tuple(sorted(out))


def format_marks(marks) -> str:
    return ",".join(f"{a}-{b}" for a, b in sorted(marks))


# The leakage tab's settings a share link carries (``leak_link``), in the order they are written.
LEAK_LINK_KEYS = ("b", "b_config", "b_split", "b_text", "b_self", "b_threshold", "b_rev", "b_upload", "bench",
                  "bench_text", "bench_upload", "ngram", "cfields")


def leak_link(b_src: Source | None, b_config, b_split, b_text, allow_self, b_threshold, bench: Source | str | None,
              bench_text, ngram, cfields, b_revision=None) -> dict:
    """The leakage tab's last check as share-link values: B (its id, config, split, text field, Hub
    commit, "compare with itself"), the threshold B was compared at, the contamination benchmark
    (a bundled name), its text field, the n-gram size and A's fields searched. An uploaded side is
    named ``upload:NAME`` and carried by its id in the upload store."""
    out = {}
    if b_src is not None:
        out["b"] = f"upload:{b_src.name}" if b_src.kind == "upload" else b_src.name
        if b_src.kind == "upload":
            out["b_upload"] = b_src.upload_id
        else:
            out.update({"b_config": b_config or None, "b_split": b_split or None,
                        "b_rev": b_revision if b_src.kind == "hub" else None})
        out.update({"b_text": b_text or None, "b_self": "1" if allow_self else None,
                    "b_threshold": f"{b_threshold:g}" if b_threshold is not None else None})
    if bench is not None:
        out["bench"] = f"upload:{bench.name}" if isinstance(bench, Source) else bench
        if isinstance(bench, Source):
            out["bench_upload"] = bench.upload_id
        out.update({"bench_text": bench_text or None,
                    "ngram": str(ngram) if ngram not in (None, "", "auto") else None,
                    "cfields": ",".join(cfields) if cfields else None})
    return {k: v for k, v in out.items() if v not in (None, "")}


def format_rows(rows) -> str:
    return ",".join(str(int(r)) for r in sorted(set(rows)))


def parse_rows(text, rejected: list | None = None) -> tuple:
    """``"3,17"`` -> (3, 17): rows; anything malformed is left out (and appended to ``rejected``)."""
    out = set()
    for part in _parts(text):
        if part.isdecimal() and len(part) < 10:
            out.add(int(part))
        elif rejected is not None:
            rejected.append(part)
    return tuple(sorted(out))


def format_splits(splits) -> str:
    return ",".join(f"{int(r)}@{float(t):g}" for r, t in sorted(splits))


def parse_splits(text, rejected: list | None = None) -> tuple:
    """``"30@0.81"`` -> ((30, 0.81),): cluster splits; anything malformed is left out (and appended
    to ``rejected``)."""
    out = {}
    for part in _parts(text):
        row, sep, at = part.partition("@")
        try:
            value = float(at)
        except ValueError:
            value = math.nan
        if sep and row.isdecimal() and len(row) < 10 and 0 < value <= 1:
            out[int(row)] = round(value, 6)
        elif rejected is not None:
            rejected.append(part)
    return tuple(sorted(out.items()))


def share_url(base: str, req: Request, src: Source | None, threshold: float | None = None, marks=(),
              tab: str | None = None, leak: dict | None = None, commit: str | None = None, apart=(), splits=(),
              keep: str | None = None) -> str:
    """The link that opens this audit: the dataset (a Hub dataset at its ``commit``; an upload by
    its id in the store), the form, the threshold, the review (marks, rows kept apart, splits,
    while each holds at most SHARED_MARKS; the review file carries more), the keep rule, the
    result tab shown (one of TABS; the overview is the default) and the leakage tab's last check."""
    t = threshold if threshold is not None else req.threshold
    upload = src is not None and src.kind == "upload"
    params = {"dataset": None if upload else req.dataset, "upload": src.upload_id if upload else None,
              "config": None if upload else req.config, "split": None if upload else req.split,
              "rev": commit if src is not None and src.kind == "hub" else None,
              "text": req.text, "answer": req.answer, "group": req.group, "labels": ",".join(req.labels) or None,
              "threshold": f"{t:g}",
              "max_rows": req.max_rows,
              "nd": format_marks(marks) if 0 < len(marks) <= SHARED_MARKS else None,
              "ka": format_rows(apart) if 0 < len(apart) <= SHARED_MARKS else None,
              "sp": format_splits(splits) if 0 < len(splits) <= SHARED_MARKS else None,
              "keep": keep if keep and keep != "first" else None,
              "tab": tab if tab in TABS and tab != TABS[0] else None}
    for k in LEAK_LINK_KEYS:
        params[k] = (leak or {}).get(k)
    if params["b_threshold"] == f"{t:g}":
        params["b_threshold"] = None      # B was compared at the page's threshold: said once
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{base.rstrip('/')}/?{query}"


def base_url(request) -> str:
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


# --------------------------------------------------------------------------- the pair list

@dataclass(frozen=True)
class PairList:
    """The near-duplicate record pairs at one threshold, best first (a < b), as arrays; ``total``
    is the exact count, which exceeds ``a.size`` when the engine kept a bounded sample."""
    a: np.ndarray
    b: np.ndarray
    jaccard: np.ndarray
    total: int


def pair_list(result, key, threshold: float) -> PairList:
    """Every record pair at ``threshold`` (up to PAIR_LIMIT, best first, then by position): the
    engine keeps pairs of *nodes* (records with identical shingle sets), so each node pair is
    expanded to its record pairs, and each node's own records pair up with Jaccard 1."""
    cached = PAIR_LISTS.get((key, threshold))
    if cached is not None:
        return cached
    pairs = result.pairs
    members = pairs.members()
    parts_a, parts_b, parts_j, count = [], [], [], 0

    def add(a, b, j):
        nonlocal count
        a, b = a[:PAIR_LIMIT - count], b[:PAIR_LIMIT - count]
        parts_a.append(np.minimum(a, b))
        parts_b.append(np.maximum(a, b))
        parts_j.append(np.full(a.size, j, dtype=np.float64))
        count += a.size

    for node in np.flatnonzero(pairs.weight > 1):        # identical shingle sets: Jaccard 1
        m = members[node]
        for i in range(m.size - 1):
            if count >= PAIR_LIMIT:
                break
            add(np.full(m.size - i - 1, m[i]), m[i + 1:], 1.0)
    k = pairs.upto(threshold)
    for x, y, j in zip(pairs.a[:k].tolist(), pairs.b[:k].tolist(), pairs.jaccard[:k].tolist()):
        if count >= PAIR_LIMIT:
            break
        mx, my = members[x], members[y]
        add(np.repeat(mx, my.size), np.tile(my, mx.size), j)
    a = np.concatenate(parts_a) if parts_a else np.zeros(0, np.int64)
    b = np.concatenate(parts_b) if parts_b else np.zeros(0, np.int64)
    j = np.concatenate(parts_j) if parts_j else np.zeros(0, np.float64)
    order = np.lexsort((b, a, -j))
    pl = PairList(a[order], b[order], j[order], pairs.record_pairs(threshold))
    PAIR_LISTS.put((key, threshold), pl, int(a.nbytes * 3))
    return pl


# --------------------------------------------------------------------------- download files

def download_stem(source) -> str:
    """A download's file name from its source's (an upload, a path, example:NAME): safe characters only."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(str(source)).stem.replace("example:", ""))[:60] or "data"


def new_folder(name: str) -> Path:
    """A folder for download files. The oldest folders go first while there are more than
    KEEP_FOLDERS or they hold more than FILES_BYTES (Gradio serves copies of what it has sent)."""
    with _files_lock():
        _make_room({name})
        folder = FILES_DIR / name
        folder.mkdir(parents=True, exist_ok=True)
    return folder


# A copy's Hub files being fetched (``copy_fetch``): counted in FILES_BYTES, never removed to make room,
# nor is the download folder the copy is written into (another copy's claim removed it while it fetched).
FETCH_PREFIX = "fetch-"
_CLAIMED = ".claimed"          # in a fetch folder: the bytes its fetch has claimed so far
_OUTPUT = ".output"            # in a fetch folder: the name of the download folder its copy goes to


@contextmanager
def _files_lock():
    """FILES_DIR's lock, across the server's threads and its jobs' child processes (a child claims
    room for its fetch while the server makes a download folder)."""
    fd = os.open(FILES_DIR, os.O_RDONLY)      # (the folder itself: no file of its own among the folders)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                          # (which releases the lock)


def _make_room(spare: set) -> int:
    """Remove the oldest download folders while there are more than KEEP_FOLDERS or all the folders
    hold more than FILES_BYTES; never those named in ``spare``, a fetch folder nor its copy's output
    (``_in_use``), whose bytes (a fetch's claimed ones while more) count all the same. The bytes then
    held (under ``_files_lock``)."""
    folders = sorted((p for p in FILES_DIR.iterdir() if p.is_dir()), key=_modified)
    sizes = {p: _counted_bytes(p) for p in folders}
    total = sum(sizes.values())
    spare = spare | _in_use(folders)
    old = [p for p in folders if p.name not in spare]
    count = len(old)
    for folder in old:
        if count < KEEP_FOLDERS and total <= FILES_BYTES:
            break
        shutil.rmtree(folder, ignore_errors=True)
        total, count = total - sizes[folder], count - 1
    return total


@contextmanager
def copy_fetch(output: Path):
    """Where a copy written into the download folder ``output`` fetches a Hub split's Parquet files
    (``hub.FetchInto``): a fetch folder of its own in FILES_DIR, each file's bytes claimed in
    FILES_BYTES before it is fetched (older downloads make room; no room, a clear refusal), removed
    with whatever it holds (fetched files, a download cut short) once the body ends, written, failed
    or cancelled. Held by the job's handler, so a job's child killed on cancel leaves nothing."""
    folder = FILES_DIR / f"{FETCH_PREFIX}{secrets.token_hex(8)}"
    try:
        yield FetchInto(folder, lambda nbytes: _claim(folder, output.name, nbytes))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _claim(folder: Path, output: str, nbytes: int) -> None:
    """Count ``nbytes`` more for the fetch folder ``folder`` in FILES_BYTES, older download folders
    (not ``output`` nor another copy's, ``_in_use``) removed to make room; refused, nothing counted or
    removed, when the fetch folders and the copies' outputs would pass it alone."""
    with _files_lock():
        folder.mkdir(parents=True, exist_ok=True)
        claimed = _claimed(folder) + nbytes
        folders = [p for p in FILES_DIR.iterdir() if p.is_dir() and p != folder]
        in_use = _in_use(folders) | {output}
        kept = [p for p in folders if p.name in in_use]
        if sum(map(_counted_bytes, kept)) + max(_folder_bytes(folder), claimed) <= FILES_BYTES:
            (folder / _OUTPUT).write_text(output)
            (folder / _CLAIMED).write_text(str(claimed))
            _make_room({folder.name, output})
            return
        others = sum(_counted_bytes(p) for p in kept if p.name != output)
    held = f", {size_text(others)} of them held by other copies being made" if others else ""
    message = (f"No room on the server for the Parquet files this copy fetches from the Hub ({size_text(claimed)}): "
               f"the app's download files may hold {size_text(FILES_BYTES)} (AUDITOR_FILES_BYTES){held}.")
    if others and claimed <= FILES_BYTES:
        raise AuditorError("busy", message, "Ask for the file again once the other copies are made, or write the "
                           "copy on your machine with the CLI (auditor dedup ID --out FILE.parquet).")
    raise AuditorError("too_large", message, "Write the copy on your machine with the CLI (auditor dedup ID --out "
                       "FILE.parquet), or raise AUDITOR_FILES_BYTES on the server.")


def _in_use(folders) -> set:
    """The names of the fetch folders among ``folders`` and of the download folders their copies go to."""
    fetches = [p for p in folders if p.name.startswith(FETCH_PREFIX)]
    return {p.name for p in fetches} | {name for name in map(_output_of, fetches) if name}


def _output_of(fetch: Path) -> str | None:
    try:
        return (fetch / _OUTPUT).read_text() or None
    except OSError:
        return None


def _claimed(folder: Path) -> int:
    try:
        return int((folder / _CLAIMED).read_text() or 0)
    except (OSError, ValueError):
        return 0


def _counted_bytes(folder: Path) -> int:
    """A folder's bytes in FILES_BYTES: a fetch folder's are at least what it has claimed."""
    held = _folder_bytes(folder)
    return max(held, _claimed(folder)) if folder.name.startswith(FETCH_PREFIX) else held


def _modified(folder: Path) -> float:
    try:
        return folder.stat().st_mtime
    except OSError:                  # removed meanwhile by another request
        return 0.0


def _folder_bytes(folder: Path) -> int:
    total = 0
    for p in folder.rglob("*"):
        try:
            total += p.stat().st_size if p.is_file() else 0
        except OSError:               # removed meanwhile
            pass
    return total


def folder_for(*parts) -> Path:
    return new_folder(hashlib.sha256(repr(parts).encode()).hexdigest()[:16])


_WRITERS: dict = {}
_WRITERS_LOCK = fork_safe(threading.Lock())


def writer_of(folder: Path) -> threading.Lock:
    """The lock a job holds while it writes into ``folder``: a second job for the same files waits and
    then finds them written (a rewrite retires the manifest first, and a visitor answered meanwhile
    with the finished folder's paths found it missing)."""
    with _WRITERS_LOCK:
        if len(_WRITERS) > 4096:
            _WRITERS.clear()          # (a lock in use stays with its holders)
        return _WRITERS.setdefault(str(folder), threading.Lock())


def role_columns(result) -> list[tuple[str, list]]:
    """(column name, values per record) of every role the audit resolved: id, text, answer, group, labels."""
    f, roles = result.fields, result.roles
    cols = []
    if f.ids is not None:
        cols.append(("id", f.ids))
    cols.append(("text", f.text))
    if f.answer is not None:
        cols.append(("answer", f.answer))
    if f.group is not None:
        cols.append(("group", f.group))
    for name in roles.labels:
        if name in f.labels:
            cols.append((f"label:{name}", f.labels[name]))
    return cols


def write_pairs_csv(path: Path, result, pairs: PairList, cluster_of: dict, marks=(),
                    max_bytes: int | None = None) -> int:
    """pairs.csv: each pair with its cluster (the cluster browser's number), Jaccard, every role of
    both records, and whether the reviewer marked it "not a duplicate". The best pairs first, as
    many as fit in ``max_bytes`` (PAIRS_CSV_BYTES; at least one); returns how many were written."""
    budget = PAIRS_CSV_BYTES if max_bytes is None else max_bytes
    marked = set(map(tuple, marks))
    cols = role_columns(result)
    written = used = 0
    with atomic_write(path, newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["a", "b", "jaccard", "cluster", "not_duplicate"]
                        + [f"{name}_{side}" for name, _ in cols for side in ("a", "b")])
        for a, b, j in zip(pairs.a.tolist(), pairs.b.tolist(), pairs.jaccard.tolist()):
            cluster = cluster_of.get(a, cluster_of.get(b, ""))
            values = ["" if v is None else spreadsheet_text(v) for _, col in cols for v in (col[a], col[b])]
            # UTF-8 bytes of the values (quoting aside): enough to keep the file near the budget
            size = 40 + sum(len(v.encode("utf-8", "replace")) + v.count('"') + 2 if isinstance(v, str)
                            else len(str(v)) for v in values)       # a quoted value doubles its quotes
            if written and used + size > budget:
                break
            writer.writerow([a, b, f"{j:.4f}", cluster, int((a, b) in marked)] + values)
            written, used = written + 1, used + size
    return written


def write_downloads(result, key, threshold: float, pairs: PairList, cluster_of: dict, marks=()) -> tuple:
    """(summary.json, REPORT.md, pairs.csv, the pairs pairs.csv holds) of one audit at ``threshold``."""
    folder = folder_for(key, threshold, tuple(marks))
    summary, count = folder / "summary.json", folder / "pairs.count"
    if not summary.exists():
        # Each file atomic, summary.json last: a folder with a summary.json is complete.
        result = at_threshold(result, threshold)
        write_text(folder / "REPORT.md", result.markdown(threshold))
        write_text(count, str(write_pairs_csv(folder / "pairs.csv", result, pairs, cluster_of, marks)))
        write_text(summary, to_json(result.summary(threshold)))
    return str(summary), str(folder / "REPORT.md"), str(folder / "pairs.csv"), int(count.read_text())
