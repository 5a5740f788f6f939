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
the model chose it from (see :class:`~stagehand_py._cache.ElementIdentity`). The action, that
identity and the element's snapshot id travel together as one value, a
:class:`~stagehand_py._actions.Plan` (:func:`plan_in`), from the planner to the executor.
Values (``value="..."``) and state flags (``[checked]``, ``[focused]``, ...) are not part of it:
they change with use, and values may be secret. Names are redacted like prompts. The executor
resolves the element once and, before anything is sent, has :func:`_confirm` take a snapshot
scoped to that element (the whole page only when the scoped one cannot tell, e.g. paths into
frames or shadow roots) and compare role and name; then it acts on the handle it resolved. A
mismatch heals by description.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from .._actions import DEFAULT_TIMEOUT, Dispatches, Plan, action_title, execute_plan, resolve_element, settled_after
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

__all__ = ["cached_actions_valid", "heal", "identity_in", "identity_matches", "plan_in", "plan_on", "planned", "remember",
           "replay", "run_plan"]

logger = logging.getLogger("stagehand_py._operations")

_HEALABLE = (ElementNotFoundError, ActionFailedError, StagehandTimeoutError)


class _NotThePlannedElement(ActionFailedError):
    """The selector resolved, to an element other than the one planned (raised before anything is sent)."""


def _can_heal(ctx: OperationContext) -> bool:
    return ctx.self_heal and ctx.client is not None


def _by(ctx: OperationContext, wanted: float) -> float:
    """The instant ``wanted`` seconds from now, cut so the executor gives up (with a precise error)
    before the verb's one deadline (``ctx.deadline``) passes."""
    now = time.monotonic()
    if ctx.deadline is None:
        return now + wanted
    return max(now + 0.1, min(now + wanted, ctx.deadline - 0.3))


def _probe_s(ctx: OperationContext) -> float:
    """Seconds a first try waits for its element before a heal may take over: the page's settle
    time (what this Stagehand waits for a page to calm down)."""
    return min(ctx.dom_settle_timeout, DEFAULT_TIMEOUT)


def _action_by(ctx: OperationContext) -> float:
    """The whole action's bound: the verb's deadline, else the default action timeout from now."""
    return _by(ctx, DEFAULT_TIMEOUT if ctx.deadline is None else float("inf"))


async def _execute(ctx: OperationContext, plan: Plan, dispatches: Dispatches, *, heal_may_follow: bool) -> None:
    """Run ``plan`` (its identity checked on the element the executor resolved) and settle."""
    checked = plan.identity is not None

    async def confirm() -> None:
        await _confirm(ctx, plan)

    await settled_after(ctx.page, execute_plan(
        ctx.page, plan, variables=ctx.variables, deadline=_action_by(ctx),
        # a checked element is looked for only as long as a first try waits
        found_by=_by(ctx, _probe_s(ctx)) if heal_may_follow or checked else None,
        actionable_for=_probe_s(ctx) if heal_may_follow else None,
        confirm=confirm if checked else None, dispatches=dispatches), timeout_ms=ctx.dom_settle_timeout * 1000)


async def run_plan(ctx: OperationContext, plan: Plan, dispatches: Dispatches, *, cached: bool = False) -> tuple[Plan, bool]:
    """Run ``plan``: its element must still be the one it was planned (or ``cached``) on, when
    known. When it is not, or the action failed before it was sent, heal once (a model call) if
    healing is possible, else refuse. Returns (what ran, healed); ``dispatches`` notes what was sent."""
    can_heal = _can_heal(ctx)
    action, identity = plan.action, plan.identity
    before = len(dispatches.sent)
    try:
        await _execute(ctx, plan, dispatches, heal_may_follow=can_heal)
        return plan, False
    except _HEALABLE as exc:
        # Sent: it may have taken effect; never run it again. A refused secret: the model's choice
        # was the problem, and re-asking the model that chose it is no fix.
        if len(dispatches.sent) > before or isinstance(exc, SecretPlacementError):
            raise
        gone = isinstance(exc, ElementNotFoundError) and exc.selector == action.selector  # not a drag target
        if identity is None or not (isinstance(exc, _NotThePlannedElement) or gone):
            if not can_heal:
                raise
            logger.info("%s on %s failed (%s); self-healing", action.method, action.selector, type(exc).__name__)
            return await _heal_and_run(ctx, plan, f"failed ({exc})", dispatches)
    # The selector no longer names the element the action was planned (or cached) on.
    assert identity is not None
    if not can_heal:
        if cached:
            raise ElementNotFoundError(
                f"the cached {action.method} on {action.selector} is stale: that path now names a different element "
                f"than the {identity.role} it was cached for (or none). Enable self_heal with a model, or delete the "
                "cache entry.",
                selector=action.selector, method=action.method,
            )
        raise ActionFailedError(
            f"{action.method} on {action.selector}: the element no longer names the {identity.role} {identity.name!r} "
            "it was planned on, so nothing was done. Observe the page again.",
            selector=action.selector, method=action.method,
        )
    if cached:
        logger.info("cached %s on %s: a different element now; self-healing", action.method, action.selector)
    why = ("(cached) names a different element now" if cached
           else f"no longer names the {identity.role} {identity.name!r} it was planned on")
    return await _heal_and_run(ctx, plan, why, dispatches, identity.role)


async def _heal_and_run(ctx: OperationContext, plan: Plan, why: str, dispatches: Dispatches,
                        role: str | None = None) -> tuple[Plan, bool]:
    """Re-locate ``plan``'s element by description (one model call) and run it there.

    ``why`` completes "<method> on <selector> ..." in the error when nothing fits; ``role``: the
    recorded element's role, which the re-located element must have.
    """
    action = plan.action
    healed = await in_trace_group(ctx.page, f"heal: {action_title(action)}", ctx.variables, heal(ctx, action, role=role))
    if healed is None:
        raise ElementNotFoundError(
            f"{action.method} on {action.selector} {why} and self-heal found no element matching "
            f"{action.description or 'the action'!r} on the page now. Observe the page again.",
            selector=action.selector, method=action.method,
        )
    # Chosen from the snapshot the heal just read: run as found, without a second identity check.
    await _execute(ctx, Plan(healed.action, element_id=healed.element_id), dispatches, heal_may_follow=False)
    logger.info("healed: %s now runs on %s", action.method, healed.action.selector)
    return healed, True


async def heal(ctx: OperationContext, action: Action, *, role: str | None = None) -> Plan | None:
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
    healed = plan_in(page.snapshot, found[0].model_copy(update={"description": action.description or found[0].description}),
                     ctx.variables)
    remember(ctx, [healed])
    return healed


def planned(ctx: OperationContext, action: Action, element: ElementIdentity | None = None) -> Plan:
    """The plan of an :class:`Action` the caller hands in: the element it was chosen on is
    ``element`` when given (an exported run, the agent), else the one this tab's observe or act
    planned it on, when they did."""
    return Plan(action, element if element is not None else ctx.identities.get(action.selector))


async def replay(ctx: OperationContext, key: str, instruction: str, cached: CacheEntry) -> ActResult:
    """act from the cache: each step checked (and healed) as it runs; a healed entry is rewritten."""
    logger.info("act %r: replaying %d cached action(s)", instruction, len(cached.actions))
    done: list[Plan] = []
    dispatches = Dispatches()
    healed = False
    for n, (action, identity) in enumerate(zip(cached.actions, cached.elements, strict=True)):
        if n:
            await settle(ctx)
        ran, was_healed = await run_plan(ctx, Plan(action, identity), dispatches, cached=True)
        done.append(ran)
        healed = healed or was_healed
    remember(ctx, done)
    if healed:
        ctx.cache.store(key, [p.action for p in done], [p.identity for p in done])
        logger.info("act %r: cache entry rewritten with the healed selector(s)", instruction)
    return ActResult(success=True, message=f"{instruction}: done (from cache)", description=done[-1].action.description,
                     actions=[p.action for p in done], healed=healed, cache_hit=True, dispatched=dispatches.sent,
                     elements=[p.identity for p in done])


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


def plan_on(element: SnapshotElement | None, action: Action, variables: VariableSet) -> Plan:
    """``action`` as planned on ``element``, its element's record in the read it was chosen from
    (the answer check's: no second lookup); a plan without identity when None."""
    if element is None:
        return Plan(action)
    return Plan(action, ElementIdentity(element.role, variables.redact(element.name)), element.id)


def _identity_of(snapshot: Snapshot, element_id: str | None, variables: VariableSet) -> ElementIdentity | None:
    line = snapshot.line_for(element_id) if element_id is not None else None
    return identity_of_line(line, variables) if line is not None else None


def identity_in(snapshot: Snapshot, selector: str, variables: VariableSet) -> ElementIdentity | None:
    """The identity of the element ``selector`` (``xpath=...``) names in ``snapshot``, or None."""
    if not selector.startswith("xpath="):
        return None
    return _identity_of(snapshot, snapshot.id_of(selector), variables)


def plan_in(snapshot: Snapshot, action: Action, variables: VariableSet) -> Plan:
    """``action`` as planned on ``snapshot`` (the one it was chosen from): with its element's id
    and identity there (both None when the selector names none of its elements)."""
    element_id = snapshot.id_of(action.selector) if action.selector.startswith("xpath=") else None
    return Plan(action, _identity_of(snapshot, element_id, variables), element_id)


def remember(ctx: OperationContext, plans: Iterable[Plan]) -> None:
    """Keep, in this tab's session, the identity each plan's element was chosen on: a later
    ``act(action)`` of an observed action checks it, and the action cache stores it."""
    for plan in plans:
        if plan.identity is not None:
            ctx.identities[plan.action.selector] = plan.identity


async def _identity_now(ctx: OperationContext, selector: str) -> ElementIdentity | None:
    """The identity of the element at ``selector`` now, read in our world by a snapshot scoped to
    it (the whole page when the scoped one cannot tell: paths into frames or shadow roots, text)."""
    now = None
    try:
        now = identity_in(await ctx.session.snapshot(selector=selector, alone=True), selector, ctx.variables)
    except (ActionError, InvalidArgumentError, SnapshotError, CDPError):
        pass
    if now is None:
        now = identity_in(await ctx.session.snapshot(), selector, ctx.variables)
    return now


async def _confirm(ctx: OperationContext, plan: Plan) -> None:
    """Raise :class:`_NotThePlannedElement` unless ``plan``'s selector names its element now."""
    now = await _identity_now(ctx, plan.action.selector)
    if now != plan.identity:
        assert plan.identity is not None
        logger.info("%s on %s: the element is now a %s, not the planned %s", plan.action.method, plan.action.selector,
                    now.role if now else "(nothing shown)", plan.identity.role)
        raise _NotThePlannedElement(f"{plan.action.selector} names another element now",
                                    selector=plan.action.selector, method=plan.action.method)


async def identity_matches(ctx: OperationContext, action: Action, identity: ElementIdentity, *,
                           wait: float) -> bool:
    """True when ``action``'s selector names an element with ``identity`` now (a cached observe's
    quick check). Waits up to ``wait`` seconds for the element to appear. False when it does not
    resolve, is not in the outline (hidden) or has another role or name."""
    try:
        handle = await resolve_element(ctx.page, action.selector, timeout=max(0.0, _by(ctx, wait) - time.monotonic()))
    except ActionError:
        return False
    await handle.dispose()
    return await _identity_now(ctx, action.selector) == identity
