"""observe(): find elements and the actions to take on them, as Actions with XPath selectors.

Budget: the outline goes to the model whole when it fits the chunk budget; a larger outline
is split into chunks ranked by relevance to the instruction and sent one per request, best
first, until one yields elements, at most :data:`MAX_PARTS` requests (see :mod:`._pipeline`).
Without an instruction the chunks keep page order (the top of the page first).

Values the instruction did not give (``observe("fill the search box")``) are not an error:
the action comes back with a ``%placeholder%`` for them, named in ``Action.missing_arguments``.

Late content: when nothing matched and the page is still changing, the page is read and asked
again as it changes, up to ``dom_settle_timeout`` (:func:`._pipeline.look`).

Choice mode (``LLMClient.choice_mode``, on for local models): the model picks among the chunk's
actionable lines instead of writing ids; see :mod:`._choice`.

Near misses (:mod:`._near_misses`): an answer the page corrects comes back corrected, with a
:class:`~stagehand_py.Repair` in ``Action.repairs`` saying what was answered and what was done;
one that needs the model is re-asked once with the valid choices, and the Action the next answer
makes carries that re-ask. The repairs (those left out too) also go to the inference log. An
observe answers with Actions, so the Action is where its repairs show: a caller who keeps one and
acts on it later still sees how it came to be; the cache keeps the actions without them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .._actions import Plan
from .._prompts.common import Fence, page_fence
from .._prompts.observe import DEFAULT_OBSERVE_INSTRUCTION, ObserveAnswer, observe_system, observe_user
from .._session import OperationContext
from .._types import Action
from ._answers import AnswerCheck, note_repairs, without_repairs
from ._heal import cached_actions_valid, plan_in, remember
from ._pipeline import (
    PageRead,
    Question,
    VisionMode,
    ask_parts,
    check_vision,
    look,
    model_sees,
    require_sight,
    split_page,
)

__all__ = ["MAX_PARTS", "observe"]

logger = logging.getLogger("stagehand_py._operations")

#: At most this many chunks of a large page are tried before observe()/act() give up.
MAX_PARTS = 3


async def observe(
    ctx: OperationContext,
    instruction: str | None,
    *,
    selector: str | None,
    ignore_selectors: Sequence[str],
    vision: VisionMode = "auto",
) -> list[Action]:
    """See the module docstring; ``vision`` as in :mod:`._pipeline`. The model reads the call's
    placeholder descriptions (never a value)."""
    check_vision(vision, "observe")
    variables = ctx.variables.descriptions
    key = None
    if ctx.cache is not None and instruction:
        key = ctx.cache.key("observe", instruction, ctx.page.url, variables, selector)
        cached = ctx.cache.load_entry(key)
        if cached is not None and await cached_actions_valid(ctx, cached):
            logger.info("observe %r: replayed %d action(s) from the cache", instruction, len(cached.actions))
            remember(ctx, [Plan(a, identity) for a, identity in zip(cached.actions, cached.elements, strict=True)])
            return list(cached.actions)
    client = ctx.model()
    if vision is True:
        require_sight(client, "observe(vision=True)")
    sees = vision is not False and model_sees(client)
    text = instruction or DEFAULT_OBSERVE_INSTRUCTION

    def prompt(fence: Fence, outline: str, part: tuple[int, int] | None) -> tuple[str, str]:
        return observe_system(fence), observe_user(text, outline, fence, variables=variables, part=part)

    async def attempt(page: PageRead) -> tuple[list[Action], AnswerCheck]:
        parts = split_page(ctx, page.text, prompt, ObserveAnswer, rank_by=instruction, choice=client.choice_mode,
                           elements=True)
        checker = AnswerCheck(page.snapshot, variables, instruction=instruction, missing_values=True,
                              fence=page_fence(ctx.page, page.text), redact=ctx.variables.redact)
        question = Question(prompt, ObserveAnswer, lambda out: checker(out.elements, out.offered))
        answers = await ask_parts(ctx, page, parts, question, purpose="observe", done=bool, limit=MAX_PARTS,
                                  vision=vision, sees=sees, elements=True, instruction=instruction)
        logger.info("observe %r: %d action(s) from %d part(s)", text, len(answers[-1]) if answers else 0, parts.total)
        return (answers[-1] if answers else []), checker

    looked = await look(ctx, attempt, found=lambda made: bool(made[0]), selector=selector,
                        ignore_selectors=ignore_selectors, confidence=vision == "auto" and sees)
    (actions, checker), page = looked.value, looked.page
    if not actions and looked.waited:
        logger.info("observe %r: nothing matching after waiting %.1f s for the page to change", text, looked.waited)
    await note_repairs(client, "observe", [*(r for a in actions for r in a.repairs), *checker.left_out])
    plans = [plan_in(page.snapshot, a, ctx.variables) for a in actions]
    remember(ctx, plans)  # act(action) checks the element is still the one observed
    if key is not None and actions:
        ctx.cache.store(key, without_repairs(actions), [p.identity for p in plans])
    return actions
