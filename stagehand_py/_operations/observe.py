"""observe(): find elements and the actions to take on them, as Actions with XPath selectors.

Budget: the outline goes to the model whole when it fits the chunk budget (the token budget
minus the fixed prompt, the schema and a re-ask reserve). A larger outline is split into
chunks; the chunks are ranked by lexical (TF-IDF) relevance to the instruction and sent one
per request, best first, until one yields elements, at most :data:`MAX_PARTS` requests.
Without an instruction the chunks keep page order (the top of the page first).

Choice mode (``LLMClient.choice_mode``, on for local models): the model picks among the chunk's
actionable lines instead of writing ids; see :mod:`stagehand_py._operations._choice`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from .._actions import placeholders_in, wait_for_settled_dom
from .._actions._methods import check_arity
from .._cache import CacheEntry
from .._errors import InvalidArgumentError
from .._prompts.common import Fence
from .._prompts.observe import (
    DEFAULT_OBSERVE_INSTRUCTION,
    ObserveAnswer,
    ObservedElement,
    observe_system,
    observe_user,
)
from .._types import Action
from ..llm import ImagePart, SystemMessage, UserMessage
from ..snapshot import Snapshot
from ._choice import ask_elements
from ._common import (
    OperationContext,
    chunk_budget,
    drop_ids,
    element_id,
    example_id,
    pieces,
    rank_chunks,
    redact_text,
    to_action,
)
from ._identity import identity_in, identity_matches, remember
from ._vision import (
    VisionMode,
    check_vision,
    model_sees,
    plan_requests,
    require_sight,
    with_annotated_screenshot,
)

__all__ = ["MAX_PARTS", "check_elements", "observe", "page_outline", "settle"]

logger = logging.getLogger("stagehand_py._operations")

#: At most this many chunks of a large page are tried before observe()/act() give up.
MAX_PARTS = 3


async def settle(ctx: OperationContext) -> None:
    """Wait for the page to go quiet before reading it (capped; never raises for the cap)."""
    await wait_for_settled_dom(ctx.page, quiet_ms=300, timeout_ms=ctx.dom_settle_timeout * 1000)


async def page_outline(ctx: OperationContext, selector: str | None = None,
                       ignore_selectors: Sequence[str] = (), *, confidence: bool = False) -> tuple[Snapshot, str]:
    """A fresh snapshot and its outline as the model may see it (ignored parts out, values redacted).

    ``confidence=True`` also measures the snapshot's DOM confidence (for ``vision="auto"``).
    """
    snapshot = await (ctx.snapshot(selector=selector, confidence=True) if confidence else ctx.snapshot(selector=selector))
    tree = snapshot.tree
    for ignored in ignore_selectors:
        sub = await ctx.snapshot(selector=ignored)
        tree = drop_ids(tree, sub.xpath_map)
    return snapshot, redact_text(tree, ctx.known_variables)


def check_elements(elements: Sequence[ObservedElement], snapshot: Snapshot,
                   variables: Mapping[str, str]) -> tuple[list[str], list[Action]]:
    """Map the model's elements to Actions; list what is wrong (unknown id, placeholder, arguments)."""
    problems: list[str] = []
    actions: list[Action] = []
    for n, element in enumerate(elements, start=1):
        eid = element_id(element.element_id, snapshot)
        if eid is None:
            problems.append(
                f"elements[{n - 1}].element_id {element.element_id!r} is not an id of the outline; use an id shown "
                f"in brackets at the start of an outline line{example_id(snapshot)}"
            )
            continue
        unknown = [p for p in placeholders_in(element.arguments) if p not in variables]
        if unknown:
            available = ", ".join(f"%{v}%" for v in variables) or "none"
            problems.append(
                f"elements[{n - 1}].arguments use {', '.join(f'%{u}%' for u in unknown)}, which is not a given "
                f"variable (available: {available})"
            )
            continue
        try:
            check_arity(element.method, element.arguments)
        except InvalidArgumentError as exc:
            problems.append(f"elements[{n - 1}]: {exc}")
            continue
        actions.append(to_action(snapshot, eid, description=element.description, method=element.method,
                                 arguments=element.arguments))
    return problems, actions


async def observe(
    ctx: OperationContext,
    instruction: str | None,
    *,
    variables: Mapping[str, str],
    selector: str | None,
    ignore_selectors: Sequence[str],
    vision: VisionMode = "auto",
) -> list[Action]:
    """See the module docstring; ``variables`` are the placeholder descriptions (no values);
    ``vision`` as in :mod:`stagehand_py._operations._vision`."""
    check_vision(vision, "observe")
    key = None
    if ctx.cache is not None and instruction:
        key = ctx.cache.key("observe", instruction, ctx.page.url, variables, selector)
        cached = ctx.cache.load_entry(key)
        if cached is not None and await _still_valid(ctx, cached):
            logger.info("observe %r: replayed %d action(s) from the cache", instruction, len(cached.actions))
            for action, identity in zip(cached.actions, cached.elements, strict=True):
                if identity is not None:
                    ctx.identities[action.selector] = identity
            return list(cached.actions)
    client = ctx.get_client()
    if vision is True:
        require_sight(client, "observe(vision=True)")
    sees = vision is not False and model_sees(client)
    await settle(ctx)
    snapshot, tree = await page_outline(ctx, selector, ignore_selectors, confidence=vision == "auto" and sees)
    text = instruction or DEFAULT_OBSERVE_INSTRUCTION
    sample = Fence()
    budget = chunk_budget(
        ctx.token_budget,
        [SystemMessage(observe_system(sample)), UserMessage(observe_user(text, "", sample, variables=variables, part=(99, 99)))],
        ObserveAnswer,
        choice=client.choice_mode,
    )
    parts = pieces(tree, budget)
    ranked = rank_chunks(parts, instruction)
    actions: list[Action] = []
    for chunk, with_image in plan_requests(ranked[:MAX_PARTS], vision, confidence=snapshot.dom_confidence, sees=sees):
        fence = Fence()
        user = observe_user(text, chunk.text, fence, variables=variables,
                            part=(chunk.index + 1, len(parts)) if len(parts) > 1 else None)
        system, images = observe_system(fence), list[ImagePart]()
        if with_image:
            system, user, images = await with_annotated_screenshot(ctx.page, snapshot, system, user, fence,
                                                                    redact=lambda line: redact_text(line, ctx.known_variables))
        actions = await ask_elements(
            client, system, user, ObserveAnswer, outline=chunk.text, fence=fence, token_budget=ctx.token_budget,
            purpose="observe", secrets=ctx.secrets(),
            check=lambda out: check_elements(out.elements, snapshot, variables), images=images,
            instruction=instruction,
        )
        if actions:
            break
        logger.debug("observe %r: nothing in part %d of %d", text, chunk.index + 1, len(parts))
    logger.info("observe %r: %d action(s) from %d part(s)", text, len(actions), len(parts))
    remember(ctx, snapshot, actions)  # act(action) checks the element is still the one observed
    if key is not None and actions:
        ctx.cache.store(key, actions, [identity_in(snapshot, a.selector, ctx.known_variables) for a in actions])
    return actions


async def _still_valid(ctx: OperationContext, entry: CacheEntry) -> bool:
    """True when every cached selector still names exactly one element (a quick check, no waiting)
    and, where the entry knows it, the element it was cached for (role and name)."""
    from .._actions import resolve_element
    from .._errors import ActionError

    for action, identity in zip(entry.actions, entry.elements, strict=True):
        if identity is not None:
            if not await identity_matches(ctx, action, identity, wait=0.5):
                logger.info("observe cache entry is stale (%s names another element now); observing again", action.selector)
                return False
            continue
        try:
            handle = await resolve_element(ctx.page, action.selector, timeout=0.5)
        except ActionError:
            logger.info("observe cache entry is stale (%s no longer resolves); observing again", action.selector)
            return False
        await handle.dispose()
    return True
