"""The one operations pipeline: read the page once, then ask over its parts.

Every model-backed operation (observe, act's planner and option picker, heal, extract) runs
the same steps, written here once:

1. :func:`read_page`: wait for the page to settle, snapshot it, drop ignored parts and redact
   every known variable value (the model never sees a value);
2. :func:`split_page`: the chunk budget (token budget minus the fixed prompt, the schema and
   the re-ask reserve), the outline whole when it fits, else its chunks, ranked by relevance
   to the instruction (page order without one);
3. :func:`ask_parts` (:func:`ask_part` for one chunk): the caller's :class:`Question` asked per
   chunk with the page's fence (one per page, so that consecutive requests share their prefix:
   see :mod:`stagehand_py._prompts.common`), an optional screenshot (vision, see below), choice
   mode for element questions when the client asks for it (:mod:`._choice`), and one structured
   answer that also passes the question's ``check`` (the LLM client's single re-ask loop),
   until the caller is done;
4. :func:`look`: when that found nothing (no element, required data still empty) and the page
   can still change by itself (loading, recently mutated or fetching: for up to
   ``dom_settle_timeout`` seconds; young and scripted: until it is that old; see
   :func:`~stagehand_py._actions.late_content_window`), wait for the next DOM change, read the
   page again and ask again, only when the outline really changed, until something is found
   or the time is up; the result says how long it waited.

Vision (observe, act; extract's ``screenshot=True`` is a plain page screenshot):
``vision="auto"`` (default): the first request carries an annotated screenshot when the page's
DOM confidence is below :data:`~stagehand_py._vision.LOW_CONFIDENCE`; otherwise, when the
model finds no element in the outline, one more request carries it (the fallback). ``True``:
every request carries it. ``False``: never. A model without image input
(``profile.supports_images=False``) is an error with ``True`` and skips vision with ``"auto"``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel

from .._actions import late_content_window, settled_clock, wait_for_change
from .._errors import ConfigurationError, InvalidArgumentError
from .._prompts.common import Fence, page_fence, reuse_layout, states_section, with_states
from .._prompts.vision import EXTRACT_SCREENSHOT_NOTE, VISION_SYSTEM_NOTE, screenshot_legend
from .._secrets import VariableSet
from .._session import OperationContext
from .._vision import LOW_CONFIDENCE, annotated_screenshot, page_screenshot
from ..llm import ImagePart, LLMClient, SystemMessage, TextPart, UserMessage
from ..snapshot import OutlineChunk, Snapshot, SnapshotElement, estimate_tokens, parse_line, states_apart
from ._budget import chunk_budget, pieces
from ._choice import as_choice
from ._relevance import rank_chunks

__all__ = ["Looked", "PageParts", "PageRead", "Prompt", "Question", "VisionMode", "ask", "ask_part", "ask_parts",
           "check_vision", "look", "model_sees", "new_lines", "plan_requests", "read_page", "require_sight", "settle",
           "split_page", "states_apart", "with_annotated_screenshot", "with_page_screenshot"]

logger = logging.getLogger("stagehand_py._operations")

T = TypeVar("T")
R = TypeVar("R")

#: Builds a request's (system, user) text from its fence, the chunk's page text and which part
#: it is (``(n, of)``; None when the page goes whole).
Prompt: TypeAlias = Callable[[Fence, str, "tuple[int, int] | None"], tuple[str, str]]
Check: TypeAlias = Callable[[Any], tuple[list[str], T]]
#: observe's and act's ``vision=``: see the module docstring.
VisionMode: TypeAlias = Literal["auto"] | bool


@dataclass(frozen=True)
class Question(Generic[T]):
    """What an operation asks about a part of the page: the words (``prompt``), the shape of the
    answer (``output``: a pydantic class or a JSON Schema) and what makes an answer good beyond its
    shape (``check``: the problems sent back to the model, and the value a good answer makes)."""

    prompt: Prompt
    output: type[BaseModel] | dict[str, Any]
    check: Check[T]


#: What a budget is measured with: a part number as wide as any real one.
_SAMPLE_PART = (99, 99)


@dataclass(frozen=True)
class PageRead:
    """A snapshot and its outline as the model may see it (ignored parts out, values redacted)."""

    snapshot: Snapshot
    text: str
    #: The page's clock (ms) when it was read; None when unknown.
    clock: float | None = None


@dataclass(frozen=True)
class PageParts:
    """The page text in the pieces one request each can carry, best first."""

    chunks: list[OutlineChunk]
    #: How many pieces the page has in all (``chunks`` may be fewer, or reordered).
    total: int
    #: Each chunk's volatile states are shown apart from its outline (:func:`states_apart`).
    states_apart: bool = False
    #: The whole page's text and its :func:`states_apart` split, made once when measuring the budget.
    whole: tuple[str, tuple[str, list[str]]] | None = None
    #: The pieces were cut for choice mode (a third of the budget each): an element question about
    #: them is asked in choice mode.
    choice: bool = False

    def part(self, chunk: OutlineChunk) -> tuple[int, int] | None:
        return (chunk.index + 1, self.total) if self.total > 1 else None

    def outline_and_states(self, chunk: OutlineChunk) -> tuple[str, list[str]]:
        """``chunk``'s outline as the prompt shows it, and its states when shown apart."""
        if not self.states_apart:
            return chunk.text, []
        if self.whole is not None and self.whole[0] == chunk.text:  # the page goes whole: split already
            return self.whole[1]
        return states_apart(chunk.text)


async def settle(ctx: OperationContext) -> float | None:
    """Wait for the page to go quiet before reading it (capped; never raises for the cap).

    Returns the page's clock then (:func:`~stagehand_py._actions.page_clock`); from then on the
    page's DOM changes are noted, so :func:`look` misses none that came while the model thought.
    """
    return await settled_clock(ctx.page, quiet_ms=300, timeout_ms=ctx.dom_settle_timeout * 1000)


@dataclass(frozen=True)
class Looked(Generic[R]):
    """What :func:`look` found, on which read of the page, after how long a wait."""

    value: R
    page: PageRead
    #: Seconds spent waiting for the page to change after the first read found nothing (0.0
    #: when the first read found it, or the page could not change by itself).
    waited: float


async def look(ctx: OperationContext, attempt: Callable[[PageRead], Awaitable[R]], found: Callable[[R], bool], *,
               selector: str | None = None, ignore_selectors: Sequence[str] = (), confidence: bool = False) -> Looked[R]:
    """``attempt`` on a read of the page (:func:`read_page` with ``selector``, ``ignore_selectors``
    and ``confidence``); when it found nothing and the page may still change, wait for changes and
    attempt again on each changed read (see the module docstring, step 4).

    The wait is bounded by ``ctx.dom_settle_timeout`` (and the verb's own deadline). The model is
    asked again only when the outline changed, never for a page that merely flickered.
    """

    async def read() -> PageRead:
        return await read_page(ctx, selector=selector, ignore_selectors=ignore_selectors, confidence=confidence)

    page = await read()
    value = await attempt(page)
    if found(value):
        return Looked(value, page, 0.0)
    window = await late_content_window(ctx.page, window_s=ctx.dom_settle_timeout)
    if window <= 0:
        return Looked(value, page, 0.0)
    begin = time.monotonic()
    end = begin + window
    if ctx.deadline is not None:
        end = min(end, ctx.deadline - 1.0)  # leave time to answer before the verb times out
    logger.info("nothing found yet and the page is still changing; looking again for up to %.1f s", end - begin)
    clock = page.clock
    while (left := end - time.monotonic()) > 0:
        if not await wait_for_change(ctx.page, timeout_s=left, after=clock):
            break
        again = await read()
        clock = again.clock
        if again.text == page.text:
            continue
        page = again
        value = await attempt(page)
        if found(value):
            break
    waited = time.monotonic() - begin
    logger.info("looked again for %.1f s: %s", waited, "found" if found(value) else "still nothing")
    return Looked(value, page, waited)


async def read_page(ctx: OperationContext, *, selector: str | None = None, ignore_selectors: Sequence[str] = (),
                    confidence: bool = False) -> PageRead:
    """Settle, then a fresh snapshot as the model may see it.

    ``confidence=True`` also measures the snapshot's DOM confidence (for ``vision="auto"``).
    """
    clock = await settle(ctx)
    snapshot = await ctx.session.snapshot(selector=selector, confidence=confidence)
    text = snapshot.tree
    for ignored in ignore_selectors:
        gone = set((await ctx.session.snapshot(selector=ignored)).xpath_map)
        text = "\n".join(line for line in text.split("\n") if _line_id(line) not in gone)
    return PageRead(snapshot, ctx.variables.redact(text), clock)


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


#: At most this share of a chunk's budget goes to its states block; a page with more state than
#: that is shown with its states in the outline, as the snapshot has them.
_STATES_SHARE = 4


def split_page(ctx: OperationContext, text: str, prompt: Prompt, output: type[BaseModel] | dict[str, Any], *,
               rank_by: str | None, hints: str = "", choice: bool = False, extra_reserve: int = 0,
               elements: bool = False) -> PageParts:
    """``text`` in pieces that fit one request of ``prompt`` with ``output``, ranked by relevance
    to ``rank_by`` (and, weighing less, the words of ``hints``: a schema's field names); page
    order when None or when nothing decides. ``elements``: the answer is an element (observe,
    act), so parts are ranked by their best element read with its section. The page's volatile
    states are shown apart (:func:`states_apart`; their block counted in every piece's budget)."""
    sample = Fence()
    system, user = prompt(sample, "", _SAMPLE_PART)
    budget = chunk_budget(ctx.token_budget, (system, user), output,
                          extra_reserve=extra_reserve, choice=choice)
    apart, whole = False, None
    if reuse_layout():
        split = states_apart(text)
        states = states_section(split[1], sample)
        cost = estimate_tokens(states) if states else 0
        apart = cost * _STATES_SHARE <= budget
        budget -= cost if apart else 0
        whole = (text, split)
    chunks = pieces(text, budget)
    return PageParts(rank_chunks(chunks, rank_by, hints=hints, elements=elements), len(chunks), apart, whole, choice)


async def ask(client: LLMClient, system: str, user: str, output: type[BaseModel] | dict[str, Any], *, purpose: str,
              secrets: Sequence[str], check: Check[T], images: Sequence[ImagePart] = ()) -> T:
    """One structured answer that also passes ``check`` (problems and the value it makes).

    Schema problems and ``check``'s problems are re-asked in the client's one bounded loop;
    then :class:`~stagehand_py.OutputValidationError`. ``images`` go after the user text.
    """
    first = UserMessage([TextPart(text=user), *images]) if images else UserMessage(user)
    judge = _Judge(check)
    await client.generate([SystemMessage(system), first], purpose=purpose, output=output, secrets=secrets, check=judge)
    return judge.value


class _Judge(Generic[T]):
    """A question's ``check`` as the client's: the problems go to the re-ask loop, and the value
    the last answer made is kept here (the answer the client returns is the one that passed)."""

    def __init__(self, check: Check[T]) -> None:
        self._check = check
        self.value: T

    def __call__(self, out: Any) -> list[str]:
        problems, self.value = self._check(out)
        return problems


async def ask_part(ctx: OperationContext, page: PageRead, parts: PageParts, chunk: OutlineChunk, question: Question[T], *,
                   purpose: str, with_image: bool = False, images: Sequence[ImagePart] = (), elements: bool = False,
                   instruction: str | None = None, only: Callable[[SnapshotElement], bool] | None = None) -> T | None:
    """``question`` asked about one ``chunk`` of the page: the answer that passed its check.

    ``with_image`` adds the annotated screenshot; ``images`` go with the request as given
    (extract's page screenshot). ``elements``: an element question (``ObserveAnswer``/``ActAnswer``
    and a check returning a list), asked in choice mode when the parts were cut for it, ``instruction``
    then ranking the choices when they must be cut and ``only`` keeping the elements it accepts as
    choices; None when the part has no element to choose.
    """
    client = ctx.model()
    fence = page_fence(ctx.page, chunk.text)  # one per page: the outline's prefix stays byte-identical
    outline, states = parts.outline_and_states(chunk)
    system, user = question.prompt(fence, outline, parts.part(chunk))
    user = with_states(user, states, fence)
    shots = list(images)
    if with_image:
        system, user, shots = await with_annotated_screenshot(
            ctx.page, page.snapshot, system, user, fence, variables=ctx.variables)
    output, check = question.output, question.check
    if elements and parts.choice and isinstance(output, type):
        choice = as_choice(system, user, output, outline=outline, fence=fence, token_budget=ctx.token_budget,
                           check=check, instruction=instruction, only=only,
                           rank_choices=parts.total > 1)
        if choice is None:
            logger.info("%s: no actionable element in part %d of %d; nothing to choose", purpose, chunk.index + 1,
                        parts.total)
            return None
        user, output, check = choice.user, choice.output, choice.check
    return await ask(client, system, user, output, purpose=purpose, secrets=ctx.variables.secret_values(), check=check, images=shots)


async def ask_parts(ctx: OperationContext, page: PageRead, parts: PageParts, question: Question[T], *, purpose: str,
                    done: Callable[[T], bool], limit: int | None = None, vision: VisionMode = False,
                    sees: bool = False, elements: bool = False, instruction: str | None = None,
                    only: Callable[[SnapshotElement], bool] | None = None) -> list[T]:
    """``question`` about the parts in order (at most ``limit``) until ``done(answer)``; the answers.

    ``vision``/``sees`` plan screenshots (:func:`plan_requests`); ``elements``,
    ``instruction`` and ``only`` as for :func:`ask_part`.
    """
    chunks = parts.chunks[:limit] if limit is not None else parts.chunks
    answers: list[T] = []
    for chunk, with_image in plan_requests(chunks, vision, confidence=page.snapshot.dom_confidence, sees=sees):
        answer = await ask_part(ctx, page, parts, chunk, question, purpose=purpose, with_image=with_image,
                                elements=elements, instruction=instruction, only=only)
        if answer is None:
            continue
        answers.append(answer)
        if done(answer):
            break
        logger.debug("%s: nothing conclusive in part %d of %d", purpose, chunk.index + 1, parts.total)
    return answers


# --- vision ------------------------------------------------------------------------------


def check_vision(vision: Any, what: str) -> None:
    if vision != "auto" and not isinstance(vision, bool):
        raise InvalidArgumentError(f"{what}(vision=...) takes 'auto', True or False, got {vision!r}.")


def model_sees(client: LLMClient) -> bool:
    """False when the model's profile says it takes no images (a model with no profile is trusted)."""
    model = client.model
    profile = getattr(model, "profile", None)
    return bool(getattr(profile, "supports_images", getattr(model, "supports_images", True)))


def require_sight(client: LLMClient, what: str) -> None:
    if not model_sees(client):
        raise ConfigurationError(
            f"{what} sends a screenshot, but the model {client.model_name!r} is configured without image input "
            "(profile.supports_images=False). Use a model that accepts images, pass "
            "profile=Profile(..., supports_images=True) if it does, or leave vision at 'auto' / screenshot off."
        )


def plan_requests(chunks: Sequence[T], vision: VisionMode, *, confidence: float | None, sees: bool) -> Iterator[tuple[T, bool]]:
    """(chunk, with screenshot?) for each request; the caller stops once a request finds something.

    After the chunks, ``"auto"`` adds one fallback request (the first chunk with the screenshot)
    when no request carried one yet and the model can see.
    """
    first = vision is True or (vision == "auto" and sees and confidence is not None and confidence < LOW_CONFIDENCE)
    for chunk in chunks:
        yield chunk, first
    if vision == "auto" and sees and not first and chunks:
        logger.info("no element found in the outline; asking again with an annotated screenshot")
        yield chunks[0], True


async def with_annotated_screenshot(page: Any, snapshot: Snapshot, system: str, user: str, fence: Fence, *,
                                    variables: VariableSet) -> tuple[str, str, list[ImagePart]]:
    """``system``/``user`` with the vision note and the box legend, and the annotated screenshot.

    The legend's outline lines are redacted with ``variables``, as the outline itself: a field's
    line shows its value, which may be a secret typed a moment ago; in the image such a field is
    masked."""
    shot = await annotated_screenshot(page, snapshot, variables=variables)
    legend = [(box.number, variables.redact(snapshot.line_for(box.element_id) or f"[{box.element_id}]")) for box in shot.boxes]
    logger.debug("annotated screenshot: %r, ~%d tokens", shot, shot.tokens)
    return f"{system}\n\n{VISION_SYSTEM_NOTE}", f"{user}\n\n{screenshot_legend(legend, fence)}", [shot.image_part()]


async def with_page_screenshot(page: Any, system: str, *, selector: str | None,
                               variables: VariableSet | None = None) -> tuple[str, list[ImagePart]]:
    """``system`` with the extract note, and a screenshot of the page or the ``selector`` region
    (fields holding a value of ``variables`` masked)."""
    shot = await page_screenshot(page, selector=selector, variables=variables)
    logger.debug("extract screenshot: %r, ~%d tokens", shot, shot.tokens)
    return f"{system}\n\n{EXTRACT_SCREENSHOT_NOTE}", [shot.image_part()]
