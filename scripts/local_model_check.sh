#!/usr/bin/env bash
# Local models, end to end: builds the stagehand_py[local] extra (llama-cpp-python compiled from
# source: PyPI has no wheel; 16-21 minutes on 2 cores, at the lowest CPU priority), then runs the
# tests that need real llama.cpp (a llama_cpp.server on 127.0.0.1 and the in-process provider,
# with SmolLM2-135M) and the accuracy benchmark with Qwen2.5-Coder-1.5B on the test pages.
#
#   bash scripts/local_model_check.sh              # models must already be in the models folder
#   bash scripts/local_model_check.sh --download   # fetch missing models (98 MB + 1.1 GB; see the
#                                                  # licence note printed by fetch_local_model.py)
#   SKIP_BENCH=1 bash scripts/local_model_check.sh # tests only
#
# Uses the current python (or $PYTHON). The normal suite (.ci/run) never compiles llama.cpp: its
# llama tests skip when the extra is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
DOWNLOAD=()
[ "${1:-}" = "--download" ] && DOWNLOAD=(--download)

if ! "$PY" -c 'import llama_cpp, uvicorn, sse_starlette' 2>/dev/null; then
    echo "local_model_check: building llama-cpp-python (16-21 min on 2 cores; log in /tmp/llama-build.log)" >&2
    # No AMX: llama.cpp's AMX path segfaults on the first request on some AMX CPUs (the provider
    # also loads with use_extra_bufts=False when a library has AMX). AVX2/AVX-512 kept.
    start=$(date +%s)
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF}" \
        nice -n 19 "$PY" -m pip install -e '.[local]' 'llama-cpp-python[server]' > /tmp/llama-build.log 2>&1
    echo "local_model_check: built in $(( ($(date +%s) - start) / 60 )) min" >&2
fi

models=$("$PY" -c 'from stagehand_py.llm._providers._local import models_dir; print(models_dir())')
for spec in smollm2-135m:SmolLM2-135M-Instruct.Q4_1.gguf qwen2.5-coder-1.5b:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf; do
    name=${spec%%:*} file=${spec#*:}
    if [ ! -f "$models/$file" ]; then
        if [ ${#DOWNLOAD[@]} -eq 0 ]; then
            "$PY" scripts/fetch_local_model.py --model "$name" || true
            echo "local_model_check: $models/$file is missing; run with --download to fetch it." >&2
            exit 2
        fi
        "$PY" scripts/fetch_local_model.py --model "$name" --download
    fi
done

export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
echo "local_model_check: llama.cpp tests (SmolLM2-135M)" >&2
STAGEHAND_TEST_GGUF="$models/SmolLM2-135M-Instruct.Q4_1.gguf" \
    "$PY" -m pytest -q -rs tests/llm/test_llama_cpp_server.py tests/llm/test_local_llama.py

if [ -z "${SKIP_BENCH:-}" ]; then
    echo "local_model_check: accuracy benchmark (Qwen2.5-Coder-1.5B, a few minutes)" >&2
    "$PY" benchmarks/local_model_accuracy.py --model "$models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" \
        --threads "${LOCAL_THREADS:-2}"
fi
