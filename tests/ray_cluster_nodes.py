"""A Ray cluster of several nodes on this machine, and what each node's processes hold and spend.

``start_cluster`` starts a head that runs no task (0 CPUs: its GCS only) and ``nodes`` worker nodes,
each its own raylet with its own CPUs, memory resource and object store (``ray.cluster_utils.Cluster``),
so tasks, objects and Ray Data's shuffles cross nodes as on a real cluster. ``NodeSampler`` reads
/proc (Linux) every 0.2 s while a run goes on: each node's worker processes (the children of its
raylet), their peak resident memory (VmHWM) and CPU seconds, and the peak of any other process it
is given (a driver). Used by tests/engines/test_ray_on_a_multi_node_cluster.py and
bench/ray_cluster.py.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def start_cluster(nodes: int = 3, cpus: int = 1, memory_mb: int = 2048, object_store_mb: int = 128):
    """A started ``Cluster`` (``cluster.address``: what --ray-address takes); stop it with
    ``cluster.shutdown()``."""
    from ray.cluster_utils import Cluster
    mb = 1024 ** 2
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 80 * mb})
    for _ in range(nodes):
        cluster.add_node(num_cpus=cpus, memory=memory_mb * mb, object_store_memory=object_store_mb * mb)
    cluster.wait_for_nodes()
    return cluster


def worker_nodes(cluster) -> dict[str, int]:
    """Node id -> its raylet's pid, for the nodes that run tasks (not the head)."""
    return {node.node_id: node.all_processes["raylet"][0].process.pid
            for node in cluster.list_all_nodes() if not node.head}


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    return children


def peak_bytes(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used, 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, ValueError, IndexError):
        return 0.0


class NodeSampler:
    """While open: per worker node, each worker process's largest peak and CPU seconds seen (a
    worker that exits keeps its last reading), and the peak of the ``watch`` pids.

        with NodeSampler(cluster) as sampler:
            ... a run ...
        sampler.node_cpu()       # {node id: CPU seconds its workers spent while open}
    """

    def __init__(self, cluster, every: float = 0.2):
        self.raylets = worker_nodes(cluster)
        self.every = every
        self.watch: set[int] = set()
        self.peak: dict[int, int] = {}          # pid -> bytes
        self.cpu: dict[int, float] = {}         # pid -> CPU seconds while open
        self.start_cpu: dict[int, float] = {}
        self.node_of: dict[int, str] = {}
        self._baseline = True                   # the first reading: CPU spent before the run
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "NodeSampler":
        self.sample()
        self._baseline = False
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def sample(self) -> None:
        children = _children()
        for node, raylet in self.raylets.items():
            for pid in children.get(raylet, []):
                self.node_of.setdefault(pid, node)
                self._read(pid)
        for pid in list(self.watch):
            self._read(pid)

    def _read(self, pid: int) -> None:
        peak, used = peak_bytes(pid), cpu_seconds(pid)
        if peak:
            self.peak[pid] = max(self.peak.get(pid, 0), peak)
        if used:
            # a worker first seen after the first reading started within the run: all its CPU counts
            start = self.start_cpu.setdefault(pid, used if self._baseline else 0.0)
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), used - start)

    def node_cpu(self) -> dict[str, float]:
        """Node id -> CPU seconds its worker processes spent while the sampler was open."""
        total = dict.fromkeys(self.raylets, 0.0)
        for pid, node in self.node_of.items():
            total[node] += self.cpu.get(pid, 0.0)
        return total

    def largest_worker(self) -> int:
        """The largest peak of any worker process, in bytes."""
        return max((self.peak.get(pid, 0) for pid in self.node_of), default=0)
