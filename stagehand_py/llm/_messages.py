"""One message type for every provider.

Later layers (observe, act, extract, agent) build conversations once, in these types; each
provider adapter translates them to its wire format. Images travel as raw bytes with a media
type so that no layer has to know whether a provider wants base64 or data URLs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "TextPart",
    "ImagePart",
    "ToolCallPart",
    "ToolResultPart",
    "PendingSafetyCheck",
    "SystemMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolMessage",
    "Message",
    "ImageMediaType",
    "coerce_messages",
    "message_text",
]

ImageMediaType: TypeAlias = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Frozen):
    """Plain text. ``secret=True`` keeps the text out of inference logs and error messages.

    The model still reads a secret part; only what the layer *writes down* is redacted.
    """

    type: Literal["text"] = "text"
    text: str
    secret: bool = False


class ImagePart(_Frozen):
    """An image as bytes (e.g. a PNG screenshot) with its media type."""

    type: Literal["image"] = "image"
    data: bytes
    media_type: ImageMediaType = "image/png"


class PendingSafetyCheck(_Frozen):
    """A safety check a provider attached to a tool call (OpenAI computer use): the caller must
    acknowledge it, by sending it back in :attr:`ToolResultPart.acknowledged_safety_checks`,
    before the call may run."""

    id: str
    code: str | None = None
    message: str | None = None


class ToolCallPart(_Frozen):
    """A tool call the assistant made (agent loops replay these in later turns).

    For a provider-defined tool (see :class:`~stagehand_py.llm.ComputerTool`) ``name`` is the
    tool's native name (``"computer"``) and ``arguments`` its native input (Anthropic's
    ``{"action": "left_click", "coordinate": [x, y]}``, OpenAI's ``{"type": "click", ...}``).
    """

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Checks the provider wants acknowledged before this call runs (OpenAI computer use).
    safety_checks: tuple[PendingSafetyCheck, ...] = ()


class ToolResultPart(_Frozen):
    """The answer to one :class:`ToolCallPart`, sent back in a :class:`ToolMessage`.

    ``content`` is text, or text and images (a computer-use screenshot travels here: Anthropic
    gets image blocks inside its ``tool_result``, OpenAI a ``computer_call_output`` whose
    screenshot is the first image).
    """

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    content: str | tuple[Annotated[TextPart | ImagePart, Field(discriminator="type")], ...]
    is_error: bool = False
    #: The call's :attr:`ToolCallPart.safety_checks` the caller approved (OpenAI computer use).
    acknowledged_safety_checks: tuple[PendingSafetyCheck, ...] = ()

    @property
    def text(self) -> str:
        """The text of the result (images left out)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, ImagePart))


UserPart: TypeAlias = Annotated[TextPart | ImagePart, Field(discriminator="type")]
AssistantPart: TypeAlias = Annotated[TextPart | ToolCallPart, Field(discriminator="type")]


def _with_content(content: str | Sequence[Any], data: dict[str, Any]) -> dict[str, Any]:
    """Keyword data for a message built positionally (``UserMessage("text")``) or by keyword."""
    if "content" not in data:
        data["content"] = (TextPart(text=content),) if isinstance(content, str) else tuple(content)
    return data


# Each message class declares its own positional-content ``__init__``: type checkers synthesise a
# keyword-only ``__init__`` for every pydantic model that does not, so the documented
# ``SystemMessage("...")`` would be rejected by mypy and pyright in users' code.


class SystemMessage(_Frozen):
    """Instructions that frame the whole conversation. ``SystemMessage("You are ...")``."""

    role: Literal["system"] = "system"
    content: tuple[TextPart, ...]

    def __init__(self, content: str | Sequence[TextPart] = (), /, **data: Any) -> None:
        super().__init__(**_with_content(content, data))


class UserMessage(_Frozen):
    """What the user (or the layer on its behalf) says: text and images.

    ``UserMessage("text")`` or ``UserMessage([TextPart(text=...), ImagePart(data=...)])``.
    """

    role: Literal["user"] = "user"
    content: tuple[UserPart, ...]

    def __init__(self, content: str | Sequence[TextPart | ImagePart] = (), /, **data: Any) -> None:
        super().__init__(**_with_content(content, data))


class AssistantMessage(_Frozen):
    """What the model said before: text and/or tool calls."""

    role: Literal["assistant"] = "assistant"
    content: tuple[AssistantPart, ...]

    def __init__(self, content: str | Sequence[TextPart | ToolCallPart] = (), /, **data: Any) -> None:
        super().__init__(**_with_content(content, data))


class ToolMessage(_Frozen):
    """Results of the assistant's tool calls."""

    role: Literal["tool"] = "tool"
    content: tuple[ToolResultPart, ...]

    def __init__(self, content: Sequence[ToolResultPart] = (), /, **data: Any) -> None:
        super().__init__(**_with_content(content, data))


Message: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


def coerce_messages(messages: str | Sequence[Any]) -> tuple[SystemMessage | UserMessage | AssistantMessage | ToolMessage, ...]:
    """Accept a bare string as one user message; reject anything that is not a message.

    Rejecting early gives a clear error here instead of a puzzling one in a provider adapter.
    """
    from .._errors import InvalidArgumentError

    if isinstance(messages, str):
        return (UserMessage(messages),)
    out: list[SystemMessage | UserMessage | AssistantMessage | ToolMessage] = []
    for i, m in enumerate(messages):
        if not isinstance(m, SystemMessage | UserMessage | AssistantMessage | ToolMessage):
            raise InvalidArgumentError(
                f"messages[{i}] is a {type(m).__name__}, not a message: build it with "
                "SystemMessage/UserMessage/AssistantMessage/ToolMessage from stagehand_py.llm."
            )
        out.append(m)
    if not out:
        raise InvalidArgumentError("messages is empty: pass at least one UserMessage.")
    return tuple(out)


def message_text(message: SystemMessage | UserMessage | AssistantMessage | ToolMessage) -> str:
    """The text parts of a message joined by newlines (images and tool calls left out)."""
    texts: list[str] = []
    for part in message.content:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolResultPart):
            texts.append(part.text)
    return "\n".join(texts)
