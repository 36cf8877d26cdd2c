"""Fixed-size digests of normalised values: what exact-duplicate keys are made of.

A value's key is the 16-byte BLAKE2b digest of its normal form (``normalize.get(normalizer)``,
UTF-8 with lone surrogates kept), held as two uint64 columns of a numpy array: 16 bytes a record
whatever the value's length, where a list of normalised strings held the strings themselves (a
record's canonical JSON, its normalised copy and the normalised texts together cost about six
times the bytes read). A cryptographic digest, so no one can make two different values collide on
purpose; BLAKE2b is in the standard library. Blank values (``normalize.is_blank``) are missing:
an all-zero row, which no value's digest is (a chance of 2**-128).

Values are normalised and hashed in batches, so at most one batch of normal forms is alive at a
time. Where a report shows a value, it reads it from the record, never from a key.
"""
from __future__ import annotations

import hashlib
import itertools

import numpy as np

from . import normalize

DIGEST_BYTES = 16
BATCH = 50_000           # values normalised at a time
_MISSING = bytes(DIGEST_BYTES)


def digest(value: str) -> bytes:
    """The digest of one normal form."""
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def digests(values: list | None, normalizer: str = "default", missing: str | None = None) -> np.ndarray | None:
    """(len(values), 2) uint64: the digest of each value under ``normalizer``; all-zero where the
    value is blank, or the digest of ``missing`` when given (missing values then equal each other)."""
    if values is None:
        return None
    fn = normalize.get(normalizer)        # looked up at call time, as ``normalize.normalized`` does
    blank = normalize.is_blank
    fill = _MISSING if missing is None else digest(missing)
    blake2b = hashlib.blake2b
    out = np.zeros((len(values), 2), dtype=np.uint64)
    # Each value read from an iterator and dropped once digested: a TextColumn decodes its texts a
    # bounded batch at a time, so long texts are never all strings at once.
    stream = iter(values)
    for lo in range(0, len(values), BATCH):
        joined = b"".join([fill if blank(v) else
                           blake2b(fn(v).encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()
                           for v in itertools.islice(stream, BATCH)])
        out[lo:lo + len(joined) // DIGEST_BYTES] = np.frombuffer(joined, dtype=np.uint64).reshape(-1, 2)
    return out


def of_bytes(encoded: list) -> np.ndarray:
    """(len(encoded), 2) uint64 digests of byte strings (already normal forms)."""
    blake2b = hashlib.blake2b
    joined = b"".join([blake2b(b, digest_size=DIGEST_BYTES).digest() for b in encoded])
    return np.frombuffer(joined, dtype=np.uint64).reshape(-1, 2).copy()


def present(keys: np.ndarray) -> np.ndarray:
    """Which rows of a digest array hold a value (not all zero)."""
    return (keys != 0).any(axis=1)
