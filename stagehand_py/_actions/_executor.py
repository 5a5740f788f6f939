"""Run one :class:`~stagehand_py.Action` on a page: validate, substitute, resolve, act, translate errors.

The order matters and is the contract:

1. method and argument *count* are checked (no browser call, no variable touched);
2. ``%placeholders%`` are substituted (an unknown one raises here, still before the browser);
3. the argument *values* are validated and parsed (e.g. scroll offsets are numbers);
4. the selector is resolved to exactly one element;
5. the method runs; Playwright errors become :class:`ActionFailedError`,
   :class:`StagehandTimeoutError` or :class:`PageClosedError`, chained to their cause.

From step 2 on, the substituted values exist only in local variables: logs and messages
quote the action's own arguments (with their placeholders), and Playwright's text is
redacted before it is quoted or chained.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial

from playwright.async_api import ElementHandle, Page
from playwright.async_api import Error as PlaywrightError

from .._cache import ElementIdentity
from .._errors import ActionError, InvalidArgumentError, PageClosedError, StagehandError
from .._secrets import VariableSet
from .._types import Action
from ..browser._recording import action_watcher, check_trace_typing, trace_group
from ..tracing._spans import traced_action
from ._methods import Dispatches, MethodCall, check_arity
from ._resolve import DEFAULT_TIMEOUT, resolve_element
from ._translate import redact, safe_cause, translate_error
from ._variables import check_placement, placeholders_in, substitute

__all__ = ["Dispatches", "Plan", "action_title", "execute_action", "execute_plan"]

logger = logging.getLogger("stagehand_py._actions")


def _remaining_ms(deadline: float) -> float:
    # Playwright reads timeout=0 as "no timeout"; never hand it zero or less.
    return max(1.0, (deadline - time.monotonic()) * 1000)


def action_title(action: Action) -> str:
    """How an action is named in a trace and the run viewer: ``fill "%password%" "Password"``
    (its placeholders, never values; the element as the outline or the model described it)."""
    arguments = "".join(f' "{a}"' for a in action.arguments if str(a))
    target = _OUTLINE_ID.sub("", action.description).strip() or action.selector
    known = _OUTLINE_ID.match(action.description)
    return f'{action.method}{arguments} "{target[:60]}"' + (f" [{known.group(1)}]" if known else "")


#: An outline line's id at the start of a description (``[0-12] textbox: Username``).
_OUTLINE_ID = re.compile(r"^\s*\[(\d+-\d+)\]\s*")


@dataclass(frozen=True)
class Plan:
    """The planned element as a value: the :class:`Action`, the identity (role and name) of the
    element it was chosen on, and that element's id in the snapshot it was chosen from (both None
    when unknown: an action built by hand). observe, act, the agent and replay hand this to the
    executor; nothing travels beside it."""

    action: Action
    identity: ElementIdentity | None = None
    element_id: str | None = None


async def execute_action(
    page: Page,
    action: Action,
    *,
    variables: VariableSet | None = None,
    xpath_map: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> None:
    """Perform ``action`` on ``page``, unchecked; return when the browser has done it (not settled).

    ``variables`` (the call's set) fill the ``%name%`` placeholders of ``action.arguments``; a
    :class:`~stagehand_py.Secret` among them goes only where it is bound; ``xpath_map``
    (snapshot element id -> xpath) lets ``drag_and_drop`` name its target by id;
    ``timeout`` (seconds, default :data:`DEFAULT_TIMEOUT`) bounds resolution and the action
    together, the navigation a click starts included. See :func:`execute_plan` for the errors.
    """
    if not isinstance(action, Action):
        raise InvalidArgumentError(f"execute_action needs an Action; got a {type(action).__name__}.")
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    if timeout <= 0:
        raise InvalidArgumentError(f"timeout must be a positive number of seconds; got {timeout:g}.")
    await execute_plan(page, Plan(action), variables=variables, xpath_map=xpath_map, deadline=time.monotonic() + timeout)


async def execute_plan(
    page: Page,
    plan: Plan,
    *,
    deadline: float,
    variables: VariableSet | None = None,
    xpath_map: Mapping[str, str] | None = None,
    found_by: float | None = None,
    actionable_for: float | None = None,
    confirm: Callable[[], Awaitable[None]] | None = None,
    dispatches: Dispatches | None = None,
) -> None:
    """Perform ``plan.action``: resolve its element once, let ``confirm`` check that it is the
    planned one, and act on that handle.

    Every bound is a ``time.monotonic()`` instant, from the verb's one deadline: ``deadline``
    bounds the whole action, the navigation a click starts included; ``found_by`` the element's
    resolution (default ``deadline``). ``actionable_for`` (seconds, counted once the element is
    resolved and confirmed; default: up to ``deadline``) bounds the element becoming visible,
    enabled and stable, before anything is sent.
    ``confirm`` runs after resolution, before anything is sent: it raises when the element is not
    the one planned (the caller's identity check, read where the page cannot reach).
    ``dispatches`` notes ``"<method> on <selector>"`` the moment the action is sent: an error
    after that means the action may have taken effect (its message says so), and it must not be
    run again. ``plan.element_id`` names the element in the action's span.

    Raises :class:`UnsupportedMethodError`, :class:`InvalidArgumentError` (wrong arguments),
    :class:`UnknownVariableError` (all three before any browser call),
    :class:`ElementNotFoundError` / :class:`AmbiguousSelectorError`, :class:`SecretPlacementError`
    (before anything is sent to the element), what ``confirm`` raises,
    :class:`ActionFailedError`, :class:`StagehandTimeoutError` or :class:`PageClosedError`.
    """
    action = plan.action
    started = time.monotonic()
    # In seconds, as errors quote them (rounded: the caller's timeout=, not a clock's residue).
    timeout = round(max(0.0, deadline - started), 2)
    resolve_deadline = min(deadline, found_by) if found_by is not None else deadline
    selector = action.selector

    spec, raw = check_arity(action.method, action.arguments)
    raw_texts = [str(a) for a in raw]
    variables = VariableSet.of(None) if variables is None else variables
    args = substitute(raw, variables)
    used = placeholders_in(raw_texts)
    # Only the variables this action uses can leak through it; redact exactly those.
    secrets = variables.only(used).secret_values() if used else []
    params = spec.prepare(args, raw_texts, xpath_map)

    # raw_texts holds placeholders, never substituted values: safe to log.
    logger.debug(
        "executing %s on %s with arguments %r%s",
        spec.name,
        selector,
        raw_texts,
        f" (placeholders: {', '.join(used)})" if used else "",
    )
    if page.is_closed():
        raise PageClosedError(f"cannot {spec.name} {selector}: the page is closed.")
    check_trace_typing(page, used, variables)  # a value never goes into a trace we cannot scrub

    try:
        element = await resolve_element(page, selector, timeout=max(0.0, resolve_deadline - started))
    except ActionError as exc:
        exc.method = exc.method or spec.name  # the resolver does not know what it resolved for
        raise
    try:
        if confirm is not None:  # the planned element, on this handle's path, before anything is sent
            await confirm()
        if used:  # a bound Secret goes only into its field, in a frame of one of its origins
            await check_placement(used, variables, element, (await element.owner_frame() or page.main_frame).url,
                                  selector=selector, method=spec.name)
    except BaseException:
        with contextlib.suppress(PlaywrightError):  # the page navigated or closed: nothing to release
            await element.dispose()
        raise
    confirmed = time.monotonic()
    probe_deadline = deadline if actionable_for is None else min(deadline, confirmed + actionable_for)
    probe = timeout if actionable_for is None else round(max(0.0, probe_deadline - confirmed), 2)

    async def resolve_other(target: str) -> ElementHandle:
        # A drag target may come from a variable: keep its value out of the not-found message.
        try:
            return await resolve_element(page, target, timeout=max(0.0, deadline - time.monotonic()))
        except StagehandError as exc:
            if not any(secret in str(exc) for secret in secrets):
                raise
            message = redact(str(exc), secrets)
            redacted = (
                type(exc)(message, selector=None, method=spec.name) if isinstance(exc, ActionError) else type(exc)(message)
            )
        raise redacted from None

    sent = Dispatches()
    call = MethodCall(page=page, element=element, selector=selector, timeout_ms=_remaining_ms(deadline),
                      probe_ms=_remaining_ms(probe_deadline), resolve=resolve_other, what=f"{spec.name} on {selector}",
                      dispatches=(sent, dispatches) if dispatches is not None else (sent,))
    failure: tuple[BaseException, BaseException] | None = None
    try:
        watcher = action_watcher(page.context)
        if watcher is not None:  # the run viewer's picture: this element, before anything is sent
            await watcher.before_action(page, element, action, variables)
        async with trace_group(page, action_title(action), variables):
            await traced_action(spec.name, selector, partial(spec.run, call, params), element_id=plan.element_id)
    except PlaywrightError as exc:
        after = " after it was sent to the page (it may have taken effect, so it is not repeated)" if sent.sent else ""
        error = translate_error(
            exc,
            what=f"{spec.name} on {selector}{after}",
            selector=selector,
            method=spec.name,
            timeout=timeout if sent.sent else probe,
            secrets=secrets,
        )
        if page.is_closed() and not isinstance(error, PageClosedError):
            error = PageClosedError(f"{spec.name} on {selector} failed because the page was closed ({error}).")
        # Raised below, outside this block, so that __context__ does not keep Playwright's
        # original exception: its call log quotes the typed value ('fill("...")').
        failure = (error, safe_cause(exc, secrets))
    finally:
        try:
            await element.dispose()
        except PlaywrightError:
            pass  # the page navigated or closed: nothing left to release
    if failure is not None:
        logger.debug("%s on %s failed: %s", spec.name, selector, failure[0])
        raise failure[0] from failure[1]
    logger.debug("%s on %s done", spec.name, selector)
