"""Shared fixtures: the real benchmark data (from the repository alone), and a way to run the CLI
as a user would; the shared local Ray's bounds (tests/ray_leak_helpers.py); and the ``sweep`` marker.

Tests live in folders that mirror the package (tests/io, tests/roles, tests/commands, ...), without
``__init__.py`` (a tests/io package would shadow the standard library's io), so every test file's
name is unique across the folders. The helper modules here (ground_truth.py, definitions.py,
real_data.py, app_server.py, ...) are importable from every folder: this file puts tests/ on the path.

Long sweeps (``@pytest.mark.sweep``) and slow tests (``@pytest.mark.slow``: measured at over about
6 s each, mostly browser journeys, Ray clusters and real-data model runs) are skipped unless the run
names markers itself, so the loop while developing stays within 10 minutes: ``bash scripts/test.sh
--all`` (what CI runs, .ci/run) or ``-m "sweep or not sweep"`` runs every test."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS_DIR = Path(__file__).resolve().parent

if str(TESTS_DIR) not in sys.path:           # so test modules can `import ground_truth`
    sys.path.insert(0, str(TESTS_DIR))
if str(REPO) not in sys.path:                # so they can import app and ui, however pytest was started
    sys.path.insert(1, str(REPO))
# Browser test modules import helpers from this plugin before pytest loads it as one.
pytest.register_assert_rewrite("browser_support")


QUICK = "not sweep and not slow"


def pytest_configure(config):
    config.addinivalue_line("markers", "sweep: a long sweep (real-data figures, hostile sizes, every character); "
                                       "skipped unless -m names markers (bash scripts/test.sh --all, as CI runs)")
    if not config.option.markexpr:
        config.option.markexpr = QUICK


def pytest_report_header(config):
    if config.option.markexpr == QUICK:
        return ("long sweeps and slow tests skipped (-m 'not sweep and not slow'): bash scripts/test.sh --all runs "
                "them too, as CI does")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The shared local Ray (tests/ray_leak_helpers.py) runs only under the tests that ask for it: any
    other test starts as it would alone, with no Ray of ours running (before its fixtures, which may
    start a Ray with an environment of their own)."""
    if "local_ray" not in item.fixturenames and "ray_leak_helpers" in sys.modules:
        sys.modules["ray_leak_helpers"].stop_local_ray()


def pytest_sessionfinish(session):
    if "ray_leak_helpers" in sys.modules:
        sys.modules["ray_leak_helpers"].stop_local_ray()


@pytest.fixture(scope="session")
def real_data(tmp_path_factory) -> Path:
    """A directory of the real benchmark files as plain JSONL (gsm8k/, spider/, mbpp/, humaneval/),
    written from the bundled examples and tests/data/ and checked against the originals' sha256
    (tests/real_data.py)."""
    import real_data as files
    return files.materialize(tmp_path_factory.mktemp("real_data"))


def run_cli(*args, env: dict | None = None, cwd: str | Path | None = None, timeout: float = 120):
    """Run ``python -m auditor ARGS`` in a subprocess; returns (returncode, stdout, stderr)."""
    full_env = dict(os.environ)
    # The checkout first on the path, so the package under test is the one imported.
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO), full_env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True, text=True,
                          env=full_env, cwd=str(cwd or REPO), timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(name="run_cli")
def run_cli_fixture():
    return run_cli
