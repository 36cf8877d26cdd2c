#!/usr/bin/env bash
# Run the Space locally: installs what it needs, then serves the app on
# http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT change that),
# opening on the bundled GSM8K train split, already audited.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export GRADIO_ANALYTICS_ENABLED=False
exec .venv/bin/python app.py "$@"
