"""Finding llama-cpp-python and the small test model for the tests that run real llama.cpp.

Those tests skip (with the reason) when the ``stagehand_py[local]`` extra is not installed or the
model file is missing: the normal suite and ``.ci/run`` never compile llama.cpp. Run them with
``bash scripts/local_model_check.sh``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from stagehand_py.llm._providers._local import models_dir

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Set to the path of a GGUF file to use instead of SmolLM2 from the models folder.
GGUF_ENV = "STAGEHAND_TEST_GGUF"


def _model_path() -> Path | None:
    # Read at import (collection) time, before tests/conftest.py hides the models folder.
    if os.environ.get(GGUF_ENV):
        return Path(os.environ[GGUF_ENV]).expanduser()
    folder = models_dir()
    return folder / SMOLLM2 if folder is not None else None


MODEL_PATH = _model_path()


def require_llama(*, server: bool = False) -> Path:
    """Skip the calling module unless llama-cpp-python (with its server) and the model are here."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (the stagehand_py[local] extra compiles llama.cpp, ~20 min "
                    "on 2 cores): run `bash scripts/local_model_check.sh`", allow_module_level=True)
    if server and (importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("sse_starlette") is None):
        pytest.skip("llama_cpp.server's dependencies are missing: pip install 'llama-cpp-python[server]'",
                    allow_module_level=True)
    if MODEL_PATH is None or not MODEL_PATH.is_file():
        pytest.skip(f"no test model at {MODEL_PATH}: `python scripts/fetch_local_model.py --model smollm2-135m "
                    f"--download` (98 MB) or set {GGUF_ENV}", allow_module_level=True)
    return MODEL_PATH
