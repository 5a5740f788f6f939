#!/usr/bin/env bash
# Installs everything stagehand_py needs on a fresh Debian machine (Python 3.11):
# Debian's Chromium (Playwright's own browser download does not work everywhere, and we never
# call `playwright install`), a virtualenv in .venv, and the package in editable mode with its
# dev extras. Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${need_apt[*]}" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    python3 -m venv .venv
fi

# Re-install only when pyproject.toml changed since the last install.
stamp=.venv/.stagehand_py-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing stagehand_py[dev] into .venv" >&2
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e '.[dev]'
    touch "$stamp"
fi
echo "setup: ready (.venv/bin/python, /usr/bin/chromium)" >&2
