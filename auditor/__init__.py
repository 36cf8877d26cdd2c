"""Dataset Integrity Auditor: is a benchmark redundant, and does training data overlap
the data it is evaluated on?

    import auditor
    result = auditor.scan("example:gsm8k", split="train")
    result.summary()["curve"]
    result.near_duplicates(0.5)     # re-threshold from the cached pairs

The engine is a pipeline of small steps (see README): sources -> roles -> schema/exact
-> shingles -> near -> clusters -> report; cross-dataset steps reuse them.
"""
__version__ = "0.1.0"

from .errors import AuditorError  # noqa: E402
from .sources import Table, load  # noqa: E402


def __getattr__(name):
    # Heavier steps import numpy/scipy: load them on first use, so `import auditor` stays fast.
    if name in ("scan", "ScanSettings", "ScanResult"):
        from . import audit as _scan
        return getattr(_scan, name)
    if name == "ShingleSpec":
        from .shingles import ShingleSpec
        return ShingleSpec
    raise AttributeError(name)


__all__ = ["AuditorError", "Table", "load", "scan", "ScanSettings", "ScanResult", "ShingleSpec", "__version__"]
