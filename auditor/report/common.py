"""What every report shares: the JSON contract's version, the lexical caveat, JSON-ready values,
escaping of dataset content for Markdown, number words, and writing a report folder."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np

from ..hidden import visible
from ..io.outputs import atomic_write, write_error

SCHEMA_VERSION = 1
PARAPHRASE_CAVEAT = ("Overlap here is lexical (shared words and n-grams). Paraphrases, translations and "
                     "reformatted items are not detected.")


NO_WORDS = ("no words to check", "missing, null, blank or only punctuation",
            "so the n-gram scan had nothing to check there")
NO_TEXT = ("no text", "missing, null or blank", "so text and near-duplicate matching skipped them")


def unusable_note(count: int, records: int, owner: str, kind: tuple) -> str:
    """The line a report adds when ``count`` of ``owner``'s records give a check nothing to use
    (``kind``: NO_WORDS for contamination, NO_TEXT for leaks): '**3 of A's 600 records have no
    text** (missing, null or blank), so ...'."""
    lacks, meaning, consequence = kind
    return (f"**{count:,} of {owner} {records:,} records {'has' if count == 1 else 'have'} {lacks}** "
            f"({meaning}), {consequence}.")


def plain(value):
    """Dataclasses, numpy scalars and arrays, tuples -> JSON-ready Python values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return round(float(value), 6)
    return value


def printable(text: str) -> str:
    """Text that can be written as UTF-8: a lone surrogate (valid in JSON input) becomes
    its escape, which is also how JSON writes it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def to_json(summary: dict) -> str:
    return printable(json.dumps(plain(summary), indent=2, ensure_ascii=False) + "\n")


def write_outputs(out_dir: str | Path, summary_dict: dict, markdown_text: str, extra: dict | None = None) -> list:
    """REPORT.md, any extra files (name -> text, or its UTF-8 bytes), then summary.json into
    ``out_dir``; each written atomically, summary.json last, so a folder holding a summary.json is
    complete."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(str(out_dir), exc) from None
    files = {"REPORT.md": printable(markdown_text),
             **{name: text if isinstance(text, bytes) else printable(text) for name, text in (extra or {}).items()},
             "summary.json": to_json(summary_dict)}
    written = []
    for name, text in files.items():
        with atomic_write(out / name, "wb" if isinstance(text, bytes) else "w") as fh:
            fh.write(text)
        written.append(out / name)
    return written


def md_cell(value) -> str:
    """Dataset content inside a Markdown table: escaped so it renders as text, never markup, its
    hidden characters (zero-width, bidirectional) shown as ⟨U+200B⟩ (``hidden.visible``)."""
    text = visible("" if value is None else str(value))
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")
    # Emphasis, code, links, HTML and headings; strikethrough (~), math ($, on GitHub), entities (&:
    # "&lt;" showed as "<"), and the starts of bare links (www., ://, @), which GFM makes live.
    for ch in "`*_[]<>#!~$&@":
        text = text.replace(ch, "\\" + ch)
    text = _BARE_LINK.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], text)
    return text[:200] + ("…" if len(text) > 200 else "")


_BARE_LINK = re.compile(r"(?i)www\.|:/")       # "www\." and ":\//" are text to a GFM renderer


def md_code(value) -> str:
    """A field or file name from the data as a Markdown code span, shown as written. A code span
    takes no backslash escapes (``md_cell``'s showed as backslashes: `task\\_id`), and a backtick
    in the name ended the span early, spilling the rest of the sentence into other spans; so the
    fence is one backtick longer than the longest run inside, padded when the name starts or ends
    with a backtick or a space (CommonMark strips one space each side)."""
    text = visible("" if value is None else str(value)).replace("\n", " ").replace("\r", " ")
    text = text[:200] + ("…" if len(text) > 200 else "")
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_note(value, limit: int = 2000) -> str:
    """A notice for Markdown, escaped as ``md_cell`` escapes it but not cut at a cell's 200
    characters (a reader's notice ends with what to do: "Check that the job completed."); a
    notice naming data (file names) is cut at ``limit`` characters."""
    text = "" if value is None else str(value)
    head = text[:limit]
    # md_cell a piece at a time: escaping at most doubles 100 characters, within its cut
    return "".join(md_cell(head[i:i + 100]) for i in range(0, len(head), 100)) + ("…" if len(text) > limit else "")


def side_name(info: dict) -> str:
    """A dataset as a report names it: its source, then the config and split when it has them
    ("openai/gsm8k (main, test)"), so two configs of one dataset read as two sides."""
    parts = [str(info[k]) for k in ("config", "split") if info.get(k)]
    return md_cell(info["source"] + (f" ({', '.join(parts)})" if parts else ""))


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "–"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
