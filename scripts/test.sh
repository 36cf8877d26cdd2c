#!/usr/bin/env bash
# The test suite, from a fresh machine: installs what it needs, then runs pytest.
#   bash scripts/test.sh [PYTEST ARGS]         every test but the long sweeps (@pytest.mark.sweep)
#   bash scripts/test.sh --all [PYTEST ARGS]   every test, the sweeps too (what CI runs: .ci/run)
# Browser tests drive Debian's chromium (installed here with apt-get when missing);
# they never download a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--all" ]; then
  shift
  set -- -m "sweep or not sweep" "$@"
else
  echo "Long sweeps skipped (marked sweep): bash scripts/test.sh --all runs every test, as CI does." >&2
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
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1
exec .venv/bin/python -m pytest "$@"
