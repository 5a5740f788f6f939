#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing first (scripts/setup.sh), then pytest.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k snapshot -x`. Three worker processes
# (pytest-xdist; on 2 cores, because much of the suite waits on browsers and servers: 3 finished
# 5 % sooner than 2 in one idle run of 28 Nov), each test file kept on one worker so module-scoped servers and clusters start once,
# the files that run for minutes handed out first and the real-model files kept together on one
# worker (tests/conftest.py: LONG_FILES, REAL_MODEL_FILES); the log ends with the 30 slowest test
# phases and each worker's time (when it finished, its slowest files), to see where CI's minutes go.
# `-n 0` runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=30 "$@"
