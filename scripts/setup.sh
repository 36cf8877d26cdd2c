#!/usr/bin/env bash
# Create .venv in the checkout and install the project and its pinned dependencies: the test and
# benchmark peers, then the project with its `app` and `ray` extras, its dependencies resolved from
# pyproject.toml with requirements.txt as constraints (so versions stay as measured, and a range
# that no longer admits a pinned version fails here instead of drifting unseen).
# Re-running is cheap: it reinstalls only when a requirements file changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements-dev.txt
  .venv/bin/python -m pip install --quiet -c requirements.txt -e ".[app,ray]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
