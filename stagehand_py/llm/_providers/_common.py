"""What the provider adapters share: status-to-error mapping and the SDK-client cache.

Each adapter translates its SDK's exceptions in one function; the status codes mean the same
for every HTTP provider, so the class for a status and the advice in the message are here.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from ..._errors import (
    AuthenticationError,
    BadRequestError,
    InvalidArgumentError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
    StagehandError,
)
from ..._usage import Usage
from .._hooks import active_transport
from .._messages import ImagePart, ToolResultPart
from .._profiles import Profile
from .._request import LLMRequest, ModelResponse, estimate_input_tokens

__all__ = [
    "HTTPProviderModel",
    "status_error",
    "connection_error",
    "timeout_error",
    "malformed_response_error",
    "env_var_for",
    "key_env_vars",
    "own_error",
    "unsupported_tool_error",
    "add_turn",
]

_ADVICE: dict[type[ProviderError], str] = {
    AuthenticationError: "Check the API key (argument api_key= or the {env} environment variable) and its permissions for this model.",
    BadRequestError: "The provider rejected the request: check the model name, and that the output schema is one this model accepts.",
    RateLimitError: "Rate limited and the retries ran out: lower the concurrency, or raise max_retries.",
    ServerError: "The provider failed and the retries ran out: try again later or use another model.",
    ProviderConnectionError: "Check base_url and the network, or raise timeout=.",
}


#: The environment variables a provider's key is read from, in order (the first one is named in messages).
_KEY_ENV_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    # Google's SDK reads both names; GEMINI_API_KEY is the one its docs lead with.
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "azure": ("AZURE_OPENAI_API_KEY",),
}


def env_var_for(provider: str) -> str:
    return key_env_vars(provider)[0]


def key_env_vars(provider: str) -> tuple[str, ...]:
    return _KEY_ENV_VARS.get(provider, (f"{provider.upper()}_API_KEY",))


def _class_for(status: int) -> type[ProviderError]:
    if status in (401, 403):
        return AuthenticationError
    if status == 429:
        return RateLimitError
    if status == 408:
        return ProviderConnectionError
    if status >= 500 or status == 409:
        return ServerError
    return BadRequestError


def _detail(body: Any, fallback: str) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(message := err.get("message"), str):
            return message
        if isinstance(err, str):
            return err
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


def status_error(*, provider: str, model: str, status: int, body: Any, fallback: str,
                 kind: type[ProviderError] | None = None) -> ProviderError:
    """The error for an HTTP error answer, with the provider's own words and what to do
    (``kind`` when the body says more than the status, e.g. Gemini's 400 for a bad key)."""
    cls = kind or _class_for(status)
    advice = _ADVICE[cls].format(env=env_var_for(provider))
    message = f"{provider} model {model!r} answered HTTP {status}: {_detail(body, fallback)}. {advice}"
    return cls(message, provider=provider, model=model, status=status, body=body)


def connection_error(*, provider: str, model: str, timed_out: bool, detail: str) -> ProviderConnectionError:
    what = "timed out" if timed_out else "could not connect"
    return ProviderConnectionError(
        f"{provider} model {model!r}: the request {what} ({detail}). {_ADVICE[ProviderConnectionError]}",
        provider=provider,
        model=model,
    )


def timeout_error(*, provider: str, model: str, waited: float, input_tokens: int, profile: Profile,
                  given: float | None) -> ProviderConnectionError:
    """A request with no answer in time: what took how long, where the bound came from, what to change."""
    timing = profile.timing
    if given is not None:
        origin = "the timeout= you gave"
        advice = "raise timeout=, or pass timeout=None to let the model's profile scale the bound with the prompt"
    else:
        origin = f"the model's profile: {timing.describe()}"
        advice = ("if the model is on a slow CPU, give it longer: timeout=<seconds>, or "
                  "profile=Profile(timing=Timing(prompt_tokens_per_second=<slower>, ...))")
    cancelled = " The request was cancelled (its connection closed) so the server frees its slot." if timing.single_slot else ""
    return ProviderConnectionError(
        f"{provider} model {model!r} timed out: no answer within {waited:.3g} s to a prompt of about "
        f"{input_tokens:,} tokens (the bound comes from {origin}).{cancelled} Either {advice}; or send less: a smaller "
        "Stagehand(token_budget=...) or a selector= to scope the page.",
        provider=provider,
        model=model,
    )


def malformed_response_error(*, provider: str, model: str, status: int | None, body: Any, detail: str) -> ServerError:
    """A 2xx answer we cannot read (not JSON, or not the expected shape): retried like a 5xx."""
    shown = body if isinstance(body, str) else json.dumps(body, default=str)[:500]
    return ServerError(
        f"{provider} model {model!r} answered with a malformed response ({detail}): {shown[:300]!r}. "
        "If base_url points at an OpenAI-compatible server, check that it implements this endpoint.",
        provider=provider,
        model=model,
        status=status,
        body=body,
    )


def unsupported_tool_error(*, provider: str, model: str, tool: Any, known: list[str]) -> InvalidArgumentError:
    """A provider-defined tool this adapter cannot send (raised before any request)."""
    return InvalidArgumentError(
        f"{provider} model {model!r} cannot be offered the tool {tool!r}: this adapter sends "
        f"{', '.join(known)}. Use stagehand_py.llm.ComputerTool with one of those versions."
    )


def _has_images(request: LLMRequest) -> bool:
    for message in request.messages:
        for part in message.content:
            if isinstance(part, ImagePart) or (isinstance(part, ToolResultPart) and part.images):
                return True
    return False


def own_error(exc: BaseException) -> StagehandError | None:
    """Our own error raised below the SDK (e.g. a cassette miss in the transport).

    The SDKs wrap transport exceptions as connection errors; unwrapping keeps the real
    message (and keeps such errors from being retried as network trouble).
    """
    seen: set[int] = set()
    current: BaseException | None = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen:
        if isinstance(current, StagehandError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class HTTPProviderModel:
    #: Cassettes record this model's HTTP traffic (through the SDK), not its answers.
    records_over_http = True

    """What the provider adapters share: configuration, the lazily made SDK client (one per
    active cassette transport), and the request template whose ``except`` clause is the one
    place SDK errors are translated.

    Subclasses give the SDK-specific parts: ``_sdk_class``, the SDK's error classes, ``build_params``, ``_create``,
    ``_translate``, ``_parse`` and ``_sdk_errors``.
    """

    provider: str = ""
    _sdk_class: Any = None
    _sdk_errors: tuple[type[BaseException], ...] = ()
    _timeout_error: type[BaseException] = TimeoutError
    _connection_error: type[BaseException] = ConnectionError
    _status_error: type[BaseException] = Exception

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str,
        base_url: str | None,
        timeout: float | None,
        profile: Profile,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.model_name = model_name
        self.profile = profile
        self._api_key = api_key
        self._base_url = base_url
        #: The user's fixed bound per request; None: the profile's, scaled to each prompt.
        self._timeout = timeout
        self._http_client = http_client
        self._clients: dict[int, Any] = {}

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}({self.model_name!r}, base_url={self._base_url!r}, mode={self.profile.output_mode!r})"

    def _sdk(self) -> Any:
        """The SDK client, made on first use (no I/O objects at construction time).

        While a cassette is active (see :mod:`stagehand_py.testing`), requests go through its
        transport instead of the network.
        """
        transport = active_transport.get()
        key = id(transport) if transport is not None else 0
        client = self._clients.get(key)
        if client is None:
            http_client = self._http_client
            if transport is not None:
                http_client = httpx2.AsyncClient(transport=transport, timeout=self._default_timeout())
            client = self._make_sdk(http_client)
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        """Close the SDK clients (and their connection pools) this adapter made."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            close = getattr(client, "aclose", None) or client.close  # google-genai's async client: aclose()
            await close()

    async def request(self, request: LLMRequest) -> ModelResponse:
        if not self.profile.supports_images and _has_images(request):
            raise InvalidArgumentError(
                f"{self.provider} model {self.model_name!r} is configured without image support "
                "(profile.supports_images=False) but the request has images: drop them, or pass "
                "profile=Profile(..., supports_images=True) if the model can see."
            )
        params = self.build_params(request)
        input_tokens = estimate_input_tokens(request)
        timeout = self.request_timeout(request, input_tokens=input_tokens)
        try:
            # A timed-out call leaves the SDK's HTTP stack with its connection closed (httpcore
            # drops a connection whose response was not read to the end), which is what makes a
            # single-slot server (llama.cpp) abort the abandoned answer before a retry arrives.
            raw = await self._create({**params, "timeout": timeout})
        except (*self._sdk_errors, json.JSONDecodeError) as exc:  # type: ignore[misc]  # mypy can't see a starred tuple of exception types
            own = own_error(exc)
            if own is not None:
                raise own from None
            if isinstance(exc, self._timeout_error):
                raise timeout_error(provider=self.provider, model=self.model_name, waited=timeout,
                                    input_tokens=input_tokens, profile=self.profile, given=self._timeout) from exc
            raise self._translate(exc) from exc
        return self._parse(raw, request)

    def request_timeout(self, request: LLMRequest, *, input_tokens: int | None = None) -> float:
        """Seconds this request may take: the user's ``timeout=``, else the profile's bound for
        its size (a CPU model reading a long prompt is computing, not hung)."""
        if self._timeout is not None:
            return self._timeout
        tokens = estimate_input_tokens(request) if input_tokens is None else input_tokens
        return self.profile.timing.seconds_for(
            input_tokens=tokens, max_output_tokens=request.max_output_tokens or self.profile.max_output_tokens)

    def _default_timeout(self) -> float:
        return self._timeout if self._timeout is not None else self.profile.timing.base_seconds

    def _translate(self, exc: BaseException) -> ProviderError:
        """SDK error to ours: status, provider, model and body kept; the caller chains it."""
        if isinstance(exc, self._timeout_error):
            return connection_error(provider=self.provider, model=self.model_name, timed_out=True, detail="no answer within the timeout")
        if isinstance(exc, self._connection_error):
            cause = exc.__cause__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return connection_error(provider=self.provider, model=self.model_name, timed_out=False, detail=detail)
        if isinstance(exc, self._status_error):
            return status_error(
                provider=self.provider, model=self.model_name, status=getattr(exc, "status_code", 0),
                body=getattr(exc, "body", None), fallback=str(exc),
            )
        if isinstance(exc, json.JSONDecodeError):  # a 2xx body that is not JSON
            return malformed_response_error(
                provider=self.provider, model=self.model_name, status=None, body=None, detail=f"{type(exc).__name__}: {exc}"
            )
        return ProviderError(
            f"{self.provider} model {self.model_name!r}: {type(exc).__name__}: {exc}",
            provider=self.provider,
            model=self.model_name,
        )

    # -- per SDK ---------------------------------------------------------------------------

    def _make_sdk(self, http_client: httpx2.AsyncClient | None) -> Any:
        # api_key is always passed, so the SDK reads no credential env vars or files itself.
        return self._sdk_class(
            api_key=self._api_key,
            base_url=self._base_url,
            timeout=self._default_timeout(),  # each request passes its own bound; this one is never used alone
            max_retries=0,  # tenacity in _retry.py is the only retry loop
            http_client=http_client,
        )

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        raise NotImplementedError

    async def _create(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _parse(self, raw: Any, request: LLMRequest) -> ModelResponse:
        raise NotImplementedError


def add_turn(turns: list[dict[str, Any]], role: str, items: list[dict[str, Any]], *, key: str = "content") -> None:
    """Append a turn, merged into the last one when it has the same role: Anthropic's and
    Gemini's APIs want the roles to alternate (tool results travel in user turns)."""
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})


def openai_usage(raw: Any, *, prompt: str = "prompt", completion: str = "completion") -> Usage:
    """Usage from an OpenAI usage object. Chat completions name the two sides ``prompt`` /
    ``completion``, the Responses API ``input`` / ``output``; the shape is otherwise the same."""
    if raw is None:
        return Usage(requests=1)
    prompt_details = getattr(raw, f"{prompt}_tokens_details", None)
    completion_details = getattr(raw, f"{completion}_tokens_details", None)
    return Usage(
        requests=1,
        input_tokens=getattr(raw, f"{prompt}_tokens", 0) or 0,
        output_tokens=getattr(raw, f"{completion}_tokens", 0) or 0,
        cached_tokens=(getattr(prompt_details, "cached_tokens", 0) or 0) if prompt_details else 0,
        reasoning_tokens=(getattr(completion_details, "reasoning_tokens", 0) or 0) if completion_details else 0,
    )
