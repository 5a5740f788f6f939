"""A Stagehand's model clients: the one it was given, or the environment's default, made once.

Every verb gets its client from here already made (:meth:`ModelClients.for_call`), so operations
never ask their Stagehand for one mid-flow. A local model starts loading in the background as soon
as its client is made, with the verbs' fixed system prompt (its cache saved beside the model for the
next process): the first call pays only for what is new.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

from ._errors import ConfigurationError
from ._prompts.common import Fence, preamble
from .llm import (
    LanguageModel,
    LLMClient,
    LocalModel,
    Metrics,
    ModelLoad,
    ModelPrice,
    OutputMode,
    Profile,
    RetryPolicy,
    UsageLimits,
)
from .llm._model_files import FETCH_COMMAND
from .llm._policy import ModelChoice, default_model

__all__ = ["LLMOptions", "ModelClients", "ModelSpec"]

#: What ``model=`` takes: ``"provider/model"`` (``"openai/gpt-4.1-mini"``,
#: ``"local/<file>.gguf"``), a configured :class:`~stagehand_py.llm.LLMClient`, or any object
#: implementing :class:`~stagehand_py.llm.LanguageModel` (the test doubles included).
ModelSpec = str | LLMClient | LanguageModel


class LLMOptions(TypedDict, total=False):
    """More :class:`~stagehand_py.llm.LLMClient` options, for ``Stagehand(llm_options=...)``."""

    output_mode: OutputMode
    profile: Profile
    max_reasks: int
    max_retries: int
    retry_policy: RetryPolicy
    timeout: float
    usage_limits: UsageLimits
    inference_log_dir: str | os.PathLike[str]
    max_output_tokens: int
    temperature: float
    choice_mode: bool
    #: Dollars per million tokens, when the price table does not list the model (or your price differs).
    price: ModelPrice


class ModelClients:
    """The model a Stagehand was given (its client made at once: a bad model or a missing key fails
    at construction, not mid-flow), else the environment's, decided once by the library's one rule
    and made on first use; the environment's embedded model is made at once, so that it loads in
    the background (a file that cannot be used is still raised by the first verb)."""

    def __init__(self, model: ModelSpec | None, config: dict[str, Any]) -> None:
        self._config = config
        self.client: LLMClient | None = None
        self._default_choice: ModelChoice | None = None
        if model is not None:
            self.client = self.make(model)
        else:
            self._default_choice = default_model()
            if self._default_choice is not None and self._default_choice.model.startswith("local/"):
                try:
                    self.require()
                except ConfigurationError:
                    pass  # raised again by the verb that needs the model (for_call)
        self._start_loading()

    def _local_model(self) -> LocalModel | None:
        model = self.client.model if self.client is not None else None
        return model if isinstance(model, LocalModel) else None

    def _start_loading(self) -> None:
        """A local model: load it in the background now, with the verbs' one system prompt ready."""
        local = self._local_model()
        if local is not None:
            local.start_loading(fixed_prompt=preamble(Fence()))

    async def ready(self) -> ModelLoad:
        """Wait until the model can answer and say what its load took (a hosted model: at once);
        the no-model :class:`ConfigurationError` when there is none."""
        client = self.require()
        local = self._local_model()
        if local is None:
            return ModelLoad(client.model_name, 0.0, "off")
        return await local.ready()

    @property
    def model_name(self) -> str:
        """The chosen model's name ("" when there is none)."""
        if self.client is not None:
            return self.client.model_name
        return self._default_choice.model if self._default_choice is not None else ""

    @property
    def metrics(self) -> Metrics:
        """The model's usage (empty before a client is made)."""
        return self.client.metrics if self.client is not None else Metrics()

    @property
    def has_model(self) -> bool:
        return self.client is not None or self._default_choice is not None

    def make(self, model: ModelSpec) -> LLMClient:
        """A client for ``model`` with this Stagehand's options."""
        if isinstance(model, LLMClient):
            return model
        return LLMClient(model, **{k: v for k, v in self._config.items() if v is not None})

    def fallback(self, model: ModelSpec | None) -> LLMClient | None:
        """The agent's fallback client: built like the others, but it gets one attempt."""
        if model is None or isinstance(model, LLMClient):
            return model
        config = {k: v for k, v in self._config.items() if v is not None and k not in ("max_retries", "retry_policy")}
        return LLMClient(model, **config, max_retries=0)

    def require(self) -> LLMClient:
        """The client, made now for the environment's model; a :class:`ConfigurationError` saying
        how to configure a model when there is none."""
        if self.client is None:
            choice = self._default_choice
            if choice is None:
                raise ConfigurationError(self.missing())
            if choice.base_url and not self._config.get("base_url"):
                self._config["base_url"] = choice.base_url
            self.client = self.make(choice.model)
            self._start_loading()
        return self.client

    def for_call(self) -> tuple[LLMClient | None, str]:
        """A verb's client (None when no model is configured, or the environment's cannot be made)
        and what to tell the caller when the verb needs one."""
        if self.client is not None:  # made at construction when a model was given
            return self.client, ""
        try:
            return (self.require() if self.has_model else None), self.missing()
        except ConfigurationError as exc:
            return None, str(exc)

    def missing(self) -> str:
        if self._config.get("base_url"):
            return "base_url is set but no model name: pass model='openai/<model name on that server>' too."
        return (
            "observe(), extract() and act(<instruction>) need a model, and none is configured. Pass "
            "Stagehand(..., model='openai/gpt-4.1-mini') (or any 'provider/model', or a model object such as "
            "stagehand_py.testing.FunctionLLM), set OPENAI_API_KEY or ANTHROPIC_API_KEY, use a local "
            "OpenAI-compatible server with model='openai/<name>', base_url='http://localhost:11434/v1', or "
            f"install the embedded model, no key needed: `{FETCH_COMMAND}`. snapshot() and act(<Action>) work "
            "without one."
        )
