"""``auditor leak A B --engine ray`` (and ``clean --engine ray``): a huge training side A against a
modest evaluation side B, with A's shards mapped by Ray tasks and only matches coming back.

B is prepared on the driver as the local engine prepares it, and its indexes are built once and
put in the object store (``BIndex``): normalised text keys, answer keys (the answer normaliser is
chosen from A's first 1,000 answers and B's, as locally), text+answer keys, group values, and a
near-duplicate index of B's shingle sets (``NearIndex``). A is any source the Ray engine reads
(``runtime.list_shards``): a file, directory or glob of JSONL / JSON / CSV / Parquet shards, plain or
compressed, or a URI pyarrow or fsspec opens (s3://, gs://, hf://, file://); train-/test- files act
as splits, as locally. Ray Data's file-based reader gives each read task one shard's bytes, or
several small shards' one after another (``runtime.map_shards``, ``runtime.shard_groups``), each
parsed there by the local engine's own parsers (``runtime.record_batches``:
the same records, keys and types as the local engine, so the same fingerprint, and errors naming
the shard), and the task scans them a bounded batch of records at a time
(``scan_records``) and returns per B row the lowest-numbered EVIDENCE_MATCHES A rows per kind,
its best CROSS_MATCHES near duplicates, the exact near-pair count, the group values shared with
B, the text, answer and id of the A rows it names (evidence.csv), and the fold of its canonical
records (``roles.fold_records``: A's fingerprint combines the folds in shard order). The driver
reduces the shards in order, so counts, matches, Jaccard scores, shared groups, near-pair count
and fingerprint equal the local engine's; summary.json differs only by its ``engine`` block.

Near duplicates without a global vocabulary: shingles are identified by B's words (or B's
characters) through a trie of B's shingle prefixes, so an A shingle holding a word B lacks is
simply "not in B" and counts only toward A's set size (computed on the batch, as locally).
Candidates are the A rows holding a shingle of a B row's prefix (its first |b| - ceil(t|b|) + 1
shingles in B's rare-first order): J(a, b) >= t needs |a & b| >= t|b|, so every such pair shares
a prefix shingle whatever the order. A batch makes its candidates a stretch of rows at a time
(at most about CANDIDATE_CHUNK pairs), drops those the size filter or the overlap bound rules out
(the shared prefix shingles plus the rest of B's set must reach t / (1 + t) (|a| + |b|)) and
verifies the others by the local merge of sorted lists (true Jaccard), from A's batch and B's
matrix in place. The search is always exact: ``--method lsh`` is refused, and where the local engine's
"auto" would switch to LSH (beyond 6e11 A x B pairs) the Ray engine still searches exactly.

Contained matches (a B text inside a longer A text): B's ``near.contained.ContainedIndex`` is
built from the same shingle sets and each batch's A rows (over B's shingles) go through its
``batch``, the code the local engine runs; per-shard best rows are reduced as near duplicates are.

Resume: per-shard results are written atomically to a shard folder (``--shard-dir``), keyed by
B's fingerprint, the roles and the settings, and checked against the shard's identity (location,
size, modification time); a re-run maps only the other shards.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import numpy as np
import scipy.sparse as sp

from ..errors import AuditorError
from ..io.columns import chained
from ..io.listing import display_name
from ..io.outputs import atomic_write, check_shard_dir
from ..io.shards import RECORD_FORMATS, head_records, shown_uri, source_name, split_shards
from ..leakage import LeakResult, add_contained_matches, add_near_matches, add_reworded_matches, prepared_b
from ..near import CROSS_MATCHES, CrossSink
from ..near.contained import METHOD as CONTAINED_METHOD
from ..near.contained import ContainedIndex
from ..near.prefix import entry_slices, leading_entries, row_list_lengths
from ..near.verifier import cross_verify
from ..near.result import EPS
from ..normalize import normalized
from ..prepare import PreparedSide, answer_normalizer, in_source
from ..report.leak import EVIDENCE_MATCHES, MATCH_KINDS, group_order, side_block
from ..roles import (
    as_text,
    canonical_record,
    column,
    combine_folds,
    fingerprint_of,
    fold_records,
    lookup,
    resolve_roles,
)
from ..settings import LeakSettings, SourceSpec
from ..shingles import char_text, entry_rows, set_sizes, windows_to_matrix, word_tokens
from ..io import resume
from .runtime import map_shards, ray_session, run

CANDIDATE_CHUNK = 1 << 20      # A x B candidate pairs made and verified at a time in a batch (at least a row's)
BATCH_ROWS = 50_000           # A records per batch in a task (memory per task: one batch and B's index; >= shingles.ARROW_MIN_TEXTS, so Arrow tokenises)
SHARD_FILE_VERSION = 6          # 2: + records with no text; 3: + answers and ids of the rows reported; 4: + notices; 5: named as locally
#                                 6: + contained matches
# Fault injection for the tests (the contamination engine's variables): a worker exits on its first
# batch while the FAIL_ONCE marker file does not exist (creating it), so Ray must retry the task;
# the driver is interrupted (KeyboardInterrupt, as by Ctrl-C) after saving STOP_AFTER shard results.
FAIL_ONCE_ENV = "AUDITOR_RAY_FAIL_ONCE"
STOP_AFTER_ENV = "AUDITOR_RAY_STOP_AFTER_SHARDS"


# --------------------------------------------------------------------------- A as the report sees it

@dataclass(frozen=True)
class StreamedTable:
    """What a report says about A's table, without its rows (they stay in the shards)."""
    source: str
    config: str | None = None
    split: str | None = None
    truncated: bool = False
    files: tuple = ()
    notices: tuple = ()         # the listing's (a split chosen, files skipped), as the local loader says them


@dataclass(frozen=True)
class StreamedFields:
    """A's role values for the rows the matches name (evidence, REPORT.md), by A row."""
    text: dict
    answer: dict | None = None
    group: None = None
    ids: dict | None = None


@dataclass(frozen=True)
class StreamedSide:
    """A read by Ray tasks: the report's view of a PreparedSide (source, size, roles, fingerprint)."""
    table: StreamedTable
    roles: object
    fields: StreamedFields = field(repr=False)
    fingerprint: str
    records: int
    no_text: int = 0            # records with no text (as PreparedSide.no_text), counted in the tasks

    def block(self) -> dict:
        return side_block(self)


# --------------------------------------------------------------------------- B's indexes

@dataclass
class NearIndex:
    """B's shingle sets for an exact search without A's vocabulary (see the module docstring)."""
    unit: str
    size: int
    threshold: float
    words: dict | None            # word -> id (unit "word")
    codes: np.ndarray | None      # sorted code points (unit "char")
    pad: int                      # the id that fills a short text's single shingle
    levels: list                  # sorted packed (prefix id, token) keys per shingle position 2..k
    columns: int
    matrix: sp.csr_matrix         # B row x B shingle, sorted indices
    sizes: np.ndarray
    prefix_t: sp.csr_matrix       # B shingle x B row: the shingle is in the row's prefix
    after_prefix: np.ndarray      # per B row, its shingles after its prefix (ceil(t|b|) - 1)
    contained: ContainedIndex     # B's shingle sets for contained matches (the local engine's code)


@dataclass
class BIndex:
    roles_a: object
    answer_normalizer: str | None
    text: dict                    # key -> B rows
    answer: dict | None
    both: dict | None
    groups: frozenset | None
    near: NearIndex


def _key_index(keys) -> dict:
    out: dict = {}
    for i, k in enumerate(keys):
        if k is not None:
            out.setdefault(k, []).append(i)
    return out


def _tokens(texts: list, unit: str):
    """(token ids in the batch's own sorted vocabulary, tokens per text, that vocabulary)."""
    if unit == "word":
        vocabulary: list = []
        ids, lengths = word_tokens(texts, vocabulary)
        return ids, lengths, vocabulary
    prepared = [char_text(t) for t in texts]
    lengths = np.fromiter((len(t) for t in prepared), dtype=np.int64, count=len(prepared))
    codepoints = np.frombuffer("".join(prepared).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    vocabulary, ids = np.unique(codepoints, return_inverse=True)
    return ids.reshape(-1), lengths, vocabulary


def _windows(ids: np.ndarray, lengths: np.ndarray, k: int, pad: int):
    """(record of each shingle window, [token at position j of each window] for j < k), as
    ``shingles`` makes them: every k-window, or one padded window for a text shorter than k."""
    n_windows = np.where(lengths >= k, lengths - k + 1, (lengths > 0).astype(np.int64))
    indptr = np.concatenate(([0], np.cumsum(n_windows)))
    record = np.repeat(np.arange(lengths.size), n_windows)
    offset = np.arange(int(indptr[-1])) - indptr[record]
    first = (np.cumsum(lengths) - lengths)[record] + offset
    length = lengths[record]
    ids = np.asarray(ids, dtype=np.int64)
    top = max(ids.size - 1, 0)
    columns = [np.where(offset + j < length, ids[np.minimum(first + j, top)] if ids.size else pad, pad)
               for j in range(k)]
    return record, columns


def _build_levels(columns: list, base: int):
    """B's shingles as ids 0..n-1 through a trie of their prefixes (each level's keys sorted)."""
    current = columns[0].astype(np.int64)
    levels = []
    for token in columns[1:]:
        keys = np.unique(current * base + token)
        current = np.searchsorted(keys, current * base + token)
        levels.append(keys)
    return current, levels, (int(levels[-1].size) if levels else base)


def _lookup_levels(columns: list, levels: list, base: int) -> np.ndarray:
    """A's shingles as B's shingle ids, -1 where B has no such shingle (an unknown token is -1)."""
    current = columns[0].astype(np.int64)
    for token, keys in zip(columns[1:], levels):
        ok = (current >= 0) & (token >= 0)
        key = np.where(ok, current * base + token, 0)
        pos = np.searchsorted(keys, key)
        found = ok & (pos < keys.size)
        found[found] = keys[pos[found]] == key[found]
        current = np.where(found, pos, -1)
    return current


def build_near_index(texts_b: list, shingle, threshold: float) -> NearIndex:
    ids, lengths, vocabulary = _tokens(texts_b, shingle.unit)
    pad = len(vocabulary)
    record, columns = _windows(ids, lengths, shingle.size, pad)
    shingle_id, levels, n_columns = _build_levels(columns, pad + 1)
    n = len(texts_b)
    matrix = sp.csr_matrix((np.ones(shingle_id.size, np.float32), (record, shingle_id)), shape=(n, n_columns))
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    matrix.sort_indices()
    sizes = np.diff(matrix.indptr).astype(np.int64)
    # Prefixes under B's own rare-first order (any order keeps the search exact; rare-first keeps it small).
    df = np.bincount(matrix.indices, minlength=n_columns)
    rank = np.empty(n_columns, dtype=np.int64)
    rank[np.argsort(df, kind="stable")] = np.arange(n_columns)
    prefix_len = np.minimum(sizes - np.ceil(threshold * sizes - EPS).astype(np.int64) + 1, sizes)
    # Each row's entries by rank (ranks are distinct), its first prefix_len kept.
    ranked = sp.csr_matrix((np.ones(matrix.nnz, np.int8), rank[matrix.indices], matrix.indptr), shape=(n, n_columns))
    ranked.sort_indices()
    kept = leading_entries(ranked.indptr, prefix_len)
    r = entry_rows(ranked.indptr, np.flatnonzero(kept))
    c = np.argsort(rank)[ranked.indices[kept]]                   # ranks back to columns
    del ranked, kept
    prefix_t = sp.csr_matrix((np.ones(r.size, np.float32), (c, r)), shape=(n_columns, n))
    words = {w: i for i, w in enumerate(vocabulary)} if shingle.unit == "word" else None
    return NearIndex(shingle.unit, shingle.size, threshold, words, None if words is not None else vocabulary,
                     pad, levels, n_columns, matrix, sizes, prefix_t, sizes - prefix_len,
                     ContainedIndex.build(matrix, threshold))


def near_batch(index: NearIndex, texts: list):
    """((a, b, jaccard) of every pair of this batch's records with B's at Jaccard >= t, the number
    of candidates verified), and the same for contained matches ((a, b, containment), candidates).
    Candidates are made, filtered and verified a stretch of A rows at a time, each stretch with at
    most about CANDIDATE_CHUNK of them (at least a row): text over a few letters puts nearly every
    B row in every A row's candidates, and one product per batch took 15 GB for 8 MB a side."""
    n = len(texts)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)), 0
    if not n or not index.matrix.nnz:
        return empty, empty
    ids, lengths, vocabulary = _tokens(texts, index.unit)
    if index.words is not None:
        to_b = np.fromiter((index.words.get(w, -1) for w in vocabulary), dtype=np.int64, count=len(vocabulary))
    else:
        pos = np.searchsorted(index.codes, vocabulary)
        hit = pos < index.codes.size
        hit[hit] = index.codes[pos[hit]] == vocabulary[hit]
        to_b = np.where(hit, pos, -1).astype(np.int64)
    mapped = to_b[ids] if ids.size else np.zeros(0, np.int64)
    record, columns = _windows(mapped, lengths, index.size, index.pad)
    shingle = _lookup_levels(columns, index.levels, index.pad + 1) if index.levels else columns[0]
    known = shingle >= 0
    a_known = sp.csr_matrix((np.ones(int(known.sum()), np.float32), (record[known], shingle[known])),
                            shape=(n, index.columns))
    del record, columns, shingle, known
    a_known.sum_duplicates()                     # sorted indices too
    a_known.data[:] = 1.0
    # A's whole set sizes (shingles B lacks included), for candidate rows only, from their tokens in
    # the batch's own vocabulary by the local code (``shingles.windows_to_matrix``).
    sizes_a = np.full(n, -1, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths

    def whole_sizes(rows: np.ndarray) -> np.ndarray:
        rows = rows[sizes_a[rows] < 0]
        if rows.size:
            counts = lengths[rows]
            positions = np.repeat(starts[rows] - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
            sizes_a[rows] = set_sizes(windows_to_matrix(ids[positions], counts, index.size))
        return sizes_a

    contained = index.contained.batch(a_known, whole_sizes)      # only B's shingles count toward |A & B|
    t, n_b = index.threshold, index.matrix.shape[0]
    # A pair's product entry counts the A shingles in B's prefix; the rest of B (|b| - prefix, the
    # ceil(t|b|) - 1 shingles after it) can add at most that many, so J >= t, which needs
    # |a & b| >= t / (1 + t) (|a| + |b|), is out of reach below it: an exact filter.
    bound = np.minimum(row_list_lengths(a_known, index.prefix_t.indptr, 0, n), n_b)
    found, scored = [], 0
    for lo, hi in entry_slices(np.concatenate(([0.0], np.cumsum(bound))), 0, n, CANDIDATE_CHUNK):
        product = (a_known[lo:hi] @ index.prefix_t).tocoo()
        a, b = product.row.astype(np.int64) + lo, product.col.astype(np.int64)
        shared = product.data.astype(np.int64)
        del product
        sizes = whole_sizes(np.unique(a))
        sa, sb = sizes[a], index.sizes[b]
        keep = np.minimum(sa, sb) >= t * np.maximum(sa, sb) - EPS            # the size filter
        keep &= shared + index.after_prefix[b] >= np.ceil(t / (1 + t) * (sa + sb) - EPS)
        a, b = a[keep], b[keep]
        if not a.size:
            continue
        order = np.lexsort((b, a))
        a, b = a[order], b[order]
        jaccard = cross_verify(a_known, index.matrix, a, b, sizes, index.sizes, t)
        keep = jaccard >= t - EPS
        found.append((a[keep], b[keep], jaccard[keep]))
        scored += int(a.size)
    if not found:
        return (empty[0], scored), contained
    return (tuple(np.concatenate(parts) for parts in zip(*found)), scored), contained


def build_index(side_b, settings, roles_a, sample_a: list) -> BIndex:
    """B's indexes (see the module docstring); ``sample_a``: A's first 1,000 records, whose
    answers choose the answer normaliser with B's, as the local engine's first 1,000 do."""
    fb = side_b.fields
    text_b = side_b.normalized("text")
    answer_norm = answer = both = None
    if roles_a.answer is not None and fb.answer is not None:
        answer_norm = answer_normalizer(chained(column(sample_a, roles_a.answer), fb.answer))
        ans_b = side_b.normalized("answer", answer_norm)
        answer = _key_index(ans_b)
        both = _key_index([(t, x) if t is not None and x is not None else None for t, x in zip(text_b, ans_b)])
    groups = None
    if roles_a.group is not None and fb.group is not None:
        groups = frozenset(g for g in fb.group if g)
    near = build_near_index(fb.text, settings.near.shingle, settings.near.threshold)
    return BIndex(roles_a, answer_norm, _key_index(text_b), answer, both, groups, near)


# --------------------------------------------------------------------------- one shard of A (a Ray Data read task)

def scan_records(parts, index: BIndex, fail_once: str | None = None, batch_rows: int = BATCH_ROWS) -> dict:
    """The matches of one shard of A against B (JSON-able; rows are the shard's own). ``parts``:
    the shard's records, in lists (``runtime.record_batches``)."""
    roles = index.roles_a
    exact = {kind: {} for kind in MATCH_KINDS if kind not in ("near_duplicate", "contained")}
    sink = CrossSink(CROSS_MATCHES)
    inside = CrossSink(CROSS_MATCHES)           # contained matches (containment as the score)
    state = (0, 0)
    pairs = candidates = inside_candidates = no_text = 0
    groups: set = set()
    details: dict = {}          # A row -> [text, answer, id], for the rows this shard may report
    first = 0

    def process(rows: list) -> None:
        nonlocal state, pairs, candidates, inside_candidates, first, no_text
        state = fold_records(map(canonical_record, rows), state)
        text = [roles.text_of(r, first + i) for i, r in enumerate(rows)]     # one field, or several joined
        # Every record's answer and id, as the local engine reads A (the same errors on a bad value):
        # 23 ms per 52,000 rows each, against 361 ms for the text and its key alone.
        answer, ids = ([as_text(lookup(r, path), path, first + i) for i, r in enumerate(rows)] if path else None
                       for path in (roles.answer, roles.id))
        keys = normalized(text, "default")
        no_text += sum(key is None for key in keys)
        found: list = []

        def add(kind: str, b_rows: list, row: int) -> None:
            for b in b_rows:
                have = exact[kind].setdefault(b, [])
                if len(have) < EVIDENCE_MATCHES:
                    have.append(row)
                    found.append(row)
        for i, key in enumerate(keys):
            if key is not None and key in index.text:
                add("identical_text", index.text[key], first + i)
        if index.answer is not None:
            answers = normalized(answer, index.answer_normalizer)
            for i, (t, x) in enumerate(zip(keys, answers)):
                if x is not None and x in index.answer:
                    add("identical_answer", index.answer[x], first + i)
                if t is not None and x is not None and (t, x) in index.both:
                    add("identical_both", index.both[(t, x)], first + i)
        if index.groups is not None:
            for i, r in enumerate(rows):
                g = as_text(lookup(r, roles.group), roles.group, first + i)
                if g and g in index.groups:
                    groups.add(g)
        ((a, b, j), scored), ((ca, cb, cs), c_scored) = near_batch(index.near, text)
        candidates += scored
        inside_candidates += c_scored
        pairs += int(a.size)
        if a.size:
            sink.add(a + first, b, j)
            sink.compact()
        if ca.size:
            inside.add(ca + first, cb, cs)
            inside.compact()
        kept = set(found) | set(sink.kept[0].tolist()) | set(inside.kept[0].tolist())    # rows this shard may report
        for row in kept:
            if first <= row < first + len(rows):
                k = row - first
                details[row] = [text[k], answer[k] if answer else None, ids[k] if ids else None]
        first += len(rows)

    batch: list = []
    for part in parts:
        if fail_once and not os.path.exists(fail_once):
            Path(fail_once).write_text("failed once\n")
            os._exit(1)         # the worker dies mid-task: Ray must retry the task
        batch += part
        if len(batch) >= batch_rows:
            process(batch)
            batch = []
    if batch:
        process(batch)
    near = sink.result(min_threshold=index.near.threshold, method="exact-all-pairs", candidates=candidates)
    contained = inside.result(min_threshold=index.near.threshold, method=CONTAINED_METHOD,
                              candidates=inside_candidates)
    kept = (set(near.a.tolist()) | set(contained.a.tolist())
            | {r for rows in exact.values() for v in rows.values() for r in v})
    return {"records": first, "no_text": no_text, "fold": list(state), "pairs": pairs, "candidates": candidates,
            "exact": {kind: sorted([b, rows] for b, rows in m.items()) for kind, m in exact.items()},
            "near": [near.a.tolist(), near.b.tolist(), near.jaccard.tolist()],
            "contained": [contained.a.tolist(), contained.b.tolist(), contained.jaccard.tolist()],
            "groups": sorted(groups), "rows": sorted([r, *details[r]] for r in kept)}


class _ScanShard:
    """The read tasks' function (``runtime.map_shards``): one shard's records -> one row, the
    shard's index and its ``scan_records`` result as JSON. Only that leaves the task."""

    def __init__(self, index_ref, fail_once: str | None, batch_rows: int):
        self.index_ref, self.fail_once, self.batch_rows = index_ref, fail_once, batch_rows

    def __call__(self, shard, parts, notices=()):
        import pyarrow as pa
        import ray
        index = _INDEX_CACHE.get(self.index_ref.hex())
        if index is None:                       # B's index once per worker process, not per shard
            _INDEX_CACHE.clear()
            index = _INDEX_CACHE[self.index_ref.hex()] = ray.get(self.index_ref)
        result = scan_records(parts, index, self.fail_once, self.batch_rows)
        # the readers' (a delimiter guessed ...), as locally: named by the file's own name, as the
        # local loader names a file of a folder ("x.csv: ...", not the shard's "sub/x.csv: ...")
        own = PurePosixPath(shard.name).name
        result["notices"] = [f"{own}: {n[len(shard.name) + 2:]}" if n.startswith(f"{shard.name}: ") else n
                             for n in notices]
        yield pa.table({"shard": pa.array([shard.index], pa.int64()),
                        "result": pa.array([json.dumps(result)], pa.large_string())})


_INDEX_CACHE: dict = {}


# --------------------------------------------------------------------------- the driver

def a_source(a) -> str:
    """A as a string: a path (str or os.PathLike), a glob or a URI (s3://, gs://, hf://, file://)."""
    if isinstance(a, os.PathLike):
        a = os.fsdecode(os.fspath(a))
    if not isinstance(a, str) or not a.strip():
        raise AuditorError("usage", "No training side (A) given.",
                           "Pass a file, directory, glob or URI of JSONL/JSON/CSV/Parquet shards.")
    return a.strip()


def a_shards(source: str, split) -> tuple[object, list, str | None, list]:
    """(filesystem, A's shards, split, notices): ``runtime.split_shards``, as the local loader reads A."""
    return split_shards(source, split, RECORD_FORMATS)


def _no_records(shards: list) -> AuditorError:
    return AuditorError("empty_input", f"{', '.join(s.name for s in shards)}: no records found.",
                        "The file is empty or holds only a header; check that it is the right file.")


def ray_leak(a, b, *, settings=None, split_a=None, config_a=None, max_rows=None, token=None, progress=None,
             address=None, num_cpus=None, shard_dir=None, quiet=False, batch_rows: int = BATCH_ROWS):
    """``leakage.leak`` with A's shards on Ray (see the module docstring). ``b``: anything
    ``leak`` takes for B, or a PreparedSide (``clean`` passes its TEST). ``batch_rows``: A records
    per batch inside a task (memory per task; the result does not depend on it)."""
    settings = (settings or LeakSettings()).validated()
    if settings.near.method == "lsh":
        raise AuditorError("usage", "--engine ray searches near duplicates exactly: --method lsh does not apply.",
                           "Leave --method at auto (or exact).")
    if config_a is not None or max_rows is not None:
        raise AuditorError("usage", "--engine ray reads every row of A's files: --config-a and --max-rows do not "
                           "apply.", "Point A at its files (a directory or glob of shards).")
    report = progress or (lambda f, s: None)
    source = a_source(a)
    b_source = b.source if isinstance(b, SourceSpec) else None if isinstance(b, PreparedSide) else b
    check_shard_dir(shard_dir, [source, b_source if isinstance(b_source, (str, os.PathLike)) else None], "leak")
    filesystem, shards, split, notices = a_shards(source, split_a)
    report(0.0, "loading")
    spec_b = b if isinstance(b, (PreparedSide, SourceSpec)) else SourceSpec(b, None, None, None, token,
                                                                              default_split="test")
    side_b = prepared_b(spec_b, settings)
    sample = head_records(filesystem, shards)
    if not sample:
        raise _no_records(shards)
    ra = settings.roles_a
    try:
        roles_a = resolve_roles(sample, text=ra.text, answer=ra.answer, group=ra.group, head_only=True)
    except AuditorError as exc:
        raise in_source(exc, source_name(source)) from None          # named, as the local engine names it
    index = build_index(side_b, settings, roles_a, sample)
    local = "://" not in source or source.startswith("file://")
    key = _run_key(side_b, settings, roles_a, index.answer_normalizer,
                   [os.path.abspath(s.path) if local else f"{source.split('://')[0]}://{s.path}" for s in shards])
    store = ShardStore(shard_dir, key) if shard_dir else None
    done = {s.index: store.load(s) for s in shards} if store else {}
    done = {i: r for i, r in done.items() if r is not None}
    todo = [s for s in shards if s.index not in done]
    report(0.2, f"comparing {len(todo)} of {len(shards)} shards of A on Ray")
    with ray_session(address, num_cpus, quiet=quiet) as ray:
        start = time.perf_counter()
        if todo:
            # Ray Data's file-based reader: a read task per shard (small ones grouped) runs the scan on
            # the records it parsed (Ray retries a task whose worker dies); only each shard's result comes back.
            fail_once = os.environ.get(FAIL_ONCE_ENV) or None
            results = map_shards(filesystem, todo, _ScanShard(ray.put(index), fail_once, batch_rows))
            stop_after = int(os.environ.get(STOP_AFTER_ENV) or 0)

            def collect() -> None:
                for row in results.iter_rows():
                    i = int(row["shard"])
                    done[i] = json.loads(row["result"])
                    if store:
                        store.save(shards[i], done[i])
                        if stop_after and len(store.saved) >= stop_after:
                            raise KeyboardInterrupt(f"{STOP_AFTER_ENV}={stop_after}")   # fault injection: Ctrl-C
                    report(0.2 + 0.75 * len(done) / len(shards), "comparing shards of A")
            run(collect)
        seconds = time.perf_counter() - start
        cpus = ray.cluster_resources().get("CPU")
    missing = [s.name for s in shards if s.index not in done]
    if missing:                             # every shard yields one row, even an empty one
        raise RuntimeError(f"Ray returned no result for shards {missing}")
    per_shard = [done[s.index] for s in shards]
    total = sum(r["records"] for r in per_shard)
    if not total:
        raise _no_records(shards)
    # The reduce, in shard order: A rows are shard rows plus the rows of the shards before.
    matches: dict = {}
    counts = dict.fromkeys(MATCH_KINDS, 0)
    reported: dict = {}         # A row -> [text, answer, id] of the rows the matches may name
    fold = (0, 0)
    sink = CrossSink(CROSS_MATCHES)
    inside = CrossSink(CROSS_MATCHES)
    pairs = candidates = 0
    shared: set = set()
    offset = 0
    exact: dict = {kind: {} for kind in MATCH_KINDS if kind not in ("near_duplicate", "contained")}
    for result in per_shard:
        fold = combine_folds(fold, tuple(result["fold"]))
        for kind, items in result["exact"].items():
            for b_row, rows in items:
                have = exact[kind].setdefault(b_row, [])
                have += [r + offset for r in rows[:EVIDENCE_MATCHES - len(have)]]
        a_rows, b_rows, jac = result["near"]
        if a_rows:
            sink.add(np.asarray(a_rows, np.int64) + offset, np.asarray(b_rows, np.int64), np.asarray(jac, np.float64))
        a_rows, b_rows, score = result["contained"]
        if a_rows:
            inside.add(np.asarray(a_rows, np.int64) + offset, np.asarray(b_rows, np.int64),
                       np.asarray(score, np.float64))
        pairs += result["pairs"]
        candidates += result["candidates"]
        shared.update(result["groups"])
        reported.update((r + offset, values) for r, *values in result["rows"])
        offset += result["records"]

    def add(b_row: int, kind: str, a_rows: list) -> None:
        matches.setdefault(b_row, {})[kind] = a_rows[:EVIDENCE_MATCHES]

    # In the local engine's order: text matches, then answer and both per B row, then near duplicates.
    for b_row in sorted(exact["identical_text"]):
        add(b_row, "identical_text", exact["identical_text"][b_row])
        counts["identical_text"] += 1
    for b_row in sorted(set(exact["identical_answer"]) | set(exact["identical_both"])):
        for kind in ("identical_answer", "identical_both"):
            if b_row in exact[kind]:
                add(b_row, kind, exact[kind][b_row])
                counts[kind] += 1
    near = replace(sink.result(min_threshold=settings.near.threshold, method="exact-all-pairs",
                               candidates=candidates), pairs=pairs)
    counts["near_duplicate"] = add_near_matches(near, add, matches)
    contained = inside.result(min_threshold=settings.near.threshold, method=CONTAINED_METHOD, candidates=0)
    counts["contained"] = add_contained_matches(contained, add, matches)
    if roles_a.answer and side_b.fields.answer is not None:
        # The rows listed were reported by their shards with their answers (``reported``).
        counts["reworded_both"] = add_reworded_matches(matches, add, lambda rows: [reported[r][1] for r in rows],
                                                       lambda rows: [side_b.fields.answer[r] for r in rows],
                                                       index.answer_normalizer)
    named = {r for m in matches.values() for k in MATCH_KINDS for r in m.get(k, ())}
    # As the local engine shows a local source: its name, never this machine's folders.
    shown = display_name(source.removeprefix("file://")) if local else shown_uri(source)
    table = StreamedTable(source=shown, split=split, files=tuple(PurePosixPath(s.path).name for s in shards),
                          notices=(*notices, *(n for r in per_shard for n in r.get("notices", ()))))
    fields = [{r: reported[r][k] for r in sorted(named)} for k in range(3)]
    side_a = StreamedSide(table, roles_a, StreamedFields(fields[0], fields[1] if roles_a.answer else None,
                                                         ids=fields[2] if roles_a.id else None),
                          fingerprint_of(fold, roles_a), total, sum(r["no_text"] for r in per_shard))
    scanned = sum(s.size for s in todo)
    engine = {"name": "ray", "shards": len(shards), "shards_resumed": len(shards) - len(todo),
              "seconds": round(seconds, 3),
              "mb_per_s": round(scanned / 2 ** 20 / seconds, 1) if todo and seconds > 0 else None,
              "cpus": int(cpus) if cpus else None, "candidates": candidates}
    report(1.0, "done")
    shared_groups = sorted(shared, key=group_order) if index.groups is not None else []
    return LeakResult(a=side_a, b=side_b, threshold=settings.near.threshold, shingle=settings.near.shingle,
                      answer_normalizer=index.answer_normalizer, matches=matches, counts=counts,
                      shared_groups=shared_groups, near=near, engine=engine)


def _run_key(side_b, settings, roles_a, answer_norm, paths: list) -> str:
    """What a saved shard result depends on besides the shard itself (A's files: two training
    sides cleaned against into one folder do not share results), and the code (``resume.run_key``)."""
    near = settings.near
    return resume.run_key({"a": paths, "b": side_b.fingerprint, "roles_a": roles_a.to_dict(),
                           "answer_normalizer": answer_norm, "threshold": near.threshold,
                           "shingle": str(near.shingle), "version": SHARD_FILE_VERSION})


class ShardStore:
    """Per-shard results in a folder: ``leak-KEY-NNNNN.json``, written atomically, signed and checked
    when read (``resume``): a file this run's code did not write for these inputs is not used."""

    def __init__(self, folder, key: str):
        self.folder, self.key = resume.shard_folder(folder), key
        self.saved: list = []

    def path(self, index: int) -> Path:
        return self.folder / f"leak-{self.key}-{index:05d}.json"

    def load(self, shard) -> dict | None:
        data = resume.load(self.path(shard.index), self.key, shard.identity())
        if data is None or not isinstance(data.get("result"), dict):
            return None                         # not ours, or not for this shard: compared again
        return data["result"]

    def save(self, shard, result: dict) -> None:
        text = resume.dump(self.key, shard.identity(), {"result": result})
        if text is None:
            return                              # no signing secret: nothing saved, nothing to trust later
        with atomic_write(self.path(shard.index), sync=False) as handle:     # a resume cache: checked when read
            handle.write(text)
        self.saved.append(shard.name)
