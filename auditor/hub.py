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
"""
from __future__ import annotations

import itertools
import os

from .errors import AuditorError
from .table import Table, choose_split

DEFAULT_HUB_TIMEOUT = 10.0


def hub_timeout() -> float:
    """Seconds the pre-flight question to the hub may take: AUDITOR_HUB_TIMEOUT, read when asked
    (a bad value warns and the default applies; at most 600)."""
    from .env import env_float
    return env_float("AUDITOR_HUB_TIMEOUT", DEFAULT_HUB_TIMEOUT, 0.0, 600.0)


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
    from huggingface_hub.errors import (GatedRepoError, OfflineModeIsEnabled, RepositoryNotFoundError,
                                        RevisionNotFoundError)
    from huggingface_hub.utils import httpx as hub_http   # the HTTP client huggingface_hub is built on
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
    if isinstance(exc, ValueError) and "BuilderConfig" in text:
        return AuditorError("bad_config", f"{repo_id} has no config {config!r}.",
                            f"{text.split('not found.')[-1].strip() or 'Leave the config blank to list them.'}")
    return AuditorError("bad_format", f"{repo_id}: the dataset could not be read ({type(exc).__name__}: "
                        f"{text[:300]}).",
                        "Check the dataset page; a script-based or unusual dataset may need converting to files.")


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


def resolve_revision(repo_id: str, revision: str | None = None, token=None) -> tuple[str | None, str | None]:
    """(the commit ``revision`` names, the dataset's latest commit): equal when the revision is the
    latest or not given. A server keys its cache on the first and says when the second differs."""
    token = _token(token)
    latest = _check_reachable(repo_id, token)
    if revision is None or revision == latest:
        return latest, latest
    return _check_reachable(repo_id, token, revision), latest


def describe(repo_id: str, config: str | None = None, token=None, sample_rows: int = 50) -> dict:
    """Configs, the splits of ``config`` (or the first config), its columns and a few rows
    (enough to guess roles from values as well as names)."""
    token = _token(token)
    _check_reachable(repo_id, token)
    import datasets
    try:
        configs = list(datasets.get_dataset_config_names(_remote(repo_id), token=token))
    except Exception as exc:
        raise _classify(exc, repo_id) from None
    chosen = config or (configs[0] if configs else None)
    if config is not None and configs and config not in configs:
        raise AuditorError("bad_config", f"{repo_id} has no config {config!r}.",
                           f"Available configs: {', '.join(configs)}.")
    try:
        splits = list(datasets.get_dataset_split_names(_remote(repo_id), chosen, token=token))
        stream = datasets.load_dataset(_remote(repo_id), chosen, split=splits[0], streaming=True, token=token)
        rows = list(itertools.islice(iter(stream), sample_rows))
    except Exception as exc:
        raise _classify(exc, repo_id, chosen) from None
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return {"configs": configs, "config": chosen, "splits": splits, "columns": columns, "rows": rows}


def load_hub(repo_id: str, config, split, max_rows, token, default_split: str = "train",
             revision: str | None = None) -> Table:
    """Rows of a Hub dataset, read at one commit: ``revision`` (a sha, branch or tag) or the latest.
    The Table records the commit (``revision``), so a report says exactly what it audited; a
    revision that is no longer the latest is read as asked and the notices say a newer one exists."""
    token = _token(token)
    latest = _check_reachable(repo_id, token)
    commit = latest if revision in (None, latest) else _check_reachable(repo_id, token, revision)
    if commit is None:                  # offline: what the cache holds for the revision asked
        commit = revision
    import datasets
    notices = []
    if revision is not None and latest is not None and commit != latest:
        notices.append(f"revision {commit} read as asked; the dataset has a newer one ({latest})")
    pinned = {"revision": commit} if commit else {}
    try:
        configs = list(datasets.get_dataset_config_names(_remote(repo_id), token=token, **pinned))
    except Exception as exc:
        raise _classify(exc, repo_id) from None
    if config is None:
        if len(configs) > 1:
            config = "default" if "default" in configs else configs[0]
            notices.append(f"config not given: using '{config}' (available: {', '.join(configs)})")
        elif configs:
            config = configs[0]
    elif configs and config not in configs:
        raise AuditorError("bad_config", f"{repo_id} has no config {config!r}.",
                           f"Available configs: {', '.join(configs)}.")
    try:
        splits = list(datasets.get_dataset_split_names(_remote(repo_id), config, token=token, **pinned))
    except Exception as exc:
        raise _classify(exc, repo_id, config) from None
    split, note = choose_split(split, splits, repo_id, default_split)
    if note:
        notices.append(note)
    rows: list[dict] = []
    truncated = False
    try:
        stream = datasets.load_dataset(_remote(repo_id), config, split=split, streaming=True, token=token, **pinned)
        for row in stream:
            if max_rows is not None and len(rows) >= max_rows:
                truncated = True
                break
            rows.append(row)
    except Exception as exc:
        raise _classify(exc, repo_id, config) from None
    if not rows:
        raise AuditorError("empty_input", f"{repo_id} ({config}/{split}) has no rows.", "Try another split.")
    return Table(rows=rows, source=repo_id, config=config, split=split, files=(f"{repo_id}/{config}/{split}",),
                 row_cap=max_rows, truncated=truncated, splits=tuple(splits), configs=tuple(configs),
                 notices=tuple(notices), revision=commit)
