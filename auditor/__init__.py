"""Dataset Integrity Auditor: is a benchmark redundant, and does training data overlap
the data it is evaluated on?

    import auditor
    result = auditor.scan("example:gsm8k", split="train")
    result.summary()["curve"]
    result.near_duplicates(0.5)     # re-threshold from the cached pairs

The engine is a pipeline of small steps, each a module with one job, imported one way, down the
layers (docs/architecture.md): io (sources) -> roles -> schema / exact -> shingles -> near ->
clusters -> report; the commands compose them, ``engines`` chooses where they run, and this
facade, the CLI and the app are the front ends.

Every ``import auditor.x`` runs this file first, so it stays light: the engine (numpy, scipy,
pyarrow) is imported when ``scan``, ``leak`` or a result type is first asked for. (The one place
an auditor module is imported inside a function on purpose; tests/structure checks the rest.)
"""
from importlib import import_module

from .errors import AuditorError
from .io.sources import load
from .io.table import Table
from .settings import EngineSettings, ScanSettings, ShingleSpec
from .version import __version__

_ENGINE_NAMES = {"scan": "engines", "leak": "engines", "ScanResult": "audit"}


def __getattr__(name):
    if name in _ENGINE_NAMES:
        return getattr(import_module(f".{_ENGINE_NAMES[name]}", __name__), name)
    raise AttributeError(f"module 'auditor' has no attribute {name!r}")


# (``auditor.engines`` has clean and contamination on either engine too; the names here would hide
# the modules ``auditor.clean`` and ``auditor.contamination``.)
__all__ = ["AuditorError", "EngineSettings", "ScanResult", "ScanSettings", "ShingleSpec", "Table", "__version__",
           "leak", "load", "scan"]
