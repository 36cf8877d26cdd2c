#!/usr/bin/env bash
# The test suite, from a fresh machine: installs what it needs, then runs pytest.
#   bash scripts/test.sh [PYTEST ARGS]         the quick loop: every test but the long sweeps and the
#                                              slow tests (@pytest.mark.sweep, @pytest.mark.slow)
#   bash scripts/test.sh --all [PYTEST ARGS]   every test, the sweeps too (what CI runs: .ci/run)
# Browser tests drive Debian's chromium (installed here with apt-get when missing);
# they never download a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--all" ]; then
  shift
  set -- -m "sweep or not sweep" "$@"
else
  echo "Long sweeps and slow tests skipped (marked sweep, slow): bash scripts/test.sh --all runs every test, as CI does." >&2
fi
bash scripts/setup.sh
if [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is needed for the browser tests: install Debian's chromium at /usr/bin/chromium" >&2
    exit 1
  fi
fi
# axe-core, which the accessibility tests load into the page from disk (tests/package.json, pinned
# in tests/package-lock.json), from the npm registry; a page never fetches it.
if [ ! -f tests/node_modules/axe-core/axe.min.js ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "npm is needed to install axe-core for the accessibility tests (Debian: apt-get install npm)" >&2
    exit 1
  fi
  npm ci --prefix tests --no-audit --no-fund >/dev/null
fi
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1
exec .venv/bin/python -m pytest "$@"
