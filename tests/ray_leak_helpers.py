"""What the Ray tests share (tests/engines/test_ray_*.py and a few others): one local Ray for
consecutive modules, JSONL rows, and the near-duplicate edit they plant.

Starting Ray takes seconds (more on a busy machine), so the modules that ask for ``local_ray`` share
one: it is started by the first of them and left running while the next test asks for it too.
tests/conftest.py stops it before any test that does not ask for it (a test that starts a Ray of its
own, with its own environment, or runs the engine's own start and stop), and at the end."""
from __future__ import annotations

import json

import pytest


_STARTED = []          # the Ray these helpers started (and so may stop), if any


def start_local_ray() -> None:
    """A local Ray with 2 CPUs, unless one is running already (ours, kept from the previous module)."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        _STARTED.append(True)


def stop_local_ray() -> None:
    """Stop the Ray start_local_ray started (nothing if none is running or it is someone else's)."""
    if _STARTED:
        import ray
        _STARTED.clear()
        ray.shutdown()


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """Imported into a test module, a local Ray with 2 CPUs for that module's tests (shared with the
    next module that imports it; see the module docstring)."""
    start_local_ray()
    yield


def read(path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def edit(question: str) -> str:
    """One word changed near the end: a near duplicate of a long question."""
    words = question.split()
    words[-3] = "zebra"
    return " ".join(words)
