"""Uploaded files, kept so that a link to their audit works for a colleague.

Each file is kept under an id derived from its name and bytes with a key only this server holds
(HMAC-SHA256, 128 bits): the same file gets the same id, and nobody can guess or list an id
without the file and the key. It is kept under its own name (the readers tell its format by it,
and reports show it), in a folder of its id. The store is bounded twice, and the page states both bounds:

- time: a file goes ``UPLOAD_TTL`` seconds after it was last used (uploaded or opened by link);
- disk: the files together stay within ``UPLOAD_BYTES``; when a new one would pass it, the least
  recently used go first.

A file gone either way leaves a small note (when and why), so its link says "expired" or "removed
to make room", not "not found". Nothing here is served over HTTP: the folder is outside Gradio's
allowed paths, and the page never shows a path of it.
"""
from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from auditor import AuditorError
from auditor.env import env_bytes, env_int

UPLOAD_TTL = env_int("AUDITOR_UPLOAD_TTL", 7 * 24 * 3600, 60, sys.maxsize)        # seconds after last use
UPLOAD_BYTES = env_bytes("AUDITOR_UPLOAD_BYTES", 8 * 1024 ** 3)                   # all kept files, at most
# Gradio's own cache (files arriving, and the copies of files it serves) within this many bytes: an
# upload no event ever claims would otherwise stay there until its hourly clean-up.
GRADIO_CACHE_BYTES = env_bytes("AUDITOR_GRADIO_CACHE_BYTES", 4 * 1024 ** 3)
GRADIO_CACHE_GRACE = 120       # seconds a file arriving or being served is left alone
NOTES_KEPT = 10_000            # notes of removed files remembered (each ~100 bytes), the newest
MOVES_KEPT = 10_000            # files moved in from Gradio's cache remembered by their old path, the newest
ID = re.compile(r"^[0-9a-f]{32}$")
CHUNK = 1 << 20


@dataclass(frozen=True)
class Upload:
    id: str
    name: str          # the file's name as uploaded (shown; never a path)
    path: str          # where it is kept (never shown)
    size: int
    expires: float     # epoch seconds: UPLOAD_TTL after its last use


def stored_name(name: str) -> str:
    """A file's name as kept: its last path part, at most 200 characters (its suffixes kept)."""
    name = os.path.basename(str(name).replace("\\", "/")) or "upload"
    if name.startswith("."):          # the folder's own files (.meta, .part) start with a dot
        name = "_" + name
    if len(name) > 200:
        stem, dot, rest = name.partition(".")
        name = stem[:200 - len(rest) - 1] + dot + rest if len(rest) < 60 else name[-200:]
    return name


def when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} bytes"


class UploadStore:
    """The kept files (see the module docstring). Thread-safe within one server process."""

    def __init__(self, root: Path, max_bytes: int = UPLOAD_BYTES, ttl: float = UPLOAD_TTL):
        self.root, self.max_bytes, self.ttl = Path(root), int(max_bytes), float(ttl)
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        self._lock = threading.Lock()
        self._key = self._secret()
        self._moved: dict[str, str] = {}     # Gradio's path of a file moved in -> its id (the newest)

    # ------------------------------------------------------------------ ids

    def _secret(self) -> bytes:
        path = self.root / "key"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_bytes()
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        return path.read_bytes()

    def file_id(self, path, name: str) -> str:
        mac = hmac.new(self._key, name.encode("utf-8", "surrogatepass") + b"\0", digestmod=hashlib.sha256)
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                mac.update(block)
        return mac.hexdigest()[:32]

    def _dir(self, upload_id: str) -> Path:
        return self.root / "files" / upload_id

    # ------------------------------------------------------------------ keeping

    def keep(self, path, name: str, move: bool = True) -> Upload:
        """Keep the file at ``path`` (moved out of Gradio's cache when ``move``, so it is counted
        here only) under its content id; the least recently used files go to make room.

        Gradio names its copy of an upload by the bytes' hash, so visitors sending the same file at
        once hand over the same path: the first moves it in, and the others are given what it became
        (recorded in ``_moved``), not a file that is gone."""
        path = Path(path)
        try:
            return self._keep(path, name, move)
        except FileNotFoundError:
            with self._lock:
                upload_id = self._moved.get(str(path))
            if move and upload_id:
                try:
                    return self.get(upload_id)
                except AuditorError:
                    pass
            raise AuditorError("not_found", f"The uploaded file {name!r:.120} is gone.", "Upload it again.") from None

    def _keep(self, path: Path, name: str, move: bool) -> Upload:
        size = path.stat().st_size
        if size > self.max_bytes:
            self._discard(path, move)
            raise AuditorError("too_large", f"{name!r:.120} is {size_text(size)}: more than the "
                               f"{size_text(self.max_bytes)} this server keeps for all uploads together.",
                               "Audit it with the CLI (`auditor scan FILE`) on a machine of your own.")
        name = stored_name(name)
        upload_id = self.file_id(path, name)
        folder = self._dir(upload_id)
        target, part = folder / name, folder / ".part"
        with self._lock:
            if target.exists():
                self._discard(path, move)
            else:
                folder.mkdir(parents=True, exist_ok=True)
                if move:
                    try:
                        os.replace(path, target)
                    except FileNotFoundError:
                        raise
                    except OSError:          # another filesystem: copy, then drop Gradio's copy
                        shutil.copyfile(path, part)
                        os.replace(part, target)
                        self._discard(path, True)
                    self._moved[str(path)] = upload_id
                    while len(self._moved) > MOVES_KEPT:
                        self._moved.pop(next(iter(self._moved)))
                else:
                    shutil.copyfile(path, part)
                    os.replace(part, target)
            now = time.time()
            self._write_meta(folder, {"name": name, "size": size, "used": now})
            (self.root / "notes").mkdir(exist_ok=True)
            (self.root / "notes" / upload_id).unlink(missing_ok=True)
            self._make_room(keep=upload_id)
        return Upload(upload_id, name, str(target), size, now + self.ttl)

    @staticmethod
    def _discard(path: Path, move: bool) -> None:
        if move:
            try:
                path.unlink()
            except OSError:
                pass

    @staticmethod
    def _write_meta(folder: Path, meta: dict) -> None:
        tmp = folder / ".meta.part"
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, folder / ".meta")

    def _entries(self) -> list[tuple[float, int, str]]:
        """(last use, size, id) of every kept file."""
        out = []
        files = self.root / "files"
        if not files.exists():
            return out
        for folder in files.iterdir():
            try:
                meta = json.loads((folder / ".meta").read_text(encoding="utf-8"))
                out.append((float(meta["used"]), int(meta["size"]), folder.name))
            except (OSError, ValueError, KeyError, TypeError):
                shutil.rmtree(folder, ignore_errors=True)      # a half-written entry
        return out

    def _remove(self, upload_id: str, reason: str) -> None:
        shutil.rmtree(self._dir(upload_id), ignore_errors=True)
        notes = self.root / "notes"
        notes.mkdir(exist_ok=True)
        (notes / upload_id).write_text(json.dumps({"reason": reason, "at": time.time()}), encoding="utf-8")
        kept = sorted(notes.iterdir(), key=lambda p: p.stat().st_mtime)
        for old in kept[:max(0, len(kept) - NOTES_KEPT)]:
            old.unlink(missing_ok=True)

    def _make_room(self, keep: str | None = None) -> None:
        now = time.time()
        entries = sorted(self._entries())
        total = sum(size for _, size, _ in entries)
        for used, size, upload_id in entries:
            if upload_id == keep:
                continue
            if now - used > self.ttl:
                self._remove(upload_id, "expired")
            elif total > self.max_bytes:
                self._remove(upload_id, "evicted")
            else:
                continue
            total -= size

    def sweep(self) -> None:
        """Remove the files past their time (also done on every upload)."""
        with self._lock:
            self._make_room()

    # ------------------------------------------------------------------ opening

    def get(self, upload_id: str, touch: bool = True) -> Upload:
        """The kept file ``upload_id``; a clear error when it is unknown, expired or was removed."""
        upload_id = str(upload_id or "").strip().lower()
        if not ID.match(upload_id):
            raise AuditorError("usage", "This link's upload id is not one this server makes.",
                               "Ask for the link again, or upload the file yourself.")
        with self._lock:
            folder = self._dir(upload_id)
            try:
                meta = json.loads((folder / ".meta").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise self._gone(upload_id) from None
            now = time.time()
            if now - float(meta["used"]) > self.ttl:
                self._remove(upload_id, "expired")
                raise self._gone(upload_id)
            if touch:
                meta["used"] = now
                self._write_meta(folder, meta)
        return Upload(upload_id, str(meta["name"]), str(folder / stored_name(str(meta["name"]))), int(meta["size"]),
                      float(meta["used"]) + self.ttl)

    def _gone(self, upload_id: str) -> AuditorError:
        try:
            note = json.loads((self.root / "notes" / upload_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            note = None
        again = "Ask whoever shared the link for the file, and upload it yourself."
        if note and note.get("reason") == "expired":
            return AuditorError("expired", f"The uploaded file of this link has expired: files are kept "
                                f"{self.ttl / 86400:g} days after their last use, and this one went on "
                                f"{when(note['at'])}.", again)
        if note and note.get("reason") == "evicted":
            return AuditorError("expired", f"The uploaded file of this link was removed on {when(note['at'])} to "
                                f"make room: this server keeps {size_text(self.max_bytes)} of uploads, the least "
                                "recently used going first.", again)
        return AuditorError("not_found", "The uploaded file of this link is not on this server (it may have been "
                            "kept on a server that has restarted since, or the link was changed).", again)

    def policy(self) -> str:
        """How long and within what files are kept (the page shows it)."""
        days = self.ttl / 86400
        span = f"{days:g} days" if days >= 1 else f"{self.ttl / 3600:g} hours"
        return (f"kept on this server {span} after its last use, within {size_text(self.max_bytes)} for all "
                "uploads (the least recently used go first when it is full)")


def default_root() -> Path:
    """AUDITOR_UPLOADS_DIR (kept across restarts), else a folder of this server's own in the
    temporary directory, removed at exit (a Space's disk does not outlive a restart either)."""
    given = os.environ.get("AUDITOR_UPLOADS_DIR")
    if given:
        return Path(given)
    root = Path(tempfile.mkdtemp(prefix="auditor-uploads-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


STORE = UploadStore(default_root())


def trim_cache(folder: Path, max_bytes: int, grace: float = GRADIO_CACHE_GRACE) -> int:
    """Remove the oldest files of ``folder`` (older than ``grace`` seconds) while it holds more than
    ``max_bytes``; returns the bytes removed."""
    files = []
    for path in folder.rglob("*"):
        try:
            st = path.lstat()
        except OSError:
            continue
        if path.is_file() and not path.is_symlink():
            files.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in files)
    removed, now = 0, time.time()
    for mtime, size, path in sorted(files):
        if total <= max_bytes:
            break
        if now - mtime < grace:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        total, removed = total - size, removed + size
    return removed


def keep_gradio_cache(every: float = 60.0) -> threading.Thread:
    """A daemon thread that holds Gradio's cache within GRADIO_CACHE_BYTES and removes the kept
    uploads past their time, every ``every`` seconds."""
    def loop():
        while True:
            time.sleep(every)
            try:
                from gradio.utils import get_upload_folder
                trim_cache(Path(get_upload_folder()), GRADIO_CACHE_BYTES)
                STORE.sweep()
            except Exception:  # noqa: BLE001 - a clean-up must never stop the server
                pass
    thread = threading.Thread(target=loop, name="auditor-cache-keeper", daemon=True)
    thread.start()
    return thread
