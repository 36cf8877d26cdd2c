"""Requests, sources, the result cache and the download files: what the page keeps between events.

Nothing here draws anything. Sources are resolved from the text of the form alone (never from
the server's files), results are cached by their inputs (never the token), and download files
live in one temporary folder that is removed at exit.
"""
from __future__ import annotations

import atexit
import csv
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
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

import auditor
from auditor import AuditorError
from auditor.env import env_bytes, env_int
from auditor.io.listing import COMPRESSED, DATA_SUFFIXES
from auditor.io.outputs import atomic_write, write_text
from auditor.io.sources import HUB_ID
from auditor.report import to_json
from auditor.settings import DEFAULT_THRESHOLDS

ROW_CAP = env_int("AUDITOR_MAX_ROWS", 200_000, 1, sys.maxsize)   # rows read per dataset, at most
CACHE_SIZE = 32                # audited results kept in memory (the expensive pairs included), at most ...
CACHE_BYTES = env_bytes("AUDITOR_CACHE_BYTES", 2 * 1024 ** 3)   # ... and within this many (estimated) bytes
# The Paraphrases view embeds with a transformer (~60 texts/s on 2 cores): a visitor's run is
# bounded to this many benchmark items and A records (the CLI's --semantic reads everything).
SEMANTIC_ITEMS = env_int("AUDITOR_SEMANTIC_ITEMS", 200, 1, sys.maxsize)
SEMANTIC_RECORDS = env_int("AUDITOR_SEMANTIC_RECORDS", 20_000, 1, sys.maxsize)
PAIR_LIMIT = 100_000           # pairs the review pages reach (the best ones; the engine's sample bounds it too)
# pairs.csv carries both records' texts: 100,000 pairs of long or templated records would be
# hundreds of MB per threshold. It holds the best pairs within this many bytes (the page says so).
PAIRS_CSV_BYTES = env_bytes("AUDITOR_PAIRS_CSV_BYTES", 64 * 1024 ** 2)
MIN_THRESHOLD = min(DEFAULT_THRESHOLDS)   # the lowest threshold the audit searches (the curve's floor)
DEFAULT_THRESHOLD = 0.7
DEFAULTS = {"dataset": "example:gsm8k", "config": "main", "split": "train", "text": "question",
            "answer": "answer", "group": "", "labels": [], "threshold": DEFAULT_THRESHOLD}
MAX_HUB_ID = 200               # "namespace/name": the Hub allows at most 96 characters each
SHARED_MARKS = 20              # "not a duplicate" marks carried by a share link, at most
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
    value: str       # what the library loads (for an upload: Gradio's temp path, never shown)
    name: str        # what the page shows
    stamp: tuple = ()

    @property
    def library_kind(self) -> str:
        return {"example": "example", "hub": "hub", "upload": "local"}[self.kind]


def upload_path(upload) -> Path | None:
    if not upload:
        return None
    return Path(upload if isinstance(upload, str) else getattr(upload, "name", str(upload)))


def resolve_source(dataset, upload=None) -> Source:
    """The dataset field -> a source. Only bundled examples, hub ids and this session's upload:
    a path on the server is never accepted."""
    dataset = (dataset or "").strip()
    if dataset.startswith("upload:"):
        if not upload:
            raise AuditorError("usage", "No uploaded file: upload a JSONL, JSON, CSV or Parquet file again.",
                               "Uploaded files are kept for this page only and cannot be shared by link.")
        named, held = dataset[len("upload:"):].strip(), upload_path(upload).name
        if named != held:   # a name typed by hand: never audit another file under it
            raise AuditorError("usage", f"The dataset box names the upload {named!r:.120}, but the file uploaded "
                               f"on this page is {held!r:.120}.",
                               "Upload that file again, or put the uploaded file's name back in the box.")
        return upload_source(upload)
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
    return Source("hub", dataset, dataset)


def upload_source(upload) -> Source:
    """An uploaded file (Gradio's temp path) as a source; its stamp is size, time and a content
    hash, so the same bytes uploaded twice are recognised as the same data."""
    path = upload_path(upload)
    try:
        stat = path.stat()
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        raise AuditorError("not_found", f"The uploaded file {path.name!r} is gone.", "Upload it again.") from None
    return Source("upload", str(path), path.name, (stat.st_size, stat.st_mtime_ns, digest.hexdigest()))


def upload_file(source) -> str | None:
    """An uploaded source's file, when it is still the size and time it was audited at: copies are
    then made of its own lines (a JSONL record's bytes as written). None for other sources, or an
    upload since removed or replaced (the records audited, held in memory, are written instead)."""
    if source is None or source.kind != "upload":
        return None
    try:
        stat = os.stat(source.value)
    except OSError:
        return None
    return source.value if (stat.st_size, stat.st_mtime_ns) == tuple(source.stamp[:2]) else None


def same_data(a: Source, b: Source) -> bool:
    """Whether two sources are the same bytes (uploads) or the same id (examples, hub)."""
    if a.kind == "upload" or b.kind == "upload":
        return a.kind == b.kind and a.stamp[-1:] == b.stamp[-1:]
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
PAIR_LISTS = ResultCache(256 * 1024 ** 2, 16)   # (audit key, threshold) -> PairList
SEMANTIC = ResultCache(256 * 1024 ** 2, 16)     # (audit key, benchmark side, caps) -> a Paraphrases run


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
    try:
        t = round(float(threshold if threshold not in (None, "") else DEFAULT_THRESHOLD), 4)
    except (TypeError, ValueError, OverflowError):
        raise AuditorError("usage", f"Threshold {threshold!r:.40} is not a number.",
                           "Use a Jaccard threshold such as 0.7.") from None
    if not (MIN_THRESHOLD <= t <= 1.0):
        raise AuditorError("usage", f"Threshold {t:g} is outside [{MIN_THRESHOLD:g}, 1].",
                           f"Jaccard thresholds here run from {MIN_THRESHOLD:g} (loose) to 1 (identical shingles).")
    return t


def check_max_rows(max_rows) -> int | None:
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
    # Beyond what the app reads at most (infinity included): the app's cap, which the page states.
    return int(value) if value <= ROW_CAP else ROW_CAP


def make_request(dataset, config, split, text, answer, group, labels, threshold, max_rows) -> Request:
    t = check_threshold(threshold)
    cap = check_max_rows(max_rows)
    if isinstance(labels, str):
        labels = [x for x in labels.split(",")]
    labels = tuple(x.strip() for x in (labels or []) if x and x.strip())
    return Request((dataset or "").strip(), blank(config), blank(split), blank(text), blank(answer),
                   blank(group), labels, t, cap)


def run_audit(req: Request, upload=None, token=None, progress=None):
    """(result, source, cache key, seconds, cached) for a request; the library does the work."""
    token = user_token(token)
    src = resolve_source(req.dataset, upload)
    cap = min(req.max_rows or ROW_CAP, ROW_CAP)
    # No threshold in the key: the audit searches down to MIN_THRESHOLD whatever the threshold, so
    # one result answers them all (only its settings' default threshold differs).
    key = (src.kind, src.value, src.stamp, req.config, None if src.kind == "upload" else req.split, req.text,
           req.answer, req.group, req.labels, cap)
    if token:
        # A result read with a token may be private: it is kept for this page only, never shared.
        key = key + (("private", secrets.token_hex(8)),)
    hit = CACHE.get(key)
    if hit is not None:
        return at_threshold(hit, req.threshold), src, key, 0.0, True
    started = time.perf_counter()
    result = auditor.scan(src.value, config=req.config if src.kind != "upload" else None,
                          split=req.split if src.kind != "upload" else None,
                          text=req.text, answer=req.answer, group=req.group, labels=list(req.labels) or None,
                          settings=auditor.ScanSettings(threshold=req.threshold), max_rows=cap,
                          token=token, progress=progress, kind=src.library_kind)
    CACHE.put(key, result)
    return result, src, key, time.perf_counter() - started, False


def at_threshold(result, threshold: float):
    """The result as audited at ``threshold``: the search reached down to MIN_THRESHOLD whatever the
    threshold, so only the setting differs, and summary.json / REPORT.md must state the threshold
    their figures are at (as a fresh audit at it would)."""
    if result.settings.threshold == threshold:
        return result
    return replace(result, settings=replace(result.settings, threshold=threshold))


# --------------------------------------------------------------------------- marks and share links

def parse_marks(text) -> tuple:
    """``"3-17,5-9"`` -> ((3, 17), (5, 9)): pairs marked "not a duplicate" (a < b, sorted, unique);
    anything malformed is left out."""
    out = set()
    for part in str(text or "").split(","):
        a, sep, b = part.strip().partition("-")
        if sep and a.isdigit() and b.isdigit() and len(a) < 10 and len(b) < 10 and a != b:
            out.add((min(int(a), int(b)), max(int(a), int(b))))
    return tuple(sorted(out))


def format_marks(marks) -> str:
    return ",".join(f"{a}-{b}" for a, b in sorted(marks))


# The leakage tab's settings a share link carries (``leak_link``), in the order they are written.
LEAK_LINK_KEYS = ("b", "b_config", "b_split", "b_text", "b_self", "b_threshold", "bench", "bench_text", "ngram",
                  "cfields")


def leak_link(b_src: Source | None, b_config, b_split, b_text, allow_self, b_threshold, bench: Source | str | None,
              bench_text, ngram, cfields) -> dict:
    """The leakage tab's last check as share-link values: B (its id, config, split, text field,
    "compare with itself"), the threshold B was compared at, the contamination benchmark (a bundled
    name), its text field, the n-gram size and A's fields searched. An uploaded side is named
    ``upload:NAME``: the file cannot travel, and the page opened from the link says so."""
    out = {}
    if b_src is not None:
        out["b"] = f"upload:{b_src.name}" if b_src.kind == "upload" else b_src.name
        if b_src.kind != "upload":
            out.update({"b_config": b_config or None, "b_split": b_split or None})
        out.update({"b_text": b_text or None, "b_self": "1" if allow_self else None,
                    "b_threshold": f"{b_threshold:g}" if b_threshold is not None else None})
    if bench is not None:
        out["bench"] = f"upload:{bench.name}" if isinstance(bench, Source) else bench
        out.update({"bench_text": bench_text or None,
                    "ngram": str(ngram) if ngram not in (None, "", "auto") else None,
                    "cfields": ",".join(cfields) if cfields else None})
    return {k: v for k, v in out.items() if v not in (None, "")}


def share_url(base: str, req: Request, src: Source | None, threshold: float | None = None, marks=(),
              tab: str | None = None, leak: dict | None = None) -> str:
    """The link that opens this audit; ``tab``: the result tab shown (one of TABS; the overview is the
    default); ``leak``: the leakage tab's last check (``leak_link``), carried too."""
    if src is not None and src.kind == "upload":
        return "Uploaded files cannot be shared by link: publish the file (e.g. on the Hub) and audit it by id."
    t = threshold if threshold is not None else req.threshold
    params = {"dataset": req.dataset, "config": req.config, "split": req.split, "text": req.text,
              "answer": req.answer, "group": req.group, "labels": ",".join(req.labels) or None,
              "threshold": f"{t:g}",
              "max_rows": req.max_rows,
              "nd": format_marks(marks) if 0 < len(marks) <= SHARED_MARKS else None,
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
    folders = sorted((p for p in FILES_DIR.iterdir() if p.is_dir() and p.name != name), key=_modified)
    sizes = [_folder_bytes(p) for p in folders]
    total, count = sum(sizes), len(folders)
    for old, size in zip(folders, sizes):
        if count < KEEP_FOLDERS and total <= FILES_BYTES:
            break
        shutil.rmtree(old, ignore_errors=True)
        total, count = total - size, count - 1
    folder = FILES_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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
            values = ["" if v is None else v for _, col in cols for v in (col[a], col[b])]
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
