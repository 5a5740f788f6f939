"""The one operations pipeline: read the page once, then ask over its parts.

Every model-backed operation (observe, act's planner and option picker, heal, extract) runs
the same steps, written here once:

1. :func:`read_page`: wait for the page to settle, snapshot it, drop ignored parts and redact
   every known variable value (the model never sees a value);
2. :func:`split_page`: the chunk budget (token budget minus the fixed prompt, the schema and
   the re-ask reserve), the outline whole when it fits, else its chunks, ranked by relevance
   to the instruction (page order without one);
3. :func:`ask_parts`: per chunk a fresh fence, the caller's prompt, an optional screenshot
   (vision, see :mod:`._vision`), choice mode for element questions when the client asks for
   it (:mod:`._choice`), and one structured answer that also passes the caller's ``check``
   (the LLM client's single re-ask loop), until the caller is done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from .._actions import wait_for_settled_dom
from .._prompts.common import Fence
from .._secrets import redact_text
from .._types import VariableValue
from ..llm import ImagePart, LLMClient, SystemMessage, TextPart, UserMessage
from ..snapshot import OutlineChunk, Snapshot, parse_line
from ._budget import chunk_budget, pieces
from ._choice import as_choice
from ._context import OperationContext
from ._relevance import rank_chunks
from ._vision import VisionMode, plan_requests, with_annotated_screenshot

__all__ = ["PageParts", "PageRead", "Prompt", "ask", "ask_parts", "new_lines", "read_page", "settle", "split_page"]

logger = logging.getLogger("stagehand_py._operations")

T = TypeVar("T")

#: Builds a request's (system, user) text from its fence, the chunk's page text and which part
#: it is (``(n, of)``; None when the page goes whole).
Prompt: TypeAlias = Callable[[Fence, str, "tuple[int, int] | None"], tuple[str, str]]
Check: TypeAlias = Callable[[Any], tuple[list[str], T]]
#: What a budget is measured with: a part number as wide as any real one.
_SAMPLE_PART = (99, 99)


@dataclass(frozen=True)
class PageRead:
    """A snapshot and its outline as the model may see it (ignored parts out, values redacted)."""

    snapshot: Snapshot
    text: str


@dataclass(frozen=True)
class PageParts:
    """The page text in the pieces one request each can carry, best first."""

    chunks: list[OutlineChunk]
    #: How many pieces the page has in all (``chunks`` may be fewer, or reordered).
    total: int

    def part(self, chunk: OutlineChunk) -> tuple[int, int] | None:
        return (chunk.index + 1, self.total) if self.total > 1 else None


async def settle(ctx: OperationContext) -> None:
    """Wait for the page to go quiet before reading it (capped; never raises for the cap)."""
    await wait_for_settled_dom(ctx.page, quiet_ms=300, timeout_ms=ctx.dom_settle_timeout * 1000)


async def read_page(ctx: OperationContext, *, selector: str | None = None, ignore_selectors: Sequence[str] = (),
                    confidence: bool = False) -> PageRead:
    """Settle, then a fresh snapshot as the model may see it.

    ``confidence=True`` also measures the snapshot's DOM confidence (for ``vision="auto"``).
    """
    await settle(ctx)
    snapshot = await (ctx.snapshot(selector=selector, confidence=True) if confidence else ctx.snapshot(selector=selector))
    text = snapshot.tree
    for ignored in ignore_selectors:
        gone = set((await ctx.snapshot(selector=ignored)).xpath_map)
        text = "\n".join(line for line in text.split("\n") if _line_id(line) not in gone)
    return PageRead(snapshot, redact(ctx.known_variables, text))


def redact(variables: Mapping[str, VariableValue], text: str) -> str:
    return redact_text(text, variables)


def _line_id(line: str) -> str | None:
    element = parse_line(line)
    return element.id if element is not None else None


def new_lines(before: str, after: str) -> str:
    """Lines of ``after`` whose element is new or changed since ``before`` (indent kept relative)."""
    old = {line.strip() for line in before.split("\n")}
    added = [line for line in after.split("\n") if line.strip() and line.strip() not in old]
    if not added:
        return ""
    base = min(len(line) - len(line.lstrip(" ")) for line in added)
    return "\n".join(line[base:] for line in added)


def split_page(ctx: OperationContext, text: str, prompt: Prompt, output: type[BaseModel] | dict[str, Any], *,
               rank_by: str | None, choice: bool = False, extra_reserve: int = 0) -> PageParts:
    """``text`` in pieces that fit one request of ``prompt`` with ``output``, ranked by relevance
    to ``rank_by`` (page order when None or when nothing decides)."""
    system, user = prompt(Fence(), "", _SAMPLE_PART)
    budget = chunk_budget(ctx.token_budget, [SystemMessage(system), UserMessage(user)], output,
                          extra_reserve=extra_reserve, choice=choice)
    chunks = pieces(text, budget)
    return PageParts(rank_chunks(chunks, rank_by), len(chunks))


async def ask(client: LLMClient, system: str, user: str, output: type[BaseModel] | dict[str, Any], *, purpose: str,
              secrets: Sequence[str], check: Check[T], images: Sequence[ImagePart] = ()) -> T:
    """One structured answer that also passes ``check`` (problems and the value it makes).

    Schema problems and ``check``'s problems are re-asked in the client's one bounded loop;
    then :class:`~stagehand_py.OutputValidationError`. ``images`` go after the user text.
    """
    first = UserMessage([TextPart(text=user), *images]) if images else UserMessage(user)
    made: list[T] = []

    def problems(out: Any) -> list[str]:
        found, value = check(out)
        if not found:
            made.append(value)
        return found

    await client.generate([SystemMessage(system), first], purpose=purpose, output=output, secrets=secrets,
                          check=problems)
    return made[-1]


async def ask_parts(ctx: OperationContext, page: PageRead, parts: PageParts, *, prompt: Prompt,
                    output: type[BaseModel] | dict[str, Any], purpose: str, check: Check[T],
                    done: Callable[[T], bool], limit: int | None = None, vision: VisionMode = False,
                    sees: bool = False, images: Sequence[ImagePart] = (), elements: bool = False,
                    instruction: str | None = None) -> list[T]:
    """Ask about the parts in order (at most ``limit``) until ``done(answer)``; the answers.

    ``vision``/``sees`` plan screenshots (:func:`._vision.plan_requests`); ``images`` go with
    every request (extract's page screenshot). ``elements``: the answer is an element question
    (``ObserveAnswer``/``ActAnswer`` and ``check`` returning a list), asked in choice mode when
    the client wants it; ``instruction`` then ranks the choices when they must be cut.
    """
    client = ctx.get_client()
    chunks = parts.chunks[:limit] if limit is not None else parts.chunks
    answers: list[T] = []
    for chunk, with_image in plan_requests(chunks, vision, confidence=page.snapshot.dom_confidence, sees=sees):
        fence = Fence()
        system, user = prompt(fence, chunk.text, parts.part(chunk))
        shots = list(images)
        if with_image:
            system, user, shots = await with_annotated_screenshot(
                ctx.page, page.snapshot, system, user, fence, redact=lambda line: redact(ctx.known_variables, line))
        question, answer_output, answer_check = user, output, check
        if elements and client.choice_mode and isinstance(output, type):
            choice = as_choice(system, user, output, outline=chunk.text, fence=fence, token_budget=ctx.token_budget,
                               check=check, instruction=instruction)
            if choice is None:
                logger.info("%s: no actionable element in part %d of %d; nothing to choose", purpose, chunk.index + 1,
                            parts.total)
                continue
            question, answer_output, answer_check = choice.user, choice.output, choice.check
        answer = await ask(client, system, question, answer_output, purpose=purpose, secrets=ctx.secrets(),
                           check=answer_check, images=shots)
        answers.append(answer)
        if done(answer):
            break
        logger.debug("%s: nothing conclusive in part %d of %d", purpose, chunk.index + 1, parts.total)
    return answers
