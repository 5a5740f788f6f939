"""Which model the examples use, decided from the environment in one place.

In order of precedence:

1. ``STAGEHAND_BASE_URL`` — any OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio);
   ``STAGEHAND_MODEL`` names the model it serves (default ``llama3.2``); no key needed
   (``OPENAI_API_KEY`` is sent when set).
2. ``OPENAI_API_KEY`` — ``STAGEHAND_MODEL`` or ``openai/gpt-4.1-mini``.
3. ``ANTHROPIC_API_KEY`` — ``STAGEHAND_MODEL`` or ``anthropic/claude-sonnet-4-5``.
4. No key: the embedded model in this process (``bash scripts/setup.sh`` installs its engine
   and fetches it): ``STAGEHAND_LOCAL_MODEL`` (a path or a file name), else
   ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` in ``$STAGEHAND_MODELS_DIR`` (default
   ``~/.cache/stagehand_py/models``). See docs/local_models.md for what it costs.

A ``STAGEHAND_MODEL`` with a provider prefix (``openai/...``, ``anthropic/...``) picks that
provider; a bare name goes to the provider whose key is set (OpenAI first).

Nothing set: :func:`model_from_env` returns None and :data:`HOW_TO_CONFIGURE` says what to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_OPENAI_MODEL = "openai/gpt-4.1-mini"
DEFAULT_ANTHROPIC_MODEL = "anthropic/claude-sonnet-4-5"
DEFAULT_LOCAL_MODEL = "llama3.2"
DEFAULT_LOCAL_GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
#: A local model is slow on a CPU (seconds per 1k prompt tokens): keep its prompts small.
LOCAL_TOKEN_BUDGET = 6000

HOW_TO_CONFIGURE = f"""\
No model is configured, so the model-driven part (observe / act / extract) was skipped.
Set one of these and run again:

  export OPENAI_API_KEY=sk-...              # uses {DEFAULT_OPENAI_MODEL}
  export ANTHROPIC_API_KEY=sk-ant-...       # uses {DEFAULT_ANTHROPIC_MODEL}
  export STAGEHAND_BASE_URL=http://localhost:11434/v1   # any OpenAI-compatible server (Ollama, llama.cpp, vLLM)
  export STAGEHAND_MODEL=llama3.2           # optional: the model to ask (with a key: e.g. openai/gpt-4.1)
  bash scripts/setup.sh                     # no key at all: installs and fetches the embedded model
                                            # (docs/local_models.md)

For example, with Ollama running `ollama pull llama3.2`:

  STAGEHAND_BASE_URL=http://localhost:11434/v1 STAGEHAND_MODEL=llama3.2 python examples/quickstart.py
"""


@dataclass(frozen=True)
class ModelChoice:
    """A model picked from the environment: ``model`` is a ``provider/name`` string."""

    model: str
    base_url: str | None
    source: str  # the variable that decided it, for the example's printout


def model_from_env(environ: Mapping[str, str] | None = None) -> ModelChoice | None:
    """The model the environment configures, or None when it configures none."""
    env = os.environ if environ is None else environ
    named = env.get("STAGEHAND_MODEL", "").strip()
    base_url = env.get("STAGEHAND_BASE_URL", "").strip()
    if base_url:
        name = named or DEFAULT_LOCAL_MODEL
        # An OpenAI-compatible server is spoken to as "openai/<the name it serves>".
        model = name if name.startswith("openai/") else f"openai/{name}"
        return ModelChoice(model, base_url, "STAGEHAND_BASE_URL")
    keys = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
    have = [provider for provider, var in keys.items() if env.get(var, "").strip()]
    if not have:
        return _local_model(env)
    provider = named.partition("/")[0]
    if provider in keys:
        # An explicit provider wins; LLMClient says which key is missing if it is.
        return ModelChoice(named, None, keys[provider])
    provider = have[0]  # OpenAI first when both keys are set
    default = DEFAULT_OPENAI_MODEL if provider == "openai" else DEFAULT_ANTHROPIC_MODEL
    return ModelChoice(f"{provider}/{named}" if named else default, None, keys[provider])


def _local_model(env: Mapping[str, str]) -> ModelChoice | None:
    """The in-process local model, when the extra is installed and its file is present."""
    import importlib.util

    from stagehand_py.llm._providers._local import models_dir

    named = env.get("STAGEHAND_LOCAL_MODEL", "").strip()
    if not named and env.get("STAGEHAND_MODEL", "").startswith("local/"):
        named = env["STAGEHAND_MODEL"].removeprefix("local/")
    path = Path(named or DEFAULT_LOCAL_GGUF).expanduser()
    if not path.is_file():
        folder = models_dir(env)
        if folder is None or len(path.parts) != 1 or not (folder / path).is_file():
            return None
        path = folder / path
    if importlib.util.find_spec("xllamacpp") is None:  # the extra is not installed
        return None
    return ModelChoice(f"local/{path}", None, "STAGEHAND_LOCAL_MODEL" if named else "local model file")


def pick_model(model: Any = None, environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], str] | None:
    """``Stagehand(**options)`` for the model to use, and a label to print.

    ``model`` when given (anything ``Stagehand(model=...)`` takes, e.g. a test's scripted
    model), else the environment's choice; None when there is neither.
    """
    if model is not None:
        return {"model": model}, str(getattr(model, "model_name", type(model).__name__))
    choice = model_from_env(environ)
    if choice is None:
        return None
    label = f"{choice.model} (from {choice.source})"
    if choice.model.startswith("local/"):
        return {"model": choice.model, "token_budget": LOCAL_TOKEN_BUDGET}, label
    return {"model": choice.model, "base_url": choice.base_url}, label
