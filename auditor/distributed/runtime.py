"""Ray for one run, and a sharded corpus read as a Ray Dataset in a stable order.

``ray_session(address, num_cpus)`` joins a running cluster (``--ray-address`` or the
``RAY_ADDRESS`` environment variable) or starts a local Ray for the run, and shuts down only a Ray
it started itself (a caller's own ``ray.init``, e.g. a test fixture's, is left running).

``read_dataset(source, text_field)`` reads globs and directories of JSONL / JSON / Parquet shards
(and CSV / TSV from a ``list_shards(source, RECORD_FORMATS)`` listing), plain or compressed (.gz,
.bz2, .xz, .zst, .lz4, .br: the local engine's list, ``io.listing.COMPRESSED``), and any ``scheme://`` URI that pyarrow
or fsspec understands (s3://, gs://, hf://, file://), with Ray Data's file-based reader. A URI's
glob (``*``, ``**``, ``[...]``; ``?`` starts pyarrow's query options, e.g.
``?endpoint_override=HOST:PORT``) is matched against one listing by the filesystem that reads the
shards, so it needs no further package (no s3fs); reports show a URI without credentials or options.
Each shard is read whole by one read task (small shards several to a task, ``shard_groups``), in
shard order (local shards sorted as the local engine sorts them), so a row's position is fixed: the dataset's columns are

- ``text``: the text field, as the local engine reads it (``auditor.roles.as_text``);
- ``shard``: the shard's index in ``list_shards(source)``;
- ``row``: the row's global row number (shard order, then row order) — or, with
  ``global_rows=False``, its row number within its shard, which saves the counting pass (the
  contamination engine turns those into global numbers on the driver from per-shard counts).

``map_shards(filesystem, shards, shard_fn)`` is the same reader for whole records (the leak
engine's A): each read task parses its shard with the local engine's parsers (``record_batches``)
and runs ``shard_fn`` on the records, so only its output leaves the task.

A shard that cannot be read (truncated gzip, bad JSON, not Parquet) fails the run with an
``AuditorError`` naming the shard (``raise_for`` turns Ray's wrapped exception into it).
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import threading

import numpy as np
import pyarrow as pa

from ..env import env_float
from ..errors import AuditorError
from ..io.budget import Budget, CountedStream
from ..io.formats import parquet_batches
from ..io.listing import (
    COMPRESSED,
)
from ..io.shards import (
    Shard,
    head_records,
    list_shards,
    open_shard,
    record_batches,
    shard_error,
    source_name,
)
from ..prepare import in_source
from ..roles import joined_text, resolve_text_spec, text_fields
from ..textstream import joined_column, text_blocks
from ..wordtokens import as_string_array

INSTALL_HINT = 'Install the Ray extra: pip install "dataset-integrity-auditor[ray]" (or .[ray] in a checkout).'


def require_ray():
    """``ray`` (with Ray Data), or a clear ``not_installed`` error."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise AuditorError("not_installed", f"--engine ray needs Ray Data, which is not installed ({exc}).",
                           INSTALL_HINT) from None
    return ray


ADDRESS_HINT = ("Check --ray-address / RAY_ADDRESS: the head node's HOST:PORT (its GCS, 6379 by default), "
                "auto on a node where `ray start` ran, or ray://HEAD:10001 with Ray Client installed "
                "(pip install 'ray[client]'); or leave both unset for a local Ray.")
REACH_SECONDS = 10.0        # how long a cluster's address may take to answer before the run stops
JOIN_SECONDS_ENV = "AUDITOR_RAY_JOIN_SECONDS"     # how long joining may take (default 60 s) ...
# ... when the caller says what to do then (``_join_guard``): the CLI sets this for its run to
# report the error and end the process.
on_join_timeout = None


def _check_reachable(address: str) -> None:
    """A HOST:PORT address must accept a connection first: Ray itself waits for an unreachable
    GCS without end (minutes, with its own log lines), where the user needs one clear error."""
    if address in ("auto", "local") or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not re.fullmatch(r"[0-9]{1,5}", port) or not 0 < int(port) < 65536:
        raise AuditorError("usage", f"The Ray address {address!r} is not HOST:PORT, auto or ray://HOST:PORT.",
                           ADDRESS_HINT)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
    except OSError as exc:
        reason = "no answer" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise AuditorError("usage", f"Nothing answers at the Ray address {address!r} ({reason}).",
                           ADDRESS_HINT) from None


@contextlib.contextmanager
def _join_guard(address: str, on_timeout):
    """Joining a cluster at ``address`` (HOST:PORT or auto), bounded: if it takes longer than
    AUDITOR_RAY_JOIN_SECONDS (a port that accepts connections but is no Ray head: the dashboard's,
    say), ``on_timeout`` gets a clear error from a timer thread, since ray.init, stuck in Ray's
    own code, is reached by no exception. Ctrl-C ends the process meanwhile: Python would run its
    handler only once ray.init returned (so would it Ray's own SIGTERM handler, set by ray.init:
    the timer bounds that wait). Without ``on_timeout`` (the library), joining waits as Ray does."""
    if on_timeout is None or address == "local" or "://" in address:
        yield
        return
    seconds = env_float(JOIN_SECONDS_ENV, 60.0, 0.0, 3600.0)
    error = AuditorError("usage", f"Joining the Ray cluster at {address!r} took more than {seconds:g} s: it accepts "
                                  "connections but does not answer as a Ray head (its GCS).",
                         ADDRESS_HINT + f" A slow cluster may need more time: {JOIN_SECONDS_ENV}=SECONDS.")
    lock, joined = threading.Lock(), []

    def give_up() -> None:
        with lock:              # never once the join has finished
            if not joined:
                on_timeout(error)
    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL) if main else None
    timer.start()
    try:
        yield
    finally:
        with lock:
            joined.append(True)
        timer.cancel()
        if main:
            signal.signal(signal.SIGINT, previous)


def _sigterm_handler():
    return signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None


def _keep_sigterm_handler(handler) -> None:
    """ray.init replaces the SIGTERM handler with its own (``sys.exit(15)``, after Ray's C++ stack
    dump on stderr): a handler the caller set (the CLI's, which ends a run "terminated", exit 143,
    its temporary files removed) is put back. Ray's stays where there was none."""
    if callable(handler) and signal.getsignal(signal.SIGTERM) is not handler:
        signal.signal(signal.SIGTERM, handler)


@contextlib.contextmanager
def ray_session(address: str | None, num_cpus: int | None = None, *, quiet: bool = False):
    """Ray for the duration of a run: an existing cluster at ``address`` (or ``RAY_ADDRESS``), a Ray
    this process already started, or a local Ray started here (``num_cpus`` workers) and shut down
    on exit. ``quiet``: no Ray Data progress bars or log lines. Yields the ``ray`` module."""
    ray = require_ray()
    if quiet:
        logging.getLogger("ray").setLevel(logging.ERROR)
        logging.getLogger("ray.data").setLevel(logging.ERROR)
    address = address or os.environ.get("RAY_ADDRESS") or None
    started = False
    sigterm = _sigterm_handler()
    if not ray.is_initialized():
        kwargs = {"include_dashboard": False, "log_to_driver": False,
                  **({"logging_level": "ERROR"} if quiet else {})}
        try:
            if address:
                _check_reachable(address)
                with _join_guard(address, on_join_timeout):
                    # A cluster's workers were started by its nodes, not from this shell: the
                    # settings they read travel with the job (a local Ray's workers inherit them).
                    settings = worker_settings()
                    ray.init(address=address, **({"runtime_env": {"env_vars": settings}} if settings else {}), **kwargs)
            else:
                # "local": a new Ray for this run. ray.init() without an address would join the
                # cluster a `ray start` on this machine last recorded (TMP/ray/ray_current_cluster),
                # and wait without end when that head is gone (measured: over 5 minutes).
                ray.init(address="local", num_cpus=num_cpus, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {address!r}" if address else "a local Ray"
            raise AuditorError("usage", f"Could not start or join {where}: {exc}", ADDRESS_HINT) from None
        finally:
            _keep_sigterm_handler(sigterm)
        started = True
    context = ray.data.DataContext.get_current()
    # Results are reduced in the dataset's order, so outputs are byte-identical run to run.
    context.execution_options.preserve_order = True
    if quiet:
        context.enable_progress_bars = False
    try:
        with _task_errors_unlogged():
            yield ray
    finally:
        if started:
            ray.shutdown()


class _DropErrors:
    """A logging filter: records below ERROR only."""

    @staticmethod
    def filter(record) -> bool:
        return record.levelno < logging.ERROR


@contextlib.contextmanager
def _task_errors_unlogged():
    """Ray Data logs a failed task's whole stack on the console (twice) before it raises; the run
    raises it as one clear error (``run``), so the console handlers drop such records meanwhile
    (Ray's session log keeps them)."""
    handlers = [h for h in logging.getLogger("ray.data").handlers
                if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]
    for handler in handlers:
        handler.addFilter(_DropErrors)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_DropErrors)


# Settings the read tasks themselves read (the reading limit bounds each line a worker parses).
WORKER_SETTINGS = ("AUDITOR_MAX_BYTES",)


def worker_settings() -> dict:
    """This process's values of ``WORKER_SETTINGS``, for a cluster's workers."""
    return {name: os.environ[name] for name in WORKER_SETTINGS if os.environ.get(name, "").strip()}


# --------------------------------------------------------------------------- shards


# --------------------------------------------------------------------------- reading

def _datasource_class():
    from ray.data.datasource import FileBasedDatasource

    class ShardDatasource(FileBasedDatasource):
        """Ray Data's file-based reader over our shard list: one shard per read stream, each row
        tagged with its shard and its row number within the shard, only the text field kept."""

        def __init__(self, shards: list[Shard], filesystem, text_field: str | None, batch_rows: int,
                     map_fn=None, shard_fn=None):
            super().__init__([s.path for s in shards], filesystem=filesystem)
            resolved = self._paths()
            if len(resolved) != len(shards):
                raise AuditorError("usage", "Ray listed a different set of shards than the auditor did.",
                                   "Point at the shards directly (a directory or a glob).")
            self._shards = {p: s for p, s in zip(resolved, shards)}
            self._text_field = text_field
            self._batch_rows = batch_rows
            self._map_fn = map_fn
            self._shard_fn = shard_fn
            import ray
            self.groups = shard_groups([s.size for s in shards], int(ray.cluster_resources().get("CPU", 1)))

        def get_read_tasks(self, parallelism, *args, **kwargs):
            # Ray Data's tasks, one per shard and in shard order; each run of small shards then
            # becomes one task that reads them one after another (``shard_groups``).
            tasks = super().get_read_tasks(len(self._shards), *args, **kwargs)
            if len(tasks) != len(self._shards):
                raise RuntimeError(f"Ray Data made {len(tasks)} read tasks for {len(self._shards)} shards")
            return [tasks[g.start] if len(g) == 1 else _chained_task(tasks[g.start:g.stop]) for g in self.groups]

        def _open_input_source(self, filesystem, path, **open_args):
            # Parquet needs random access, and a compressed shard its codec from our table (xz has
            # none in Arrow, and Ray Data's own guess misses .br): both opened by open_shard.
            if self._shards[path].format == "parquet" or path.lower().endswith(COMPRESSED):
                return open_shard(filesystem, self._shards[path])
            return super()._open_input_source(filesystem, path, **open_args)

        def _read_stream(self, f, path):
            shard = self._shards[path]
            if self._shard_fn is not None:
                notices: list = []      # filled as the records are read: the shard function reports them at its end
                yield from self._shard_fn(shard, _as_shard_errors(record_batches(f, shard, notices=notices), shard),
                                          notices)
                return
            for first_row, table in _as_shard_errors(_tables(f, shard, self._text_field, self._batch_rows), shard):
                table = _tag(table, shard, first_row)
                yield self._map_fn(table) if self._map_fn else table

    return ShardDatasource


# A read task costs Ray Data about 25-30 ms whatever it reads (measured: 2,491 shards of 3 records
# each took 69 s with a task per shard); so shards smaller than TASK_BYTES share a task, up to
# that many bytes together, while every CPU still gets TASKS_PER_CPU tasks or more to balance.
TASK_BYTES = 64 * 2 ** 20
TASKS_PER_CPU = 4


def shard_groups(sizes: list[int], cpus: int) -> list[range]:
    """Consecutive runs of shards (by their sizes in bytes, in shard order), each read by one task:
    a shard alone once it reaches the target size, smaller ones together up to it. The target is
    ``TASK_BYTES``, or less when the corpus is small, so it still makes ``TASKS_PER_CPU`` tasks
    per CPU (a shard is never split). Shards all of size 0 (sizes unknown) get a task each."""
    if not any(sizes):
        # No sizes at all: a store that reports none (as 0) as much as empty files; a task each
        # keeps the work spread, as before groups.
        return [range(i, i + 1) for i in range(len(sizes))]
    target = max(1, min(TASK_BYTES, sum(sizes) // (TASKS_PER_CPU * max(cpus, 1))))
    groups, start, held = [], 0, 0
    for i, size in enumerate(sizes):
        if i > start and held + size > target:
            groups.append(range(start, i))
            start, held = i, 0
        held += size
    return groups + [range(start, len(sizes))] if sizes else []


def _chained_task(tasks):
    """One Ray Data read task running ``tasks`` (read tasks of consecutive shards) in order."""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import ReadTask
    read_fns = [task.read_fn for task in tasks]

    def read():
        for read_fn in read_fns:
            yield from read_fn()
    files = tuple(f for task in tasks for f in (task.metadata.input_files or ()))
    size = sum(task.metadata.size_bytes or 0 for task in tasks)
    return ReadTask(read, BlockMetadata(num_rows=None, size_bytes=size, exec_stats=None, input_files=files))


def _as_shard_errors(reader, shard):
    """``reader``'s items; a failure of the reader itself (bad JSON, a truncated gzip, not Parquet)
    becomes an error naming the shard. Only the reader's: what the caller does with the items
    (the scan) fails as itself, never as "cannot be read"."""
    while True:
        try:
            item = next(reader)
        except StopIteration:
            return
        except AuditorError:
            raise
        except Exception as exc:        # noqa: BLE001 - any reader failure is this shard's fault
            raise shard_error(shard, exc) from None
        yield item


def _tables(f, shard: Shard, text_field: str, batch_rows: int):
    """(first row, Arrow table with the text column) of one shard, in row order, each at most
    ``batch_rows`` rows, so memory per task is bounded by the batch and not the shard (JSONL and
    Parquet; a JSON document is one value and is read whole, as the local engine reads it). Every
    format but Parquet and JSONL with a plain field name goes through the local engine's parsers
    (``record_batches``), so the texts, and the errors, are theirs."""
    if shard.format == "jsonl" and "." not in text_field and "[" not in text_field:
        # The local engine's reader (auditor.textstream), through the local engine's checked stream
        # (UTF-16 marks, NUL bytes, gzip magic refused as locally): the same texts or the same error.
        # A dotted or selecting field (a nested path, messages[role=user]) is read record by record below, as locally.
        stream = CountedStream(f, Budget(limited=False), shard.name, b"\n")
        row = 0
        for texts in text_blocks(stream, shard.name, text_field):
            # (a text with a lone surrogate, which Arrow strings cannot hold, as the local scan takes it)
            texts = texts if isinstance(texts, pa.Array) else as_string_array(texts)
            for start in range(0, len(texts), batch_rows):
                part = texts.slice(start, batch_rows)
                yield row + start, pa.table({"text": part})
            row += len(texts)
        return
    row = 0
    if shard.format == "parquet":
        for table in _parquet_tables(f, shard, batch_rows):
            yield row, pa.table({"text": _texts(table, text_field, row)})
            row += table.num_rows
        return
    # JSON (any shape the local engine reads), CSV/TSV, JSONL with a dotted field: the local parsers.
    fields = text_fields(text_field)
    for records in record_batches(f, shard):
        for start in range(0, len(records), batch_rows):
            part = records[start:start + batch_rows]
            yield row, pa.table({"text": as_string_array([joined_text(r, fields, row + i)
                                                          for i, r in enumerate(part)])})
            row += len(part)


def _parquet_tables(f, shard: Shard, batch_rows: int):
    """Whole records of a Parquet shard as Arrow tables of at most ``batch_rows`` rows, repeated or
    blank column names renamed as the local engine renames them (text, text.1; "Unnamed: 0")."""
    import pyarrow.parquet as pq
    for batch in parquet_batches(pq.ParquetFile(f), batch_rows, shard.name):
        yield pa.Table.from_batches([batch])


def map_shards(filesystem, shards: list[Shard], shard_fn):
    """A Ray Dataset read by Ray Data's file-based reader, each shard whole by one read task,
    which runs ``shard_fn(shard, record_batches, notices)`` on it (-> Arrow tables; ``notices``: the
    readers' notices of the shard, complete once the records are read), so the records never
    leave the task that read them; the dataset is ``shard_fn``'s output, in shard order. Call
    inside ``ray_session``."""
    return single_operator(_read(_datasource_class()(shards, filesystem, None, 0, shard_fn=shard_fn)))


def _read(datasource):
    """Ray Data's read of our datasource, one task per group of shards. Asking for as many blocks
    as there are tasks matters: asked for more, Ray Data splits each task's output to make up the
    number (measured: 100 small shards in 9 tasks took 9 s so, 0.5 s asked for 9)."""
    ray = require_ray()
    return ray.data.read_datasource(datasource, override_num_blocks=max(len(datasource.groups), 1))


def single_operator(ds):
    """A dataset whose read (with the work in it) is its only operator: nothing downstream needs the
    share of CPUs Ray Data reserves for one by default, which kept one of two CPUs idle (measured:
    the shards ran one after another)."""
    ds.context.op_resource_reservation_enabled = False
    return ds


def _tag(table: pa.Table, shard: Shard, first_row: int) -> pa.Table:
    """The block a read stream yields: ``text``, ``shard`` and ``row`` (within the shard)."""
    n = table.num_rows
    return table.append_column("shard", pa.array(np.full(n, shard.index, dtype=np.int32))) \
        .append_column("row", pa.array(np.arange(first_row, first_row + n, dtype=np.int64)))


def _texts(table: pa.Table, field: str, first_row: int) -> pa.Array:
    """The text field (or fields, joined by commas) as strings, exactly as ``auditor.roles.joined_text``
    reads each record."""
    fields = text_fields(field)
    if all(name in table.column_names and pa.types.is_string(table.schema.field(name).type) for name in fields):
        columns = [table.column(name).combine_chunks() for name in fields]
        return columns[0] if len(columns) == 1 else joined_column(columns)
    rows = table.to_pylist()
    return as_string_array([joined_text(r, fields, first_row + i) for i, r in enumerate(rows)])


def read_dataset(source: str, text_field: str | None, *, global_rows: bool = True, batch_rows: int = 8192,
                 shards: tuple | None = None, map_fn=None):
    """The corpus as a Ray Dataset with columns ``text``, ``shard``, ``row`` (see the module doc).

    ``text_field`` is checked, or (None) chosen, from the first rows as the local engine does
    (``auditor.roles.resolve_roles``). ``shards``: a (filesystem, shards) pair from ``list_shards``
    (e.g. to skip finished shards on resume); row numbers are then within each shard unless
    ``global_rows``. ``map_fn``: applied to each block inside the read task (a table of
    ``batch_rows`` rows of text, shard, row -> any table), so the texts never leave the task that
    read them: the dataset is then ``map_fn``'s output, in shard order (and ``global_rows`` must be
    False). Call inside ``ray_session``."""
    ray = require_ray()
    filesystem, shard_list = shards if shards is not None else list_shards(source)
    datasource = _datasource_class()
    text_field = resolve_text_field(filesystem, shard_list, text_field, source)
    ds = _read(datasource(shard_list, filesystem, text_field, batch_rows, map_fn))
    if map_fn is not None:
        single_operator(ds)
    if not global_rows or map_fn is not None:
        return ds
    counts = shard_row_counts(ds, len(shard_list) and max(s.index for s in shard_list) + 1)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)

    def to_global(batch: pa.Table) -> pa.Table:
        shard = batch.column("shard").to_numpy()
        row = batch.column("row").to_numpy() + offsets[shard]
        return batch.set_column(batch.column_names.index("row"), "row", pa.array(row))
    return ds.map_batches(to_global, batch_format="pyarrow", zero_copy_batch=True)


def resolve_text_field(filesystem, shard_list: list[Shard], text: str | None = None, source: str | None = None) -> str:
    """The text field of the corpus: ``text`` checked against its first rows, or chosen from them,
    as the local engine does (``auditor.roles.resolve_roles`` on ``io.shards.head_records``); a role
    error names ``source`` as the local engine's does."""
    sample = head_records(filesystem, shard_list)
    if not sample:
        raise AuditorError("empty_input", "The corpus's shards hold no records to check.", "Check the corpus source.")
    try:
        return resolve_text_spec(sample, text)
    except AuditorError as exc:
        raise (in_source(exc, source_name(source)) if source else exc) from None


def shard_row_counts(ds, n_shards: int) -> np.ndarray:
    """Rows per shard (a pass over the dataset that keeps only two integers per block)."""
    def count(batch: pa.Table) -> pa.Table:
        shard = batch.column("shard").to_numpy()
        ids, n = np.unique(shard, return_counts=True)
        return pa.table({"shard": ids.astype(np.int32), "n": n.astype(np.int64)})
    counts = np.zeros(n_shards, dtype=np.int64)
    for batch in run(lambda: list(ds.select_columns(["shard"]).map_batches(count, batch_format="pyarrow")
                                  .iter_batches(batch_format="pyarrow", batch_size=None))):
        np.add.at(counts, batch.column("shard").to_numpy(), batch.column("n").to_numpy())
    return counts


def run(thunk):
    """Run ``thunk`` (something that executes a Ray dataset or task); a failure caused by an
    ``AuditorError`` in a worker is raised as that error, clean, on the driver."""
    try:
        return thunk()
    except AuditorError:
        raise
    except Exception as exc:       # noqa: BLE001 - unwrap Ray's task errors
        cause = find_auditor_error(exc)
        if cause is not None:
            raise AuditorError(cause.code, cause.message, cause.hint) from None
        raise


def find_auditor_error(exc: BaseException) -> AuditorError | None:
    seen = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, AuditorError) and getattr(e, "code", None) in AuditorError.CODES:
            return e
        stack += [getattr(e, "cause", None), e.__cause__, e.__context__]
    return None
