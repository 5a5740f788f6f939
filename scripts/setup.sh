#!/usr/bin/env bash
# Installs everything stagehand_py needs on a fresh Debian machine (Python 3.11):
# - Debian's Chromium (Playwright's own browser download does not work everywhere, and we never
#   call `playwright install`), libgomp1 (the embedded model's OpenMP runtime) and python3-doc
#   (large real pages for the tests and benchmarks);
# - a virtualenv in .venv with the package in editable mode and its dev extras (the embedded
#   model's engine, xllamacpp, included: a prebuilt wheel, no compiler);
# - the embedded model: the pinned Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, SHA-256 checked)
#   into $STAGEHAND_MODELS_DIR or ~/.cache/stagehand_py/models, so the main job and the real-model
#   test run with no API key (`stagehand-py model fetch`, the command a pip user runs). Skip it with
#   --no-model or STAGEHAND_SKIP_MODEL=1.
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

skip_model=${STAGEHAND_SKIP_MODEL:-}
for arg in "$@"; do
    case "$arg" in
        --no-model) skip_model=1 ;;
        *) echo "setup: unknown option $arg (use --no-model to skip the model download)" >&2; exit 2 ;;
    esac
done

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
ldconfig -p 2>/dev/null | grep -q 'libgomp.so.1' || need_apt+=(libgomp1)
[ -f /usr/share/doc/python3-doc/html/library/stdtypes.html ] || need_apt+=(python3-doc)
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

if [ -n "$skip_model" ]; then
    echo "setup: skipping the embedded model (--no-model / STAGEHAND_SKIP_MODEL); without a key, the examples then run their model-free part only" >&2
else
    if model=$(.venv/bin/stagehand-py model path qwen2.5-coder-1.5b 2>/dev/null); then
        echo "setup: embedded model present ($model)" >&2
    else
        echo "setup: fetching the embedded model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB, SHA-256 checked)" >&2
        start=$(date +%s)
        .venv/bin/stagehand-py model fetch >&2
        echo "setup: model fetched and verified in $(( $(date +%s) - start )) s" >&2
    fi
fi
echo "setup: ready (.venv/bin/python, /usr/bin/chromium)" >&2
