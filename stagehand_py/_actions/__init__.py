"""The action executor: turn an :class:`~stagehand_py.Action` into browser input. No model in here.

- :func:`resolve_element` finds exactly one element for a selector, following the
  snapshot's canonical xpaths through iframes (out-of-process ones included) and shadow
  roots (closed ones too, once :func:`install_page_helpers` ran);
- :func:`execute_plan` validates, substitutes ``%variables%``, resolves a :class:`Plan`'s element
  once, lets the caller check it is the planned one and runs one of the registered methods
  (:data:`METHODS`) on that handle, translating Playwright's errors (:func:`execute_action`: the
  same for a bare action, unchecked);
- :func:`substitute` fills placeholders from a :class:`~stagehand_py._secrets.VariableSet`
  without ever exposing the values;
- :func:`wait_for_settled_dom` and :class:`PageWatch` wait for the network to go quiet and
  tell whether an action navigated or opened a page.
"""

from ._executor import Plan, action_title, execute_action, execute_plan
from ._methods import KNOWN_METHODS, METHODS, Dispatches, MethodSpec, normalize_method
from ._resolve import DEFAULT_TIMEOUT, CanonicalStep, install_page_helpers, parse_canonical_xpath, resolve_element
from ._settle import (
    DEFAULT_LONG_POLL_MS,
    DEFAULT_QUIET_MS,
    DEFAULT_SETTLE_TIMEOUT_MS,
    PageWatch,
    late_content_window,
    page_clock,
    settled_after,
    settled_clock,
    wait_for_change,
    wait_for_settled_dom,
    watch_page,
)
from ._variables import PLACEHOLDER, placeholders_in, substitute

__all__ = [
    "Dispatches",
    "Plan",
    "action_title",
    "execute_plan",
    "DEFAULT_LONG_POLL_MS",
    "DEFAULT_QUIET_MS",
    "DEFAULT_SETTLE_TIMEOUT_MS",
    "DEFAULT_TIMEOUT",
    "KNOWN_METHODS",
    "METHODS",
    "PLACEHOLDER",
    "CanonicalStep",
    "MethodSpec",
    "PageWatch",
    "execute_action",
    "install_page_helpers",
    "late_content_window",
    "page_clock",
    "normalize_method",
    "parse_canonical_xpath",
    "placeholders_in",
    "resolve_element",
    "settled_after",
    "settled_clock",
    "substitute",
    "wait_for_change",
    "wait_for_settled_dom",
    "watch_page",
]
