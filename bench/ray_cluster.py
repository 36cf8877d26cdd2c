#!/usr/bin/env python
"""Near duplicates on a Ray cluster of several nodes on this machine (issue 33, items 3 and 4): where
``scan --engine ray`` spends memory and serial time, per process, and how that grows with the corpus.

For each case a cluster is started (tests/ray_cluster_nodes.py: a head that runs no task and
``--nodes`` worker nodes of ``--cpus`` CPUs, each its own raylet and object store), and the scan
runs in a driver process of its own (this script with ``--driver``): the library's
``engines.scan`` with the Ray engine, timing each stage of the scan and, inside the near-duplicate
stage, the driver's planning (``pieces.plan``), folding each piece's sample as it arrives
(``pieces.Pieces.keep``) and merging (``pieces.merge``); the rest of that stage is waiting for
the tasks, and joining and leaving the cluster. Read from /proc every 0.2 s: each worker process's
peak resident memory (VmHWM) and CPU seconds, by node; the driver's peak is its own ``ru_maxrss``.
The same scan in one local process gives the one-process peak, and its summary must equal the Ray
one's (but for the engine block).

    python bench/ray_cluster.py                                   # realistic-250000, -500000
    python bench/ray_cluster.py --cases edited-100000 --nodes 2 --cpus 1
    python bench/ray_cluster.py --quick                           # a smoke run

Cases as bench/near_shapes.py (``realistic-N``, ``swaps-N``, ...) and bench/ray_near.py
(``edited-N``); ``--data``: the benchmark files (default ../shared/data; ``bundled``: the
repository's own).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(ROOT / "tests"))

MB = 1024 ** 2
DEFAULT_CASES = "realistic-250000,realistic-500000"


def texts_for(case: str, data: str, seed: int) -> list[str]:
    if case.startswith("edited-"):
        from ray_near import texts_for as edited
        return edited(case, data, seed)
    import near_shapes
    import real_data
    import shapes
    folder = Path(data)
    if data == "bundled":
        folder = real_data.materialize(Path(tempfile.mkdtemp()))
    return near_shapes.build(case, shapes.read_questions(folder), seed)


def drive(source: str, address: str | None, result_path: str) -> None:
    """The driver process: one scan on the engine named by ``address`` (None: local, one process)."""
    from auditor import engines
    from auditor.distributed import near as ray_near
    from auditor.near import pieces
    from auditor.report import scan as scan_report
    from auditor.settings import EngineSettings

    spent: dict[str, float] = {}

    def timed(module, name):
        fn = getattr(module, name)

        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        setattr(module, name, run)

    timed(pieces, "plan")
    timed(pieces, "merge")
    timed(pieces.Pieces, "keep")            # each piece's sample folded as it arrives
    timed(ray_near, "ray_find_pairs")       # the search once Ray is joined
    engine = EngineSettings("ray", ray_address=address, quiet=True) if address else None
    start = time.perf_counter()
    result = engines.scan(source, text="text", engine=engine)
    wall = time.perf_counter() - start
    summary = scan_report.summary(result)
    summary.pop("engine", None)
    Path(result_path).write_text(json.dumps({
        "wall": wall, "stages": result.timings, "plan": spent.get("plan", 0.0), "merge": spent.get("merge", 0.0),
        "fold": spent.get("keep", 0.0),
        "search": spent.get("ray_find_pairs", 0.0),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "summary": summary,
        "engine": getattr(result, "engine", None)}))


def driver(source: Path, address: str | None, work: Path, name: str, sampler=None) -> dict:
    out = work / f"{name}.json"
    env = dict(os.environ, RAY_ADDRESS="", PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    proc = subprocess.Popen([sys.executable, str(HERE), "--driver", str(source), "--result", str(out),
                             *(["--address", address] if address else [])], env=env, cwd=ROOT,
                            stderr=subprocess.PIPE, text=True)
    if sampler is not None:
        sampler.watch.add(proc.pid)
    _, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"the {name} driver failed:\n{err[-3000:]}")
    return json.loads(out.read_text())


def measure(case: str, args) -> dict:
    from ray_cluster_nodes import NodeSampler, start_cluster
    texts = texts_for(case, args.data, args.seed)
    work = Path(tempfile.mkdtemp(prefix="ray_cluster"))
    source = work / "source.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    local = driver(source, None, work, "local")
    cluster = start_cluster(nodes=args.nodes, cpus=args.cpus, memory_mb=args.node_memory_mb)
    try:
        with NodeSampler(cluster) as sampler:
            ray = driver(source, cluster.address, work, "ray", sampler)
    finally:
        cluster.shutdown()
    if ray["summary"] != local["summary"]:
        raise SystemExit(f"{case}: the Ray summary differs from the local one")
    stages = ray["stages"]
    near = stages.get("near_duplicates", 0.0)
    tasks = ray["search"] - ray["plan"] - ray["merge"] - ray["fold"]
    joining = near - ray["search"]          # joining and leaving the cluster
    serial = sum(stages.values()) - tasks - joining
    node_cpu = sampler.node_cpu()
    per_node_peak = {}
    for pid, node in sampler.node_of.items():
        per_node_peak[node] = max(per_node_peak.get(node, 0), sampler.peak.get(pid, 0))
    return {"case": case, "records": len(texts), "mb_read": source.stat().st_size / MB,
            "local_wall": local["wall"], "local_peak_mb": local["peak_mb"],
            "ray_wall": ray["wall"], "driver_peak_mb": ray["peak_mb"], "stages": stages,
            "plan": ray["plan"], "merge": ray["merge"], "fold": ray["fold"], "tasks_wall": tasks, "serial": serial,
            "joining": joining,
            "worker_cpu": sum(node_cpu.values()), "node_cpu": sorted(node_cpu.values(), reverse=True),
            "largest_worker_mb": sampler.largest_worker() / MB,
            "node_peaks_mb": sorted((v / MB for v in per_node_peak.values()), reverse=True),
            "partitions": (ray.get("engine") or {}).get("partitions"), "load": os.getloadavg()[0]}


def table(rows: list[dict], nodes: int, cpus: int) -> str:
    lines = [f"{nodes} worker nodes x {cpus} CPU, a head with none; driver and workers are separate processes.", "",
             "| case | records | MB read | one process: wall / peak | Ray: wall | driver peak | largest worker "
             "peak | driver serial s (per 1M records) | of which plan + fold + merge | tasks: wall / worker CPU s | "
             "worker CPU per node | joining Ray | load |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        per_million = r["serial"] / r["records"] * 1e6
        lines.append(
            f"| {r['case']} | {r['records']:,} | {r['mb_read']:.0f} | {r['local_wall']:.1f} s / "
            f"{r['local_peak_mb']:,.0f} MB | {r['ray_wall']:.1f} s | **{r['driver_peak_mb']:,.0f} MB** | "
            f"{r['largest_worker_mb']:,.0f} MB | {r['serial']:.1f} ({per_million:.0f}) | "
            f"{r['plan']:.1f} + {r['fold']:.1f} + {r['merge']:.1f} | "
            f"{r['tasks_wall']:.1f} / {r['worker_cpu']:.1f} | "
            f"{', '.join(f'{c:.1f}' for c in r['node_cpu'])} | {r['joining']:.1f} s | {r['load']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=1, help="CPUs per worker node")
    parser.add_argument("--node-memory-mb", type=int, default=4096, help="each node's memory resource")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny cases on the bundled data")
    parser.add_argument("--out", help="also write the table here")
    parser.add_argument("--driver", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        drive(args.driver, args.address, args.result)
        return
    if args.quick:
        args.cases, args.data = "edited-3000,edited-6000", "bundled"
    rows = []
    for case in args.cases.split(","):
        rows.append(measure(case, args))
        print(json.dumps(rows[-1]), flush=True)
    text = table(rows, args.nodes, args.cpus)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
