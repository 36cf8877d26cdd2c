"""Confusable letters (Unicode TR39, ``data/unicode/confusables.txt``, vendored with its licence)
as translation tables for ``normalize.fold``: a letter that looks like another maps to that one's
prototype, so Cyrillic "а" and Latin "a" are one letter to every check.

What is taken from the file, and why:

- letters and marks only (general categories L* and M*), mapped to letters and marks only: the
  file also maps punctuation and symbols ("丿" to "/", an em dash to a katakana letter, "×" to
  "x"), which would move characters between what the tokenisers keep and what they drop;
- never an ASCII character: TR39 maps "m" to "rn", "1" and "I" to "l", "0" to "O", which would
  merge ordinary words ("burn" and "bum") and numbers; ASCII text is kept as it is (then case-folded);
- never a decimal digit (an Arabic-Indic five is not the letter it resembles).

``cased`` is the table for text whose case is kept (the ``code`` normaliser). ``folded`` is for
case-folded text: keyed by each source's case fold, so it applies after ``str.casefold``
(case-insensitive matching stays exact: "ΗΛΙΟΣ" and "ηλιος" fold alike). A small letter whose
own prototype is not a plain ASCII letter takes its capital's when that one is (Cyrillic "т"
looks like small-capital T, its capital "Т" like Latin "T": folded text cannot tell them apart,
and the capital is the one that passes for Latin).
"""
from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "unicode" / "confusables.txt"
UNICODE_VERSION = "13.0.0"       # of the vendored file (its header)


@dataclass(frozen=True)
class Tables:
    cased: dict                 # character -> prototype, for text whose case is kept
    folded: dict                # character -> prototype, for case-folded text


def _letters(text: str) -> bool:
    return bool(text) and all(unicodedata.category(c)[0] in "LM" for c in text)


def _entries() -> list:
    """(source, prototype) of every line of the data file."""
    out = []
    with open(DATA, encoding="utf-8-sig") as fh:
        for line in fh:
            data = line.split("#", 1)[0].strip()
            if not data:
                continue
            source, target = data.split(";")[:2]
            out.append((chr(int(source, 16)), "".join(chr(int(c, 16)) for c in target.split())))
    return out


@functools.cache
def tables() -> Tables:
    cased: dict[str, str] = {}
    for source, target in _entries():
        target = unicodedata.normalize("NFKC", target)
        if (source.isascii() or unicodedata.category(source) in ("Nd",) or not _letters(source)
                or not _letters(target)):
            continue
        cased[source] = target
    # The case-folded table: each source under its case fold, its prototype case-folded.
    own: dict[str, str] = {}
    from_capital: dict[str, list] = {}
    for source, target in cased.items():
        folded_source = source.casefold()
        if len(folded_source) != 1 or folded_source.isascii():
            continue
        folded_target = unicodedata.normalize("NFKC", target.casefold())
        if folded_source == source:
            own[folded_source] = folded_target
        else:
            from_capital.setdefault(folded_source, []).append(folded_target)

    def plain_letter(text: str) -> bool:
        return len(text) == 1 and text.isascii() and text.isalpha()

    folded: dict[str, str] = {}
    for letter in sorted(set(own) | set(from_capital)):
        choices = ([own[letter]] if letter in own else []) + sorted(from_capital.get(letter, ()))
        best = next((c for c in choices if plain_letter(c)), choices[0])
        if best != letter:
            folded[letter] = best
    return Tables(cased=cased, folded=folded)
