"""Settings read from environment variables, validated the same way everywhere.

Each is read when it is used (not at import), so a value set after import applies. A value that
cannot be used is never fatal and never silent: a warning names the variable, the value, what
is accepted and the value used instead (the default, or the nearest bound).
"""
from __future__ import annotations

import math
import os
import re
import warnings

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def _warn(name: str, raw: str, accepted: str, used) -> None:
    warnings.warn(f"{name}={raw!r} is not {accepted}; using {used}.", UserWarning, stacklevel=3)


def env_int(name: str, default: int, lo: int, hi: int) -> int:
    """A whole number in lo..hi; beyond hi -> hi (with a warning); anything else -> default."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdecimal()) or int(raw) < lo:
        _warn(name, raw, f"a whole number from {lo:,} to {hi:,}", f"{default:,}")
        return default
    if int(raw) > hi:
        _warn(name, raw, f"a whole number from {lo:,} to {hi:,}", f"{hi:,}")
        return hi
    return int(raw)


def env_float(name: str, default: float, lo: float, hi: float) -> float:
    """A finite number in (lo, hi]; beyond hi -> hi (with a warning); anything else -> default."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isnan(value) or value <= lo:
        _warn(name, raw, f"a number of seconds above {lo:g} and at most {hi:g}", f"{default:g}")
        return default
    if value > hi:
        _warn(name, raw, f"a number of seconds above {lo:g} and at most {hi:g}", f"{hi:g}")
        return hi
    return value


def env_bytes(name: str, default: int) -> int:
    """A size in bytes: a whole number, or with a unit (512M, 2G, 1GiB; K/M/G/T are powers of 1024)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    match = _SIZE.match(raw)
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()]) if match else 0
    if value < 1:
        _warn(name, raw, "a positive size in bytes (e.g. 1073741824, 512M or 2G)", format_bytes(default))
        return default
    return value


def format_bytes(n: int) -> str:
    for unit, size in (("TiB", 1024 ** 4), ("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"
