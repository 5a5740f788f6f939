"""Finding the pinned local model for the tests that run the real engine (xllamacpp).

`bash scripts/setup.sh` fetches the model into the user cache, so these tests run in CI; they skip
with the reason only when the model file or the ``stagehand_py[local]`` extra is absent.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from stagehand_py.llm._providers._local import models_dir

PINNED = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
#: Set to the path of a GGUF file to use instead of the pinned model from the models folder.
GGUF_ENV = "STAGEHAND_TEST_GGUF"


def _model_path() -> Path | None:
    # Read at import (collection) time, before tests/conftest.py hides the models folder.
    if os.environ.get(GGUF_ENV):
        return Path(os.environ[GGUF_ENV]).expanduser()
    folder = models_dir()
    return folder / PINNED if folder is not None else None


MODEL_PATH = _model_path()


def require_local_model() -> Path:
    """Skip the calling module unless xllamacpp and the model file are here."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed: `pip install 'stagehand_py[local]'` (scripts/setup.sh does)",
                    allow_module_level=True)
    if MODEL_PATH is None or not MODEL_PATH.is_file():
        pytest.skip(f"no local model at {MODEL_PATH}: run `bash scripts/setup.sh` (it fetches the pinned model) "
                    f"or set {GGUF_ENV}", allow_module_level=True)
    return MODEL_PATH
