"""One text field of a local JSONL file, streamed as Arrow string arrays (the contamination scan's reader).

Reading a corpus one ``json.loads`` per line costs more than tokenising it. Here each block of
whole lines (8 MiB, cut at the last newline; the bytes come through ``sources``' checked stream:
NUL bytes, UTF-16 marks, gzip magic and over-long lines are refused as for any load) is parsed by
Arrow's JSON reader with a schema holding only the text field, as a string. The block's rows are
taken from Arrow only when Arrow read it without error and found exactly one record per non-blank
line; otherwise (a field that is a number in one row, a lone surrogate, two objects on a line, bad
UTF-8, ...) the block goes through the local row reader (``io.formats.jsonl_rows`` and
``roles.as_text``), which gives the same texts or the same error, naming the line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from .io.budget import READ_ERRORS, Budget, open_stream, read_error
from .io.formats import decode_utf8, jsonl_rows
from .roles import joined_text, text_fields

BLOCK = 8 << 20
_JSON_BLANK = np.zeros(256, dtype=bool)
_JSON_BLANK[[ord(" "), ord("\t"), ord("\r"), ord("\n")]] = True


def jsonl_texts(path: Path, field: str, first_row: int = 0):
    """The ``field`` of every record of a local JSONL file (plain or compressed), in order: an iterator of
    Arrow string arrays (nulls: missing or null) or, for a block read row by row, lists of str/None.
    ``first_row``: the corpus row number of the file's first record (for error messages)."""
    budget = Budget(limited=False)
    stream = open_stream(path, budget, b"\n")
    try:
        yield from text_blocks(stream, path.name, field, first_row)
    except READ_ERRORS as exc:
        raise read_error(exc, path) from None
    finally:
        stream.close()


def text_blocks(stream, name: str, field: str, first_row: int = 0):
    """``jsonl_texts`` over any checked byte stream (``io.budget.CountedStream``); ``name`` is the file as
    error messages show it. ``field`` may name several fields, joined by commas: each record's text
    is then theirs joined as ``roles.joined_text`` joins them. (The Ray engine reads its shards with this.)"""
    budget = Budget(limited=False)
    fields = text_fields(field)
    parse = pajson.ParseOptions(explicit_schema=pa.schema([(f, pa.string()) for f in fields]),
                                unexpected_field_behavior="ignore")
    # One buffer for the whole stream, reused: each read lands after the line the last block left
    # unfinished (``kept`` bytes at the front). A new 8 MiB bytes object per read, and another to
    # join it to that line, cost more in fresh pages than the read itself. Arrow copies the texts
    # out, so the buffer is free once a block is parsed (tests/test_wordtokens.py keeps them all).
    buf = bytearray()       # sized by the first read: bytearray(n) is zeroed (16 MiB: 3 ms, per small file)
    kept = start = lines_before = offset = 0
    while True:
        if len(buf) - kept >= BLOCK:
            got = stream.chunk_into(buf, kept, BLOCK)
        else:
            # The first read (a file smaller than a block keeps just its bytes), or a long
            # unfinished line: twice a block, then grown geometrically, not per read.
            data = stream.chunk(BLOCK)
            got = len(data)
            if got:
                grown = bytearray(got if not buf and got < BLOCK else max(2 * len(buf), kept + BLOCK, 2 * BLOCK))
                grown[:kept] = memoryview(buf)[:kept]
                grown[kept:kept + got] = data
                buf = grown
        end = kept + got
        if not offset and not start and buf.startswith(b"\xef\xbb\xbf", 0, end):
            start = offset = 3              # a UTF-8 byte-order mark (even cut by reads), as sources drops it
        if got:
            cut = buf.rfind(b"\n", start, end)
            if cut < 0:
                if end - start > budget.line_cap:
                    raise budget.long_line(name, lines_before + 1)
                kept = end
                continue
            block_end = cut + 1
            if end - block_end > budget.line_cap:
                raise budget.long_line(name, lines_before + buf.count(b"\n", start, block_end) + 1)
        else:
            block_end = end                 # the last line, with no newline after it
        if block_end > start:
            b = np.frombuffer(buf, dtype=np.uint8, count=block_end - start, offset=start)
            ends = np.flatnonzero(b == 10)
            if budget.line_cap < b.size and ends.size:
                # A read longer than the cap can hold a whole over-long line, which the checks of
                # the unfinished line above never see: refused wherever it falls, as the row reader does.
                over = np.flatnonzero(np.diff(ends, prepend=-1) > budget.line_cap + 1)
                if over.size:
                    raise budget.long_line(name, lines_before + int(over[0]) + 1)
            texts = _arrow_texts(b, ends, parse)
            if texts is None:       # the exact row reader on this block
                text = decode_utf8(bytes(b), name, offset, lines_before)
                texts = _row_texts(jsonl_rows(text.split("\n"), name, lines_before + 1), fields, first_row)
            del b
            first_row += len(texts)
            yield texts
            lines_before += ends.size
            offset += block_end - start
        if not got:
            break
        kept, start = end - block_end, 0
        buf[:kept] = buf[block_end:end]     # the unfinished line to the front


def _arrow_texts(b: np.ndarray, ends: np.ndarray, parse) -> pa.Array | None:
    """The field of every line of a block (its bytes ``b``, the positions of its newlines ``ends``)
    by Arrow, or None when Arrow cannot vouch for it."""
    if b[-1] != 10:
        ends = np.append(ends, b.size)
    starts = np.concatenate(([0], ends[:-1] + 1))
    # A line is a record unless it is all JSON whitespace; nearly every line starts with "{", so
    # only lines that start with whitespace (or are empty) are looked at whole.
    first = b[np.minimum(starts, b.size - 1)]
    maybe_blank = (starts == ends) | _JSON_BLANK[first]
    blank = sum(1 for lo, hi in zip(starts[maybe_blank].tolist(), ends[maybe_blank].tolist())
                if _JSON_BLANK[b[lo:hi]].all())
    records = int(ends.size - blank)
    if records == 0:
        return pa.array([], pa.string())
    if not _one_object_per_line(b, starts, ends):
        return None
    try:
        table = pajson.read_json(pa.BufferReader(pa.py_buffer(b)), parse_options=parse,
                                 read_options=pajson.ReadOptions(use_threads=False, block_size=b.size + 1))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
        # Not an error path: Arrow is the fast reader, the row reader the definition. A block Arrow
        # refuses (a number where text was, two objects on a line, bad UTF-8) is read row by row,
        # which returns the same texts or raises the row's own clear error (tests/test_wordtokens.py).
        return None
    if table.num_rows != records:
        return None
    columns = [c.combine_chunks() if c.num_chunks != 1 else c.chunk(0) for c in table.columns]
    try:
        for column in columns:
            column.validate(full=True)      # Arrow's JSON reader passes bad UTF-8 inside strings through
    except pa.ArrowInvalid:
        return None
    return columns[0] if len(columns) == 1 else joined_column(columns)


def _one_object_per_line(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether every line that is not blank starts with "{" and ends with "}" (JSON whitespace
    aside). Arrow reads objects across line ends and two on one line, so its row count can equal
    the lines' while its rows are not the lines' ('{..}{..}' on one line and an object cut over
    two further on): the row numbers, and the lines --decontaminate drops, would then be wrong.
    With both ends braces, no object can span lines, so as many rows as lines is one per line."""
    first, last = b[np.minimum(starts, b.size - 1)], b[np.maximum(ends - 1, 0)]
    last = np.where((last == 13) & (ends - 2 >= starts), b[np.maximum(ends - 2, 0)], last)     # CRLF
    odd = (starts < ends) & ((first != ord("{")) | (last != ord("}")))
    for lo, hi in zip(starts[odd].tolist(), ends[odd].tolist()):    # leading or trailing whitespace (CRLF)
        line = bytes(b[lo:hi]).strip(b" \t\r\n")
        if line and not (line.startswith(b"{") and line.endswith(b"}")):
            return False
    return True


def joined_column(columns: list) -> pa.Array:
    """Several text fields as one text per row, as ``roles.joined_text`` joins them: the non-null
    ones joined by a newline, null when all are null."""
    # Pairwise, not null_handling="skip": pyarrow 26 drops the rows where every input is null.
    joined = columns[0]
    for column in columns[1:]:
        joined = pc.coalesce(pc.binary_join_element_wise(joined, column, "\n"), joined, column)
    return joined


def _row_texts(rows, fields: list[str], first_row: int) -> list:
    return [joined_text(r, fields, i) for i, r in enumerate(rows, first_row)]
