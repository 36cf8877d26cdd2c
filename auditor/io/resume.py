"""Resume caches (``--shard-dir``) are input too: a per-shard result is reused only when this run's
own code wrote it, for these inputs and settings.

- The run key (in the file name and inside the file) is derived from the inputs, the settings and
  the code version (``code_version``: a hash of the package's source, so a result made by other
  code, this project's older versions included, is never reused).
- The file is signed (HMAC-SHA256) with a secret kept outside the shard folder, readable by this
  user only (``secret``): a file someone else wrote or edited in the folder, however well it
  imitates the format and names the right key, fails the check.
- It is read within a size bound (``MAX_FILE_BYTES``), as a regular file, never through a link
  (a shard linked to /dev/zero, or 439 MB large, was read whole until the process was killed).

Anything that fails a check is not an error: the shard is scanned again and its file replaced.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

from ..errors import AuditorError

MAX_FILE_BYTES = 64 << 20       # a saved result larger than this is not read (the shard is scanned again)
SECRET_BYTES = 32
_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def code_version() -> str:
    """A hash of the package's Python source and data files (what a result depends on)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in _PACKAGE.rglob("*") if p.suffix in (".py", ".txt") and p.is_file()):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def secret_path() -> Path:
    """AUDITOR_RESUME_SECRET (a file path), else the user's cache folder: never the shard folder."""
    given = os.environ.get("AUDITOR_RESUME_SECRET")
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "auditor" / "resume-secret"


def secret() -> bytes | None:
    """This user's signing secret, created on first use (mode 0600); None when it cannot be read or
    made (then nothing is resumed: every shard is scanned)."""
    path = secret_path()
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(SECRET_BYTES))
    except FileExistsError:
        pass                                 # another run made it first
    except OSError:
        return None
    try:
        return _read_secret(path)
    except OSError:
        return None


def _read_secret(path: Path) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        # ours alone: a secret others can read or replace signs nothing
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.getuid():
            return None
        data = handle.read(SECRET_BYTES + 1)
    return data if len(data) == SECRET_BYTES else None


def run_key(parts: dict) -> str:
    """The run's key: inputs and settings (``parts``), and the code version."""
    blob = json.dumps({**parts, "code": code_version()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def dump(run: str, identity: dict, payload: dict) -> str | None:
    """A saved result's text: its MAC, a newline, then the signed JSON body. None: no secret (the
    result is not saved; the run goes on)."""
    key = secret()
    if key is None:
        return None
    body = json.dumps({"key": run, "shard": identity, "payload": payload}, sort_keys=True)
    return _mac(key, body.encode()) + "\n" + body


def load(path: Path, run: str, identity: dict) -> dict | None:
    """The payload saved at ``path`` for this run and shard, or None when there is none we can trust:
    missing, not a regular file, a link, too large, not signed by this user's secret, another run's
    or another shard's."""
    key = secret()
    if key is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        return None
    mac, _, body = raw.partition(b"\n")
    if not hmac.compare_digest(mac.decode("ascii", "replace"), _mac(key, body)):
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("key") != run or data.get("shard") != identity:
        return None
    payload = data.get("payload")
    return payload if isinstance(payload, dict) else None


def shard_folder(folder) -> Path:
    """``folder`` made if missing (a clear error when it cannot be): where a run keeps its results."""
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AuditorError("output_path", f"Cannot create the shard folder {str(folder)!r}: {exc.strerror}.",
                           "Give a writable --shard-dir.") from None
    return path
