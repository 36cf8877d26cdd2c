"""Spilled buffers: the records' pickles and the texts kept in a temporary file, not in memory.

Why: the loaded records (``table.PackedRows``) and the text column (``columns.TextColumn``) are
about the size of the bytes read, and every command held them from the load to its report while
the shingles and the near-duplicate search did their work beside them: about 1x of a command's
3-7x. Past ``AUDITOR_SPILL_MIN`` bytes (default 1 MiB) a buffer is written to an unlinked file in
``AUDITOR_SPILL_DIR`` (default: the system's temporary folder) and read back through a read-only
memory map; after each pass over a range its pages are handed back (``release``), so a process
keeps only what it is reading. The file has no name from the start: it is gone when the buffer
is, however the process ends. Pickled (a job's result sent to the Space's server), a spilled
buffer travels as its bytes (``picklable``).
"""
from __future__ import annotations

import io
import mmap
import os
import pickle
import tempfile

from ..env import env_int
from ..errors import AuditorError

SPILL_MIN = 1 << 20          # bytes from which a buffer goes to a file (AUDITOR_SPILL_MIN)
FAULT_AROUND = max(mmap.PAGESIZE, 1 << 16)       # bytes a page fault may map (``release``)


def spill_min() -> int:
    return env_int("AUDITOR_SPILL_MIN", SPILL_MIN, 0, 1 << 62)


def spill_dir() -> str:
    return os.environ.get("AUDITOR_SPILL_DIR") or tempfile.gettempdir()


class SpillBuffer:
    """A write-only byte buffer (``write``, ``tell``) held in memory until it passes
    ``spill_min()`` bytes (and is not empty), then in a temporary file; ``getvalue()`` hands it
    over once: bytes, or a read-only map of the file (``SpilledMap``)."""

    def __init__(self):
        self._memory: io.BytesIO | None = io.BytesIO()
        self._file = None
        self._size = 0
        self._limit = spill_min()

    def tell(self) -> int:
        return self._size

    def write(self, data) -> int:
        n = len(memoryview(data).cast("B"))
        if self._file is None and n and self._size + n > self._limit:
            self._file = _temporary_file()
            self._write(self._memory.getbuffer())
            self._memory = None
        if self._file is None:
            self._memory.write(data)
        else:
            self._write(data)
        self._size += n
        return n

    def _write(self, data) -> None:
        try:
            self._file.write(data)
        except OSError as e:
            raise _spill_error(e) from None

    def getvalue(self):
        if self._file is None:
            # BytesIO's value is its buffer shrunk in place, not a copy (bytes pickle without one).
            data, self._memory = self._memory.getvalue(), None
            return data
        file, self._file = self._file, None
        try:
            file.flush()
            mapped = SpilledMap(file.fileno(), self._size, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            file.close()
            raise _spill_error(e) from None
        mapped.file = file          # kept open for ``read_at``; closed with the map
        return mapped


class SpilledMap(mmap.mmap):
    """A read-only map of a spilled buffer's (unlinked) file, and the file, read one range at a
    time by ``read_at`` without mapping its pages."""

    file = None


def read_at(buffer, start: int, stop: int) -> bytes:
    """``buffer[start:stop]`` as bytes. From a spilled map, read from its file (``os.pread``): a
    read through the map leaves the pages around it mapped (Linux's fault-around, 64 KiB), and
    9,000 texts read one by one had kept 37 MB of 43 resident."""
    if not isinstance(buffer, SpilledMap) or not hasattr(os, "pread"):
        return bytes(memoryview(buffer)[start:stop])
    parts, fd = [], buffer.file.fileno()
    while start < stop:
        part = os.pread(fd, stop - start, start)
        if not part:
            raise AuditorError("spill_failed", "A temporary file holding the records was cut short.",
                               "Do not remove files from AUDITOR_SPILL_DIR while a command runs.")
        parts.append(part)
        start += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def release(buffer, start: int, stop: int) -> None:
    """Hands back the pages of ``buffer[start:stop]`` when it is a spilled map (a read-only map
    of a file: read again, they come back from the file); nothing for bytes. The range is widened
    to whole FAULT_AROUND blocks: a read that faults one page in maps the pages around it too
    (Linux's fault-around, 64 KiB)."""
    if not isinstance(buffer, SpilledMap) or stop <= start or not hasattr(mmap, "MADV_DONTNEED"):
        return
    first = start - start % FAULT_AROUND
    stop = min(stop + (-stop) % FAULT_AROUND, len(buffer))
    if stop > first:
        buffer.madvise(mmap.MADV_DONTNEED, first, stop - first)


def picklable(buffer, protocol: int):
    """The buffer as a pickle can hold it, read back as bytes: at protocol 5, a spilled map
    pickled straight from its pages (``pickle.PickleBuffer``); before, copied into bytes."""
    if isinstance(buffer, bytes):
        return buffer
    return pickle.PickleBuffer(buffer) if protocol >= 5 else bytes(buffer)


def _temporary_file():
    try:
        return tempfile.TemporaryFile(dir=spill_dir(), prefix="auditor-spill-")
    except OSError as e:
        raise _spill_error(e) from None


def _spill_error(e: Exception) -> AuditorError:
    return AuditorError("spill_failed", f"Could not keep the records in a temporary file in {spill_dir()!r:.200}: "
                        f"{getattr(e, 'strerror', None) or e}.",
                        "Free space there, or set AUDITOR_SPILL_DIR to a folder with room (about the size of "
                        "the data read), or AUDITOR_SPILL_MIN to a size above it to keep the records in memory.")
