"""The parsers: JSONL, JSON (lists, column objects, pandas and SQuAD layouts), CSV / TSV and
Parquet, each reading a checked stream (``budget.open_stream``) in bounded chunks and raising an
``AuditorError`` that names the file and line. Both engines parse files with these."""
from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import re
import sys
from pathlib import Path

from ..errors import AuditorError
from .budget import (
    READ_ERRORS,
    RECORD_BYTES,
    VALUE_BYTES,
    Budget,
    CountedStream,
    open_stream,
    read_error,
)
from .listing import SPLIT_KEYS, codec_of, format_of
from .table import Packer, PackedRows

# Field names of a record's id (the roles step guesses the id role from these too): an object
# holding one beside its lists is one record, not a table of columns.
ID_FIELD_NAMES = ("id", "task_id", "idx", "uid", "_id", "example_id", "question_id", "qid")

def read_file(path: Path, max_rows: int | None = None, budget: Budget | None = None,
              notices: list | None = None) -> tuple[PackedRows, bool]:
    """Rows of one local file (format by extension) and whether the row cap cut it. ``budget``
    (one per load, shared by its files) bounds what is read; ``notices`` collects what the report
    must say about the file. Reading stops as soon as the row cap is passed."""
    budget = budget or Budget(max_rows)
    if max_rows is None and budget.limited and not codec_of(path) \
            and format_of(path) != "parquet":
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise read_error(exc, path) from None
        if budget.used + size > budget.cap:       # refused before reading a byte
            raise budget.error(path.name)
    packer = Packer()              # each batch packed as it is read: never the file's records as dicts
    batches = file_batches(path, budget, notices, stream_json=max_rows is not None, batch=max_rows)
    try:
        for part in batches:
            if max_rows is not None and packer.count + len(part) > max_rows:   # one more than the cap: it was cut
                packer.add(part[:max_rows - packer.count])
                return packer.rows(), True
            packer.add(part)
    finally:
        batches.close()
    return packer.rows(), False


def stream_batches(f, name: str, fmt: str, notices: list | None = None, *, parquet_rows: int = 65536):
    """Lists of whole records of an open binary file object ``f`` (already decompressed) holding
    ``fmt`` data, streamed through (only each line is bounded): the same parsers, records and
    errors as ``file_batches``, for a file another filesystem opened (the Ray engine's shards).
    Memory: one chunk (1 MiB, or 4,096 JSON items, or ``parquet_rows`` Parquet rows) at a time."""
    if fmt == "parquet":
        import pyarrow.parquet as pq      # pyarrow only for Parquet: `import auditor` and a JSONL load stay light
        for batch in parquet_batches(pq.ParquetFile(f), parquet_rows, name, notices):
            yield _python_rows(batch, name)          # (a date past year 9999 named, as locally)
        return
    budget = Budget(limited=False)
    stream = CountedStream(f, budget, name, b"{" if fmt == "json" else b"\n")
    if fmt == "jsonl":
        yield from jsonl_batches(stream, name)
    elif fmt == "json":
        yield from json_batches(stream, name, True, 4096, notices)
    else:
        yield from csv_batches(stream, name, "\t" if fmt == "tsv" else ",", budget, notices)


def file_rows(path: Path, budget: Budget, notices: list | None = None):
    """Records of one local file, one at a time (a corpus streamed through)."""
    yield from flattened(file_batches(path, budget, notices))


def flattened(batches):
    """The records of a generator of record lists, one at a time; the generator closed when done
    or dropped, so its file is."""
    try:
        for part in batches:
            yield from part
    finally:
        batches.close()


def file_batches(path: Path, budget: Budget, notices: list | None = None, *, stream_json: bool = True,
                 batch: int | None = None):
    """Lists of records of one local file, read in bounded chunks. ``stream_json``: parse a JSON
    list item by item (else whole, which is faster when every row is wanted); ``batch``: the
    rows wanted, when few (Parquet then reads small batches)."""
    fmt = format_of(path)
    if fmt == "parquet":
        yield from parquet_file_batches(path, budget, batch, notices)
        return
    stream = open_stream(path, budget, b"{" if fmt == "json" else b"\n", b"\t" if fmt == "tsv" else b",")
    try:
        size = 4096 if batch is None else max(1, min(batch + 1, 4096))   # records per list
        if fmt == "jsonl":
            yield from jsonl_batches(stream, path.name, batch)
        elif fmt == "json":
            yield from json_batches(stream, path.name, stream_json, size, notices)
        else:
            yield from csv_batches(stream, path.name, "\t" if fmt == "tsv" else ",", budget, notices, size)
    except READ_ERRORS as exc:
        raise read_error(exc, path) from None
    finally:
        stream.close()


_LINE_END = re.compile(rb"[\r\n]")


def line_blocks(stream: CountedStream, name: str, state: dict, csv_ends: bool = False):
    """Whole text lines of a UTF-8 stream, an iterable per chunk. JSONL (``csv_ends`` False): a
    list of lines split at "\\n", without it. CSV: lines that end at "\\r\\n", "\\r" or "\\n" and
    keep it, as the csv module wants. A line longer than the budget's line cap is refused as soon as it is,
    before it is all read; ``state["open"]`` is set to the number of a last line with no end."""
    budget = stream.budget
    parts: list[bytes] = []    # the pieces of the line still open at the end of the last chunk
    open_len = done = 0        # its length; lines yielded so far
    start = 0                  # byte offset of the block being decoded
    first = True
    while True:
        data = stream.chunk()
        if first:
            first = False
            if data.startswith(b"\xef\xbb\xbf"):      # a UTF-8 byte-order mark is legitimate; drop it
                data, start = data[3:], 3
                state["bom"] = True
        if not data:
            break
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) if csv_ends else data.rfind(b"\n")
        if cut < 0:                                  # the open line goes on
            parts.append(data)
            open_len += len(data)
            if open_len > budget.line_cap:
                raise budget.long_line(name, done + 1)
            continue
        if parts and open_len + _LINE_END.search(data).start() > budget.line_cap:
            raise budget.long_line(name, done + 1)
        if csv_ends:
            block = b"".join(parts) + data[:cut + 1] if parts else data[:cut + 1]
        else:
            block = b"".join(parts) + data[:cut] if parts else data[:cut]
        parts = [data[cut + 1:]] if cut + 1 < len(data) else []
        open_len = len(data) - cut - 1
        text = decode_utf8(block, name, start, done)
        if csv_ends:        # StringIO(newline="") splits at "\r\n", "\r" and "\n" only, as csv wants
            done += block.count(b"\n")
            yield io.StringIO(text, newline="")
        else:
            lines = text.split("\n")
            done += len(lines)
            yield lines
        start += len(block) + (0 if csv_ends else 1)
    if parts:
        state["open"] = done + 1
        yield [decode_utf8(b"".join(parts), name, start, done)]


def decode_utf8(block: bytes, name: str, start: int, lines_before: int) -> str:
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + block.count(b"\n", 0, exc.start) + 1
        raise AuditorError("bad_format", f"{name}: not valid UTF-8 (byte {start + exc.start}, line {line}).",
                           "Re-encode the file as UTF-8, or check that it is a text file and not binary.") from None


def jsonl_batches(stream: CountedStream, name: str, want: int | None = None):
    """Records of a JSONL stream, a list per chunk. The common case (every line an object) runs
    without per-line Python; a bad line is then found again line by line, to name it (unless the
    ``want`` rows the caller needs come before it)."""
    state: dict = {}
    loads, done, kept, held = _loads, 0, 0, None
    try:
        for lines in line_blocks(stream, name, state):
            try:
                rows = list(map(loads, filter(str.strip, lines)))   # split("\n"): U+2028 may sit in a string
                good = set(map(type, rows)) <= {dict}
            except (ValueError, RecursionError):
                good = False
            if not good:
                rows = list(itertools.islice(jsonl_rows(lines, name, done + 1),
                                             None if want is None else want + 1 - kept))
            done += len(lines)
            if held is not None:
                yield held
                held = None
            elif kept == 0 and len(rows) == 1 and _wraps_records(rows[0]):
                held = rows                 # yielded if another record follows, refused if none does
                kept = 1
                continue
            kept += len(rows)
            yield rows
        if held is not None:
            key = _wrapped_key(held[0])
            raise AuditorError("bad_format", f"{name}: its one line is an object whose {key!r} holds "
                               f"{len(held[0][key]):,} records: one JSON document, not JSON Lines.", _ONE_DOCUMENT)
    except AuditorError as exc:
        if state.get("open") and exc.message.startswith(f"{name}, line {state['open']}: not valid JSON") \
                and "carriage return" not in exc.hint:
            raise AuditorError(exc.code, exc.message, "That is the last line and it has no line end: the file "
                               "looks cut short (a truncated download or copy?).") from None
        raise


def jsonl_rows(lines, name: str, start: int = 1):
    """Records of JSONL lines, one at a time, with errors that name the line."""
    loads = _loads
    for lineno, line in enumerate(lines, start):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except _RepeatedKey as exc:
            raise _repeated_key(f"{name}, line {lineno}", exc) from None
        except _HugeFloat as exc:
            raise _huge_float(f"{name}, line {lineno}", exc, line, len(line) - len(line.lstrip())) from None
        except ValueError as exc:
            if not isinstance(exc, json.JSONDecodeError):
                raise _huge_number(f"{name}, line {lineno}") from None
            snippet = line.strip()[:60]
            hint = "Fix or remove that line; every line of a JSONL file must be one JSON object."
            if re.search(r"[}\]]\s*\r\s*[{\[]", line):
                hint = ("Its records are separated by a lone carriage return (\\r, old Mac line ends): convert "
                        "the line ends to \\n (e.g. tr '\\r' '\\n').")
            elif lineno == 1 and line.strip() in ("[", "{"):
                hint = _ONE_DOCUMENT
            elif line.lstrip(" \t\r").startswith("\ufeff"):
                hint = ("That line starts with a byte-order mark (U+FEFF): files saved with one were joined "
                        "together (cat a.jsonl b.jsonl)? Remove the marks, e.g. sed 's/^\\xEF\\xBB\\xBF//'.")
            raise AuditorError("bad_format", f"{name}, line {lineno}: not valid JSON ({exc.args[0].split(':')[0]}): "
                               f"{snippet!r}", hint) from None
        except RecursionError:
            raise _too_deep(f"{name}, line {lineno}") from None
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}, line {lineno}: a JSON {_kind(row)}, not an object.",
                               _ONE_DOCUMENT if lineno == 1 and isinstance(row, list) else
                               "Every line of a JSONL file must be a JSON object like {\"text\": ...}.")
        yield row


_CONTAINERS = frozenset({"data", "rows", "records", "examples", "instances", "items", "samples"})   # and SPLIT_KEYS


def _contained(obj: dict, keys: frozenset):
    """The value of ``obj``'s one list or object field when its key names a container in ``keys``
    ({"version": 1, "data": [...]}), else None."""
    nested = [k for k, v in obj.items() if isinstance(v, (list, dict))]
    return obj[nested[0]] if len(nested) == 1 and str(nested[0]).lower() in keys else None


def _wrapped_key(row: dict):
    """The key of the list of records a document's wrapper holds ({"version": ..., "data": [{...}, ...]},
    SQuAD's layout; {"features": [...], "rows": [...]}, the Hub datasets-server's), or None: in a file
    of one line, such a record is a JSON document named .jsonl, and one record."""
    key = _records_beside_metadata(row)
    if key is None and _contained(row, _CONTAINERS | SPLIT_KEYS) is not None:
        key = next(k for k, v in row.items() if isinstance(v, (list, dict)))     # its one list or object
    value = row.get(key) if key is not None else None
    return key if isinstance(value, list) and len(value) > 1 and all(isinstance(x, dict) for x in value) else None


def _wraps_records(row: dict) -> bool:
    return _wrapped_key(row) is not None


def _lists_of_records(data: dict) -> list:
    """The keys of ``data`` whose values are non-empty lists of objects."""
    return [k for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]


def _records_beside_metadata(data: dict):
    """The key of the list of records in an object that holds other lists of objects beside it as
    metadata, or None. The Hub datasets-server's /rows answer is {"features": [{"name": ...}], "rows":
    [{"row_idx": 0, "row": {...}}, ...], "num_rows_total": 20}: read as one record, every question was
    one text of it. Its list is known by its name: the one list of objects keyed as records are
    (rows, data, records, examples, ...; a split). (Not by its length: a list of 1 row beside 5
    features is still the rows, and an object of uneven lists of objects may be uneven columns.) An
    id or a text beside the lists makes the object one record, as for columns (one document of a folder)."""
    records = _lists_of_records(data)
    if len(records) < 2 or any(str(k).lower() in ID_FIELD_NAMES for k in data) or any(
            isinstance(v, str) and (len(v) > COLUMN_EXTRA_CHARS or "\n" in v) for v in data.values()):
        return None
    named = [k for k in records if str(k).strip().lower() in _CONTAINERS | SPLIT_KEYS]
    return named[0] if len(named) == 1 else None


# A JSON document named .jsonl (json.dump of a list, pretty-printed or not): its first line is "[".
class _RepeatedKey(ValueError):
    """An object naming one key twice: ``key`` is the first repeat."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return record


class _HugeFloat(ValueError):
    """A number beyond a 64-bit float's range (1e400): ``literal`` as written."""

    def __init__(self, literal: str):
        super().__init__(literal)
        self.literal = literal


_INFINITIES = (float("inf"), float("-inf"))


def _finite_float(literal: str) -> float:
    # Python reads 1e400 as inf, silently: 1e400 and 2e400 were one value ("inf"), a false duplicate
    # and leak. (Infinity, written by name as pandas and json.dumps write it, is read as infinity.)
    value = float(literal)
    if value in _INFINITIES:
        raise _HugeFloat(literal)
    return value


# Every JSON object is read through this decoder. A key named twice in one object is refused, not
# resolved: parsers disagree on which value counts (Python, jq and Arrow's ignored fields keep the last,
# others the first or refuse), so {"question": TEST ITEM, "question": "x"} hid a benchmark item from
# every check while a first-wins trainer read it, and dedup dropped 199 of 200 distinct records.
# A number beyond a float's range is refused (``_finite_float``; a float costs a call only when
# the text holds one: text data reads as fast).
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_float=_finite_float)


def _loads(text: str):
    """``json.loads`` with repeated keys refused (a leading BOM is refused as json.loads refuses it)."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


def _repeated_key(where: str, exc: _RepeatedKey) -> AuditorError:
    return AuditorError("bad_format", f"{where}: an object names the key {exc.key[:100]!r} twice.",
                        "JSON readers disagree on which value counts (the first, the last, or an error), so "
                        "what a model was trained on may differ from what is checked: keep one value per key.")


_ONE_DOCUMENT = ("The file looks like one JSON document (a list of records, or an object over several lines), "
                 "not JSON Lines (one object per line): name it .json.")


_JSON_KINDS = {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "object"}


def _kind(value) -> str:
    """A JSON value's type as a message names it: null, boolean, number, string, list, object (not
    Python's "NoneType", "int", "str": "holds a int")."""
    return "null" if value is None else _JSON_KINDS.get(type(value), type(value).__name__)


def _huge_number(where: str) -> AuditorError:
    # Valid JSON, but Python converts at most this many digits to an int (CVE-2020-10735): json.loads
    # raises a plain ValueError, which is no JSONDecodeError (it has no position).
    digits = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
    return AuditorError("bad_format", f"{where}: a whole number of more than {digits:,} digits, more than "
                        "Python reads as a number.", "Write such a value as a string (in quotes); no dataset "
                        "field needs a number that long.")


def _huge_float(where: str, exc: _HugeFloat, text: str, pos: int = 0) -> AuditorError:
    """The error for a number beyond a float's range, naming the field that holds it (``text`` from
    ``pos``: the record or document, decoded again to find it)."""
    field = _huge_float_field(text, pos)
    place = f"the field {field!r} holds" if field else "holds"
    return AuditorError("bad_format", f"{where}: {place} the number {exc.literal[:40]}, beyond the range of a "
                        "64-bit float (it would read as infinity, equal to any other such number).",
                        "Write such a value as a string (in quotes), or within ±1.7e308.")


class _Huge:
    """Where a number beyond a float's range sat, in a record decoded again to find its field."""


def _huge_float_field(text: str, pos: int) -> str | None:
    """The dotted path (list items as [i]) of the first number beyond a float's range in the JSON
    value at ``text[pos:]``."""
    huge = _Huge()
    decoder = json.JSONDecoder(parse_float=lambda literal: huge if float(literal) in _INFINITIES else 0.0)
    try:
        value = decoder.raw_decode(text, pos)[0]
    except (ValueError, RecursionError):
        return None

    def path(node, at: str):
        if node is huge:
            return at
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            found = path(child, f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}" if at else str(key))
            if found is not None:
                return found
        return None

    try:
        return path(value, "")
    except RecursionError:
        return None


def _too_deep(where: str) -> AuditorError:
    return AuditorError("bad_format", f"{where}: JSON nested too deeply to read (several hundred levels of "
                        "lists or objects).", "Flatten the records; no dataset field needs that depth.")


_WS = re.compile(r"[ \t\n\r]*")


class _JsonText:
    """The decoded text of a JSON stream, read a chunk at a time on demand."""

    def __init__(self, stream: CountedStream, name: str, head: bytes):
        self.stream, self.name = stream, name
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.eof, self.read = "", False, 0
        self._add(head)

    def more(self, at_least: int = 0) -> None:
        self._add(self.stream.chunk(max(self.stream.size, at_least)))

    def _add(self, data: bytes) -> None:
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise _not_utf8(self.name, self.read + exc.start) from None
        self.read += len(data)
        self.buf += text
        self.eof = not data


def _trailing_comma(name: str, where: str) -> AuditorError:
    return AuditorError("bad_format", f"{name}, {where}: a comma before the closing bracket (a trailing comma, "
                        "which JSON does not allow).", "Remove that comma.")


def _not_utf8(name: str, byte: int) -> AuditorError:
    return AuditorError("bad_format", f"{name}: not valid UTF-8 (byte {byte}).",
                        "Re-encode the file as UTF-8, or check that it is a text file and not binary.")


def json_batches(stream: CountedStream, name: str, item_by_item: bool, size: int = 1024, notices: list | None = None):
    """Records of a JSON file. A top-level list is parsed item by item when ``item_by_item`` (a row
    cap then stops reading when it is reached); anything else is read whole, within the budget,
    and parsed at once (``notices``: what the report must say of its shape)."""
    budget = stream.budget
    # Read whole: a plain file (its size already checked against the budget) in one read; a
    # compressed one chunk by chunk, each charged before the next is decompressed.
    whole = 0 if item_by_item or stream.compressed or not budget.limited else \
        budget.cap - budget.used + 1
    parts = [stream.chunk(max(stream.size, whole))]
    if item_by_item:
        bom = 3 if parts[0].startswith(b"\xef\xbb\xbf") else 0   # a UTF-8 byte-order mark; dropped
        while parts[-1] and not parts[-1][bom if len(parts) == 1 else 0:].strip():
            parts.append(stream.chunk())                          # leading whitespace
        head = b"".join(parts)[bom:]
        if head.lstrip().startswith(b"["):
            batch: list = []
            for row in _json_items(_JsonText(stream, name, head), name):
                batch.append(row)
                if len(batch) >= size:
                    yield batch
                    batch = []
            yield batch
            return
    while parts[-1]:
        parts.append(stream.chunk(max(stream.size, whole)))
    parts = [p for p in parts if p]
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    parts.clear()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_utf8(name, exc.start) from None
    del data                              # one copy of the text in memory while it is parsed
    yield _parse_json(text, name, None, notices)[0]


def _json_items(text: _JsonText, name: str):
    raw_decode = _DECODER.raw_decode
    budget = text.stream.budget
    buf = text.buf
    pos = _WS.match(buf).end() + 1            # past "["
    index, expect = 0, "first"                # expect: "first" item or "]", an "item", or a "separator"
    while True:
        pos = _WS.match(buf, pos).end()
        if pos >= len(buf):
            if text.eof:
                raise AuditorError("bad_format", f"{name}: the JSON list stops after item {index - 1}, without its "
                                   "closing ']': the file looks cut short.", "Download or copy it again.")
            text.buf = ""
            text.more()
            buf, pos = text.buf, 0
            continue
        if expect == "separator":
            if buf[pos] == ",":
                expect, pos = "item", pos + 1
                continue
            if buf[pos] == "]":
                return
            raise AuditorError("bad_format", f"{name}: after item {index - 1} of the list comes "
                               f"{buf[pos:pos + 20]!r} instead of ',' or ']'.", "Check the file is valid JSON.")
        if expect == "first" and buf[pos] == "]":
            return
        if expect == "item" and buf[pos] == "]":
            raise _trailing_comma(name, f"after item {index - 1}")
        try:
            row, end = raw_decode(buf, pos)
            complete = end < len(buf) or text.eof
        except _RepeatedKey as exc:
            raise _repeated_key(f"{name}, item {index} of the list", exc) from None
        except _HugeFloat as exc:
            if text.eof or _huge_float_field(buf, pos) is not None:
                raise _huge_float(f"{name}, item {index} of the list", exc, buf, pos) from None
            complete = False                  # its field is named once the item is whole
        except json.JSONDecodeError as exc:
            if text.eof:
                cut = exc.pos >= len(buf) - 1 or exc.msg.startswith("Unterminated")
                raise AuditorError("bad_format", f"{name}: item {index} of the list is not valid JSON ({exc.msg}, line "
                                   f"{exc.lineno} of what was read)" + (": the file looks cut short." if cut else "."),
                                   "Check the file is complete and valid JSON.") from None
            complete = False
        except ValueError:                    # not a JSONDecodeError: an integer too long to convert
            raise _huge_number(f"{name}, item {index}") from None
        except RecursionError:
            raise _too_deep(f"{name}, item {index}") from None
        if not complete:                      # the item goes on in the next chunk
            if len(buf) - pos > budget.line_cap:
                raise budget.long_line(name, index, "item")
            text.buf = buf[pos:]
            text.more(len(buf) - pos)         # read at least as much again: linear in the item's size
            buf, pos = text.buf, 0
            continue
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}: item {index} of the list is a {_kind(row)}, "
                               "not an object.", "Every record must be a JSON object like {\"text\": ...}.")
        yield row
        index, pos, expect = index + 1, end, "separator"


def _parse_jsonl(text: str, name: str, max_rows) -> tuple[list[dict], bool]:
    # split("\n"), not splitlines(): U+2028 and friends may sit inside a JSON string.
    rows: list[dict] = []
    for row in jsonl_rows(text.split("\n"), name):
        if max_rows is not None and len(rows) >= max_rows:
            return rows, True
        rows.append(row)
    return rows, False


def _notice(notices: list | None, text: str) -> None:
    if notices is not None:
        notices.append(text)


COLUMN_EXTRA_CHARS = 200    # a longer text beside equal-length lists is a record's content: one record


def _columns_and_values(data: dict, lists: dict) -> bool:
    """Whether an object holding other values beside its lists is a table of columns plus values
    for the whole file ({"question": [...], "answer": [...], "version": "1.0"}): two or more lists
    of one length (at least 2), and no other value a text (longer than COLUMN_EXTRA_CHARS, or over
    several lines), which makes it one record ({"id": 3, "text": "...", "tokens": [...], "tags": [...]}),
    nor a record's id ({"id": 3, "tokens": [...], "ner_tags": [...]}: one document of a folder)."""
    sizes = {len(v) for v in lists.values()}
    if len(lists) < 2 or len(sizes) != 1 or sizes.pop() < 2:
        return False
    others = {k: v for k, v in data.items() if k not in lists}
    if any(str(k).lower() in ID_FIELD_NAMES for k in others):
        return False
    return not any(isinstance(v, str) and (len(v) > COLUMN_EXTRA_CHARS or "\n" in v) for v in others.values())


def _nesting(rows: list, sample: int = 100) -> str | None:
    """"KEY -> KEY2" when each of the first records holds, under the same key, a list of objects
    that hold lists of objects themselves (SQuAD's paragraphs -> qas in a layout not quite its
    own), else None. (One level, a chat's messages, is an ordinary record; so are messages whose
    content is a list of parts, [{"type": "text", "text": ...}].)"""
    def path(row) -> str | None:
        for key, value in row.items():
            if isinstance(value, list) and value and all(isinstance(x, dict) for x in value) \
                    and not {"role", "from"} & set(value[0]):
                for key2, value2 in value[0].items():
                    if isinstance(value2, list) and value2 and all(isinstance(y, dict) for y in value2):
                        return f"{key!r} -> {key2!r}"
        return None
    paths = {path(row) for row in rows[:sample]}
    return paths.pop() if len(paths) == 1 and None not in paths else None


def _squad_records(data: dict, records: list):
    """(one record per question, the number of articles) of a file in SQuAD's layout ({"version":
    ..., "data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [{"id", "question",
    "answers", ...}]}]}]}), or None for any other object. Read as its "data" list, each article was
    one record, and the text guessed was its title. A question's record is its own fields with its
    paragraph's context and its article's title, as the Hub's squad sets lay them out."""
    if records != ["data"]:
        return None
    articles = data["data"]
    for article in articles:
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list) or not all(
                isinstance(p, dict) and isinstance(p.get("context"), str) and isinstance(p.get("qas"), list)
                and all(isinstance(q, dict) and isinstance(q.get("question"), str) for q in p["qas"])
                for p in paragraphs):
            return None
    out = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                record = {"id": qa["id"]} if "id" in qa else {}
                if "title" in article:
                    record["title"] = article["title"]
                record["context"] = paragraph["context"]
                record.update(qa)
                out.append(record)
    return out, len(articles)


def _parse_json(text: str, name: str, max_rows, notices: list | None = None) -> tuple[list[dict], bool]:
    if not text.strip():
        return [], False
    try:
        data = _loads(text)
    except _RepeatedKey as exc:
        raise _repeated_key(name, exc) from None
    except _HugeFloat as exc:
        raise _huge_float(name, exc, text, len(text) - len(text.lstrip())) from None
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):
            raise _huge_number(name) from None
        if "Extra data" in str(exc):  # several objects, one per line: it is really JSONL
            return _parse_jsonl(text, name, max_rows)
        body = text.rstrip()
        if text[exc.pos:exc.pos + 1] in ("]", "}") and text[:exc.pos].rstrip().endswith(","):
            raise _trailing_comma(name, f"line {exc.lineno}")
        cut = exc.pos >= len(body) or exc.msg.startswith("Unterminated") or not body.endswith(("]", "}"))
        raise AuditorError("bad_format", f"{name}: not valid JSON ({exc})" +
                           (": it does not end with ']' or '}', so it looks cut short." if cut else "."),
                           "Check the file is complete and valid JSON.") from None
    except RecursionError:
        raise _too_deep(name) from None
    frame = _pandas_frame(data, name, notices)
    if frame is None and isinstance(data, dict):
        # {"version": 1, "data": {"task_0": {...}, ...}}: records keyed by id inside a container
        value = _contained(data, _CONTAINERS)
        if isinstance(value, dict) and _keyed_records(value):
            frame = _pandas_frame(value, name, notices)
    if frame is not None:
        data = frame
    squad = None
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        records = _lists_of_records(data)
        only_lists = bool(lists) and len(lists) == len(data)
        splits = [k for k in lists if str(k).strip().lower() in SPLIT_KEYS]
        if len(splits) > 1:
            # {"train": [...], "test": [...]}: pairing them up as columns, or reading one, would mix or
            # drop splits (other keys beside them, such as a version, change nothing)
            raise AuditorError("bad_format", f"{name}: the JSON object holds one list per split "
                               f"({', '.join(map(repr, splits[:5]))}{' ...' if len(splits) > 5 else ''}).",
                               "Save each as its own file (train.jsonl, test.jsonl ...) in one "
                               "folder: files named like splits are read as splits.")
        squad = _squad_records(data, records)
        if squad is not None:
            data, articles = squad
            _notice(notices, f"{name}: SQuAD layout (data -> paragraphs -> qas): read as one record per question "
                             f"({len(data):,} questions in {articles:,} articles), each with its paragraph's "
                             "context and its article's title")
        elif (key := _records_beside_metadata(data)) is not None:
            # {"features": [...], "rows": [...], "num_rows_total": 20}: the rows are the records
            others = [str(k) for k in data if k != key]
            data = data[key]
            _notice(notices, f"{name}: a JSON object holding a list of records beside other values: read the "
                             f"records of {key!r} ({len(data):,} records); {', '.join(others[:5])}"
                             f"{' ...' if len(others) > 5 else ''} left out")
        elif only_lists and len({len(v) for v in lists.values()}) == 1:
            if len(lists) == 1 and records:
                data = next(iter(lists.values()))          # {"data": [{...}, ...]}
            else:                                            # an object of equal-length columns
                data = [dict(zip(lists, values)) for values in zip(*lists.values())]
        elif _columns_and_values(data, lists):
            # {"question": [...], "answer": [...], "version": "1.0"}: the columns of a table, as
            # without the version (read as one record, every question was one value of it)
            extra = [f"{k!r}: {json.dumps(v, ensure_ascii=False)[:40]}" for k, v in data.items() if k not in lists]
            data = [dict(zip(lists, values)) for values in zip(*lists.values())]
            one = len(extra) == 1
            _notice(notices, f"{name}: a JSON object of equal-length lists, read as the columns "
                             f"{', '.join(map(repr, list(lists)[:5]))}{' ...' if len(lists) > 5 else ''} "
                             f"({len(data):,} records); {'its other value' if one else 'its other values'} "
                             f"({'; '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}) "
                             f"{'is' if one else 'are'} one value for the whole file, not in the records. "
                             "If the file is one record, save it as one line of JSONL.")
        elif len(records) == 1:
            data = lists[records[0]]                       # {"version": 2, "data": [{...}]}
        elif only_lists and len(lists) > 1:
            # Columns of different lengths: read as one record, every column would be one value.
            sizes = ", ".join(f"{k!r}: {len(v):,}" for k, v in list(lists.items())[:5])
            raise AuditorError("bad_format", f"{name}: the JSON object holds lists of different lengths ({sizes}"
                               f"{' ...' if len(lists) > 5 else ''}), so they are not the columns of one table.",
                               "Use a list of objects, an object of equal-length lists, or JSONL.")
        else:
            data = [data]                                    # one record
    if not isinstance(data, list):
        raise AuditorError("bad_format", f"{name}: the JSON holds a {_kind(data)}, not records.",
                           "Use a list of objects, an object of equal-length lists, or JSONL.")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise AuditorError("bad_format", f"{name}: item {i} of the list is a {_kind(row)}, "
                               "not an object.", "Every record must be a JSON object like {\"text\": ...}.")
    nested = _nesting(data) if notices is not None and squad is None else None
    if nested:
        _notice(notices, f"{name}: its records hold records nested two levels deep ({nested}): each of its "
                         f"{len(data):,} top-level items is read as one record, with the nested lists as its values "
                         "(so the text guessed may be a title or a name). To audit the nested items, write them "
                         "one per line as JSONL first (e.g. with jq -c).")
    truncated = max_rows is not None and len(data) > max_rows
    return (data[:max_rows] if truncated else data), truncated


_INDEX_LABEL = re.compile(r"-?\d+")


def _pandas_frame(data, name: str, notices: list | None = None) -> list | None:
    """The records of a DataFrame saved by pandas' ``to_json`` in its "columns" (the default:
    {"question": {"0": ..., "1": ...}}), "index" ({"0": {"question": ...}}) or "split"
    ({"columns": [...], "data": [[...]]}) layout, or None for any other JSON. (Read as one
    record, "columns" held every question in one text, and "index" was a record of records.)"""
    if not isinstance(data, dict) or not data:
        return None
    keys = list(data)
    if {"columns", "data"} <= set(keys) <= {"columns", "index", "data"}:
        columns, values = data["columns"], data["data"]
        if isinstance(columns, list) and isinstance(values, list) and all(
                isinstance(c, (str, int, float)) for c in columns) and all(
                isinstance(v, list) and len(v) == len(columns) for v in values):
            header = unique_columns([str(c) for c in columns], name, None)
            return [dict(zip(header, v)) for v in values]
        return None
    if not all(isinstance(v, dict) for v in data.values()):
        return None
    if all(_INDEX_LABEL.fullmatch(k) for k in keys):                     # orient="index"
        return list(data.values())
    labels = list(next(iter(data.values())))
    if labels and all(_INDEX_LABEL.fullmatch(k) for k in labels) and all(list(v) == labels for v in data.values()):
        return [{column: values[label] for column, values in data.items()} for label in labels]   # "columns"
    if _keyed_records(data):
        # orient="index" of a frame indexed by ids, or json.dump of a dict of records by id: read as
        # one record, its text could only be one record's field (--text task_0.question)
        shown = ", ".join(map(repr, keys[:3])) + (" ..." if len(keys) > 3 else "")
        _notice(notices, f"{name}: a JSON object of {len(keys):,} objects keyed by id ({shown}): read as one record "
                         "each (pandas' orient='index' layout); the keys are not in the records")
        return list(data.values())
    return None


def _keyed_records(data: dict) -> bool:
    """Whether an object of objects is records keyed by their ids ({"task_0": {"question": ...},
    "task_1": {...}}): two or more, every key holding a digit (an id, not a field name: one record
    {"question": {"en": ...}, "answer": {"en": ...}} stays one), and a field every object holds as text."""
    if len(data) < 2 or not all(any(c.isdigit() for c in k) and isinstance(v, dict) for k, v in data.items()):
        return False
    values = list(data.values())
    common = set(values[0]).intersection(*values[1:])
    return any(all(isinstance(v[k], str) for v in values) for k in common)


# A CSV cell written NaN is a missing value (pandas writes and reads it so, numpy and Python print a
# float NaN so): read as None, as pandas and the Hub's CSV reader read it, so each check sees no value,
# as for a JSON NaN or null (roles.as_text), where the text "NaN" made every missing answer one
# duplicate group, and a column of them a guessed role. (None, not a float NaN: a JSON copy writes
# null, which every JSON reader reads.) "NULL", "NA" and "None" stay text: each is a real value too
# (SQL's or JavaScript's null, a country code, a Python answer).
_NAN_CELLS = frozenset({"NaN", "nan", "-NaN", "-nan"})


CONTINUED_LINES = 1000      # lines of the first record read to judge the delimiter (a quoted value's newlines)


CONTINUED_CHARS = 1 << 20   # and characters


def csv_batches(stream: CountedStream, name: str, delimiter: str, budget: Budget, notices: list | None,
                 size: int = 4096, raw: dict | None = None):
    """Lists of the records of a CSV/TSV stream. ``raw``, a dict, is given the text as written of what
    precedes the records (``raw["head"]``: Excel's sep= line and the header, with their line ends;
    ``raw["bom"]``: whether a byte-order mark began the file) and, before each list is yielded, each
    of its records' text (``raw["texts"]``, replaced each time): a copy less some rows keeps the
    file's dialect (delimiter, quoting, line ends, header as written)."""
    # Values stay strings: no type inference, so "007" stays "007". strict: a quote left open is
    # an error that names its line, not a record that silently swallows the rest of the file.
    csv.field_size_limit(min(budget.line_cap, sys.maxsize))  # a long value is data, not a quoting error
    state: dict = {}
    lines = itertools.chain.from_iterable(line_blocks(stream, name, state, csv_ends=True))
    # Blank lines before the header are counted, not kept (memory), and line numbers in messages
    # are the file's (``skipped`` added). A header of one blank name ("") is a header, not a blank line.
    skipped, first, excel = 0, None, None
    for line in lines:
        if line.strip():
            # Excel's "sep=;" line names the delimiter and is not the header (read as one, the
            # header became a record and the columns "sep=" and "Unnamed: 1").
            if excel is None and (excel := _EXCEL_SEP.fullmatch(line)):
                skipped += 1
                continue
            first = line
            break
        skipped += 1
    if first is None:
        return
    _refuse_json_named_as_csv(first, name)
    # A quoted column name may hold a newline ("the\nanswer"): the header is judged whole, as the
    # first record is below (its first line alone, a quote left open, chose the wrong delimiter or
    # none: a semicolon file read as one column, silently).
    header_lines = [first]
    inside = _ends_quoted(first, False)
    while inside and len(header_lines) < CONTINUED_LINES and len(first) < CONTINUED_CHARS \
            and (more := next(lines, None)) is not None:
        header_lines.append(more)
        first += more
        inside = _ends_quoted(more, True)
    following = next(lines, None)                          # the first record's line, for the delimiter
    continued: list = []
    if following is not None:
        # A quoted value holding a newline (Alpaca's input, code) continues the first record on the
        # next lines: the delimiter is judged on the whole record (its first line alone, a quote
        # left open, held fewer values than the header: a semicolon file was read as one column).
        record = following
        while record.count('"') % 2 and len(continued) < CONTINUED_LINES and len(record) < CONTINUED_CHARS \
                and (more := next(lines, None)) is not None:
            continued.append(more)
            record += more
    if excel:
        delimiter = excel.group(1)
        if notices is not None:
            notices.append(f"{name}: its first line, {excel.group(0).strip()!r}, names the delimiter (Excel)")
    else:
        delimiter = _delimiter(first, following, delimiter, name, notices,
                               following + "".join(continued) if continued else None)
    source = itertools.chain(header_lines, [] if following is None else [following], continued, lines)
    taken: list = []                                       # with ``raw``: the lines read since the last record
    if raw is not None:
        source = _taken(source, taken)
    reader = csv.reader(source, delimiter=delimiter, strict=True)
    last = 0                                               # the line the previous record ended on
    try:
        header = next(reader)
        if raw is not None:
            raw.update(head=(excel.group(0) if excel else "") + "".join(taken), bom=bool(state.get("bom")), texts=[])
            taken.clear()
        if _json_line(header, delimiter):
            raise _jsonl_named_as_csv(name)
        written = header                                   # as in the file, to know it when it repeats
        # A header cell that reads as a sentence is a record's value: a file with no header row. Then
        # a line equal to it is that record again, kept (a header joined by cat is a name, not prose).
        sentences = _sentence_cells(written)
        if sentences and notices is not None:
            notices.append(f"{name}: the header row ({_shown_cells(written)}) looks like data (a column name that "
                           "reads as a sentence): if the file has no header, add one (its first record is read as "
                           "column names)")
        header = unique_columns(_strip_names(header, name, notices), name, notices)
        width = len(header)
        last = reader.line_num
        rows: list = []
        repeats: list = []                                 # lines that repeat the header
        alike: list = []                                   # of one column: lines equal to the header, kept
        sample: list | None = []                           # the first records, to judge the header (then None)
        nan_rows = 0                                       # records with a NaN cell (read as missing)
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                last = reader.line_num
                taken.clear()
                continue
            if row == written or (row[0][:1] == "\ufeff" and [row[0][1:], *row[1:]] == written):
                if width == 1 or sentences:
                    # one column: the line may be a value equal to the name, so it stays a record (noted)
                    alike.append(reader.line_num + skipped)
                else:
                    # CSV files joined with cat: each one's header (and byte-order mark) is not a record
                    repeats.append(reader.line_num + skipped)
                    last = reader.line_num
                    taken.clear()
                    continue
            if len(row) != width:
                at, end = last + 1 + skipped, reader.line_num + skipped
                if end - at > 0:
                    raise AuditorError("bad_format", f"{name}, lines {at}-{end}: one record of "
                                       f"{len(row)} values, but the header has {width} columns.",
                                       f"A quote opened on line {at} may not be closed where it should be.")
                raise AuditorError("bad_format", f"{name}, line {end}: {len(row)} values but the "
                                   f"header has {width} columns.", "Check quoting and delimiters on that line.")
            last = reader.line_num
            if sample is not None and len(sample) < HEADER_SAMPLE:
                sample.append(row)
            if not _NAN_CELLS.isdisjoint(row):
                nan_rows += 1
                row = [None if value in _NAN_CELLS else value for value in row]
            rows.append(dict(zip(header, row)))
            if raw is not None:
                raw["texts"].append("".join(taken))
                taken.clear()
            if len(rows) >= size:
                if sample is not None:                     # judged before a row cap may stop the read
                    _judge_header(written, sample, name, notices)
                    sample = None
                yield rows
                rows = []
                if raw is not None:
                    raw["texts"] = []
        if sample is not None:
            _judge_header(written, sample, name, notices)
        if nan_rows and notices is not None:
            notices.append(f"{name}: {nan_rows:,} record(s) hold a cell written NaN (pandas' missing value), read "
                           "as missing (null), as pandas reads it")
        if repeats and notices is not None:
            notices.append(f"{name}: {len(repeats):,} line(s) repeat the header (files joined together?), not read "
                           f"as records: line {', '.join(map(str, repeats[:5]))}{' ...' if len(repeats) > 5 else ''}")
        if alike and notices is not None:
            why = "a header that reads as data" if sentences else "a one-column file may hold that value"
            notices.append(f"{name}: {len(alike):,} line(s) equal the header {written[0][:40]!r} (files joined "
                           f"together?); kept as records, as {why}: line "
                           f"{', '.join(map(str, alike[:5]))}{' ...' if len(alike) > 5 else ''}")
        yield rows
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            raise AuditorError("bad_format", f"{name}, line {last + 1 + skipped}: a quoted value opened there is never "
                               "closed (the file ends inside it).", "Close the quote, or check the file is "
                               "complete.") from None
        if "field larger than field limit" in str(exc):
            raise budget.long_line(name, last + 1 + skipped, "value") from None
        hint = "Check quoting on that line."
        if delimiter == "\t" and "expected after '\"'" in str(exc):
            # GLUE and many lab TSVs are written without quoting: a text that starts with a quote
            hint += (" Tab-separated files are often written without quoting, where a value that starts with "
                     "a quote is still plain text: convert it, e.g. pandas.read_csv(FILE, sep='\\t', quoting=3)"
                     ".to_json('data.jsonl', orient='records', lines=True).")
        raise AuditorError("bad_format", f"{name}, line {reader.line_num + skipped}: unreadable CSV ({exc}).",
                           hint) from None


def _taken(lines, taken: list):
    """``lines``, each also appended to ``taken`` as the CSV reader takes it."""
    for line in lines:
        taken.append(line)
        yield line


def _strip_names(header: list, name: str, notices: list | None) -> list:
    """Column names without the spaces around them ("question, answer", as written by hand): kept,
    " answer" was no answer guessed, and no --text could name " question " (role names are stripped)."""
    stripped = [col.strip() for col in header]
    padded = [new for col, new in zip(header, stripped) if new and new != col]
    if padded and notices is not None:
        notices.append(f"{name}: column names with spaces around them, read without: "
                       + ", ".join(map(repr, padded[:5])) + (" ..." if len(padded) > 5 else ""))
    return stripped


def _jsonl_named_as_csv(name: str) -> AuditorError:
    return AuditorError("bad_format", f"{name}: the first line is a JSON object, not a header: the file "
                        "looks like JSON Lines named as CSV/TSV.",
                        "Name it .jsonl (one JSON object per line) or .json, or check it is the right file.")


def _refuse_json_named_as_csv(line: str, name: str) -> None:
    """Refuse a "CSV" whose first line is JSON: a JSON object (JSON Lines), or the start of a JSON
    document ("[" or "{" alone, pretty-printed) or a whole JSON list on one line. Read as CSV, a one-line
    list was a header and no records ("no records found"), and a compact object an "unreadable CSV"."""
    text = line.strip()
    if not text.startswith(("[", "{")):
        return
    if text in ("[", "{", "[{"):
        value: object = []
    else:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return
    if isinstance(value, dict):
        raise _jsonl_named_as_csv(name)
    if isinstance(value, list):
        raise AuditorError("bad_format", f"{name}: the file starts with a JSON document, not a header: it "
                           "looks like JSON named as CSV/TSV.", "Name it .json, or check it is the right file.")


# A CSV header cell read as data: a plain number (3, -1.5, 2e3)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
HEADER_SAMPLE = 20          # records read to judge whether the header row looks like one


def _judge_header(header: list, sample: list, name: str, notices: list | None) -> None:
    """A notice when the header row looks like a record, judged on the first records (``sample``): a
    file written without a header loses its first record, read as the column names, silently."""
    if notices is not None and not _sentence_cells(header) and _header_like_data(header, sample):
        notices.append(f"{name}: the header row ({_shown_cells(header)}) looks like data (a column named by a number "
                       "holds numbers): if the file has no header, add one (its first record is read as column names)")


def _shown_cells(header: list) -> str:
    return ", ".join(repr(c[:40]) for c in header[:5]) + (" ..." if len(header) > 5 else "")


SENTENCE_CHARS, SENTENCE_WORDS = 100, 15      # a column name this long is a value, not a name


def _sentence_cells(header: list) -> bool:
    """Whether a header cell reads as a sentence or a passage (over ``SENTENCE_CHARS`` characters or
    ``SENTENCE_WORDS`` words, or over 40 characters across lines): a record's value, where names,
    even a survey's questions, are short."""
    return any(len(c) > SENTENCE_CHARS or len(c.split()) > SENTENCE_WORDS or (len(c) > 40 and "\n" in c)
               for c in header)


def _header_like_data(header: list, sample: list) -> bool:
    """Whether a column is named by a number and holds numbers in every sampled record (a name such
    as "id", "text" or "label" never is). Numbered columns are names, not data: "0", "1", "2" (pandas and
    numpy name unnamed columns so) or "2019", "2020" (a table by year): consecutive whole numbers, or
    one alone that is its column's position (0 or 1 based)."""
    numbered = [(i, cell.strip()) for i, cell in enumerate(header) if _NUMBER.fullmatch(cell.strip())]
    if not numbered or not sample or _numbered_columns(numbered):
        return False
    return any(_all_numbers(row[i] for row in sample) for i, _ in numbered)


def _numbered_columns(numbered: list) -> bool:
    """Whether header cells that are numbers ((position, cell) pairs) number the columns."""
    if not all(cell.lstrip("+-").isdigit() for _, cell in numbered):
        return False
    values = [int(cell) for _, cell in numbered]
    if len(values) == 1:
        return values[0] - numbered[0][0] in (0, 1)
    return all(b - a == 1 for a, b in zip(values, values[1:]))


def _all_numbers(values) -> bool:
    """Whether every value given (missing ones aside: blank, NaN) is a plain number, and one is."""
    present = [v.strip() for v in values if v.strip() and v not in _NAN_CELLS]
    return bool(present) and all(_NUMBER.fullmatch(v) for v in present)


def _json_line(header: list, delimiter: str) -> bool:
    """Whether a CSV "header" is really a JSON object (a JSONL file read as CSV would otherwise
    pass as columns named '{"id": 1' and so on, a silent audit of garbage)."""
    line = delimiter.join(header).strip()
    if not (line.startswith("{") and line.endswith("}")):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}


# A quoted value, opened at the start of a value (with any of the delimiters): a quote inside one,
# size 5", is a character
_QUOTED = re.compile(r'(?:^|(?<=[,;\t]))"(?:[^"]|"")*"')


def _ends_quoted(line: str, inside: bool) -> bool:
    """Whether ``line`` ends inside a quoted value, given whether it begins inside one. A quote
    opens a value only at its start (after a delimiter or a line end); inside one, "" is a quote.
    A step per quote, not per character: a line's cost whatever its length."""
    i = line.find('"')
    while i >= 0:
        if inside:
            if line.startswith('"', i + 1):           # an escaped quote
                i = line.find('"', i + 2)
                continue
            inside = False
        elif i == 0 or line[i - 1] in ',;\t\r\n':
            inside = True
        i = line.find('"', i + 1)
    return inside


_EXCEL_SEP = re.compile(r"sep=([^\r\n\"])\r?\n?")


def _delimiter(first_line: str, next_line: str | None, expected: str, name: str, notices: list | None,
               record: str | None = None) -> str:
    """The delimiter of a CSV/TSV file: the one its extension says, unless its header line holds
    none of it but another (a semicolon-separated .csv saved by a European Excel, a tab-separated
    .csv) and the first record's line splits by that one into as many values: then that one, with a
    notice. (Read the other way, every record would be one value; a one-column file whose header
    happens to hold a semicolon stays one column.)"""
    # (delimiters inside a quoted name count for nothing: "answer, in words";id is two columns)
    bare = _QUOTED.sub("", first_line)
    if expected in bare:
        return expected
    counts = {d: bare.count(d) for d in _NAMES if d != expected}
    other = max(counts, key=counts.get)
    if not counts[other]:
        return expected
    if next_line is not None and next_line.strip():
        # (not strict, NUL bytes refused before; the record may span lines, its quoted newlines kept:
        # a newline outside quotes, after a stray quote, fails and keeps the extension's delimiter)
        def width(text):
            try:
                return len(next(csv.reader([text], delimiter=other), []))
            except csv.Error:
                return -1
        header = width(first_line)
        # ``record``: the first record's lines while a quote was left open (a quoted newline)
        if header not in (width(next_line), *(() if record is None else (width(record),))):
            return expected
    if notices is not None:
        notices.append(f"{name}: the header has no {_NAMES[expected]} but {_NAMES[other]}s: read as "
                       f"{_NAMES[other]}-separated")
    return other


def unique_columns(header: list, name: str, notices: list | None) -> list:
    """Column names made unique as pandas does (text, text.1), with a notice: a repeated name
    must never silently drop a column. A blank name (an index column written without one) is
    named as pandas names it, "Unnamed: 0", so that it can be given as a role."""
    blank = [i for i, col in enumerate(header) if isinstance(col, str) and not col.strip()]
    if blank:
        header = list(header)
        for i in blank:
            header[i] = f"Unnamed: {i}"
        if notices is not None:
            notices.append(f"{name}: {len(blank):,} column(s) without a name; read as "
                           + ", ".join(f"'Unnamed: {i}'" for i in blank[:5]) + (" ..." if len(blank) > 5 else ""))
    if len(set(header)) == len(header):
        return header
    taken, out, renamed = set(header), [], []
    seen: set = set()
    next_k: dict = {}                # per name, the suffix to try next: linear in a wide header
    for col in header:
        new = col
        if col in seen:
            k = next_k.get(col, 1)
            while f"{col}.{k}" in taken:
                k += 1
            next_k[col] = k + 1
            new = f"{col}.{k}"
            taken.add(new)
            renamed.append(new)
        seen.add(col)
        out.append(new)
    if notices is not None:
        more = f" and {len(renamed) - 10:,} more" if len(renamed) > 10 else ""
        notices.append(f"{name}: repeated column names; the repeats are read as {', '.join(renamed[:10])}{more}")
    return out


def _read_all(path: Path, budget: Budget) -> bytes:
    stream = open_stream(path, budget, None)
    try:
        parts = []
        while True:
            data = stream.chunk()
            if not data:
                return b"".join(parts)
            parts.append(data)
    except READ_ERRORS as exc:
        raise read_error(exc, path) from None
    finally:
        stream.close()


def parquet_batches(pf, batch_size: int, name: str, notices: list | None = None):
    """The record batches of an open ``pyarrow.parquet.ParquetFile``, with repeated column names
    (which would collapse into one key of each record) and blank ones renamed as for CSV (text,
    text.1; "Unnamed: 0"): the one reading of Parquet columns for both engines."""
    names = pf.schema_arrow.names
    unique = unique_columns(names, name, notices)
    for part in pf.iter_batches(batch_size=batch_size):
        yield part.rename_columns(unique) if unique != names else part


def _arrow_values(array) -> int:
    """The Python objects ``to_pylist`` makes of an Arrow array: one per item, nested ones included
    (a row holding a list of 20,000 small numbers is 20,001)."""
    import pyarrow as pa
    kind = array.type
    if pa.types.is_map(kind):
        # (Arrow has no flatten for maps: their entries, each a (key, value) tuple, are the span
        # of the child struct array between the slice's first and last offsets)
        start, end = array.offsets[0].as_py(), array.offsets[-1].as_py()
        return len(array) + _arrow_values(array.values.slice(start, end - start))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return len(array) + _arrow_values(array.flatten())
    if pa.types.is_struct(kind):
        return len(array) + sum(map(_arrow_values, array.flatten()))
    return len(array)


def _python_rows(part, name: str) -> list:
    """A Parquet batch's rows as dicts. A value Python cannot hold (a date past year 9999, a
    timestamp of 2^62 microseconds) is named with its column: a readable file was refused as
    damaged ("may be truncated"), a hostile review found."""
    try:
        return part.to_pylist()
    except UnicodeError:
        raise                   # invalid UTF-8: the reader's own message (a bad file, not a bad value)
    except (OverflowError, ValueError) as exc:
        column = next((c for c in part.column_names if not _converts(part.column(c))), None)
        where = f"column {column!r:.80}" if column is not None else "a column"
        raise AuditorError("bad_value", f"{name}: {where} holds a value Python cannot read ({type(exc).__name__}: "
                           f"{str(exc)[:120]}): a date or time outside years 1 to 9999?",
                           "Export that column as text, or leave it out of the file.") from None


def _converts(column) -> bool:
    try:
        column.to_pylist()
        return True
    except UnicodeError:
        return True
    except (OverflowError, ValueError):
        return False


def parquet_file_batches(path: Path, budget: Budget, batch: int | None, notices: list | None = None):
    """Rows of a Parquet file, a batch at a time; the row groups' declared size is checked first,
    then every batch's real size is charged as it is read."""
    import pyarrow.parquet as pq
    name = path.name
    try:
        gz = codec_of(path) is not None
        pf = pq.ParquetFile(io.BytesIO(_read_all(path, Budget(budget.max_rows, cap=budget.cap))) if gz else path)
        meta = pf.metadata
        declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        # (a value per row and leaf column at least: 5,000 boolean columns are a few bits a row on disk)
        declared = max(declared, VALUE_BYTES * meta.num_rows * meta.num_columns)
        if batch is None and budget.limited and budget.used + declared + RECORD_BYTES * meta.num_rows > budget.cap:
            raise budget.error(name)
        for part in parquet_batches(pf, 65536 if batch is None else max(1, min(batch + 1, 65536)), name, notices):
            # charged before the batch becomes Python objects (to_pylist), with every nested value
            budget.take(part.nbytes, part.num_rows, name, sum(map(_arrow_values, part.columns)))
            yield _python_rows(part, name)
    except AuditorError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError...: all mean "bad file"
        raise AuditorError("bad_format", f"{name}: not a readable Parquet file ({type(exc).__name__}: "
                           f"{str(exc)[:200]}).", "The file may be truncated or not Parquet at all; "
                           "re-export it.") from None
