"""A column of texts held as one UTF-8 buffer: the text and answer roles' values (``roles.Fields``).

Why: a Python string costs about 57 bytes beside its characters (its header and the list's pointer),
and a string holding one character past U+FFFF stores every character in 4 bytes: 8-word records'
texts took 2.1 times their bytes read, a long English text with one emoji 4 times. Here a text costs
its UTF-8 bytes and an 8-byte end offset. Texts are decoded when read (a new string each time), a
batch at a time when iterated; a slice is a list. Lone surrogates, which a JSON file may hold, are
kept (encoded with ``surrogatepass``), so every text reads back as it was given. Past a MiB the
buffer is kept in a temporary file (``spill``), each range's pages handed back once it is read.
"""
from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Sequence

from ..errors import AuditorError
from .spill import SpillBuffer, picklable, read_at, release

_ENCODING = ("utf-8", "surrogatepass")


def utf8_text(value) -> str | None:
    """Binary that is UTF-8 text, decoded; else None. Some writers (older Spark, Hive) store strings
    as Parquet binary without the UTF-8 mark: the roles read such a value as its text
    (``roles.as_text``), and a copy writes it so (``copies.json_value``)."""
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return None


class TextColumn(Sequence):
    """Read-only, a list's equal (``==`` a list of the same texts); None where a value is missing."""

    BATCH = 4096                 # texts decoded at a time when iterated,
    BATCH_BYTES = 1 << 20        # or about this many bytes of them (at least one text)

    def __init__(self, data=b"", offsets=None, missing=None):
        self._data = data
        self._offsets = array("q", [0]) if offsets is None else offsets      # n + 1: text i is [o[i], o[i + 1])
        self._missing = missing          # bytes, 1 where the value is None; None when no value is
        self._arrow = None               # the column as an Arrow string array, when its bytes are valid UTF-8

    @classmethod
    def of(cls, texts) -> "TextColumn":
        builder = TextColumnBuilder()
        builder.extend(list(texts))
        return builder.column()

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @property
    def nbytes(self) -> int:
        return len(self._data) + 8 * len(self._offsets) + (len(self._missing) if self._missing else 0)

    def _as_arrow(self):
        """An Arrow view of the buffers (no copy), or False when they hold lone surrogates (not UTF-8).
        Arrow makes a batch's strings 3.5 times faster than decoding each one here."""
        if self._arrow is None:
            import pyarrow as pa

            arrow = pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(self._offsets), pa.py_buffer(self._data))
            try:
                arrow.validate(full=True)
                self._arrow = arrow
            except pa.ArrowInvalid:
                self._arrow = False
            release(self._data, 0, len(self._data))
        return self._arrow

    def _decode(self, lo: int, hi: int) -> list:
        if lo >= hi:
            return []
        arrow = self._as_arrow()
        if arrow is not False:
            texts = arrow.slice(lo, hi - lo).to_pylist()
        else:
            view, offsets = memoryview(self._data), self._offsets
            texts = [str(view[s:e], *_ENCODING) for s, e in zip(offsets[lo:hi], offsets[lo + 1:hi + 1])]
        release(self._data, self._offsets[lo], self._offsets[hi])
        if self._missing:
            for k in range(lo, hi):
                if self._missing[k]:
                    texts[k - lo] = None
        return texts

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            lo, hi, step = i.indices(n)
            if step == 1:
                return self._decode(lo, hi)
            return [self[k] for k in range(lo, hi, step)]
        i = operator.index(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text index out of range")
        if self._missing and self._missing[i]:
            return None
        return str(read_at(self._data, self._offsets[i], self._offsets[i + 1]), *_ENCODING)

    def __iter__(self):
        lo, n, offsets = 0, len(self), self._offsets
        while lo < n:
            hi = bisect.bisect_right(offsets, offsets[lo] + self.BATCH_BYTES, lo + 1, min(lo + self.BATCH, n) + 1) - 1
            hi = max(hi, lo + 1)
            yield from self._decode(lo, hi)
            lo = hi

    def take(self, index) -> "TextColumn":
        """The texts at ``index`` (positions, in that order) as a new column, copied as bytes
        (never decoded): a kept subset of the records (dedup's, clean's) holds its texts so too."""
        view, offsets, missing, n = memoryview(self._data), self._offsets, self._missing, len(self)
        # as a list indexes: -1 is the last text (offsets[-1]:offsets[0] was an empty text), past the end refused
        index = [i + n if i < 0 else i for i in map(operator.index, index)]
        if index and not (0 <= min(index) and max(index) < n):
            raise IndexError("text index out of range")
        builder = TextColumnBuilder()
        builder.add_encoded([view[offsets[i]:offsets[i + 1]] for i in index],
                            [bool(missing and missing[i]) for i in index])
        del view
        release(self._data, 0, len(self._data))
        return builder.column()

    def __eq__(self, other):
        if isinstance(other, (TextColumn, ChainedTexts, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __reduce_ex__(self, protocol):
        return TextColumn, (picklable(self._data, protocol), self._offsets, self._missing)

    def __repr__(self) -> str:
        return f"TextColumn({len(self):,} texts, {len(self._data):,} bytes)"


class TextColumnBuilder:
    """Builds a ``TextColumn`` a batch of texts at a time; once ``column()`` is called, done."""

    def __init__(self):
        self._data = SpillBuffer()
        self._size = 0
        self._offsets = array("q", [0])
        self._missing = bytearray()

    def extend(self, texts) -> None:
        self.add_encoded([b"" if t is None else t.encode(*_ENCODING) for t in texts],
                         bytes(t is None for t in texts) if texts.count(None) else bytes(len(texts)))

    def add_encoded(self, encoded: list, missing) -> None:
        self._offsets.extend(itertools.islice(itertools.accumulate(map(len, encoded), initial=self._size), 1, None))
        self._size = self._offsets[-1]
        self._data.write(b"".join(encoded))
        self._missing += bytes(missing)

    def column(self) -> TextColumn:
        # In memory: BytesIO's value, its buffer shrunk in place, not a copy; bytes (not a
        # bytearray) also pickle without one, as a job's result is sent back to the Space's server.
        data, self._data = self._data.getvalue(), None
        return TextColumn(data, self._offsets, bytes(self._missing) if 1 in self._missing else None)


class ChainedTexts(Sequence):
    """Several sequences of texts read as one, none copied (leak shingles both sides' texts as one
    list: joined as lists, a TextColumn would be decoded whole)."""

    def __init__(self, *parts):
        self._parts = parts
        self._starts = list(itertools.accumulate(map(len, parts), initial=0))

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            lo, hi, step = i.indices(n)
            if step != 1:
                return [self[k] for k in range(lo, hi, step)]
            out: list = []
            for part, start in zip(self._parts, self._starts):
                a, b = max(lo - start, 0), min(hi - start, len(part))
                if a < b:
                    out += part[a:b]
            return out
        i = operator.index(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text index out of range")
        k = bisect.bisect_right(self._starts, i) - 1
        return self._parts[k][i - self._starts[k]]

    def __iter__(self):
        return itertools.chain.from_iterable(self._parts)

    def __eq__(self, other):
        if isinstance(other, (TextColumn, ChainedTexts, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None


def chained(*parts) -> ChainedTexts:
    return ChainedTexts(*parts)


TEXT_LISTS = (list, tuple, TextColumn, ChainedTexts)


def is_text_list(value) -> bool:
    """Texts given as a list (a list, tuple, TextColumn or chain of them), not a source to read or
    a stream of batches."""
    return isinstance(value, TEXT_LISTS)


def checked_texts(value, what: str) -> list:
    """A text list (``is_text_list``) as a list, each item a str or None; anything else refused,
    naming the first such item (an int in a caller's list reached Arrow: a traceback)."""
    texts = list(value)
    if isinstance(value, TextColumn) or set(map(type, texts)) <= {str, type(None)}:
        return texts
    i, bad = next((i, t) for i, t in enumerate(texts) if t is not None and not isinstance(t, str))
    raise AuditorError("bad_value", f"Item {i} of {what} is {type(bad).__name__} {str(bad)[:40]!r}, not text.",
                       "Give texts (str, or None for no text), e.g. [str(x) for x in values].")
