"""The loaded-rows type every source returns (``Table``) and the split choice every loader
shares. Its own module so ``sources`` (local files, examples) and ``hub`` (Hugging Face) both
import it without importing each other."""
from __future__ import annotations

import bisect
import itertools
import operator
import pickle
import re
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import AuditorError
from .columns import TextColumn
from .spill import SpillBuffer, picklable, read_at, release


class PackedRows(Sequence):
    """Records held packed: each record's pickle, one after another in one byte buffer, and where
    each ends; a record is decoded when it is read (a new dict each time: changing it changes
    nothing held). Read-only, a list's equal (``==`` a list of the same records).

    Why: a record held as a Python dict cost about 4.4 times its bytes read for 8-word records (the
    dict, its strings, the list's pointer); packed it costs about 1.2 times, and a job's result
    sent back to the Space server pickles as the buffer. A pickle, not the record's JSON, so every
    value comes back as it was read (Parquet's dates, bytes and decimals too). The offsets are an
    ``array`` (not numpy), so loading a file stays light."""

    BATCH = 4096                 # records decoded at a time when iterated

    def __init__(self, data=b"", ends=None, fills=()):
        self._data = data
        self._ends = array("q") if ends is None else ends
        # (field, values, flags): a top-level field packed as None where flags[i], its value values[i] (the
        # text role's column: a long text is held once, not in the pickle and as the column's string too)
        self._fills = fills

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, lo: int, hi: int):
        """Views of the pickles of records lo..hi-1 (0 <= lo <= hi <= len)."""
        if lo >= hi:
            return []
        ends = self._ends
        starts = ends[lo - 1:hi - 1] if lo else array("q", [0]) + ends[:hi - 1]
        return map(memoryview(self._data).__getitem__, map(slice, starts, ends[lo:hi]))

    def _at(self, i: int) -> bytes:
        return read_at(self._data, self._ends[i - 1] if i else 0, self._ends[i])

    def _decoded(self, numbers, blobs):
        """The records numbered ``numbers`` from their pickles ``blobs``, their left-out fields
        filled, one at a time (a batch of 500-field records as dicts took 130 MB)."""
        rows = map(pickle.loads, blobs)
        if not self._fills:
            return rows
        return self._filled(numbers, rows)

    def _filled(self, numbers, rows):
        # A run of records takes its values as one slice (a text column decodes a batch at once;
        # read one by one from a spilled column, each was a read of its own: 0.8M reads, 2 s).
        run = isinstance(numbers, range) and numbers.step == 1 and len(numbers) > 1
        fills = [(name, values[numbers.start:numbers.stop] if run else values, numbers.start if run else 0, flags)
                 for name, values, flags in self._fills]
        for i, row in zip(numbers, rows):
            for name, values, start, flags in fills:
                if flags[i]:
                    row[name] = values[i - start]
            yield row

    def _decode(self, numbers, blobs) -> list:
        return list(self._decoded(numbers, blobs))

    def _release(self, lo: int, hi: int) -> None:
        """Hands back the pages of records lo..hi-1's pickles once read (a spilled buffer)."""
        if lo < hi:
            release(self._data, self._ends[lo - 1] if lo else 0, self._ends[hi - 1])

    def __reduce_ex__(self, protocol):
        return PackedRows, (picklable(self._data, protocol), self._ends, self._fills)

    def take(self, index) -> "PackedRows":
        """The records at ``index`` (row numbers, in that order), packed anew."""
        index = list(map(int, index))
        blobs = list(map(self._at, index))
        fills = tuple((name, values.take(index) if isinstance(values, TextColumn) else [values[i] for i in index],
                       bytes(flags[i] for i in index)) for name, values, flags in self._fills)
        packer = Packer()
        packer.data.write(b"".join(blobs))         # past a MiB, spilled as the load's
        ends = array("q", itertools.accumulate(map(len, blobs)))
        del blobs
        return PackedRows(packer.data.getvalue(), ends, fills)

    def head(self, most: int, size: int, least: int = 1) -> list:
        """The first records, at most ``most`` and about ``size`` bytes of pickles (at least ``least``)."""
        n = min(most, len(self))
        hi = min(n, max(least, bisect.bisect_right(self._ends, size, 0, n)))
        rows = self._decode(range(hi), self._span(0, hi))
        self._release(0, hi)
        return rows

    def first_with_keys(self, names, start: int = 0) -> dict:
        """name -> the first record from ``start`` whose pickle may hold a key ``name``, for those of
        ``names`` some record may hold: byte searches of the buffer, no record decoded (a pass that
        decoded 200,000 records took 0.3 s; one search of their 20 MB, 0.03 s). A key is pickled as
        its UTF-8 bytes after an opcode and its length (SHORT_BINUNICODE); a value may hold the same
        bytes, so a record found must still be decoded to tell. A name over 255 bytes: ``start``."""
        keys = {name: name.encode("utf-8", "surrogatepass") for name in names}
        found = {name: start for name, key in keys.items() if len(key) > 255}
        pending = {b"\x8c" + bytes([len(key)]) + key: name for name, key in keys.items() if len(key) <= 255}
        offset = self._ends[start - 1] if 0 < start <= len(self) else 0
        while pending and start < len(self):
            # one search for all the pending names; the one found first is then taken out
            hit = self._search(re.compile(b"|".join(map(re.escape, pending))), offset, 258)
            if hit is None:
                break
            found[pending.pop(hit.group())] = bisect.bisect_right(self._ends, hit.start())
        return found

    SEARCH_CHUNK = 1 << 24     # bytes of pickles searched at a time, then handed back (spilled)

    def _search(self, pattern, offset: int, longest: int):
        """``pattern.search`` of the buffer from ``offset``, SEARCH_CHUNK bytes at a time (plus the
        ``longest`` a match may be, so none is cut), each chunk's pages handed back once searched."""
        size = len(self._data)
        while offset < size:
            hit = pattern.search(self._data, offset, min(size, offset + self.SEARCH_CHUNK + longest))
            if hit is not None:
                return hit
            release(self._data, offset, offset + self.SEARCH_CHUNK)
            offset += self.SEARCH_CHUNK
        return None

    def batches(self, size: int = 1 << 20):
        """(the first record's number, a list of records) over all of them, a batch of about
        ``size`` bytes of pickles at a time (at least one record): a bound on the dicts alive
        however wide or long the records are."""
        lo, n, ends = 0, len(self), self._ends
        while lo < n:
            hi = max(lo + 1, bisect.bisect_right(ends, (ends[lo - 1] if lo else 0) + size, lo, n))
            rows = self._decode(range(lo, hi), self._span(lo, hi))
            self._release(lo, hi)
            yield lo, rows
            del rows
            lo = hi

    def __getitem__(self, i):
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            if step == 1:
                rows = self._decode(range(lo, hi), self._span(lo, hi))
                self._release(lo, hi)
                return rows
            return self._decode(range(lo, hi, step), map(self._at, range(lo, hi, step)))
        n = len(self)
        i = operator.index(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("row index out of range")
        return self._decode((i,), (self._at(i),))[0]

    def __iter__(self):
        n = len(self)
        for lo in range(0, n, self.BATCH):
            hi = min(lo + self.BATCH, n)
            yield from self._decoded(range(lo, hi), self._span(lo, hi))
            self._release(lo, hi)

    def __eq__(self, other):
        if isinstance(other, (PackedRows, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"PackedRows({len(self):,} records, {len(self._data):,} bytes)"


PACK_BATCH = 4096                # records a streamed load holds as dicts before packing them

# The head of a source that roles are guessed from: at most HEAD_MOST records, and about HEAD_BYTES
# of them, but at least HEAD_LEAST (one huge first record alone decided the roles). 1,000 records
# of 500 KB as dicts held their texts whole, four times over when each held one emoji.
HEAD_MOST = 1000
HEAD_BYTES = 1 << 24
HEAD_LEAST = 20


def head_of(records, most: int = HEAD_MOST, size: int = HEAD_BYTES, least: int = HEAD_LEAST) -> list:
    """The first records of an iterator of records, within the bounds above (``held_bytes``)."""
    head, held = [], 0
    for record in records:
        head.append(record)
        held += held_bytes(record)
        if len(head) >= most or (held >= size and len(head) >= least):
            break
    return head


def held_bytes(value) -> int:
    """About the memory a record holds: its strings and bytes at their size in memory (a Python
    string of a text with one emoji stores 4 bytes a character), containers walked (without
    recursion: a deeply nested record is data too), anything else a few words."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (str, bytes, bytearray)):
            total += sys.getsizeof(item)
        elif isinstance(item, dict):
            total += 64
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            total += 64
            stack.extend(item)
        else:
            total += 32
    return total


def select(rows, index) -> list | PackedRows:
    """The records of ``rows`` (a list or ``PackedRows``) at ``index``, in order: packed rows stay
    packed, so a kept subset (dedup's, clean's) never holds its records as dicts."""
    if isinstance(rows, PackedRows):
        return rows.take(index)
    return [rows[i] for i in index]


def packed(parts: list) -> PackedRows:
    """One ``PackedRows`` of several (or of lists of records), in order. ``parts`` is emptied as
    they are copied, so no record is held twice for longer than its part."""
    packer = Packer()
    parts.reverse()
    while parts:
        packer.add(parts.pop())
    return packer.rows()


class Packer:
    """Builds a ``PackedRows`` a batch of records at a time, so a load never holds more than one
    batch of records as dicts."""

    def __init__(self, leave_out: str | None = None):
        # A BytesIO, not a bytearray: its value is handed over without a copy (``rows``), where
        # bytes(bytearray) held the whole pack twice at the end of a load (8-word records, 100 MB:
        # a peak 130 MB above what the load keeps).
        self.data = SpillBuffer()        # past a MiB, a temporary file (``spill``)
        self.ends = array("q")
        self.leave_out = leave_out     # a field packed as None, filled from ``values`` on decode (``add``)
        self.flags = bytearray()

    @property
    def count(self) -> int:
        return len(self.ends)

    def add(self, rows, values=None) -> None:
        """Packs ``rows``. With ``leave_out``, ``values`` are the records' values of that field as
        held elsewhere (the text column): a record whose field is that very string object is packed
        with None in its place (the key kept, so key order survives) and gets it back on decode."""
        base = self.data.tell()
        if isinstance(rows, PackedRows) and (rows._fills or self.leave_out is not None):
            rows = list(rows)          # its pickles lack the filled values
        if self.leave_out is not None:
            name, flags = self.leave_out, bytearray(len(rows))
            for k, (row, value) in enumerate(zip(rows, values)):
                if value is not None and row.get(name) is value:
                    row[name] = None
                    flags[k] = 1
            self.flags += flags
        if isinstance(rows, PackedRows):
            self.data.write(rows._data)
            rows._release(0, len(rows))
            self.ends.extend(map(base.__add__, rows._ends))
            return
        blobs = list(map(_unframed, map(pickle.dumps, rows)))
        self.ends.extend(itertools.islice(itertools.accumulate(map(len, blobs), initial=base), 1, None))
        self.data.write(b"".join(blobs))

    def rows(self, values: list | None = None) -> PackedRows:
        """The records packed; with ``leave_out``, ``values`` is every record's value of that field
        (the whole column, held by the caller: shared, not copied)."""
        fills = () if self.leave_out is None else ((self.leave_out, values, bytes(self.flags)),)
        # In memory, bytes: no spare capacity held (BytesIO trims its buffer in place and hands it
        # over), and pickled (a job's result sent to the Space's server) without a copy at protocol 4.
        data, self.data = self.data.getvalue(), SpillBuffer()
        return PackedRows(data, self.ends, fills)


def _unframed(blob: bytes) -> bytes:
    """A record's pickle without its FRAME opcode (9 bytes: an 8-byte length), which a pickle under
    64 KiB holds once, around all of it; the unpickler reads the rest as it is. 8-word records
    pickle to about 38 bytes: a quarter less."""
    if len(blob) < 65536 and blob[2:3] == b"\x95":
        return blob[:2] + blob[11:]
    return blob


@dataclass(frozen=True)
class HubParquet:
    """A Hub split read from the repo's own Parquet files as stored: which files, in the order the
    loader read them (its rows numbered in that order), at which commit. A copy of the split is
    made from these files (``io.hub.fetch_parquet``), so it keeps their column types."""

    repo_id: str
    revision: str | None           # the commit the files were read at (None: not known)
    paths: tuple                   # paths in the repo


@dataclass(frozen=True)
class Table:
    """Rows as loaded, plus where they came from. Rows: a sequence of dicts (a list, or the loaders'
    ``PackedRows``)."""

    rows: list = field(repr=False)
    source: str
    config: str | None = None
    split: str | None = None
    files: tuple = ()              # display names only (never a server path)
    row_cap: int | None = None     # the cap that applied, if any
    truncated: bool = False        # True when the source had more rows than the cap
    splits: tuple = ()             # splits the source offers
    configs: tuple = ()            # configs the source offers (hub sets, examples)
    notices: tuple = ()            # things the report must say (defaults chosen, files skipped)
    revision: str | None = None    # a Hub dataset's commit read (None for files and examples)
    hub_parquet: HubParquet | None = None   # a Hub split read from its Parquet files as stored

    @property
    def columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.rows[:1000]:
            seen.update(dict.fromkeys(row))
        return list(seen)


# An evaluation side without a test split: its held-out split by one of these names, before train.
EVALUATION_FALLBACKS = ("validation", "valid", "dev", "val")


def choose_split(split, available: list[str], what: str, default: str = "train") -> tuple[str, str | None]:
    """The split to read; a default (``default`` when there is one, else train, else the first:
    a benchmark's default is its test split, or without one its validation split) is announced so
    a report never hides it. (Spider and many Hub sets hold train and validation only: falling back
    to train made leak compare train with itself, every record a "leak".)"""
    if split is None:
        preferred = (default, *EVALUATION_FALLBACKS) if default == "test" else (default,)
        chosen = next((s for s in (*preferred, "train") if s in available), available[0])
        note = (f"split not given: using '{chosen}' (available: {', '.join(available)})"
                if len(available) > 1 else None)
        return chosen, note
    if split not in available:
        raise AuditorError("bad_split", f"{what} has no split {split!r}.",
                           f"Available splits: {', '.join(available)}.")
    return split, None
