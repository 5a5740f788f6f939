"""Running a planned or cached action safely: identity check, self-heal, and cache replay.

- Before an action this Stagehand planned (or observed, or cached) runs, its selector must
  still name the element it was chosen on (role and name, see below): a changed
  page can make the same XPath name another element, which must never be acted on silently.
- Self-heal (``self_heal=True`` and a model configured): when the selector no longer resolves,
  the element never becomes actionable or is another one now, the page is read again, the
  element re-located from the action's description, method and arguments (one model call on the
  most relevant part) and the action retried once. An action that was sent to the page is never
  healed nor repeated, whatever happens after: it may have taken effect (a form submitted, an
  order placed). A slow answer to it (a navigation, a request) is waited for up to the verb's
  timeout, and is success.
- Bounds: the first try waits for the element to become actionable up to the page's settle time
  (``dom_settle_timeout``) when a heal could follow, else up to the whole action timeout; the
  action itself, and the navigation it starts, get the whole action timeout; every bound is cut
  to the caller's ``timeout=``.
- Cache replay: act replays a cached plan with no model call, healing stale steps and
  rewriting the entry; observe replays cached actions when every one still names its element.
  Entries without identities (written before they existed) replay unchecked.

Element identity: a page can change so that an XPath still resolves, to exactly one element,
but a different one (a wrapper inserted before a form makes ``form[1]/input[1]`` the password
field). Resolving is then no proof, so every planned or cached action carries the identity of
the element it was chosen on: the role and accessible name of its outline line in the snapshot
the model chose it from (:func:`remember`; see :class:`~stagehand_py._cache.ElementIdentity`).
Values (``value="..."``) and state flags (``[checked]``, ``[focused]``, ...) are not part of it:
they change with use, and values may be secret. Names are redacted like prompts. Before such an
action runs, :func:`identity_matches` resolves its XPath (waiting briefly for the element), takes
a snapshot scoped to that element (the whole page only when the scoped one cannot tell, e.g.
paths into frames or shadow roots) and compares role and name; a mismatch heals by description.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from .._actions import DEFAULT_TIMEOUT, action_title, execute_action, resolve_element, watch_page
from .._cache import CacheEntry, ElementIdentity
from .._errors import (
    ActionError,
    ActionFailedError,
    CDPError,
    ElementNotFoundError,
    InvalidArgumentError,
    SecretPlacementError,
    SnapshotError,
    StagehandTimeoutError,
)
from .._prompts.act import heal_system, heal_user
from .._prompts.common import Fence
from .._prompts.observe import ObserveAnswer
from .._secrets import VariableSet
from .._session import OperationContext
from .._types import Action, ActResult
from ..browser._recording import in_trace_group
from ..snapshot import Snapshot, SnapshotElement, parse_line
from ._answers import check_elements
from ._pipeline import Question, ask_parts, read_page, settle, split_page

__all__ = ["cached_actions_valid", "heal", "identity_in", "identity_matches", "probe_timeout", "remember", "replay",
           "run_action", "run_checked"]

logger = logging.getLogger("stagehand_py._operations")

_HEALABLE = (ElementNotFoundError, ActionFailedError, StagehandTimeoutError)


def _can_heal(ctx: OperationContext) -> bool:
    return ctx.self_heal and ctx.client is not None


def _within_deadline(ctx: OperationContext, wanted: float) -> float:
    """``wanted`` seconds, shortened so the executor gives up (with a precise error) before the verb times out."""
    if ctx.deadline is None:
        return wanted
    return max(0.1, min(wanted, ctx.deadline - time.monotonic() - 0.3))


def probe_timeout(ctx: OperationContext) -> float:
    """Seconds a first try waits for its element before a heal may take over: the page's settle
    time (what this Stagehand waits for a page to calm down), within the caller's deadline."""
    return _within_deadline(ctx, min(ctx.dom_settle_timeout, DEFAULT_TIMEOUT))


def _action_timeout(ctx: OperationContext) -> float:
    """The whole action's bound: what is left of the caller's ``timeout=``, else the default."""
    return _within_deadline(ctx, DEFAULT_TIMEOUT if ctx.deadline is None else float("inf"))


async def _execute(ctx: OperationContext, action: Action,
                   actionable_within: float, dispatched: list[str]) -> None:
    async with watch_page(ctx.page) as watch:
        await execute_action(ctx.page, action, variables=ctx.variables, timeout=_action_timeout(ctx),
                             actionable_within=actionable_within, dispatched=dispatched)
        await watch.wait_for_settled(timeout_ms=ctx.dom_settle_timeout * 1000)


async def run_action(ctx: OperationContext, action: Action, dispatched: list[str] | None = None) -> tuple[Action, bool]:
    """Run ``action``; heal it once if it failed before it was sent and healing is possible.
    Returns (what ran, healed); ``dispatched`` receives what was sent to the page."""
    can_heal = _can_heal(ctx)
    sent: list[str] = []
    try:
        await _execute(ctx, action, probe_timeout(ctx) if can_heal else _action_timeout(ctx), sent)
        return action, False
    except _HEALABLE as exc:
        # sent: it may have taken effect; never run it again. A refused secret: the model's choice
        # was the problem, and re-asking the model that chose it is no fix.
        if not can_heal or sent or isinstance(exc, SecretPlacementError):
            raise
        logger.info("%s on %s failed (%s); self-healing", action.method, action.selector, type(exc).__name__)
        return await _heal_and_run(ctx, action, f"failed ({exc})", dispatched)
    finally:
        if dispatched is not None:
            dispatched.extend(sent)


async def _heal_and_run(ctx: OperationContext, action: Action, why: str, dispatched: list[str] | None, role: str | None = None) -> tuple[Action, bool]:
    """Re-locate ``action``'s element by description (one model call) and run it there.

    ``why`` completes "<method> on <selector> ..." in the error when nothing fits; ``role``: the
    recorded element's role, which the re-located element must have.
    """
    healed = await in_trace_group(ctx.page, f"heal: {action_title(action)}", ctx.variables, heal(ctx, action, role=role))
    if healed is None:
        raise ElementNotFoundError(
            f"{action.method} on {action.selector} {why} and self-heal found no element matching "
            f"{action.description or 'the action'!r} on the page now. Observe the page again.",
            selector=action.selector, method=action.method,
        )
    await _execute(ctx, healed, _action_timeout(ctx), dispatched if dispatched is not None else [])
    logger.info("healed: %s now runs on %s", action.method, healed.selector)
    return healed, True


async def heal(ctx: OperationContext, action: Action, *, role: str | None = None) -> Action | None:
    """Re-locate ``action``'s element on a fresh read of the page (one model call on the best part).

    With ``role`` (the element it was planned on was a button, a textbox...), an answer of another
    role is re-asked: a renamed "Sign in" button must not heal onto the "Sign in" heading."""
    client = ctx.model()  # a clear ConfigurationError before touching the page
    page = await read_page(ctx)

    def prompt(fence: Fence, text: str, part: tuple[int, int] | None) -> tuple[str, str]:
        return heal_system(fence), heal_user(action.description, action.method, action.arguments, text, fence, part=part)

    def check(out: ObserveAnswer) -> tuple[list[str], list[Action]]:
        # Keep the original method and arguments: only the element is re-located.
        elements = [e.model_copy(update={"method": action.method, "arguments": list(action.arguments)})
                    for e in out.elements[:1]]
        problems, found = check_elements(elements, page.snapshot, ctx.variables.descriptions)
        now = identity_in(page.snapshot, found[0].selector, ctx.variables) if found and role is not None else None
        if found and role is not None and (now is None or now.role != role):
            return [f"elements[0] is {'a ' + now.role if now else 'not an element of the outline'}, but the action "
                    f"was on a {role}: choose the {role} that fits the description."], []
        return problems, found

    def fits(element: SnapshotElement) -> bool:
        # In choice mode only elements of the recorded role that can take the action are offered: a
        # small model otherwise picks the first button of the form, a disabled "Reset password".
        return (role is None or element.role == role) and "disabled" not in element.flags

    parts = split_page(ctx, page.text, prompt, ObserveAnswer, rank_by=f"{action.description} {' '.join(action.arguments)}",
                       choice=client.choice_mode)
    answers = await ask_parts(ctx, page, parts, Question(prompt, ObserveAnswer, check), purpose="heal",
                              done=lambda found: True, limit=1, elements=True, instruction=action.description,
                              only=fits)
    found = answers[0] if answers else []
    if not found:
        return None
    healed = found[0].model_copy(update={"description": action.description or found[0].description})
    remember(ctx, page.snapshot, [healed])
    return healed


async def run_checked(ctx: OperationContext, action: Action, dispatched: list[str] | None = None) -> tuple[Action, bool]:
    """Run ``action``, but first check that its selector still names the element it was planned
    on (role and name, when this Stagehand planned or observed it): if the page swapped another
    element in since (a "Delete" where "Save" was), re-locate the planned one, or refuse."""
    identity = ctx.identities.get(action.selector)
    if identity is None or await identity_matches(ctx, action, identity, wait=probe_timeout(ctx)):
        return await run_action(ctx, action, dispatched)
    why = f"no longer names the {identity.role} {identity.name!r} it was planned on"
    if not _can_heal(ctx):
        raise ActionFailedError(
            f"{action.method} on {action.selector}: the element {why}, so nothing was done. Observe the page again.",
            selector=action.selector, method=action.method,
        )
    return await _heal_and_run(ctx, action, why, dispatched, identity.role)


async def _run_cached(ctx: OperationContext, action: Action, identity: ElementIdentity | None,
                      dispatched: list[str]) -> tuple[Action, bool]:
    """Run one cached step: first check that its selector still names the element it was cached for."""
    if identity is None or await identity_matches(ctx, action, identity, wait=probe_timeout(ctx)):
        if identity is not None:
            ctx.identities[action.selector] = identity
        return await run_action(ctx, action, dispatched)
    if not _can_heal(ctx):
        raise ElementNotFoundError(
            f"the cached {action.method} on {action.selector} is stale: that path now names a different element "
            f"than the {identity.role} it was cached for (or none). Enable self_heal with a model, or delete the "
            "cache entry.",
            selector=action.selector, method=action.method,
        )
    logger.info("cached %s on %s: a different element now; self-healing", action.method, action.selector)
    return await _heal_and_run(ctx, action, "(cached) names a different element now", dispatched,
                               identity.role)


async def replay(ctx: OperationContext, key: str, instruction: str, cached: CacheEntry) -> ActResult:
    """act from the cache: each step checked (and healed) as it runs; a healed entry is rewritten."""
    logger.info("act %r: replaying %d cached action(s)", instruction, len(cached.actions))
    done: list[Action] = []
    dispatched: list[str] = []
    healed = False
    for n, (action, identity) in enumerate(zip(cached.actions, cached.elements, strict=True)):
        if n:
            await settle(ctx)
        ran, was_healed = await _run_cached(ctx, action, identity, dispatched)
        done.append(ran)
        healed = healed or was_healed
    if healed:
        ctx.cache.store(key, done, [ctx.identities.get(a.selector) for a in done])
        logger.info("act %r: cache entry rewritten with the healed selector(s)", instruction)
    return ActResult(success=True, message=f"{instruction}: done (from cache)", description=done[-1].description,
                     actions=done, healed=healed, cache_hit=True, dispatched=dispatched)


async def cached_actions_valid(ctx: OperationContext, entry: CacheEntry) -> bool:
    """True when every cached selector still names exactly one element (a quick check, no waiting)
    and, where the entry knows it, the element it was cached for (role and name)."""
    for action, identity in zip(entry.actions, entry.elements, strict=True):
        if identity is not None:
            if not await identity_matches(ctx, action, identity, wait=0.5):
                logger.info("cache entry is stale (%s names another element now)", action.selector)
                return False
            continue
        try:
            handle = await resolve_element(ctx.page, action.selector, timeout=0.5)
        except ActionError:
            logger.info("cache entry is stale (%s no longer resolves)", action.selector)
            return False
        await handle.dispose()
    return True


# --- element identity -------------------------------------------------------------------


def identity_of_line(line: str, variables: VariableSet) -> ElementIdentity | None:
    """Role and name of an outline line (``[0-12] textbox: Username value="x" [focused]``)."""
    element = parse_line(line)
    if element is None:
        return None
    return ElementIdentity(element.role, variables.redact(element.name))


def _xpath(selector: str) -> str | None:
    return selector[len("xpath="):] if selector.startswith("xpath=") else None


def identity_in(snapshot: Snapshot, selector: str, variables: VariableSet) -> ElementIdentity | None:
    """The identity of the element ``selector`` (``xpath=...``) names in ``snapshot``, or None."""
    xpath = _xpath(selector)
    if xpath is None:
        return None
    for eid, path in snapshot.xpath_map.items():
        if path == xpath:
            line = snapshot.line_for(eid)
            return identity_of_line(line, variables) if line is not None else None
    return None


def remember(ctx: OperationContext, snapshot: Snapshot, actions: Iterable[Action]) -> None:
    """Note the identity of each action's element in ``snapshot`` (the one it was chosen from)."""
    for action in actions:
        identity = identity_in(snapshot, action.selector, ctx.variables)
        if identity is not None:
            ctx.identities[action.selector] = identity


async def identity_matches(ctx: OperationContext, action: Action, identity: ElementIdentity, *,
                           wait: float) -> bool:
    """True when ``action``'s selector names an element with ``identity`` now.

    Waits up to ``wait`` seconds for the element to appear. False when it does not resolve,
    is not in the outline (hidden) or has another role or name.
    """
    try:
        handle = await resolve_element(ctx.page, action.selector, timeout=_within_deadline(ctx, wait))
    except ActionError:
        return False
    await handle.dispose()
    now = None
    try:
        now = identity_in(await ctx.session.snapshot(selector=action.selector), action.selector, ctx.variables)
    except (ActionError, InvalidArgumentError, SnapshotError, CDPError):
        pass  # not a plain main-frame element path (frames, shadow roots, text): the whole page tells
    if now is None:
        now = identity_in(await ctx.session.snapshot(), action.selector, ctx.variables)
    if now != identity:
        logger.info("cached %s on %s: the element is now a %s, not the cached %s", action.method, action.selector,
                    now.role if now else "(nothing shown)", identity.role)
        return False
    return True
