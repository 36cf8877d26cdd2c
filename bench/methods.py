"""The registry of benchmarked methods: what each runs on one dataset, in report order.

Each entry is (name, measure); ``measure(ctx)`` returns {run key: measurement} (a key is
``NAME@THRESHOLD`` or the name), measured through ``ctx.runner`` in a worker process. ``--methods``
selects entries by name, or one threshold of a method as NAME@0.7 / NAME@0.3 (``ctx.want``).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass
class Context:
    ds: dict              # the dataset: name, records, source, field, real
    base: dict            # the task fields every worker gets: data file, planted pairs
    runner: object        # run.Runner
    args: object          # run.py's parsed options
    runs: dict            # the measurements so far (a later method may reuse an earlier one)
    wanted: set | None    # --methods, or None for all

    @property
    def n(self) -> int:
        return self.ds["records"]

    def want(self, method: str, threshold=None) -> bool:
        return self.wanted is None or method in self.wanted or f"{method}@{threshold}" in self.wanted


def ours_exact(c: Context) -> dict:
    if not c.want("ours-exact"):
        return {}
    return {"ours-exact@0.3": c.runner.run("ours", "ours-exact@0.3", threshold=0.3, engine_method="exact", **c.base)
            if c.n <= c.args.exact_max else {"status": f"skipped (> --exact-max {c.args.exact_max:,})"}}


def pure_python(c: Context) -> dict:
    if not c.want("pure-python"):
        return {}
    return {"pure-python@0.3": c.runner.run("pure", "pure-python@0.3", threshold=0.3, subset=c.args.pure_subset,
                                            **c.base)}


def ours_auto(c: Context) -> dict:
    return {f"ours-auto@{t}": c.runner.run("ours", f"ours-auto@{t}", threshold=t, engine_method="auto", **c.base)
            for t in (0.7, 0.3) if c.want("ours-auto", t)}


def ours_lsh(c: Context) -> dict:
    if not c.want("ours-lsh"):
        return {}
    auto = c.runs.get("ours-auto@0.3", {})
    if auto.get("engine") == "minhash-lsh":
        return {"ours-lsh@0.3": dict(auto, reused=True)}     # auto already chose LSH: same work
    return {"ours-lsh@0.3": c.runner.run("ours", "ours-lsh@0.3", threshold=0.3, engine_method="lsh", **c.base)}


def foreign(lib: str):
    def measure(c: Context) -> dict:
        return {f"{lib}@{t}": (c.runner.run("foreign", f"{lib}@{t}", threshold=t, lib=lib, **c.base)
                               if c.n <= c.args.foreign_max else
                               {"status": f"skipped (> --foreign-max {c.args.foreign_max:,})"})
                for t in (0.7, 0.3) if c.want(lib, t)}
    return measure


def ours_scan(c: Context) -> dict:
    if not c.want("ours-scan") or not (c.ds["real"] or c.n <= c.args.scan_max):
        return {}
    return {"ours-scan": c.runner.run("scan", "ours-scan (auditor.scan)", source=str(c.ds["source"]),
                                      field=c.ds["field"], threshold=0.3, data=c.base["data"])}


def auditor_cli(c: Context) -> dict:
    if not c.want("auditor-cli") or not c.ds["real"]:
        return {}
    from run import run_cli
    print("  auditor-cli ...", end="", file=sys.stderr, flush=True)
    result = run_cli(c.ds["source"], c.ds["field"], c.args.cli_repeats, c.args.timeout)
    print(f" {result.get('wall', 0):.2f} s", file=sys.stderr)
    return {"auditor-cli": result}


def signatures(c: Context) -> dict:
    if not c.want("signatures"):
        return {}
    return {"signatures": c.runner.run("sigs", "signatures/s", records=c.args.sig_records,
                                       datasketch_records=min(c.args.sig_records, 20000),
                                       repeats=1 if c.args.quick else 2, **c.base)}


METHODS = (("ours-exact", ours_exact), ("pure-python", pure_python), ("ours-auto", ours_auto),
           ("ours-lsh", ours_lsh), ("datasketch", foreign("datasketch")), ("rensa", foreign("rensa")),
           ("ours-scan", ours_scan), ("auditor-cli", auditor_cli), ("signatures", signatures))


def switch_runs(c: Context) -> dict:
    """The exact-vs-LSH series (--switch-sizes): both searches of our engine at 0.3."""
    return {f"ours-{meth}@0.3": c.runner.run("ours", f"ours-{meth}", threshold=0.3, engine_method=meth, **c.base)
            for meth in ("exact", "lsh")}
