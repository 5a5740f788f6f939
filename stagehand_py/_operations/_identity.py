"""Element identity for the action cache: is a cached XPath still the element it was cached for?

A page can change so that a cached XPath still resolves, to exactly one element, but a
different one (a wrapper inserted before a form makes ``form[1]/input[1]`` the password field).
Resolving is then no proof, so every cached action carries the identity of the element it was
planned on: the role and accessible name of its outline line in the snapshot the model chose
it from (see :class:`~stagehand_py._cache.ElementIdentity`). Values (``value="..."``) and state
flags (``[checked]``, ``[focused]``, ...) are not part of it: they change with use, and values
may be secret. Names are redacted like prompts (:func:`~stagehand_py._secrets.redact_text`).

Before a cached action runs, :func:`identity_matches` resolves its XPath (waiting briefly for
the element), takes a snapshot scoped to that element (the whole page only when the scoped one
cannot tell, e.g. paths into frames or shadow roots) and compares role and name. A mismatch is
a stale entry: the caller heals it by description.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._actions import resolve_element
from .._cache import ElementIdentity
from .._errors import ActionError, CDPError, InvalidArgumentError, SnapshotError
from .._secrets import VariableSet
from .._types import Action
from ..snapshot import Snapshot, parse_line

if TYPE_CHECKING:
    from ._context import OperationContext

__all__ = ["identity_in", "identity_matches", "remember"]

logger = logging.getLogger("stagehand_py._operations")



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
        handle = await resolve_element(ctx.page, action.selector, timeout=ctx.action_timeout(wait))
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
