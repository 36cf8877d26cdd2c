"""Bounded reading: what one load may read, and the checked byte stream every parser reads from.

Every local file is read as a stream of decompressed chunks, and each chunk is charged to the
load's ``Budget`` before it is parsed: a gzip bomb is refused after at most the budget, never after
decompressing it all, and one line may hold at most a share of it. A row cap stops reading as
soon as it is reached, for every format (JSON arrays and Parquet batches included).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path

from ..env import env_bytes, format_bytes
from ..errors import AuditorError
from .listing import CODECS, codec_of

DEFAULT_MAX_BYTES = 1024 ** 3   # sized for a free Space (16 GB RAM, 2 vCPU); AUDITOR_MAX_BYTES overrides


MAX_BYTES: int | None = None    # when set (tests), overrides AUDITOR_MAX_BYTES


RECORD_BYTES = 256              # charged per record on top of its bytes: a record costs memory as an object


# A value (a list item, an object's or a row's field) costs a Python object or a slot, whatever its
# length in the file: "[]," is 3 bytes and about 64 in memory, an empty CSV cell 1 byte and a dict slot.
# A chunk is charged at least this per separator (",", or a TSV's tab; a Parquet batch: per value),
# so a file of tiny values costs what it will hold in memory. Prose, with a comma every few dozen
# bytes, costs its bytes as before.
VALUE_BYTES = 48


LINE_SHARE = 16                 # one line (or JSON item) may take at most 1/16 of the budget


CHUNK = 1 << 20                 # decompressed bytes read at a time


MIN_LINE_CAP = 64 * 1024


def max_bytes() -> int:
    """The reading budget of one load: AUDITOR_MAX_BYTES (read when called), default 1 GiB."""
    if MAX_BYTES is not None:
        return MAX_BYTES
    return env_bytes("AUDITOR_MAX_BYTES", DEFAULT_MAX_BYTES)


class Budget:
    """What one load may read: decompressed bytes plus RECORD_BYTES per record (so a file of a
    billion empty objects costs what it would cost in memory, not 3 bytes each). ``limited=False``
    (a corpus streamed through in batches) keeps only the per-line cap."""

    def __init__(self, max_rows: int | None = None, *, cap: int | None = None, limited: bool = True):
        self.cap = max_bytes() if cap is None else cap
        self.max_rows = max_rows
        self.limited = limited
        self.used = 0
        self.line_cap = max(self.cap // LINE_SHARE, MIN_LINE_CAP)

    def take(self, nbytes: int, records: int, name: str, values: int = 0) -> None:
        self.used += max(nbytes, VALUE_BYTES * values) + RECORD_BYTES * records
        if self.limited and self.used > self.cap:
            raise self.error(name)

    def error(self, name: str) -> AuditorError:
        if self.max_rows is None:
            hint = ("Audit a prefix with --max-rows (max_rows= in Python), or raise AUDITOR_MAX_BYTES "
                    "(e.g. AUDITOR_MAX_BYTES=4G) if the machine has the memory.")
        else:
            hint = (f"The row cap ({self.max_rows:,} rows) was not reached within that limit: lower it, or raise "
                    "AUDITOR_MAX_BYTES (e.g. AUDITOR_MAX_BYTES=4G) if the machine has the memory.")
        return AuditorError("too_large", f"{name}: more data than the reading limit of {format_bytes(self.cap)} "
                            f"(AUDITOR_MAX_BYTES: decompressed bytes, at least {VALUE_BYTES} per value, plus "
                            f"{RECORD_BYTES} per record).", hint)

    def long_line(self, name: str, line: int, what: str = "line") -> AuditorError:
        return AuditorError("too_large", f"{name}, {what} {line}: longer than {format_bytes(self.line_cap)}, "
                            f"the limit for one {what} (1/{LINE_SHARE} of AUDITOR_MAX_BYTES, "
                            f"{format_bytes(self.cap)}).",
                            "Check that the file is really one record per line; raise AUDITOR_MAX_BYTES if "
                            "records this large are intended.")


_MAGIC = ((b"\x1f\x8b", "gzip-compressed: name it with a .gz suffix"),
          (b"PAR1", "a Parquet file: name it .parquet"),
          (b"PK\x03\x04", "a zip archive: unpack it first"),
          (b"\xff\xfe\x00\x00", "UTF-32 text: re-encode it as UTF-8"),
          (b"\x00\x00\xfe\xff", "UTF-32 text: re-encode it as UTF-8"),
          (b"\xff\xfe", "UTF-16 text: re-encode it as UTF-8"),
          (b"\xfe\xff", "UTF-16 text: re-encode it as UTF-8"))


class CountedStream:
    """The decompressed bytes of a file, a chunk at a time, each charged to a Budget (records
    estimated by counting ``marker`` bytes) before anyone parses it. A text file is refused as
    soon as it shows it is not UTF-8 text: a NUL byte, a UTF-16/32 byte-order mark, or the magic
    bytes of gzip, Parquet or zip in a file named as text."""

    def __init__(self, inner, budget: Budget, name: str, marker: bytes | None, separator: bytes = b","):
        self.inner, self.budget, self.name, self.marker = inner, budget, name, marker
        self.separator = separator      # between values: counted to charge VALUE_BYTES each
        self.compressed = False     # decompressed as read: its size on disk says nothing of its bytes
        self.offset = 0
        self.size = min(CHUNK, budget.line_cap)

    def chunk(self, size: int | None = None) -> bytes:
        data = self.inner.read(size or self.size)
        if data:
            self._check(data, 0, len(data))
        return data

    def chunk_into(self, buf: bytearray, start: int, size: int) -> int:
        """``chunk`` into ``buf[start:start + size]`` (a caller's buffer, reused: no new bytes per
        chunk, whose fresh pages cost more than reading them): the bytes read, 0 at the end."""
        view = memoryview(buf)[start:start + size]
        got = 0
        while got < size:
            n = self.inner.readinto(view[got:])
            if not n:
                break
            got += n
        view.release()
        if got:
            self._check(buf, start, start + got)
        return got

    def _check(self, data, start: int, end: int) -> None:
        """Charge and check data[start:end], the next bytes of the stream (bytes or a bytearray)."""
        if self.marker is None:             # binary (a gzip'd Parquet file): bytes only
            self.budget.take(end - start, 0, self.name)
            self.offset += end - start
            return
        if not self.offset:
            for magic, what in _MAGIC:
                # (a CSV header may start with "PAR1"; a Parquet file also holds NUL bytes)
                if data.startswith(magic, start, end) and (magic != b"PAR1" or data.find(b"\x00", start, end) >= 0):
                    if magic == b"\x1f\x8b" and self.name.lower().endswith(".gz"):
                        what = "gzip-compressed twice: decompress it once (gunzip) and keep the .gz suffix"
                    raise AuditorError("bad_format", f"{self.name}: not UTF-8 text: the file is {what}.",
                                       "Every text format (JSONL, JSON, CSV, TSV) is read as UTF-8.")
        nul = data.find(b"\x00", start, end)
        if nul >= 0:
            raise AuditorError("bad_format", f"{self.name}: byte {self.offset + nul - start} is a NUL byte: the file "
                               "is binary or UTF-16/UTF-32 text, not UTF-8.",
                               "Re-encode it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8), or check it is the right file.")
        # Records and values are estimated only where the budget binds (a streamed corpus is not held).
        if self.budget.limited:
            self.budget.take(end - start, data.count(self.marker, start, end), self.name,
                             data.count(self.separator, start, end))
        else:
            self.budget.take(end - start, 0, self.name)
        self.offset += end - start

    def close(self) -> None:
        self.inner.close()


def open_stream(path: Path, budget: Budget, marker: bytes | None, separator: bytes = b",") -> CountedStream:
    try:
        inner = open_decompressed(path)
    except OSError as exc:
        raise read_error(exc, path) from None
    stream = CountedStream(inner, budget, path.name, marker, separator)
    stream.compressed = codec_of(path) is not None
    return stream


def open_decompressed(path: Path):
    """A binary file object of ``path``'s bytes, decompressed as they are read (by its suffix)."""
    codec = codec_of(path)
    if codec is None:
        return open(path, "rb")
    if codec == ".gz":
        return gzip.open(path, "rb")            # its errors are mapped below (``read_error``)
    if codec in STRICT_STREAMS:
        return strict_streams(open(path, "rb"), codec)
    import pyarrow as pa             # zstd, lz4, brotli: pyarrow's, no further package
    return pa.input_stream(str(path), compression=CODECS[codec][1])


# Python's bz2 and lzma readers take anything after a stream that does not decompress as "trailing
# data" and stop there without a word: a damaged second stream (files joined with cat, parallel
# compressors) dropped every record in it, exit 0. These readers go on to every next stream and fail
# on one that does not decompress, as gzip's reader does.
STRICT_STREAMS = {".bz2": bz2.BZ2Decompressor, ".xz": lzma.LZMADecompressor}


class _StrictStreams(io.RawIOBase):
    """Concatenated bz2 or xz streams, decompressed in order; bytes after a stream that are not a
    valid stream raise (``lzma.LZMAError``, or ``OSError`` for bz2), except an xz file's null
    padding between and after streams. At most ``CHUNK`` compressed bytes are fed at a time."""

    def __init__(self, raw, codec: str):
        self.raw, self.codec = raw, codec
        self.decompressor = STRICT_STREAMS[codec]()
        self.pending = b""            # decompressed, not read yet
        self.ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending and not self.ended:
            self._fill(len(buffer))
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n

    def _fill(self, size: int) -> None:
        d = self.decompressor
        if d.eof:                          # the next stream, if any bytes follow
            rest = d.unused_data
            while True:
                if self.codec == ".xz":
                    rest = rest.lstrip(b"\0")      # stream padding (xz writes it in fours)
                if rest:
                    break
                rest = self.raw.read(CHUNK)
                if not rest:
                    self.ended = True
                    return
            self.decompressor = d = STRICT_STREAMS[self.codec]()
            self.pending = d.decompress(rest, max(size, 1))       # raises if they are not a stream
            return
        data = b""
        if d.needs_input:
            data = self.raw.read(CHUNK)
            if not data:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        self.pending = d.decompress(data, max(size, 1))

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


def strict_streams(raw, codec: str):
    """A buffered reader of ``raw`` (a binary file object of a .bz2 or .xz file) decompressed as
    ``_StrictStreams`` reads it."""
    return io.BufferedReader(_StrictStreams(raw, codec), CHUNK)


READ_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)   # a broken file or stream (pyarrow: OSError)


def read_error(exc: BaseException, path: Path) -> AuditorError:
    """What a failed read of ``path`` means, for the person who gave the file."""
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return AuditorError("not_found", f"{path.name}: cannot be read ({exc.strerror}).",
                            "Check the file exists and is readable.")
    codec = codec_of(path) or ".gz"
    kind = CODECS[codec][0]
    if isinstance(exc, EOFError):
        return AuditorError("bad_format", f"{path.name}: the {kind} stream ends early: the file is truncated ({exc}).",
                            f"Download or copy it again; `{kind} -t FILE` checks a {codec} file.")
    if isinstance(exc, (gzip.BadGzipFile, zlib.error, lzma.LZMAError)) or (
            codec_of(path) and isinstance(exc, OSError)):
        return AuditorError("bad_format", f"{path.name}: not a valid {kind} file ({str(exc)[:200]}).",
                            f"Decompress it to check it, or remove the {codec} suffix if it is not compressed.")
    return AuditorError("bad_format", f"{path.name}: cannot be read ({type(exc).__name__}: {str(exc)[:200]}).",
                        "Check the file is complete and readable.")
