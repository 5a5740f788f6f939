"""What a model can do, decided once per model instead of per call site.

Structured output has three mechanisms and servers support different subsets: forced tool
calls, a native JSON-schema response format, or just the schema written into the prompt.
The profile picks one; users can override it when they know their server better.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Profile", "OutputMode", "default_profile"]

OutputMode: TypeAlias = Literal["tools", "json_schema", "prompted"]


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
    if base_url is not None:
        return Profile(output_mode="prompted")
    name = model_name.lower()
    if name.startswith(("gpt-3.5", "gpt-4-", "gpt-4")) and not name.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5")):
        return Profile(output_mode="tools")
    return Profile(output_mode="json_schema")
