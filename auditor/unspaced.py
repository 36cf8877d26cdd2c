"""Scripts written without spaces between words: which characters are words of their own.

Han ideographs (with the iteration and closing marks and the extension planes), kana (with its
supplements), Thai, Lao, Khmer and Myanmar. Each such character is a word, as BERT's basic
tokenizer splits Han: split on whitespace alone, a Chinese, Japanese or Thai text was one word, so
a sentence with one character changed shared no shingle or n-gram with the original. Hangul is
written with spaces and stays as it is.

One definition for every check: the near-duplicate shingles (``shingles``) and the contamination
n-grams (``wordtokens``, whose compiled scan builds its table from ``RANGES``) both split here.
"""
from __future__ import annotations

import re

import numpy as np

# (first, last) code points, inclusive.
RANGES = ((0x0E01, 0x0E5B), (0x0E81, 0x0EDF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF),
          (0x3005, 0x3007), (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
          (0xA9E0, 0xA9FE), (0xAA60, 0xAA7F), (0xF900, 0xFAFF), (0x1AFF0, 0x1B16F), (0x20000, 0x3134F))
UNSPACED = re.compile("([" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in RANGES) + "])")


def spaced(folded: str) -> str:
    """``folded`` with a space on each side of every character of ``UNSPACED``: its words are its
    whitespace-separated parts."""
    return UNSPACED.sub(r" \1 ", folded) if UNSPACED.search(folded) else folded


def words(folded: str) -> list:
    """The words of a folded text (``normalize.fold``): split on whitespace, and each character of
    a script written without spaces (``UNSPACED``) a word of its own."""
    return spaced(folded).split()


def mask(lo: int, hi: int) -> np.ndarray:
    """Per code point lo..hi-1, whether it is a character of ``UNSPACED``."""
    out = np.zeros(hi - lo, dtype=bool)
    for first, last in RANGES:
        out[max(first, lo) - lo:max(min(last + 1, hi) - lo, 0)] = True
    return out
