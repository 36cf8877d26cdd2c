"""One text normalisation for every check, and the named normalisers built on it.

``fold`` is what every check compares: exact keys, near-duplicate shingles, the leak check, clean,
dedup, the contamination n-grams, the semantic pass and the Ray engine all read a text through it:

1. hidden characters removed: format characters (Unicode category Cf: zero-width spaces and
   joiners, soft hyphens, byte-order marks, bidirectional marks and controls) and the other
   default-ignorable code points (variation selectors, the combining grapheme joiner, Hangul
   fillers), which render as nothing;
2. NFKC (compatibility forms: fullwidth letters, ligatures, composed and decomposed accents),
   superscripts and subscripts first written as ``^`` and ``_`` before their character ("10³" is
   "10^3", "H₂O" is "h_2o"), since NFKC alone makes "10³" the number 103 and "x²" the name x2;
3. case folding (``str.casefold``);
4. confusable letters mapped to one skeleton (Unicode TR39; ``confusables`` says what is taken),
   then NFKC and case folding again, to a fixed point.

ASCII text is only lowercased: nothing above changes it otherwise (TR39's ASCII mappings, "m" to
"rn" and "1" to "l", are not taken). ``hidden.visible`` shows a text with its hidden characters made
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

import functools
import itertools
import re
import unicodedata

from .confusables import tables
from .hidden import HIDDEN_CHARS, HIDDEN_RANGES, visible, visible_spans  # noqa: F401  (re-exported)
from .settings import check_normalizer

# What the reports say about it (summary.json's "normalization", REPORT.md).
DESCRIPTION = ("hidden characters removed (Unicode format characters Cf and other default-ignorable code points: "
               "zero-width spaces and joiners, soft hyphens, BOMs, bidirectional marks, variation selectors), "
               "NFKC (superscripts and subscripts kept apart as ^ and _: 10³ is 10^3, not 103), case folding, "
               "confusable letters mapped to one skeleton (Unicode TR39)")

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


@functools.lru_cache(maxsize=1)
def script_marks() -> dict:
    """Each superscript or subscript character (its decomposition tagged <super> or <sub>: ², ₂, ⁿ,
    ᵃ, ...) -> ``^`` or ``_`` and its NFKC form. Read from the Unicode database once (planes 0 and 1,
    where they all are)."""
    marks = {}
    for point in range(0x20000):
        char = chr(point)
        tag = unicodedata.decomposition(char)
        if tag.startswith(("<super>", "<sub>")):
            marks[char] = ("^" if tag.startswith("<super>") else "_") + unicodedata.normalize("NFKC", char)
    return marks


@functools.lru_cache(maxsize=1)
def _mark_chars() -> frozenset:
    return frozenset(script_marks())


def _unicode(text: str, casefold: bool) -> str:
    # Each step works on the text's distinct characters (set operations in C) and replaces the few
    # it changes with str.replace: far quicker than a per-character translation of the whole text.
    for char in HIDDEN_CHARS.intersection(text):
        text = text.replace(char, "")
    marks = script_marks()
    for char in _mark_chars().intersection(text):     # (as HIDDEN_CHARS: no set of the text made)
        text = text.replace(char, marks[char])
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
    return {"exact": exact, "default": default, "code": code}[check_normalizer(name)]


def looks_like_code(values, sample: int = 200) -> bool:
    """True when most non-empty values read as code or SQL (used to pick the answer normaliser)."""
    pattern = re.compile(r"^\s*(def |class |import |from \w+ import|select\b|#include|function\b|return\b)"
                         r"|[;{}]\s*$|\bdef \w+\(|\bSELECT\b.*\bFROM\b", re.I | re.M)
    seen = [v for v in itertools.islice(values, sample * 5) if v][:sample]
    return bool(seen) and sum(1 for v in seen if pattern.search(v)) >= 0.5 * len(seen)


def normalized(values: list | None, normalizer: str) -> list | None:
    if values is None:
        return None
    fn = get(normalizer)
    # Blank values (whitespace and hidden characters only) are missing, not duplicates of each
    # other (they are degenerate), under every normaliser.
    return [None if is_blank(v) else fn(v) for v in values]
