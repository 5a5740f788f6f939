"""What a model can do, decided once per model instead of per call site.

Structured output has three mechanisms and servers support different subsets: forced tool
calls, a native JSON-schema response format, or just the schema written into the prompt.
The profile picks one; users can override it when they know their server better.
"""

from __future__ import annotations

import ipaddress
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Profile",
    "OutputMode",
    "ResponseFormat",
    "Timing",
    "default_profile",
    "is_loopback_url",
    "llama_cpp_server_profile",
    "LOCAL_TIMING",
]

OutputMode: TypeAlias = Literal["tools", "json_schema", "prompted"]
#: How a ``json_schema``-mode request carries the schema on an OpenAI-compatible wire.
ResponseFormat: TypeAlias = Literal["json_schema", "json_object"]


class Timing(BaseModel):
    """How long one request may take before it counts as hung, and what a timeout means.

    A hosted model answers in seconds whatever the prompt; a CPU model reads maybe 15-55 prompt
    tokens a second, so a fixed cut either fires while it is still computing or never fires at
    all. The bound is ``base_seconds`` plus the prompt at ``prompt_tokens_per_second`` plus the
    answer at ``output_tokens_per_second`` (each rate the *slowest* speed to allow for; ``None``
    leaves that part out).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_seconds: float = Field(default=60.0, gt=0)
    prompt_tokens_per_second: float | None = Field(default=None, gt=0)
    output_tokens_per_second: float | None = Field(default=None, gt=0)
    #: The server answers one request at a time (llama.cpp with one slot, the in-process model):
    #: a timed-out request is cancelled (its connection closed, so the server frees the slot)
    #: before any retry, so a retry never queues behind the abandoned answer.
    single_slot: bool = False
    #: Retries of a failed request (timeouts, 5xx, dropped connections) when the client is not
    #: given ``max_retries=``/``retry_policy=``. A slow local model gains little from repeating
    #: a long request, so local profiles retry once.
    max_retries: int = Field(default=3, ge=0)

    def seconds_for(self, *, input_tokens: int, max_output_tokens: int) -> float:
        """The bound for a request of about ``input_tokens`` that may write ``max_output_tokens``."""
        seconds = self.base_seconds
        if self.prompt_tokens_per_second is not None:
            seconds += max(0, input_tokens) / self.prompt_tokens_per_second
        if self.output_tokens_per_second is not None:
            seconds += max(0, max_output_tokens) / self.output_tokens_per_second
        return seconds

    def describe(self) -> str:
        """The rule in words, for error messages."""
        parts = [f"{self.base_seconds:g} s"]
        if self.prompt_tokens_per_second is not None:
            parts.append(f"the prompt at {self.prompt_tokens_per_second:g} tokens/s")
        if self.output_tokens_per_second is not None:
            parts.append(f"the answer at {self.output_tokens_per_second:g} tokens/s")
        return " + ".join(parts)


#: A model on this machine's CPU (in-process, or a llama.cpp/Ollama server on loopback): allow
#: for a loaded 2-core machine (about a quarter of the ~55 prompt / ~15 output tokens a second
#: measured here), so a 5,000-token prompt gets ~9 minutes, a 1,000-token one ~2.
LOCAL_TIMING = Timing(base_seconds=30.0, prompt_tokens_per_second=12.0, output_tokens_per_second=4.0,
                      single_slot=True, max_retries=1)


class Profile(BaseModel):
    """Capabilities of one model, as far as this layer needs them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: ``tools``: force one tool call whose arguments are the answer; ``json_schema``: the
    #: provider's native structured-output format; ``prompted``: schema in the prompt, JSON
    #: parsed from the text (for servers that support neither).
    output_mode: OutputMode = "json_schema"
    #: Ask the provider to enforce the schema strictly (OpenAI ``strict: true``). Off by
    #: default: strict mode rejects ordinary schemas (optional fields, open objects), and the
    #: client validates every answer anyway.
    strict_schema: bool = False
    #: When False, a request with images fails before it is sent (instead of the server
    #: rejecting it, or silently ignoring the images).
    supports_images: bool = True
    #: Upper bound for the answer; Anthropic requires one on every request.
    max_output_tokens: int = Field(default=4096, gt=0)
    #: ``json_schema`` mode on an OpenAI-compatible server: ``"json_schema"`` sends OpenAI's
    #: ``{"type": "json_schema", "json_schema": {...}}``; ``"json_object"`` sends
    #: ``{"type": "json_object", "schema": {...}}``, the form ``llama_cpp.server`` accepts (it
    #: answers HTTP 500 to the other one) and turns into a grammar.
    response_format: ResponseFormat = "json_schema"
    #: observe()/act() answer by choosing among the page's actionable elements (an enum of
    #: lines such as ``"button: Log in [0-11]"``) instead of writing an element id: far more
    #: reliable for small models. On by default for ``local/`` models.
    choice_mode: bool = False
    #: How long a request may take, and whether a timed-out one must be cancelled before a retry.
    timing: Timing = Timing()


def default_profile(provider: str, model_name: str, *, base_url: str | None) -> Profile:
    """The profile for a model string when the user picks none.

    - OpenAI's own API: native JSON schema (supported by gpt-4o and later, o-series);
      older ``gpt-3.5``/``gpt-4`` models fall back to tool calling.
    - An OpenAI-compatible server (``base_url`` given): prompted JSON, the one mode every
      such server (Ollama, llama.cpp, vLLM, LM Studio) handles.
    - Anthropic: a forced tool call, the long-standing structured-output path.
    - Google (Gemini) and Azure OpenAI: the native JSON-schema format.

    A local model (``local/``, or a server on a loopback address) gets :data:`LOCAL_TIMING`: its
    time bound grows with the prompt, and a timed-out request is cancelled before a retry.
    """
    if provider == "anthropic":
        return Profile(output_mode="tools")
    if provider in ("google", "azure"):
        # Gemini: responseJsonSchema (JSON mode with a schema); an Azure deployment: OpenAI's
        # json_schema response format (API versions from 2024-08-01 on). base_url here is the
        # provider's endpoint or a proxy, not a model on this machine.
        return Profile(output_mode="json_schema")
    if provider == "local":
        # In-process llama.cpp: the schema becomes a grammar, so every answer is valid JSON.
        return Profile(output_mode="json_schema", choice_mode=True, supports_images=False, max_output_tokens=1024,
                       timing=LOCAL_TIMING)
    if base_url is not None:
        return Profile(output_mode="prompted", timing=LOCAL_TIMING if is_loopback_url(base_url) else Timing())
    name = model_name.lower()
    if name.startswith(("gpt-3.5", "gpt-4-", "gpt-4")) and not name.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5")):
        return Profile(output_mode="tools")
    return Profile(output_mode="json_schema")


def llama_cpp_server_profile(*, choice_mode: bool = True) -> Profile:
    """The profile for ``llama_cpp.server`` (llama-cpp-python's OpenAI-compatible server).

    It constrains answers with a grammar built from ``{"type": "json_object", "schema": ...}``
    and answers HTTP 500 to OpenAI's ``json_schema`` form. ``choice_mode`` is on because such a
    server usually runs a small model; pass ``choice_mode=False`` for a large one.
    """
    return Profile(output_mode="json_schema", response_format="json_object", choice_mode=choice_mode,
                   supports_images=False, max_output_tokens=1024, timing=LOCAL_TIMING)


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost``, ``127.x``, ``::1``): a server there
    is most likely a model on this machine's CPU or GPU, not a hosted API."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
