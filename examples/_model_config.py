"""Which model the examples use: the library's one rule, :func:`stagehand_py.llm.default_model`.

In order of precedence (see that function for the details):

1. ``STAGEHAND_BASE_URL`` — any OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio);
   ``STAGEHAND_MODEL`` names the model it serves (default ``llama3.2``); no key needed.
2. ``STAGEHAND_MODEL`` with a provider prefix (``openai/...``, ``anthropic/...``, ``local/...``).
3. ``OPENAI_API_KEY`` (then ``ANTHROPIC_API_KEY``) — ``STAGEHAND_MODEL`` as a bare name, or the
   provider's default model.
4. No key: the embedded model in this process (``bash scripts/setup.sh`` installs its engine
   and fetches it): ``STAGEHAND_LOCAL_MODEL`` (a path or a file name), else
   ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` in ``$STAGEHAND_MODELS_DIR`` (default
   ``~/.cache/stagehand_py/models``). See docs/local_models.md for what it costs.

Nothing set: :func:`model_from_env` returns None and :data:`HOW_TO_CONFIGURE` says what to set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stagehand_py.llm import EMBEDDED_MODEL_FILE, HOSTED_DEFAULTS, LOCAL_TOKEN_BUDGET, ModelChoice, default_model

__all__ = ["HOW_TO_CONFIGURE", "LOCAL_TOKEN_BUDGET", "ModelChoice", "model_from_env", "pick_model"]

DEFAULT_OPENAI_MODEL = HOSTED_DEFAULTS["openai"][1]
DEFAULT_ANTHROPIC_MODEL = HOSTED_DEFAULTS["anthropic"][1]
DEFAULT_LOCAL_GGUF = EMBEDDED_MODEL_FILE

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


def model_from_env(environ: Mapping[str, str] | None = None) -> ModelChoice | None:
    """The model the environment configures, or None when it configures none."""
    return default_model(environ)


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
        return {"model": choice.model, "token_budget": choice.token_budget}, label
    return {"model": choice.model, "base_url": choice.base_url}, label
