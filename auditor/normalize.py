"""One text normalisation for every check, and the named normalisers built on it.

``fold`` is what every check compares: exact keys, near-duplicate shingles, the leak check, clean,
dedup, the contamination n-grams, the semantic pass and the Ray engine all read a text through it:

1. hidden characters removed: format characters (Unicode category Cf: zero-width spaces and
   joiners, soft hyphens, byte-order marks, bidirectional marks and controls) and the other
   default-ignorable code points (variation selectors, the combining grapheme joiner, Hangul
   fillers), which render as nothing;
2. NFKC (compatibility forms: fullwidth letters, ligatures, composed and decomposed accents);
3. case folding (``str.casefold``);
4. confusable letters mapped to one skeleton (Unicode TR39; ``confusables`` says what is taken),
   then NFKC and case folding again, to a fixed point.

ASCII text is only lowercased: nothing above changes it otherwise (TR39's ASCII mappings, "m" to
"rn" and "1" to "l", are not taken). ``visible`` shows a text with its hidden characters made
visible (as ⟨U+200B⟩), as evidence shows it.

Named normalisers: two values are "the same" when their normal forms are equal.

- ``exact``: the value as it is.
- ``default``: ``fold``, whitespace collapsed.
- ``code``: hidden characters removed, NFKC and confusable letters mapped (case kept), comments
  stripped (Python ``#``, C-like ``//`` and ``/* */``, SQL ``--``), string literals kept, then
  whitespace collapsed. Case is kept in code, where it matters; SQL is lowercased outside string
  literals, since its keywords and identifiers are case-insensitive.
"""
from __future__ import annotations

import re
import unicodedata

NORMALIZERS = ("exact", "default", "code")
# What the reports say about it (summary.json's "normalization", REPORT.md).
DESCRIPTION = ("hidden characters removed (Unicode format characters Cf and other default-ignorable code points: "
               "zero-width spaces and joiners, soft hyphens, BOMs, bidirectional marks, variation selectors), "
               "NFKC, case folding, confusable letters mapped to one skeleton (Unicode TR39)")

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
# Shown as visible code points by ``visible``: the hidden characters, and lone surrogates (valid in
# JSON input; no page or file can hold one).
_SHOWN = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in HIDDEN_RANGES) + "\\ud800-\\udfff]")
FIXED_POINT_ROUNDS = 4         # mapping, NFKC and case folding repeated at most this often

_WS = re.compile(r"\s+")
# One pass over the text: string literals are matched (and kept) before comment
# markers, so '#' or '--' inside a string is not taken for a comment.
_CODE_TOKENS = re.compile(
    r'''(?P<str>"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')'''
    r"|(?P<block>/\*[\s\S]*?\*/)"
    r"|(?P<line>//[^\n]*|#[^\n]*|--[^\n]*)"
)
_SQL_START = re.compile(r"^\s*(select|with|insert|update|delete|create|drop|alter)\b", re.I)
# A C preprocessor line is code, not a comment: "#include <x>", "#define N 3" (no space after
# the '#', which tells it from a Python comment such as "# if x is negative").
_C_DIRECTIVE = re.compile(r"#(include|define|undef|if|ifdef|ifndef|endif|pragma|else|elif|error)\b")


def fold(text: str) -> str:
    """``text`` as every check compares it (see the module's docstring): hidden characters removed,
    NFKC, case-folded, confusable letters mapped to their skeleton. Whitespace is kept as it is, so
    tokenisers split the folded text where they split the original."""
    if text.isascii():
        return text.lower()
    return _unicode(text, casefold=True)


def _unicode(text: str, casefold: bool) -> str:
    # Each step works on the text's distinct characters (set operations in C) and replaces the few
    # it changes with str.replace: far quicker than a per-character translation of the whole text.
    from .confusables import tables
    for char in HIDDEN_CHARS.intersection(text):
        text = text.replace(char, "")
    if not unicodedata.is_normalized("NFKC", text):   # the check is much cheaper than normalising
        text = unicodedata.normalize("NFKC", text)
    if casefold:
        text = text.casefold()       # which can leave the text unnormalised: ß + acute -> s s + acute
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
    table = tables().folded if casefold else tables().cased
    for _ in range(FIXED_POINT_ROUNDS):
        found = table.keys() & set(text)
        if not found:
            break
        for char in found:
            text = text.replace(char, table[char])
        if casefold:
            text = text.casefold()
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
    return text


def unhidden(text: str) -> str:
    """``text`` without its hidden characters (the first step of ``fold``)."""
    if not text.isascii():
        for char in HIDDEN_CHARS.intersection(text):
            text = text.replace(char, "")
    return text


def is_blank(text: str | None) -> bool:
    """True for None and for a text of nothing but whitespace and hidden characters: no content
    (degenerate), under every normaliser."""
    return text is None or not (text.strip() if text.isascii() else unhidden(text).strip())


def visible(text: str) -> str:
    """``text`` with each hidden character (and lone surrogate) shown as its code point, ⟨U+200B⟩:
    how evidence shows a text, so a match that reads as identical shows what told the two apart."""
    if text.isascii() or not _SHOWN.search(text):
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


def exact(value: str) -> str:
    return value


def default(value: str) -> str:
    return " ".join(fold(value).split())


def code(value: str) -> str:
    if not value.isascii():
        value = _unicode(value, casefold=False)
    is_sql = bool(_SQL_START.match(value))

    def strip(match: re.Match) -> str:
        if match.group("str") is not None:
            return match.group("str")
        token = match.group(0)
        if token.startswith("--") and not is_sql:
            return token          # `x--` in C, not a comment
        if token.startswith("#") and (is_sql or _C_DIRECTIVE.match(token)):
            return token
        return " "

    if is_sql:
        value = _lower_outside_strings(value)
    return _WS.sub(" ", _CODE_TOKENS.sub(strip, value)).strip()


_STRINGS = re.compile(r'"(?:\\.|[^"\\\n])*"' + r"|'(?:\\.|[^'\\\n])*'")


def _lower_outside_strings(value: str) -> str:
    parts, last = [], 0
    for m in _STRINGS.finditer(value):
        parts.append(value[last:m.start()].lower())
        parts.append(m.group(0))
        last = m.end()
    parts.append(value[last:].lower())
    return "".join(parts)


def get(name: str):
    """The normaliser function called ``name``."""
    try:
        return {"exact": exact, "default": default, "code": code}[name]
    except KeyError:
        from .errors import AuditorError
        raise AuditorError("usage", f"Unknown normaliser {name!r}.",
                           f"Choose one of: {', '.join(NORMALIZERS)}.") from None


def looks_like_code(values, sample: int = 200) -> bool:
    """True when most non-empty values read as code or SQL (used to pick the answer normaliser)."""
    pattern = re.compile(r"^\s*(def |class |import |from \w+ import|select\b|#include|function\b|return\b)"
                         r"|[;{}]\s*$|\bdef \w+\(|\bSELECT\b.*\bFROM\b", re.I | re.M)
    seen = [v for v in values[:sample * 5] if v][:sample]
    return bool(seen) and sum(1 for v in seen if pattern.search(v)) >= 0.5 * len(seen)
