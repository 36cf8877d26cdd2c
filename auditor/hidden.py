"""Hidden characters: the code points that render as nothing (Unicode category Cf, such as
zero-width spaces and joiners, soft hyphens, byte-order marks and bidirectional marks, and the
other default-ignorable code points), and texts shown with them made visible.

``normalize.fold`` removes them before every check; evidence, REPORT.md and the app show a text
with each one written as its code point (``visible``), so a match that reads as identical shows
what told the two texts apart. Core, below ``report/``, because Markdown cells show texts this way.
"""
from __future__ import annotations

import re

# Unicode category Cf (as of Unicode 15.1) and the other Default_Ignorable_Code_Point ranges
# (DerivedCoreProperties.txt), unassigned ones included: they render as nothing.
# tests/normalize checks that this holds every Cf character of the running Python.
HIDDEN_RANGES = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
                 (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5),
                 (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                 (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD),
                 (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
                 (0xE0000, 0xE0FFF))
HIDDEN_CHARS = frozenset(chr(c) for lo, hi in HIDDEN_RANGES for c in range(lo, hi + 1))
# Control characters but tab and line ends (C0, DEL, C1): a terminal acts on them (ESC[2J clears
# the screen), and REPORT.md goes to one by default.
CONTROL_RANGES = ((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F))
# Shown as visible code points by ``visible``: the hidden characters, control characters, and lone
# surrogates (valid in JSON input; no page or file can hold one).
_SHOWN = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in HIDDEN_RANGES + CONTROL_RANGES)
                    + "\\ud800-\\udfff]")


def visible(text: str) -> str:
    """``text`` with each hidden character, control character (but tab and line ends) and lone
    surrogate shown as its code point, ⟨U+200B⟩: how evidence shows a text, so a match that reads as
    identical shows what told the two apart, and no terminal acts on an escape sequence it holds."""
    if not _SHOWN.search(text):
        return text
    return _SHOWN.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)


def visible_spans(text: str, spans: list) -> tuple[str, list]:
    """(``visible(text)``, ``spans`` ([start, end) offsets into ``text``) moved to index it)."""
    shown = visible(text)
    if shown is text or not spans:
        return shown, [list(s) for s in spans]
    starts = [m.start() for m in _SHOWN.finditer(text)]
    widths = [len(f"⟨U+{ord(text[i]):04X}⟩") - 1 for i in starts]

    def moved(offset: int) -> int:
        return offset + sum(w for i, w in zip(starts, widths) if i < offset)
    return shown, [[moved(a), moved(b)] for a, b in spans]
