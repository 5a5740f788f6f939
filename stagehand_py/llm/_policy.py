"""The one rule for which model runs when the caller names none.

``Stagehand``, the pytest plugin, the MCP server, the batch CLI and the examples all ask
:func:`default_model`; none of them keeps a rule of its own. In order of precedence:

1. ``STAGEHAND_BASE_URL``: an OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio),
   spoken to as ``openai/<STAGEHAND_MODEL>`` (default :data:`SERVER_MODEL`); no key needed.
2. ``STAGEHAND_MODEL`` with a provider prefix (``openai/...``, ``anthropic/...``, ``local/...``):
   that model, whatever keys are set (its client then says what is missing, if anything).
3. A provider key: ``OPENAI_API_KEY`` (first), then ``ANTHROPIC_API_KEY``, then ``GEMINI_API_KEY``; a bare
   ``STAGEHAND_MODEL`` names the model of that provider, else its default in :data:`HOSTED_DEFAULTS`.
4. No key: the embedded model in this process, when its engine (``xllamacpp``) is installed and
   its file is present: ``STAGEHAND_LOCAL_MODEL`` (a path or a file name), else
   :data:`EMBEDDED_MODEL_FILE` in the models folder (``$STAGEHAND_MODELS_DIR``, default
   ``~/.cache/stagehand_py/models``; ``stagehand-py model fetch`` fetches it).
5. Nothing: None. Snapshots and acts on a given ``Action`` need no model.

Pure: it reads the environment mapping and the file system, and makes no request.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ._model_files import models_dir

__all__ = [
    "EMBEDDED_MODEL_FILE",
    "HOSTED_DEFAULTS",
    "LOCAL_TOKEN_BUDGET",
    "SERVER_MODEL",
    "DEFAULT_TOKEN_BUDGET",
    "ModelChoice",
    "default_model",
    "local_model_file",
    "token_budget_for",
]

#: The embedded model ``stagehand-py model fetch`` fetches (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, SHA-256 checked).
EMBEDDED_MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
#: A model on this machine's CPU pays seconds per thousand prompt tokens: its prompts stay small.
LOCAL_TOKEN_BUDGET = 6000
#: Estimated prompt tokens of one model call for a hosted model, unless the caller says otherwise.
DEFAULT_TOKEN_BUDGET = 16_000
#: The model asked of an OpenAI-compatible server when ``STAGEHAND_MODEL`` names none (Ollama's usual one).
SERVER_MODEL = "llama3.2"
#: Provider -> (the environment variable holding its key, the model used when only the key is set).
HOSTED_DEFAULTS: Mapping[str, tuple[str, str]] = {
    "openai": ("OPENAI_API_KEY", "openai/gpt-4.1-mini"),
    "anthropic": ("ANTHROPIC_API_KEY", "anthropic/claude-sonnet-4-5"),
    "google": ("GEMINI_API_KEY", "google/gemini-2.5-flash"),
}


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model the environment configures."""

    #: ``"provider/name"``, ready for ``LLMClient(model)``.
    model: str
    #: The OpenAI-compatible server to send it to, or None for the provider's own endpoint.
    base_url: str | None
    #: What decided it (an environment variable, or ``"local model file"``), for messages and printouts.
    source: str

    @property
    def token_budget(self) -> int:
        return token_budget_for(self.model)


def token_budget_for(model_name: str) -> int:
    """The prompt budget a model gets unless the caller gives one: small for a local model."""
    return LOCAL_TOKEN_BUDGET if model_name.startswith("local/") else DEFAULT_TOKEN_BUDGET


def _set(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def default_model(environ: Mapping[str, str] | None = None) -> ModelChoice | None:
    """The model to use when the caller gives none (see the module's rule), or None."""
    env = os.environ if environ is None else environ
    named = _set(env, "STAGEHAND_MODEL")
    base_url = _set(env, "STAGEHAND_BASE_URL")
    if base_url:
        name = named or SERVER_MODEL
        return ModelChoice(name if name.startswith("openai/") else f"openai/{name}", base_url, "STAGEHAND_BASE_URL")
    if "/" in named:  # a provider named explicitly wins: its client says what is missing, if anything
        return ModelChoice(named, None, "STAGEHAND_MODEL")
    for key_var, default in HOSTED_DEFAULTS.values():
        if _set(env, key_var):
            return ModelChoice(f"{default.partition('/')[0]}/{named}" if named else default, None, key_var)
    return _embedded_model(env)


def local_model_file(environ: Mapping[str, str] | None = None) -> tuple[Path | None, Path]:
    """The file the embedded model would run (None when absent) and where it was looked for:
    ``STAGEHAND_LOCAL_MODEL`` (a path, or a file name in the models folder), else
    :data:`EMBEDDED_MODEL_FILE` in the models folder."""
    env = os.environ if environ is None else environ
    path = Path(_set(env, "STAGEHAND_LOCAL_MODEL") or EMBEDDED_MODEL_FILE).expanduser()
    if path.is_file():
        return path, path
    folder = models_dir(env)
    if folder is None or len(path.parts) != 1:
        return None, path
    return (folder / path if (folder / path).is_file() else None), folder / path


def _embedded_model(env: Mapping[str, str]) -> ModelChoice | None:
    """The in-process model, when its engine is installed and its file is present."""
    path, _ = local_model_file(env)
    if path is None:
        return None
    if importlib.util.find_spec("xllamacpp") is None:  # the `local` extra is not installed
        return None
    source = "STAGEHAND_LOCAL_MODEL" if _set(env, "STAGEHAND_LOCAL_MODEL") else "local model file"
    return ModelChoice(f"local/{path}", None, source)
