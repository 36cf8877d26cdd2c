"""Hugging Face Hub sources, through the real ``datasets`` / ``huggingface_hub`` clients.

Imported only when a hub id is given (``datasets`` takes ~1.5 s to import). The hub is
asked first, with a short timeout, whether the repo exists and can be read, so an
unreachable hub or a wrong id is a clear message in seconds instead of minutes of
retries. Rows are streamed, so a row cap reads only what it needs.

Which token reaches the hub (``_token``; every request path, the pre-flight ``dataset_info``,
config and split listing and the streamed rows, gets the same one):

- a string: that token, for this request only (never stored, logged or written to a report);
- ``False`` or a blank string: no token at all. The clients get ``token=False``, which
  huggingface_hub 2.x honours by sending no ``Authorization`` header (``get_token_to_send``), so
  neither ``HF_TOKEN`` nor a token saved by ``hf auth login`` is used. A server (``app.py``)
  always passes this unless its user typed a token: it never lends its own token to visitors;
- ``None`` (the library and CLI default) or ``True``: this machine's token, resolved here, explicitly, as
  huggingface_hub would: ``HF_TOKEN``, else the token saved by ``hf auth login``, none when
  ``HF_HUB_DISABLE_IMPLICIT_TOKEN`` is set.

The clients never receive ``token=None``, so they never fall back to a token on their own.

One deadline covers the whole read (``within_deadline``): AUDITOR_HUB_TIMEOUT is the longest the
Hub may go without answering, retries included. Each question to it (the pre-flight, the config and
split listings, opening the stream) and each wait for the next rows must end within it; the clients'
own retries with back-off (6 min 39 s against a hub that answered the pre-flight, then hung) run
inside it. A read can also be cancelled (``CANCEL``): the caller gets its answer at once.
"""
from __future__ import annotations

import contextvars
import itertools
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..env import env_float
from ..errors import AuditorError
from .budget import READ_ERRORS, read_error
from .listing import DATA_SUFFIXES
from .table import PACK_BATCH, HubParquet, Packer, Table, choose_split

DEFAULT_HUB_TIMEOUT = 10.0


def hub_timeout() -> float:
    """Seconds the Hub may go without answering during a read, retries included (``within_deadline``;
    the pre-flight question's own timeout too): AUDITOR_HUB_TIMEOUT, read when asked (a bad value
    warns and the default applies; at most 600)."""
    return env_float("AUDITOR_HUB_TIMEOUT", DEFAULT_HUB_TIMEOUT, 0.0, 600.0)


# A threading.Event the caller may set to stop a Hub read (a visitor who left the Space); None: not
# cancellable. Read by the thread that waits for the read (``within_deadline``).
CANCEL: contextvars.ContextVar = contextvars.ContextVar("auditor_hub_cancel", default=None)
_POLL = 0.2          # seconds between looks at the clock and the cancel flag


class _Read:
    """A Hub read running in its own thread: its result or error, and when it last heard from the Hub."""

    def __init__(self):
        self.heard = time.monotonic()
        self.done = threading.Event()
        self.stop = threading.Event()        # set when the caller gave up: the thread stops at its next answer
        self.result = None
        self.error: BaseException | None = None

    def progress(self) -> None:
        """The Hub answered (a listing, the next rows): the deadline starts again."""
        self.heard = time.monotonic()
        if self.stop.is_set():
            raise _Abandoned()


class _Abandoned(Exception):
    """Raised in an abandoned read's thread, to end it at its next answer."""


def within_deadline(work, repo_id: str, what: str = "the dataset"):
    """``work(progress)`` run in a daemon thread, its result returned, under one deadline: it fails
    with a clear error once the Hub has not answered for ``hub_timeout()`` seconds (``work`` calls
    ``progress()`` whenever it did), or at once when ``CANCEL``'s event is set. The clients cannot be
    interrupted inside a request: an abandoned thread ends at its next answer or its clients' limit."""
    read = _Read()
    limit = hub_timeout()
    cancel = CANCEL.get()

    def run():
        try:
            read.result = work(read.progress)
        except BaseException as exc:     # handed to the waiting thread
            read.error = exc
        finally:
            read.done.set()

    threading.Thread(target=run, name=f"auditor-hub-read:{repo_id}", daemon=True).start()
    while not read.done.wait(_POLL):
        if cancel is not None and cancel.is_set():
            read.stop.set()
            raise AuditorError("cancelled", f"The read of {repo_id!r} from the Hub was cancelled.",
                               "Start it again when you need it.")
        if time.monotonic() - read.heard > limit:
            read.stop.set()
            raise AuditorError("hub_unreachable", f"The Hub stopped answering while reading {what} of {repo_id!r}: "
                               f"nothing for {limit:g} s (AUDITOR_HUB_TIMEOUT, retries included).",
                               "Try again later, check the network (or HF_ENDPOINT), or raise AUDITOR_HUB_TIMEOUT; "
                               "offline, use a local file or example:NAME.")
    if read.error is not None:
        raise read.error
    return read.result


def _token(token) -> str | bool:
    """The token to pass to the hub clients: a string, or False for "send none" (see the module
    docstring). Never None: None would let the clients pick up HF_TOKEN on their own."""
    if token is False:
        return False
    if isinstance(token, str):
        return token.strip() or False
    if token is not None and token is not True:
        raise AuditorError("usage", f"A token must be a string, got {type(token).__name__}.",
                           "Pass the token as text, False for none, or None for this machine's token.")
    from huggingface_hub.utils import get_token_to_send
    return get_token_to_send(None) or False


def _classify(exc: Exception, repo_id: str, config=None) -> AuditorError:
    """Map whatever the hub clients raised to one clear AuditorError, by the clients' exception
    classes: huggingface_hub.errors (GatedRepoError is a RepositoryNotFoundError, so it is asked
    first; OfflineModeIsEnabled is a ConnectionError), datasets.exceptions (datasets reports a gated
    or missing set as DatasetNotFoundError, the two told apart by its message), the transport
    errors of the HTTP client huggingface_hub uses (not OSError), builtin ConnectionError and
    TimeoutError after retries, and datasets' ValueError for an unknown config."""
    from datasets.exceptions import DatasetNotFoundError
    from huggingface_hub.errors import (
        GatedRepoError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.utils import (
        httpx as hub_http,  # the HTTP client huggingface_hub is built on
    )
    text = str(exc)
    if isinstance(exc, GatedRepoError) or (isinstance(exc, DatasetNotFoundError) and "is a gated dataset" in text):
        return AuditorError("gated", f"{repo_id} is a gated dataset: access needs a token of an account that "
                            "accepted its terms.", "Accept the terms on the dataset page, then pass a token "
                            "(HF_TOKEN or the token box).")
    if isinstance(exc, (RepositoryNotFoundError, DatasetNotFoundError, RevisionNotFoundError)):
        return AuditorError("not_found", f"Dataset {repo_id!r} was not found on the Hub (or it is private).",
                            "Check the id (owner/name, as in the dataset page URL); private sets need a token.")
    if isinstance(exc, OfflineModeIsEnabled) or (isinstance(exc, ConnectionError) and "offline mode" in text.lower()):
        return AuditorError("hub_unreachable", f"The Hub cannot be reached for {repo_id!r}: offline mode is on "
                            "(HF_HUB_OFFLINE) and the dataset is not in the local cache.",
                            "Unset HF_HUB_OFFLINE, or use a local file or a bundled example:NAME.")
    if isinstance(exc, (ConnectionError, TimeoutError, hub_http.TransportError)):
        return AuditorError("hub_unreachable", f"The Hub did not answer for {repo_id!r} "
                            f"({type(exc).__name__}).",
                            "Check the network (or HF_ENDPOINT); offline, use a local file or example:NAME.")
    chain = _chain(exc)
    said = " ".join(f"{type(e).__name__}: {e}" for e in chain)
    if "Dataset scripts are no longer supported" in said:
        script = re.search(r"found (\S+?\.py)", said)
        name = script.group(1) if script else "a .py file"
        return AuditorError("bad_format", f"{repo_id} is a loading script ({name}), not data files: the datasets "
                            "library no longer runs dataset scripts.",
                            "Audit the data files themselves (JSONL, JSON, CSV, Parquet), or a copy of the dataset "
                            "saved as files.")
    if any(type(e).__name__ in ("EmptyDatasetError", "DataFilesNotFoundError") for e in chain):
        return AuditorError("empty_input", f"{repo_id} holds no data files the datasets library reads.",
                            "Check the dataset's files on its page: data must be JSONL, JSON, CSV, Parquet, Arrow "
                            "or text files (a README alone is no data).")
    if "Couldn't infer the same data file format for all splits" in said:
        return AuditorError("bad_format", f"{repo_id}: its splits are stored in different file formats "
                            f"({text.split('Got ')[-1][:200]}), and the datasets library reads one format per config.",
                            "Store every split in one format, or give each its own config in the README's configs.")
    codec = re.search(r"Compression type (\w+) not supported", said)
    if codec:                  # fsspec decompresses the Hub's files, with a package of its own per codec
        package = {"zstd": "zstandard"}.get(codec.group(1), codec.group(1))
        return AuditorError("bad_format", f"{repo_id}: its files are compressed with {codec.group(1)}, which the "
                            f"datasets library reads only with the Python package {package!r}, not installed here.",
                            f"Install it (pip install {package}), or audit the files themselves: a local "
                            f"{codec.group(1)} file is read without it.")
    if isinstance(exc, ValueError) and "BuilderConfig" in text:
        return AuditorError("bad_config", f"{repo_id} has no config {config!r}.",
                            f"{text.split('not found.')[-1].strip() or 'Leave the config blank to list them.'}")
    return AuditorError("bad_format", f"{repo_id}: the dataset could not be read ({type(exc).__name__}: "
                        f"{text[:300]}).",
                        "Check the dataset page; a script-based or unusual dataset may need converting to files.")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (``datasets`` wraps the reason a file could not be read in its own errors)."""
    seen = [exc]
    while len(seen) < 10:
        nxt = seen[-1].__cause__ or seen[-1].__context__
        if nxt is None or nxt in seen:
            break
        seen.append(nxt)
    return seen


def _remote(repo_id: str) -> str:
    """The id as ``datasets`` must see it to read the Hub only: given a bare "owner/name", it
    reads a local folder of that name first if one exists (so a typed-in id could read, or reveal,
    a folder on a server)."""
    return f"hf://datasets/{repo_id}"


def _check_reachable(repo_id: str, token: str | bool, revision: str | None = None) -> str | None:
    """The dataset's commit at ``revision`` (None: its latest), asked with a short timeout; None
    offline (the datasets cache answers, or load_dataset says offline)."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RevisionNotFoundError
    try:
        return HfApi().dataset_info(repo_id, revision=revision, token=token, timeout=hub_timeout()).sha
    except RevisionNotFoundError:
        raise AuditorError("not_found", f"{repo_id} has no revision {revision!r:.80}.",
                           "Give a commit sha, a branch or a tag of the dataset (see its page's history), "
                           "or leave the revision out to read the latest.") from None
    except Exception as exc:  # the hub client raises many types (httpx2.*, HfHubHTTPError, ...)
        raise _classify(exc, repo_id) from None


def _configs(repo_id: str, token, pinned: dict):
    """(the dataset's module, its config names, the config read when none is given), as ``datasets``
    decides them: the README's ``default: true`` config, else ``default``, else the first (what
    ``get_dataset_config_names`` and ``get_dataset_default_config_name`` give, from one module)."""
    from datasets.load import dataset_module_factory, get_dataset_builder_class
    module = dataset_module_factory(_remote(repo_id), token=token, **pinned)
    builder = get_dataset_builder_class(module, dataset_name=repo_id.split("/")[-1])
    configs = list(builder.builder_configs) or [
        module.builder_kwargs.get("config_name", builder.DEFAULT_CONFIG_NAME or "default")]
    default = module.builder_configs_parameters.default_config_name
    if default not in configs:
        default = "default" if "default" in configs else configs[0]
    return module, configs, default


def _reader_options(module) -> dict:
    """Options for the builder reading ``module``'s files. Parquet is read in batches of a set size:
    datasets takes the first row group's size, and a first row group of 0 rows (pyarrow writes one for
    an empty table, a writer given an empty batch first keeps it) failed the whole read."""
    return {"batch_size": PACK_BATCH} if module.module_path.endswith(".parquet") else {}


def _data_files(module, config) -> dict:
    """{split: [hf:// URL of each data file datasets reads]} of ``config``; {} when the module does not say."""
    for built in module.builder_configs_parameters.builder_configs or ():
        if built.name == config and built.data_files:
            return {str(k): list(v) for k, v in built.data_files.items()}
    return {}


def _refuse_skipped_formats(repo_id: str, module, config, split, token) -> None:
    """Files of a split in a format other than its most common one are dropped by ``datasets`` without
    a word (data/train-a.jsonl read, data/train-b.csv not), so a count would silently miss their rows.
    Checked where datasets infers the files from their names (no ``configs`` in the README); the
    README's own ``data_files`` say exactly what each config holds."""
    if module.builder_configs_parameters.metadata_configs:
        return
    read = set(_data_files(module, config).get(split, ()))
    base = module.builder_kwargs.get("base_path")
    if not read or not base:
        return
    from datasets.data_files import DataFilesDict, get_data_patterns
    from datasets.download import DownloadConfig
    from datasets.packaged_modules import _ALL_ALLOWED_EXTENSIONS
    download = DownloadConfig(token=token)
    every = DataFilesDict.from_patterns(get_data_patterns(base, download_config=download), base_path=base,
                                        allowed_extensions=_ALL_ALLOWED_EXTENSIONS, download_config=download)
    # Tables only: a stray notes.txt beside the data is no dropped data.
    skipped = sorted(name for name in (f.rsplit("/", 1)[-1] for f in set(every.get(split, ())) - read)
                     if name.lower().endswith((*DATA_SUFFIXES, ".arrow")))
    if skipped:
        kinds = sorted({f.rsplit("/", 1)[-1].split(".", 1)[-1] for f in read})
        raise AuditorError("bad_format", f"{repo_id} ({split}) mixes file formats: the datasets library reads its "
                           f"{len(read)} .{'/.'.join(kinds)} file(s) and would skip {len(skipped)} other(s) "
                           f"({', '.join(skipped[:5])}{', ...' if len(skipped) > 5 else ''}).",
                           "Store the split in one format, or name each file's split in the README's configs.")


# The first line of a Git LFS pointer: a file pushed without LFS, served as these few lines, not its data.
_LFS_POINTER = "version https://git-lfs.github.com/spec/"


def _refuse_lfs_pointers(repo_id: str, module, config, token) -> None:
    """Raise a clear error when the config's data files are Git LFS pointers instead of data (asked
    after a read failed, or read a pointer as a table: parquet says "magic bytes not found", JSON a
    parse error, CSV two rows). Small files only: a pointer is ~130 bytes."""
    from huggingface_hub import HfFileSystem
    try:
        files = [f for split_files in _data_files(module, config).values() for f in split_files][:200]
        fs = HfFileSystem(token=token)
        pointers = [f for f in files if fs.info(f).get("size", 0) < 1024
                    and fs.cat_file(f, start=0, end=len(_LFS_POINTER)).decode("latin-1") == _LFS_POINTER]
    except Exception:      # noqa: BLE001  (only a diagnosis: the read's own error is raised instead)
        return
    if pointers:
        names = [f.split("@", 1)[-1].split("/", 1)[-1] for f in pointers]
        raise AuditorError("bad_format", f"{repo_id}: {len(names)} data file(s) hold a Git LFS pointer, not data "
                           f"({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}).",
                           "The files were pushed without Git LFS: ask the owner to push them again with "
                           "git lfs installed (or upload them with huggingface_hub).")


def resolve_revision(repo_id: str, revision: str | None = None, token=None) -> tuple[str | None, str | None]:
    """(the commit ``revision`` names, the dataset's latest commit): equal when the revision is the
    latest or not given. A server keys its cache on the first and says when the second differs.
    Under the Hub deadline (``within_deadline``)."""
    token = _token(token)

    def ask(progress):
        latest = _check_reachable(repo_id, token)
        progress()
        if revision is None or revision == latest:
            return latest, latest
        return _check_reachable(repo_id, token, revision), latest
    return within_deadline(ask, repo_id, "the revision")


def describe(repo_id: str, config: str | None = None, token=None, sample_rows: int = 50) -> dict:
    """Configs, the splits of ``config`` (or the first config), its columns and a few rows
    (enough to guess roles from values as well as names). Under the Hub deadline (``within_deadline``)."""
    token = _token(token)
    import datasets  # noqa: F401  (imported before the deadline starts: seconds of local work, not the Hub's)
    return within_deadline(lambda progress: _describe(repo_id, config, token, sample_rows, progress), repo_id,
                           "the description")


def _describe(repo_id: str, config, token, sample_rows: int, progress) -> dict:
    _check_reachable(repo_id, token)
    progress()
    import datasets
    try:
        module, configs, default = _configs(repo_id, token, {})
    except Exception as exc:
        raise _classify(exc, repo_id) from None
    progress()
    chosen = config or default
    if config is not None and configs and config not in configs:
        raise AuditorError("bad_config", f"{repo_id} has no config {config!r}.",
                           f"Available configs: {', '.join(configs)}.")
    try:
        splits = list(datasets.get_dataset_split_names(_remote(repo_id), chosen, token=token))
        progress()
        stream = datasets.load_dataset(_remote(repo_id), chosen, split=splits[0], streaming=True, token=token,
                                       **_reader_options(module))
        rows = []
        for row in itertools.islice(iter(stream), sample_rows):
            progress()
            if not rows and any(str(key).startswith(_LFS_POINTER) for key in row):
                raise ValueError("a Git LFS pointer read as a table")
            rows.append(row)
    except (AuditorError, _Abandoned):
        raise
    except Exception as exc:
        _refuse_lfs_pointers(repo_id, module, chosen, token)
        raise _classify(exc, repo_id, chosen) from None
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return {"configs": configs, "config": chosen, "splits": splits, "columns": columns, "rows": rows}


def load_hub(repo_id: str, config, split, max_rows, token, default_split: str = "train",
             revision: str | None = None) -> Table:
    """The rows of a Hub dataset's split, streamed, under the Hub deadline (``within_deadline``), read
    at one commit: ``revision`` (a sha, branch or tag) or the latest. The Table records the commit
    (``revision``), so a report says exactly what it audited; a revision that is no longer the latest
    is read as asked and the notices say a newer one exists."""
    token = _token(token)
    import datasets  # noqa: F401  (imported before the deadline starts: seconds of local work, not the Hub's)
    return within_deadline(lambda progress: _load_hub(repo_id, config, split, max_rows, token, default_split,
                                                      revision, progress), repo_id)


def _load_hub(repo_id: str, config, split, max_rows, token, default_split: str, revision, progress) -> Table:
    latest = _check_reachable(repo_id, token)
    progress()
    commit = latest if revision in (None, latest) else _check_reachable(repo_id, token, revision)
    progress()
    if commit is None:                  # offline: what the cache holds for the revision asked
        commit = revision
    import datasets
    notices = []
    if revision is not None and latest is not None and commit != latest:
        notices.append(f"revision {commit} read as asked; the dataset has a newer one ({latest})")
    pinned = {"revision": commit} if commit else {}
    try:
        module, configs, default = _configs(repo_id, token, pinned)
    except Exception as exc:
        raise _classify(exc, repo_id) from None
    progress()
    if config is None:
        config = default
        if len(configs) > 1:
            notices.append(f"config not given: using '{config}' (available: {', '.join(configs)})")
    elif configs and config not in configs:
        raise AuditorError("bad_config", f"{repo_id} has no config {config!r}.",
                           f"Available configs: {', '.join(configs)}.")
    try:
        splits = list(datasets.get_dataset_split_names(_remote(repo_id), config, token=token, **pinned))
    except Exception as exc:
        _refuse_lfs_pointers(repo_id, module, config, token)
        raise _classify(exc, repo_id, config) from None
    progress()
    split, note = choose_split(split, splits, repo_id, default_split)
    if note:
        notices.append(note)
    try:
        _refuse_skipped_formats(repo_id, module, config, split, token)
    except AuditorError:
        raise
    except Exception as exc:
        raise _classify(exc, repo_id, config) from None
    progress()
    batch: list[dict] = []                  # packed a batch at a time: never the split's records as dicts
    packer = Packer()
    truncated = False
    try:
        # (what load_dataset(streaming=True) does, with the builder kept: its files are the rows' files)
        builder = datasets.load_dataset_builder(_remote(repo_id), config, token=token, **pinned,
                                                **_reader_options(module))
        stream = builder.as_streaming_dataset(split=split)
        for row in stream:
            progress()
            if max_rows is not None and packer.count + len(batch) >= max_rows:
                truncated = True
                break
            if not batch and not packer.count and any(str(key).startswith(_LFS_POINTER) for key in row):
                raise ValueError("a Git LFS pointer read as a table")    # a CSV pointer parses as 2 rows
            batch.append(row)
            if len(batch) >= PACK_BATCH:
                packer.add(batch)
                batch = []
        packer.add(batch)
        rows = packer.rows()
    except (AuditorError, _Abandoned):
        raise
    except Exception as exc:
        _refuse_lfs_pointers(repo_id, module, config, token)
        raise _classify(exc, repo_id, config) from None
    if not rows:
        raise AuditorError("empty_input", f"{repo_id} ({config}/{split}) has no rows.", "Try another split.")
    return Table(rows=rows, source=repo_id, config=config, split=split, files=(f"{repo_id}/{config}/{split}",),
                 row_cap=max_rows, truncated=truncated, splits=tuple(splits), configs=tuple(configs),
                 notices=tuple(notices), revision=commit, hub_parquet=_parquet_read(repo_id, module, builder, split))


# A data file as datasets names it: hf://datasets/OWNER/NAME@REVISION/PATH
_HUB_FILE = re.compile(r"hf://datasets/(?P<repo>[^@]+)@(?P<revision>[^/]+)/(?P<path>.+)")


def _parquet_read(repo_id: str, module, builder, split: str) -> HubParquet | None:
    """The split's Parquet files as the builder read them (its resolved data files, in its order:
    shards, and a README's patterns as it expanded them) when the rows read are those files' rows as
    stored: the Parquet reader, no column or row selection in the config; else None. The revision
    is the one in the files' names, the commit they were read at (None when they do not say)."""
    config = builder.config
    if not module.module_path.endswith(".parquet") or getattr(config, "columns", None) is not None \
            or getattr(config, "filters", None) is not None:
        return None
    urls = {str(k): [str(u) for u in v] for k, v in (config.data_files or {}).items()}.get(split, [])
    found = [_HUB_FILE.fullmatch(url) for url in urls]
    if not urls or not all(m and m["repo"] == repo_id for m in found):
        return HubParquet(repo_id, None, ())
    revisions = {m["revision"] for m in found}
    return HubParquet(repo_id, revisions.pop() if len(revisions) == 1 else None, tuple(m["path"] for m in found))


class FetchTooLarge(Exception):
    """The Parquet files a copy needs pass what it may fetch (``fetch_parquet``'s ``most_bytes``)."""

    def __init__(self, needed: int, most: int):
        super().__init__(needed, most)
        self.needed, self.most = needed, most


@dataclass(frozen=True)
class FetchInto:
    """Where a copy's fetched files go instead of huggingface_hub's cache: ``folder``, a server's
    folder for one job, which the server removes once the copy is written (or has failed), and
    ``claim(nbytes)``, called before each file is fetched with its size as the Hub lists it, which
    counts it in the server's disk budget or raises a clear ``AuditorError`` when there is no room."""
    folder: Path
    claim: Callable[[int], None]


def fetch_parquet(files: HubParquet, token=None, rows: int | None = None, most_bytes: int | None = None,
                  into: FetchInto | None = None) -> list:
    """Local paths of a Hub split's Parquet files (``Table.hub_parquet``), in the order they were
    read, fetched through huggingface_hub at the commit read and no other; with ``rows``, only the
    first files, those holding the first ``rows`` rows. A file already in huggingface_hub's cache is
    read there, not fetched again. The others go to that cache, or with ``into`` (a server) to
    ``into.folder``, each claimed first (``FetchInto``), so they never pile up in the cache.
    Under the Hub deadline (``within_deadline``: each answer the download gets is one); a file that
    cannot be fetched is a clear error, never another revision or a copy made otherwise.
    ``most_bytes``: the files not yet in the cache (their sizes as the Hub lists them) may total at
    most that, else ``FetchTooLarge`` before the first one past it is fetched (a capped read of the
    first rows of one huge file)."""
    token = _token(token)
    if files.revision is None or not files.paths:
        raise AuditorError("bad_format", f"{files.repo_id}: the commit its Parquet files were read at is not known, "
                           "so a copy of them could be of other files.",
                           "Audit it again online (without HF_HUB_OFFLINE), or write the copy as .jsonl.")
    import huggingface_hub  # noqa: F401  (imported before the deadline starts)
    return within_deadline(lambda progress: _fetch_parquet(files, token, rows, most_bytes, into, progress),
                           files.repo_id, "the Parquet files")


def _classify_fetch(exc: Exception, repo_id: str) -> AuditorError:
    """``_classify``, and huggingface_hub's word for a file neither reachable nor in its cache (refused
    connections after its retries, or offline mode)."""
    from huggingface_hub.errors import LocalEntryNotFoundError
    if isinstance(exc, LocalEntryNotFoundError):
        return AuditorError("hub_unreachable", "the Hub could not be reached (HF_ENDPOINT, or offline mode: "
                            "HF_HUB_OFFLINE) and the file is not in huggingface_hub's cache.",
                            "Check the network, or run where the Hub answers.")
    return _classify(exc, repo_id)


def _for_the_copy(ask, files: HubParquet, what: str):
    """``ask()``, a Hub request for a copy of ``files``; its failure a clear error naming ``what``."""
    try:
        return ask()
    except _Abandoned:
        raise
    except Exception as exc:    # noqa: BLE001  (the hub client raises many types)
        why = _classify_fetch(exc, files.repo_id)
        raise AuditorError(why.code, f"Cannot {what} {files.repo_id} at commit {files.revision} for the copy "
                           f"of its rows as stored: {why.message}",
                           f"{why.hint} Nothing was written.".strip()) from None


def _fetch_parquet(files: HubParquet, token, rows, most_bytes, into: FetchInto | None, progress) -> list:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import HfApi, hf_hub_download, try_to_load_from_cache
    from huggingface_hub.utils import tqdm as hub_tqdm

    class Heard(hub_tqdm):
        """The download's progress bar: each chunk received is an answer from the Hub."""

        def update(self, n=1):
            progress()
            return super().update(n)

    # Files already in huggingface_hub's cache cost no fetch (and need no Hub): read where they are.
    cached = {name: try_to_load_from_cache(files.repo_id, name, revision=files.revision, repo_type="dataset")
              for name in files.paths}
    cached = {name: path for name, path in cached.items() if isinstance(path, str)}
    unfetched = [name for name in files.paths if name not in cached]
    sizes = {}
    if (most_bytes is not None or into is not None) and unfetched:
        listed = _for_the_copy(lambda: HfApi().get_paths_info(files.repo_id, unfetched, repo_type="dataset",
                                                              revision=files.revision, token=token),
                               files, "list the Parquet files of")
        sizes = {entry.path: int(getattr(entry, "size", 0) or 0) for entry in listed}
        progress()
    # (a folder of its own: the cache's copy is not made a second time beside it)
    where = {} if into is None else {"local_dir": into.folder}
    paths, held, fetched = [], 0, 0
    for name in files.paths:
        path = cached.get(name)
        if path is None:
            fetched += sizes.get(name, 0)
            if most_bytes is not None and fetched > most_bytes:
                raise FetchTooLarge(fetched, most_bytes)
            if into is not None:
                into.claim(sizes.get(name, 0))
            path = _for_the_copy(lambda: hf_hub_download(files.repo_id, name, repo_type="dataset",
                                                         revision=files.revision, token=token, tqdm_class=Heard,
                                                         **where),
                                 files, f"fetch {name} of")
            progress()
        paths.append(path)
        if rows is not None:
            try:
                held += pq.read_metadata(path).num_rows
            except (*READ_ERRORS, pa.ArrowException) as exc:
                raise read_error(exc, Path(path)) from None
            if held >= rows:
                break
    return paths
