"""Which model the examples use, decided from the environment in one place.

In order of precedence:

1. ``STAGEHAND_BASE_URL`` — any OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio);
   ``STAGEHAND_MODEL`` names the model it serves (default ``llama3.2``); no key needed
   (``OPENAI_API_KEY`` is sent when set).
2. ``OPENAI_API_KEY`` — ``STAGEHAND_MODEL`` or ``openai/gpt-4.1-mini``.
3. ``ANTHROPIC_API_KEY`` — ``STAGEHAND_MODEL`` or ``anthropic/claude-sonnet-4-5``.

A ``STAGEHAND_MODEL`` with a provider prefix (``openai/...``, ``anthropic/...``) picks that
provider; a bare name goes to the provider whose key is set (OpenAI first).

Nothing set: :func:`model_from_env` returns None and :data:`HOW_TO_CONFIGURE` says what to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_OPENAI_MODEL = "openai/gpt-4.1-mini"
DEFAULT_ANTHROPIC_MODEL = "anthropic/claude-sonnet-4-5"
DEFAULT_LOCAL_MODEL = "llama3.2"

HOW_TO_CONFIGURE = f"""\
No model is configured, so the model-driven part (observe / act / extract) was skipped.
Set one of these and run again:

  export OPENAI_API_KEY=sk-...              # uses {DEFAULT_OPENAI_MODEL}
  export ANTHROPIC_API_KEY=sk-ant-...       # uses {DEFAULT_ANTHROPIC_MODEL}
  export STAGEHAND_BASE_URL=http://localhost:11434/v1   # any OpenAI-compatible server (Ollama, llama.cpp, vLLM)
  export STAGEHAND_MODEL=llama3.2           # optional: the model to ask (with a key: e.g. openai/gpt-4.1)

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
        return None
    provider = named.partition("/")[0]
    if provider in keys:
        # An explicit provider wins; LLMClient says which key is missing if it is.
        return ModelChoice(named, None, keys[provider])
    provider = have[0]  # OpenAI first when both keys are set
    default = DEFAULT_OPENAI_MODEL if provider == "openai" else DEFAULT_ANTHROPIC_MODEL
    return ModelChoice(f"{provider}/{named}" if named else default, None, keys[provider])


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
    return {"model": choice.model, "base_url": choice.base_url}, f"{choice.model} (from {choice.source})"
