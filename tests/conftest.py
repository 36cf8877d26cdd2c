"""Shared fixtures: the real benchmark data (from the repository alone), and a way to run the CLI
as a user would."""
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
# Browser test modules import helpers from this plugin before pytest loads it as one.
pytest.register_assert_rewrite("browser_support")


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
