"""``allowed_domains``: the guard that holds a browser context to a set of hosts.

The browser layer owns it, as Playwright owns routing. Its parts, one concern each:

- ``_policy``: the patterns, how a URL matches them, the policy as a ``Connection-Allowlist`` header;
- ``_routes``: enforcement at the context's routes (every request, WebSocket and first redirect);
- ``_hops``: enforcement where Chromium follows redirects (every later hop, DevTools ``Fetch``);
- ``_speculation``: speculation rules removed and refused, prerendering off;
- ``_record``: what was refused, once each, redacted in the log;
- ``_guard``: the parts installed on one context and removed again;
- ``_leases``: one guard per context, held by everyone who drives it (:func:`hold_guard`).

Code outside this package uses only the names below.
"""

from ._guard import DomainGuard
from ._leases import GuardLease, hold_guard
from ._policy import check_patterns, url_allowed

__all__ = ["DomainGuard", "GuardLease", "check_patterns", "hold_guard", "url_allowed"]
