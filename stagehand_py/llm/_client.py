"""LLMClient: the one entry point every later layer uses to talk to a model.

It owns what must not differ between call sites: structured output and its validation with
bounded re-asks, transport retries, usage accounting and limits, the inference log and
redaction. A model string becomes a provider adapter in ``_providers/_factory.py``; the test
seams (kill switch, capture, cassettes) are wrappers composed around the model (``_hooks.py``).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

import httpx2
from pydantic import BaseModel

from .._errors import (
    ConfigurationError,
    InvalidArgumentError,
    LLMError,
    OutputValidationError,
    RefusalError,
    StagehandError,
)
from .._prompts.llm import reask_message
from .._secrets import Redactor
from .._usage import Metrics, Usage, UsageLimits
from ..tracing._spans import traced_model_request
from ._hooks import AtCassette, Capture, KillSwitch, is_test_double
from ._inference_log import InferenceLog
from ._messages import (
    AssistantMessage,
    Message,
    UserMessage,
    coerce_messages,
)
from ._pricing import USER_PRICE_SOURCE, ModelPrice, price_with_source
from ._profiles import OutputMode, Profile, Timing
from ._providers._factory import AzureTokenProvider, resolve_model
from ._request import LanguageModel, LLMRequest, ModelResponse, ProviderTool, estimate_input_tokens
from ._retry import RetryPolicy, call_with_retries
from ._structured import InvalidOutput, OutputSpec

__all__ = ["LLMClient", "GenerateResult"]

logger = logging.getLogger("stagehand_py")

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

@dataclass(frozen=True)
class GenerateResult(Generic[T]):
    """The validated answer of one :meth:`LLMClient.generate` call."""

    #: A pydantic instance (when ``output`` was a model class), plain data validated against
    #: the JSON Schema (when it was a dict), or the text (when it was ``None``).
    output: T
    #: Usage of this call, summed over re-asks (transport retries cost nothing).
    usage: Usage
    #: How many answers were requested: 1 plus the re-asks used.
    attempts: int
    model: str
    purpose: str
    #: The last raw answer as the model gave it (JSON text or tool arguments).
    raw: str | None = None


class _Step:
    """A client's own part of one request (:meth:`LLMClient._answer`), as the model its test seams wrap."""

    def __init__(self, client: LLMClient) -> None:
        self._client = client
        self.model_name = client.model_name
        self.is_test_double = is_test_double(client.model)

    async def request(self, request: LLMRequest) -> ModelResponse:
        return await self._client._answer(request)


class LLMClient:
    """Talks to one model with structured output, retries, re-asks and usage accounting.

    ``model`` is a ``"provider/model"`` string or any object implementing
    :class:`~stagehand_py.llm.LanguageModel` (including the doubles in
    :mod:`stagehand_py.testing`). All options are per instance: two clients never share
    keys, SDK clients or metrics.
    """

    def __init__(
        self,
        model: str | LanguageModel,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        output_mode: OutputMode | None = None,
        profile: Profile | None = None,
        max_reasks: int = 2,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        timeout: float | None = None,
        usage_limits: UsageLimits | None = None,
        inference_log_dir: str | os.PathLike[str] | None = None,
        secrets: Iterable[str] = (),
        http_client: httpx2.AsyncClient | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        choice_mode: bool | None = None,
        price: ModelPrice | None = None,
        api_version: str | None = None,
        azure_ad_token_provider: AzureTokenProvider | None = None,
    ) -> None:
        if max_reasks < 0:
            raise InvalidArgumentError(f"max_reasks must be 0 or more, not {max_reasks}.")
        if timeout is not None and timeout <= 0:
            raise InvalidArgumentError(f"timeout must be a positive number of seconds (or None: from the model's "
                                       f"profile), not {timeout}.")
        if isinstance(model, str):
            self._model: LanguageModel = resolve_model(
                model, api_key=api_key, base_url=base_url, timeout=timeout, profile=profile,
                output_mode=output_mode, http_client=http_client, api_version=api_version,
                azure_ad_token_provider=azure_ad_token_provider,
            )
            self._model_label = model
        elif callable(getattr(model, "request", None)):
            given = [n for n, v in (("api_key", api_key), ("base_url", base_url), ("output_mode", output_mode),
                                    ("profile", profile), ("http_client", http_client), ("api_version", api_version),
                                    ("azure_ad_token_provider", azure_ad_token_provider)) if v is not None]
            if given:
                raise ConfigurationError(
                    f"{', '.join(given)} configure model strings only; {type(model).__name__} is a model "
                    "object, so configure it directly."
                )
            self._model = model
            self._model_label = str(getattr(model, "model_name", type(model).__name__))
        else:
            raise ConfigurationError(
                f"model must be a 'provider/model' string or an object with `model_name` and "
                f"`async def request(request) -> ModelResponse`, not {type(model).__name__}."
            )
        if price is not None and not isinstance(price, ModelPrice):
            raise InvalidArgumentError(f"price must be a stagehand_py.llm.ModelPrice, not {type(price).__name__}.")
        # The user's price wins over the table; a model string's base_url decides local (free) or unknown.
        self._price_given = price is not None
        self._price, self._price_source = (price, USER_PRICE_SOURCE) if price is not None else price_with_source(
            self._model_label, base_url=base_url if isinstance(model, str) else None)
        if usage_limits is not None and usage_limits.max_cost_usd is not None and self._price is None:
            raise ConfigurationError(
                f"usage_limits.max_cost_usd needs the price of {self._model_label}, which the price table does not "
                "list: pass price=ModelPrice(input_per_million=..., output_per_million=...)."
            )
        self._max_reasks = max_reasks
        if max_retries is None:  # the model's profile knows whether repeating a request is worth it
            timing = getattr(getattr(self._model, "profile", None), "timing", None)
            max_retries = timing.max_retries if isinstance(timing, Timing) else RetryPolicy().max_retries
        self._retry = retry_policy or RetryPolicy(max_retries=max_retries)
        self._limits = usage_limits
        self._log = InferenceLog(inference_log_dir) if inference_log_dir is not None else None
        self._redactor = Redactor(secrets)
        self._max_output_tokens = max_output_tokens
        self._temperature = temperature
        self._choice_mode = choice_mode
        self._metrics = Metrics()
        # The test seams, composed once around the model (each reads its switch at request time):
        # the kill switch and the capture around the client's own step (retries, usage), and the
        # cassette around each transport attempt.
        self._attempt_model: LanguageModel = AtCassette(self._model, label=self._model_label)
        self._requests: LanguageModel = KillSwitch(Capture(_Step(self), label=self._model_label), label=self._model_label)

    def __repr__(self) -> str:
        return f"LLMClient({self._model_label!r})"

    async def aclose(self) -> None:
        """Close the provider's HTTP connections (model objects without ``aclose`` are left alone).

        ``async with LLMClient(...) as client:`` does this on exit.
        """
        close = getattr(self._model, "aclose", None)
        if callable(close):
            await close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def model(self) -> LanguageModel:
        """The model object requests go to (a provider adapter for model strings)."""
        return self._model

    @property
    def model_name(self) -> str:
        return self._model_label

    @property
    def choice_mode(self) -> bool:
        """Whether observe()/act() ask this model to choose among the page's element lines
        (see :attr:`Profile.choice_mode`): ``choice_mode=`` when given, else the model's profile."""
        if self._choice_mode is not None:
            return self._choice_mode
        profile = getattr(self._model, "profile", None)
        return bool(getattr(profile, "choice_mode", False))

    @property
    def price(self) -> ModelPrice | None:
        """Dollars per million tokens used for ``Usage.cost_usd`` (``None``: unknown)."""
        return self._price

    @property
    def price_source(self) -> str | None:
        """Where :attr:`price` came from (``None``: no price), also reported as ``Usage.cost_source``."""
        return self._price_source

    @property
    def metrics(self) -> Metrics:
        """Totals of this client, overall and per purpose."""
        return self._metrics

    @overload
    async def generate(
        self, messages: str | Sequence[Message], *, purpose: str = ..., output: type[M],
        secrets: Iterable[str] = ..., output_name: str | None = ..., max_reasks: int | None = ...,
        max_output_tokens: int | None = ..., temperature: float | None = ...,
        check: Callable[[Any], Sequence[str]] | None = ...,
    ) -> GenerateResult[M]: ...

    @overload
    async def generate(
        self, messages: str | Sequence[Message], *, purpose: str = ..., output: dict[str, Any],
        secrets: Iterable[str] = ..., output_name: str | None = ..., max_reasks: int | None = ...,
        max_output_tokens: int | None = ..., temperature: float | None = ...,
        check: Callable[[Any], Sequence[str]] | None = ...,
    ) -> GenerateResult[Any]: ...

    @overload
    async def generate(
        self, messages: str | Sequence[Message], *, purpose: str = ..., output: None = ...,
        secrets: Iterable[str] = ..., output_name: str | None = ..., max_reasks: int | None = ...,
        max_output_tokens: int | None = ..., temperature: float | None = ...,
        check: Callable[[Any], Sequence[str]] | None = ...,
    ) -> GenerateResult[str]: ...

    @overload
    async def generate(
        self, messages: str | Sequence[Message], *, purpose: str = ..., output: type[BaseModel] | dict[str, Any] | None,
        secrets: Iterable[str] = ..., output_name: str | None = ..., max_reasks: int | None = ...,
        max_output_tokens: int | None = ..., temperature: float | None = ...,
        check: Callable[[Any], Sequence[str]] | None = ...,
    ) -> GenerateResult[Any]: ...

    async def generate(
        self,
        messages: str | Sequence[Message],
        *,
        purpose: str = "generic",
        output: type[BaseModel] | dict[str, Any] | None = None,
        secrets: Iterable[str] = (),
        output_name: str | None = None,
        max_reasks: int | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        check: Callable[[Any], Sequence[str]] | None = None,
    ) -> GenerateResult[Any]:
        """Ask the model and return its validated answer.

        An answer that does not validate is sent back with the validation errors, at most
        ``max_reasks`` times; then :class:`OutputValidationError` carries the last answer.
        ``check`` judges an answer that fits the schema against what only the caller knows
        (e.g. ids the page really has): the problems it returns are re-asked the same way and
        count against the same ``max_reasks`` -- one loop, so re-asks never nest.
        ``secrets`` are redacted (with the client's own) from logs and error messages.
        """
        spec = OutputSpec.from_output(output, name=output_name)
        redactor = self._redactor.with_extra(secrets)
        conversation: list[Message] = list(coerce_messages(messages))
        reasks = self._max_reasks if max_reasks is None else max_reasks
        total = Usage()
        last_raw: Any = None
        last_errors: list[str] = []
        attempt = 0
        checked = False  # the last problems came from ``check``, not the schema
        try:
            for attempt in range(1, reasks + 2):
                request = LLMRequest(
                    messages=tuple(conversation),
                    purpose=purpose,
                    output_schema=spec.wire_schema,
                    output_name=spec.name,
                    attempt=attempt,
                    max_output_tokens=max_output_tokens if max_output_tokens is not None else self._max_output_tokens,
                    temperature=temperature if temperature is not None else self._temperature,
                )
                response = await self._call(request, redactor)
                total = total + response.usage
                raw = _raw_text(response)
                checked = False
                try:
                    value = spec.read(response)
                    checked = check is not None
                    problems = list(check(value)) if check is not None else []
                    if problems:
                        raise InvalidOutput(problems, raw if raw is not None else _as_json(value))
                except InvalidOutput as invalid:
                    last_raw, last_errors = invalid.raw, invalid.errors
                    logger.info(
                        "%s: %s answer %d %s (%d problems)%s",
                        self._model_label, purpose, attempt,
                        "names things the caller does not have" if checked else "did not validate",
                        len(invalid.errors), "; re-asking" if attempt <= reasks else "",
                    )
                    if attempt <= reasks:
                        self._metrics.record_reask()
                        conversation.append(AssistantMessage(raw or (last_raw if isinstance(last_raw, str) else "")))
                        conversation.append(UserMessage(reask_message(invalid.errors)))
                    continue
                return GenerateResult(
                    output=value, usage=total, attempts=attempt, model=response.model or self._model_label,
                    purpose=purpose, raw=raw,
                )
            shown = "; ".join(last_errors[:5])
            advice = ("Try a more specific instruction, a selector= to narrow the page, or a stronger model."
                      if checked else "Raise max_reasks, simplify the output schema, or use a stronger model.")
            raise OutputValidationError(
                f"{self._model_label} gave no valid {spec.name!r} output for {purpose!r} after {attempt} "
                f"attempt(s) ({reasks} re-ask(s)). Last problems: {shown}. {advice}",
                last_output=last_raw, attempts=attempt, usage=total, errors=last_errors,
            )
        except StagehandError as exc:
            self._metrics.record_failure()
            redactor.exception(exc)
            raise

    async def log_note(self, purpose: str, note: Mapping[str, Any], *, secrets: Iterable[str] = ()) -> None:
        """Add ``note`` to the inference log, when one is kept (``inference_log_dir``): what the
        caller made of the answers of a ``purpose`` call, e.g. the near misses it repaired.
        Redacted like the calls (the client's ``secrets`` and these)."""
        if self._log is not None:
            await self._log.write_note(model=self._model_label, purpose=purpose, note=dict(note),
                                       redactor=self._redactor.with_extra(secrets))

    async def turn(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ProviderTool],
        purpose: str = "generic",
        previous_response_id: str | None = None,
        secrets: Iterable[str] = (),
        max_output_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ModelResponse:
        """One turn of a tool-using conversation with provider-defined ``tools`` (e.g.
        :class:`~stagehand_py.llm.ComputerTool`): the answer's ``tool_calls`` and ``text``, as the
        model gave them (no output schema, no re-asks).

        Retries, usage limits and metrics, the kill switch, capture, the inference log and
        redaction of ``secrets`` are those of :meth:`generate`. ``previous_response_id``
        continues a stored conversation (OpenAI Responses API; pass only the new messages).
        An explicit refusal is a :class:`RefusalError`.
        """
        if not tools:
            raise InvalidArgumentError("turn() needs at least one tool; use generate() for a plain answer.")
        redactor = self._redactor.with_extra(secrets)
        request = LLMRequest(
            messages=coerce_messages(messages),
            purpose=purpose,
            tools=tuple(tools),
            previous_response_id=previous_response_id,
            max_output_tokens=max_output_tokens if max_output_tokens is not None else self._max_output_tokens,
            temperature=temperature if temperature is not None else self._temperature,
        )
        try:
            response = await self._call(request, redactor)
            if response.refusal:
                raise RefusalError(f"{self._model_label} refused the {purpose!r} turn: {redactor.text(response.refusal)}")
        except StagehandError as exc:
            self._metrics.record_failure()
            redactor.exception(exc)
            raise
        return response

    async def _call(self, request: LLMRequest, redactor: Redactor) -> ModelResponse:
        """One answer from the model: the usage limits, then the test seams around this client's
        own step (:meth:`_answer`), then the metrics and the log (redacted with the call's secrets)."""
        if self._limits is not None:
            estimate = estimate_input_tokens(request)
            self._limits.check_before(
                self._metrics.total, next_input_estimate=estimate,
                next_cost_estimate=None if self._price is None else self._price.cost(input_tokens=estimate, output_tokens=0),
            )
        try:
            response = await self._requests.request(request)
        except Exception as exc:
            redactor.exception(exc)  # in place: the capture and the caller hold this same error
            if self._log is not None:
                await self._log.write(model=self._model_label, request=request, response=None, error=exc, redactor=redactor)
            raise
        self._metrics.record(request.purpose, response.usage)
        if self._log is not None:
            await self._log.write(model=self._model_label, request=request, response=response, error=None, redactor=redactor)
        return response

    async def _answer(self, request: LLMRequest) -> ModelResponse:
        """Retries of traced attempts, each through the cassette seam; the answer's usage and cost."""
        model = self._attempt_model

        async def once() -> ModelResponse:
            try:
                return await model.request(request)
            except StagehandError:
                raise
            except Exception as exc:  # a user's model raised something of its own (redacted by _call)
                raise LLMError(f"model {self._model_label} raised {type(exc).__name__}: {exc}") from exc

        started = time.perf_counter()
        response = await call_with_retries(
            traced_model_request(once, model=self._model_label, request=request),
            policy=self._retry,
            describe=f"{self._model_label} {request.purpose} request",
            on_retry=lambda _exc, _wait: self._metrics.record_retry(),
        )
        if not isinstance(response, ModelResponse):
            raise LLMError(
                f"model {self._model_label} returned {type(response).__name__} from request(); "
                "it must return a stagehand_py.llm.ModelResponse."
            )
        usage = response.usage.model_copy(update={
            "requests": max(response.usage.requests, 1),
            "wall_ms": response.usage.wall_ms or (time.perf_counter() - started) * 1000,
            "cost_usd": self._cost_of(response.usage),
            "cost_source": self._cost_source_of(response.usage),
        })
        return response.model_copy(update={"usage": usage})

    def _cost_of(self, usage: Usage) -> float | None:
        # A model object that reports its own bill (set cost_usd explicitly) is believed unless
        # the user gave a price.
        if "cost_usd" in usage.model_fields_set and not self._price_given:
            return usage.cost_usd
        if self._price is None:
            return None
        return self._price.cost(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                                cached_tokens=usage.cached_tokens)


    def _cost_source_of(self, usage: Usage) -> str | None:
        if "cost_usd" in usage.model_fields_set and not self._price_given:
            return usage.cost_source or f"reported by the model object {self._model_label}"
        return self._price_source if self._price is not None else None


def _as_json(value: Any) -> str:
    """An answer as JSON text, to show the model what it said when the transport gave no raw text."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(data, ensure_ascii=False, default=str)


def _raw_text(response: ModelResponse) -> str | None:
    if response.text is not None:
        return response.text
    if response.output is None:
        return None
    if isinstance(response.output, BaseModel):
        return response.output.model_dump_json()
    return json.dumps(response.output, default=str)
