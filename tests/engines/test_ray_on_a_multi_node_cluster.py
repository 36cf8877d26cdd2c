"""The Ray engine on a cluster of several nodes (issue 33, item 3): a head that runs no task and three
worker nodes, each its own raylet, CPU and object store (tests/ray_cluster_nodes.py), joined by the
CLI with --ray-address as a user joins a real cluster. Each command's summary.json equals the local
engine's but for its ``engine`` block, the planted rows are found, and the work ran on more than one
node (CPU its workers spent, read from /proc)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("ray")
import real_data  # noqa: E402
from ray_cluster_nodes import NodeSampler, start_cluster  # noqa: E402

pytestmark = pytest.mark.slow
NODES = 3


@pytest.fixture(scope="module")
def cluster():
    started = start_cluster(nodes=NODES, cpus=1)
    yield started
    started.shutdown()


def _json(run_cli, *args) -> dict:
    code, out, err = run_cli(*args, "--json", "-", "--quiet", timeout=600, env={"RAY_ADDRESS": ""})
    assert code in (0, 1), err
    assert "Traceback" not in err
    return json.loads(out)


def _local_and_ray(run_cli, cluster, *args) -> tuple[dict, dict, dict]:
    """(local summary, Ray summary without its engine block, CPU seconds per node) of one command."""
    local = _json(run_cli, *args)
    with NodeSampler(cluster) as sampler:
        on_ray = _json(run_cli, *args, "--engine", "ray", "--ray-address", cluster.address)
    assert on_ray.pop("engine")["name"] == "ray"
    return local, on_ray, sampler.node_cpu()


def _busy_nodes(cpu: dict) -> int:
    """Nodes whose workers spent over a second of CPU while the command ran. A node that runs no
    task spends next to none: a driver that joins this cluster, waits 8 s and leaves cost each
    node's workers at most 0.01 CPU-s (measured); a node's first task, its imports, about 1.5."""
    return sum(seconds > 1.0 for seconds in cpu.values())


@pytest.mark.parametrize("method", ["exact", "lsh"])
def test_scan_across_nodes_equals_the_local_scan(cluster, run_cli, tmp_path, method):
    questions = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")]
    copies = real_data.edited_copies(questions[:300], 3, 0.03, 5)     # 300 clusters of near duplicates
    source = tmp_path / "train.jsonl"
    source.write_text("".join(json.dumps({"question": t}) + "\n" for t in questions + copies), encoding="utf-8")
    local, on_ray, cpu = _local_and_ray(run_cli, cluster, "scan", source, "--text", "question", "--method", method)
    assert on_ray == local
    near = local["near_duplicates"]
    assert near["clusters"] >= 250 and near["records_in_clusters"] >= 900    # the planted clusters
    assert _busy_nodes(cpu) >= 2, cpu


def test_leak_and_contamination_across_nodes_equal_the_local_engine(cluster, run_cli, tmp_path):
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    planted = {i: test[i] for i in range(0, 200, 20)}                # 10 test items copied into the corpus
    folder = tmp_path / "corpus"
    folder.mkdir()
    rows = [{"question": r["question"], "answer": r["answer"]} for r in train]
    for k, row in enumerate(planted.values()):
        rows.insert(700 * k + 3, {"question": row["question"], "answer": row["answer"]})
    shard = len(rows) // 6 + 1
    for k in range(6):
        (folder / f"part-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[k * shard:(k + 1) * shard]),
                                                encoding="utf-8")
    test_path = tmp_path / "test.jsonl"
    test_path.write_text("".join(json.dumps(r) + "\n" for r in test), encoding="utf-8")

    local, on_ray, cpu = _local_and_ray(run_cli, cluster, "leak", folder, test_path, "--text", "question",
                                        "--answer", "answer")
    assert on_ray == local
    assert _busy_nodes(cpu) >= 2, cpu
    assert local["identical_text"]["records"] >= len(planted) and local["identical_both"]["records"] >= len(planted)

    local, on_ray, cpu = _local_and_ray(run_cli, cluster, "contamination", folder, "--benchmark", "gsm8k",
                                        "--text", "question")
    assert on_ray == local
    assert _busy_nodes(cpu) >= 2, cpu
    assert local["contaminated"]["records"] >= len(planted) and local["copied"]["records"] >= len(planted)
