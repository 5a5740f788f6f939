"""What observe, act and extract share: the operation context, budgeting, relevance ranking,
redaction of variable values, id checking and the re-ask loop for answers that validate
against the schema but name things the page does not have.

Pure helpers (no I/O) are tested without a browser in tests/operations/test_pure.py.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from .._actions import secret_values
from .._cache import ElementIdentity
from .._errors import OutputValidationError
from .._prompts.llm import prompted_json_instructions, reask_message
from .._secrets import SHORT_VALUE, redact_text
from .._types import Action, VariableValue
from ..llm import (
    AssistantMessage,
    ImagePart,
    LLMClient,
    Message,
    SystemMessage,
    TextPart,
    UserMessage,
)
from ..llm._structured import OutputSpec
from ..snapshot import OutlineChunk, Snapshot, estimate_tokens, split_outline

__all__ = [
    "SHORT_VALUE",
    "OperationContext",
    "ask",
    "chunk_budget",
    "drop_ids",
    "example_id",
    "element_id",
    "new_lines",
    "rank_chunks",
    "redact_text",
    "to_action",
]

logger = logging.getLogger("stagehand_py._operations")

T = TypeVar("T")

#: Re-asks for answers that fit the schema but are wrong for the page (unknown ids, bad URLs).
MAX_CHECK_REASKS = 2
#: Tokens kept free in every request for the model's answer echoed back on a re-ask and the
#: re-ask message itself (the budget bounds the prompt, re-asks included).
_REASK_RESERVE_MIN = 300
_ID = re.compile(r"^\[?\s*(\d+-\d+)\s*\]?$")


@dataclass
class OperationContext:
    """Everything an operation needs from its Stagehand, without the Stagehand itself."""

    page: Any
    snapshot: Callable[..., Awaitable[Snapshot]]
    get_client: Callable[[], LLMClient]
    has_model: Callable[[], bool]
    token_budget: int
    dom_settle_timeout: float
    self_heal: bool
    cache: Any = None
    #: Every variable seen by this Stagehand (name -> spec); their values are redacted from
    #: all page text sent to the model, also in later calls that pass no variables.
    known_variables: dict[str, VariableValue] = field(default_factory=dict)
    #: ``time.monotonic()`` by which the verb must finish (its ``timeout=``), or None.
    deadline: float | None = None
    #: selector -> identity (role, name) of the element in the snapshot each action of this
    #: call was chosen from; written to the action cache with the actions.
    identities: dict[str, ElementIdentity] = field(default_factory=dict)

    def action_timeout(self, wanted: float) -> float:
        """``wanted`` seconds, shortened so the executor gives up (with a precise error) before the verb times out."""
        if self.deadline is None:
            return wanted
        return max(0.1, min(wanted, self.deadline - time.monotonic() - 0.3))

    def secrets(self) -> list[str]:
        return secret_values(self.known_variables)


# --- budgeting ------------------------------------------------------------------------------


def prompt_tokens(messages: Sequence[Message], output: type[BaseModel] | dict[str, Any] | None) -> int:
    """Estimated prompt tokens of a request: message texts plus the schema as sent (worst mode)."""
    from ..llm._messages import message_text

    text = "\n".join(message_text(m) for m in messages)
    spec = OutputSpec.from_output(output)
    if spec.wire_schema is not None:
        text += prompted_json_instructions(spec.wire_schema)
    return estimate_tokens(text)


def reask_reserve(token_budget: int) -> int:
    """Tokens every request keeps free for re-asks (see :data:`_REASK_RESERVE_MIN`)."""
    return max(_REASK_RESERVE_MIN, token_budget // 10)


def chunk_budget(token_budget: int, overhead_messages: Sequence[Message], output: Any, *, extra_reserve: int = 0,
                 choice: bool = False) -> int:
    """Tokens left for page content once the fixed text, schema and re-ask reserve are counted.

    ``choice``: the client is in choice mode, where the chunk's actionable lines are repeated
    as choices (in the message and in the schema), so the chunk gets a third of what is left.
    """
    reserve = reask_reserve(token_budget) + extra_reserve
    left = token_budget - prompt_tokens(overhead_messages, output) - reserve
    if choice:
        left //= 3
    if left < 200:
        from .._errors import ConfigurationError

        raise ConfigurationError(
            f"token_budget={token_budget} leaves {left} tokens for page content after the prompt and schema "
            f"({prompt_tokens(overhead_messages, output)} tokens) and the re-ask reserve; raise token_budget "
            "(e.g. 16000) or simplify the schema."
        )
    return left


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or", "the", "this", "that", "to", "with", "click", "type", "fill", "press", "select", "enter", "find", "get", "all", "any", "page", "element", "elements", "button", "field"]
)


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP]


def rank_chunks(chunks: Sequence[OutlineChunk], instruction: str | None) -> list[OutlineChunk]:
    """Chunks by lexical relevance to ``instruction`` (TF-IDF over words), best first.

    Ties, and every chunk when the instruction has no useful word, keep page order, so the
    top of the page wins when nothing else decides.
    """
    terms = set(_terms(instruction or ""))
    if not terms or len(chunks) <= 1:
        return list(chunks)
    counted = [{t: c for t in terms if (c := len(re.findall(rf"\b{re.escape(t)}", chunk.text.lower())))} for chunk in chunks]
    n = len(chunks)
    df = {t: sum(1 for c in counted if t in c) for t in terms}
    idf = {t: math.log(1 + n / (1 + df[t])) for t in terms}
    scores = [sum(math.log(1 + c) * idf[t] for t, c in found.items()) for found in counted]
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [chunks[i] for i in order]


def pieces(snapshot_tree: str, budget: int) -> list[OutlineChunk]:
    """The outline as one piece when it fits, else its chunks."""
    if estimate_tokens(snapshot_tree) <= budget:
        return [OutlineChunk(0, snapshot_tree, estimate_tokens(snapshot_tree), 0, snapshot_tree.count("\n"), 0)]
    return split_outline(snapshot_tree, budget)


# --- outline text ----------------------------------------------------------------------------


def _line_id(line: str) -> str | None:
    m = re.match(r"^\s*\[(\d+-\d+)\]", line)
    return m.group(1) if m else None


def drop_ids(tree: str, ids: Iterable[str]) -> str:
    """The outline without the lines of ``ids`` (used for ``ignore_selectors``)."""
    gone = set(ids)
    return "\n".join(line for line in tree.split("\n") if _line_id(line) not in gone)


def new_lines(before: str, after: str) -> str:
    """Lines of ``after`` whose element is new or changed since ``before`` (indent kept relative)."""
    old = {line.strip() for line in before.split("\n")}
    added = [line for line in after.split("\n") if line.strip() and line.strip() not in old]
    if not added:
        return ""
    base = min(len(line) - len(line.lstrip(" ")) for line in added)
    return "\n".join(line[base:] for line in added)


# --- answers -----------------------------------------------------------------------------------


def element_id(raw: str, snapshot: Snapshot) -> str | None:
    """The snapshot id the model meant by ``raw`` ('0-42', '[0-42]'), or None if it has none."""
    m = _ID.match(raw.strip()) if isinstance(raw, str) else None
    if m and m.group(1) in snapshot.xpath_map:
        return m.group(1)
    return None


def example_id(snapshot: Snapshot) -> str:
    """``", e.g. '<id>'"`` with an id this page really has, or "" for an empty page.

    An example id in a prompt must come from the page itself: a small model copies a made-up
    example ('0-42') instead of reading the outline.
    """
    first = next(iter(snapshot.xpath_map), None)
    return f", e.g. '{first}'" if first is not None else ""


def to_action(snapshot: Snapshot, eid: str, *, description: str, method: str, arguments: Sequence[str]) -> Action:
    """An Action on element ``eid`` of ``snapshot``; a drag target given as an id becomes its selector."""
    args = [str(a) for a in arguments]
    if method == "drag_and_drop" and args:
        target = element_id(args[0], snapshot)
        if target is not None:
            args[0] = f"xpath={snapshot.xpath_map[target]}"
    return Action(selector=f"xpath={snapshot.xpath_map[eid]}", description=description, method=method, arguments=args)


async def ask(
    client: LLMClient,
    system: str,
    user: str,
    output: type[BaseModel] | dict[str, Any],
    *,
    purpose: str,
    secrets: Iterable[str],
    check: Callable[[Any], tuple[list[str], T]],
    images: Sequence[ImagePart] = (),
) -> T:
    """One structured answer that also passes ``check`` (which returns problems and the value).

    The client re-asks for schema problems; this re-asks (up to :data:`MAX_CHECK_REASKS`)
    for problems only the page can reveal, sending them back to the model. Then
    :class:`OutputValidationError`. ``images`` (screenshots) go after the user text.
    """
    first = UserMessage([TextPart(text=user), *images]) if images else UserMessage(user)
    conversation: list[Message] = [SystemMessage(system), first]
    secrets = list(secrets)
    problems: list[str] = []
    raw: Any = None
    for attempt in range(MAX_CHECK_REASKS + 1):
        result = await client.generate(conversation, purpose=purpose, output=output, secrets=secrets)
        problems, value = check(result.output)
        if not problems:
            return value
        raw = result.raw
        logger.info("%s: answer %d names things the page does not have (%d problems)%s", purpose, attempt + 1,
                    len(problems), "; re-asking" if attempt < MAX_CHECK_REASKS else "")
        if attempt < MAX_CHECK_REASKS:
            answer = raw or json.dumps(result.output.model_dump(mode="json") if isinstance(result.output, BaseModel) else result.output)
            conversation += [AssistantMessage(answer), UserMessage(reask_message(problems))]
    raise OutputValidationError(
        f"the model's {purpose} answer stayed wrong for this page after {MAX_CHECK_REASKS} re-ask(s): "
        f"{'; '.join(problems[:5])}. Try a more specific instruction, a selector= to narrow the page, or a stronger model.",
        last_output=raw, attempts=MAX_CHECK_REASKS + 1, usage=None, errors=problems,
    )
