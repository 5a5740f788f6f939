"""act(): run an Action (no model), or plan one action from an instruction and run it.

- Planning reads a fresh snapshot (chunked and ranked like observe) and asks for one element.
- Custom dropdowns take two steps: when the model says its click opens options, the page is
  re-captured after the click, the outlines are diffed, and the model picks the option among
  the new lines only.
- Self-heal (``self_heal=True`` and a model configured): when the selector no longer resolves
  or the action fails, the page is re-captured, the element re-located from the action's
  description, method and arguments (one model call) and the action retried once.
- The action cache replays a cached plan with no model call, heals a stale step and
  rewrites the entry. A step is stale when its selector fails, or when the element it names
  now is not the one it was cached for (role and name, see :mod:`._identity`): a changed page
  can make a cached XPath name another element, which must never be acted on silently.
  Entries without identities (written before they existed) replay unchecked, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from .._actions import (
    DEFAULT_TIMEOUT,
    execute_action,
    placeholder_descriptions,
    watch_page,
)
from .._cache import CacheEntry, ElementIdentity
from .._errors import ActionFailedError, ElementNotFoundError, StagehandTimeoutError
from .._prompts.act import (
    ActAnswer,
    act_system,
    act_user,
    dropdown_user,
    heal_system,
    heal_user,
)
from .._prompts.common import Fence
from .._prompts.observe import ObserveAnswer
from .._types import Action, ActResult, VariableValue
from ..llm import ImagePart, SystemMessage, UserMessage
from ..snapshot import Snapshot
from ._choice import ask_elements
from ._common import (
    OperationContext,
    chunk_budget,
    pieces,
    rank_chunks,
    redact_text,
)
from ._identity import identity_matches, remember
from ._vision import (
    VisionMode,
    check_vision,
    model_sees,
    plan_requests,
    require_sight,
    with_annotated_screenshot,
)
from .observe import MAX_PARTS, check_elements, page_outline, settle

__all__ = ["act_action", "act_instruction"]

logger = logging.getLogger("stagehand_py._operations")

#: With self-heal available, the first try waits this long for the element before healing.
HEAL_PROBE_TIMEOUT = 2.0
_HEALABLE = (ElementNotFoundError, ActionFailedError, StagehandTimeoutError)


async def _execute(ctx: OperationContext, action: Action, variables: Mapping[str, VariableValue], timeout: float) -> None:
    async with watch_page(ctx.page) as watch:
        await execute_action(ctx.page, action, variables=variables, timeout=ctx.action_timeout(timeout))
        await watch.wait_for_settled(timeout_ms=ctx.dom_settle_timeout * 1000)


async def run_action(ctx: OperationContext, action: Action, variables: Mapping[str, VariableValue]) -> tuple[Action, bool]:
    """Run ``action``; heal it once if it fails and healing is possible. Returns (what ran, healed)."""
    can_heal = ctx.self_heal and ctx.has_model()
    try:
        await _execute(ctx, action, variables, HEAL_PROBE_TIMEOUT if can_heal else DEFAULT_TIMEOUT)
        return action, False
    except _HEALABLE as exc:
        if not can_heal:
            raise
        logger.info("%s on %s failed (%s); self-healing", action.method, action.selector, type(exc).__name__)
        return await _heal_and_run(ctx, action, variables, f"failed ({exc})")


async def _heal_and_run(ctx: OperationContext, action: Action, variables: Mapping[str, VariableValue],
                        why: str) -> tuple[Action, bool]:
    """Re-locate ``action``'s element by description (one model call) and run it there.

    ``why`` completes "<method> on <selector> ..." in the error when nothing fits.
    """
    healed = await heal(ctx, action, placeholder_descriptions(variables))
    if healed is None:
        raise ElementNotFoundError(
            f"{action.method} on {action.selector} {why} and self-heal found no element matching "
            f"{action.description or 'the action'!r} on the page now. Observe the page again.",
            selector=action.selector, method=action.method,
        )
    await _execute(ctx, healed, variables, DEFAULT_TIMEOUT)
    logger.info("healed: %s now runs on %s", action.method, healed.selector)
    return healed, True


async def heal(ctx: OperationContext, action: Action, variables: Mapping[str, str]) -> Action | None:
    """Re-locate ``action``'s element on a fresh snapshot (one model call on the best chunk)."""
    client = ctx.get_client()
    await settle(ctx)
    snapshot, tree = await page_outline(ctx)
    sample = Fence()
    budget = chunk_budget(
        ctx.token_budget,
        [SystemMessage(heal_system(sample)),
         UserMessage(heal_user(action.description, action.method, action.arguments, "", sample, part=(99, 99)))],
        ObserveAnswer,
        choice=client.choice_mode,
    )
    parts = pieces(tree, budget)
    best = rank_chunks(parts, f"{action.description} {' '.join(action.arguments)}")[0]
    fence = Fence()

    def check(out: ObserveAnswer) -> tuple[list[str], list[Action]]:
        # Keep the original method and arguments: only the element is re-located.
        elements = [e.model_copy(update={"method": action.method, "arguments": list(action.arguments)}) for e in out.elements[:1]]
        return check_elements(elements, snapshot, variables)

    found = await ask_elements(
        client, heal_system(fence),
        heal_user(action.description, action.method, action.arguments, best.text, fence,
                  part=(best.index + 1, len(parts)) if len(parts) > 1 else None),
        ObserveAnswer, outline=best.text, fence=fence, token_budget=ctx.token_budget,
        purpose="heal", secrets=ctx.secrets(), check=check, instruction=action.description,
    )
    if not found:
        return None
    healed = found[0].model_copy(update={"description": action.description or found[0].description})
    remember(ctx, snapshot, [healed])
    return healed


async def _run_checked(ctx: OperationContext, action: Action, variables: Mapping[str, VariableValue]) -> tuple[Action, bool]:
    """Run ``action``, but first check that its selector still names the element it was planned
    on (role and name, when this Stagehand planned or observed it): if the page swapped another
    element in since (a "Delete" where "Save" was), re-locate the planned one, or refuse."""
    identity = ctx.identities.get(action.selector)
    if identity is None or await identity_matches(ctx, action, identity, wait=HEAL_PROBE_TIMEOUT):
        return await run_action(ctx, action, variables)
    why = f"no longer names the {identity.role} {identity.name!r} it was planned on"
    if not (ctx.self_heal and ctx.has_model()):
        raise ActionFailedError(
            f"{action.method} on {action.selector}: the element {why}, so nothing was done. Observe the page again.",
            selector=action.selector, method=action.method,
        )
    return await _heal_and_run(ctx, action, variables, why)


async def act_action(ctx: OperationContext, action: Action, variables: Mapping[str, VariableValue]) -> ActResult:
    ran, healed = await _run_checked(ctx, action, variables)
    return ActResult(
        success=True,
        message=f"{ran.method} on {ran.description or ran.selector}: done" + (" (healed)" if healed else ""),
        description=ran.description,
        actions=[ran],
        healed=healed,
    )


async def _plan(ctx: OperationContext, instruction: str, snapshot: Snapshot, tree: str,
                variables: Mapping[str, str], vision: VisionMode = "auto", sees: bool = False) -> tuple[Action | None, bool]:
    client = ctx.get_client()
    sample = Fence()
    budget = chunk_budget(
        ctx.token_budget,
        [SystemMessage(act_system(sample)), UserMessage(act_user(instruction, "", sample, variables=variables, part=(99, 99)))],
        ActAnswer,
        choice=client.choice_mode,
    )
    parts = pieces(tree, budget)
    ranked = rank_chunks(parts, instruction)[:MAX_PARTS]
    for chunk, with_image in plan_requests(ranked, vision, confidence=snapshot.dom_confidence, sees=sees):
        fence = Fence()
        opens = False

        def check(out: ActAnswer) -> tuple[list[str], list[Action]]:
            nonlocal opens
            opens = out.opens_options
            return check_elements(out.elements[:1], snapshot, variables)

        system = act_system(fence)
        user = act_user(instruction, chunk.text, fence, variables=variables,
                        part=(chunk.index + 1, len(parts)) if len(parts) > 1 else None)
        images: list[ImagePart] = []
        if with_image:
            system, user, images = await with_annotated_screenshot(ctx.page, snapshot, system, user, fence,
                                                                    redact=lambda line: redact_text(line, ctx.known_variables))
        actions = await ask_elements(client, system, user, ActAnswer, outline=chunk.text, fence=fence,
                                     token_budget=ctx.token_budget, purpose="act", secrets=ctx.secrets(), check=check,
                                     images=images, instruction=instruction)
        if actions:
            return actions[0], opens and actions[0].method == "click"
    return None, False


async def _pick_option(ctx: OperationContext, instruction: str, clicked: Action, before: str,
                       variables: Mapping[str, str]) -> Action | None:
    """Second step of a custom dropdown: choose among the lines that appeared after the click."""
    await settle(ctx)
    snapshot, after = await page_outline(ctx)
    from ._common import new_lines

    appeared = new_lines(before, after)
    if not appeared:
        logger.info("act %r: the click opened nothing new; choosing from the whole page", instruction)
        appeared = after
    sample = Fence()
    budget = chunk_budget(
        ctx.token_budget,
        [SystemMessage(act_system(sample)),
         UserMessage(dropdown_user(instruction, clicked.description, "", sample, variables=variables))],
        ActAnswer,
        choice=ctx.get_client().choice_mode,
    )
    best = rank_chunks(pieces(appeared, budget), instruction)[0]
    fence = Fence()
    actions = await ask_elements(
        ctx.get_client(), act_system(fence),
        dropdown_user(instruction, clicked.description, best.text, fence, variables=variables),
        ActAnswer, outline=best.text, fence=fence, token_budget=ctx.token_budget, purpose="act", secrets=ctx.secrets(),
        check=lambda out: check_elements(out.elements[:1], snapshot, variables), instruction=instruction,
    )
    remember(ctx, snapshot, actions[:1])
    return actions[0] if actions else None


async def act_instruction(ctx: OperationContext, instruction: str, variables: Mapping[str, VariableValue],
                          vision: VisionMode = "auto") -> ActResult:
    check_vision(vision, "act")
    descriptions = placeholder_descriptions(variables)
    key = None
    if ctx.cache is not None:
        key = ctx.cache.key("act", instruction, ctx.page.url, descriptions)
        cached = ctx.cache.load_entry(key)
        if cached is not None and cached.actions:
            return await _replay(ctx, key, instruction, cached, variables)
    client = ctx.get_client()  # a clear ConfigurationError before touching the page
    if vision is True:
        require_sight(client, "act(vision=True)")
    sees = vision is not False and model_sees(client)
    await settle(ctx)
    snapshot, tree = await page_outline(ctx, confidence=vision == "auto" and sees)
    action, opens = await _plan(ctx, instruction, snapshot, tree, descriptions, vision, sees)
    if action is None:
        logger.info("act %r: no element fits", instruction)
        return ActResult(success=False, message=f"No element on the page can carry out {instruction!r}.")
    remember(ctx, snapshot, [action])
    ran, healed = await _run_checked(ctx, action, variables)  # the page may have changed while the model thought
    done = [ran]
    if opens:
        option = await _pick_option(ctx, instruction, ran, tree, descriptions)
        if option is None:
            return ActResult(success=False, message=f"Clicked {ran.description!r}, but no option fits {instruction!r}.",
                             description=ran.description, actions=done, healed=healed)
        ran2, healed2 = await run_action(ctx, option, variables)
        done.append(ran2)
        healed = healed or healed2
    if key is not None:
        ctx.cache.store(key, done, [ctx.identities.get(a.selector) for a in done])
    return ActResult(success=True, message=f"{instruction}: done", description=done[-1].description, actions=done, healed=healed)


async def _run_cached(ctx: OperationContext, action: Action, identity: ElementIdentity | None,
                      variables: Mapping[str, VariableValue]) -> tuple[Action, bool]:
    """Run one cached step: first check that its selector still names the element it was cached for."""
    if identity is None or await identity_matches(ctx, action, identity, wait=HEAL_PROBE_TIMEOUT):
        if identity is not None:
            ctx.identities[action.selector] = identity
        return await run_action(ctx, action, variables)
    if not (ctx.self_heal and ctx.has_model()):
        raise ElementNotFoundError(
            f"the cached {action.method} on {action.selector} is stale: that path now names a different element "
            f"than the {identity.role} it was cached for (or none). Enable self_heal with a model, or delete the "
            "cache entry.",
            selector=action.selector, method=action.method,
        )
    logger.info("cached %s on %s: a different element now; self-healing", action.method, action.selector)
    return await _heal_and_run(ctx, action, variables, "(cached) names a different element now")


async def _replay(ctx: OperationContext, key: str, instruction: str, cached: CacheEntry,
                  variables: Mapping[str, VariableValue]) -> ActResult:
    logger.info("act %r: replaying %d cached action(s)", instruction, len(cached.actions))
    done: list[Action] = []
    healed = False
    for n, (action, identity) in enumerate(zip(cached.actions, cached.elements, strict=True)):
        if n:
            await settle(ctx)
        ran, was_healed = await _run_cached(ctx, action, identity, variables)
        done.append(ran)
        healed = healed or was_healed
    if healed:
        ctx.cache.store(key, done, [ctx.identities.get(a.selector) for a in done])
        logger.info("act %r: cache entry rewritten with the healed selector(s)", instruction)
    return ActResult(success=True, message=f"{instruction}: done (from cache)", description=done[-1].description,
                     actions=done, healed=healed, cache_hit=True)
