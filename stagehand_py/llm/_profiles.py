"""What a model can do, decided once per model instead of per call site.

Structured output has three mechanisms and servers support different subsets: forced tool
calls, a native JSON-schema response format, or just the schema written into the prompt.
The profile picks one; users can override it when they know their server better.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Profile", "OutputMode", "ResponseFormat", "default_profile", "llama_cpp_server_profile"]

OutputMode: TypeAlias = Literal["tools", "json_schema", "prompted"]
#: How a ``json_schema``-mode request carries the schema on an OpenAI-compatible wire.
ResponseFormat: TypeAlias = Literal["json_schema", "json_object"]


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


def default_profile(provider: str, model_name: str, *, base_url: str | None) -> Profile:
    """The profile for a model string when the user picks none.

    - OpenAI's own API: native JSON schema (supported by gpt-4o and later, o-series);
      older ``gpt-3.5``/``gpt-4`` models fall back to tool calling.
    - An OpenAI-compatible server (``base_url`` given): prompted JSON, the one mode every
      such server (Ollama, llama.cpp, vLLM, LM Studio) handles.
    - Anthropic: a forced tool call, the long-standing structured-output path.
    """
    if provider == "anthropic":
        return Profile(output_mode="tools")
    if provider == "local":
        # In-process llama.cpp: the schema becomes a grammar, so every answer is valid JSON.
        return Profile(output_mode="json_schema", choice_mode=True, supports_images=False, max_output_tokens=1024)
    if base_url is not None:
        return Profile(output_mode="prompted")
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
                   supports_images=False, max_output_tokens=1024)
