"""What the Ray tests share (tests/test_ray_leak.py, test_ray_leak_sources.py, test_ray_hostile.py): a local
Ray for the module, JSONL rows, and the near-duplicate edit they plant."""
from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """Imported into a test module, a local Ray with 2 CPUs for that module's tests."""
    import ray
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def read(path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def edit(question: str) -> str:
    """One word changed near the end: a near duplicate of a long question."""
    words = question.split()
    words[-3] = "zebra"
    return " ".join(words)
