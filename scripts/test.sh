#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing first (scripts/setup.sh), then pytest.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k snapshot -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
