"""Named normalisers: two values are "the same" when their normal forms are equal.

- ``exact``: the value as it is.
- ``default``: Unicode NFC, lowercase, whitespace collapsed.
- ``code``: comments stripped (Python ``#``, C-like ``//`` and ``/* */``, SQL ``--``),
  string literals kept, then whitespace collapsed. Case is kept in code, where it
  matters; SQL is lowercased outside string literals, since its keywords and
  identifiers are case-insensitive.
"""
from __future__ import annotations

import re
import unicodedata

from .settings import check_normalizer

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


def exact(value: str) -> str:
    return value


def default(value: str) -> str:
    if not unicodedata.is_normalized("NFC", value):   # the check is much cheaper than normalising
        value = unicodedata.normalize("NFC", value)
    return " ".join(value.lower().split())


def code(value: str) -> str:
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
    seen = [v for v in values[:sample * 5] if v][:sample]
    return bool(seen) and sum(1 for v in seen if pattern.search(v)) >= 0.5 * len(seen)


def normalized(values: list | None, normalizer: str) -> list | None:
    if values is None:
        return None
    fn = get(normalizer)
    # Blank values are missing, not duplicates of each other (they are degenerate).
    return [fn(v) if v is not None and v.strip() else None for v in values]
