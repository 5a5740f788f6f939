"""Speculation rules refused on the pages of a guarded context.

Chromium sends a speculation-rules prefetch from its browser process: no route, no DevTools
``Fetch`` interception (page or browser level), ``Network.setBlockedURLs``, cache or data-saver
emulation sees or stops it, and the ``PreloadingConfig`` holdback is ignored whenever a DevTools
client is attached to the page (Playwright always is). What does stop it is the rule set never
reaching the browser: a script in an isolated world of every top-level document removes each
``<script type="speculationrules">`` the moment it is inserted (a ``MutationObserver``, which
runs before Blink hands the rules to the browser) and reports its text through a binding that
exists in that world only. Page scripts cannot see, replace or disconnect anything of it.
Rules delivered by the ``Speculation-Rules`` response header are taken out of the response by
the guard's route (:data:`RULES_HEADER`).

Not reached by the remover: a rule set inside a shadow root (a document-wide observer does not
see into shadow trees) and one an opener writes into a new window's first ``about:blank``
document before the guard attaches to it. Those are refused by the browser itself: each
document of the guarded context arrives with a ``Connection-Allowlist`` response header
(:func:`connection_allowlist`, Chromium 152+) listing the allowlist as URL patterns, and
Chromium refuses every connection the document (or an ``about:blank`` window it opens, which
inherits its policy) starts elsewhere, the browser-process prefetch included. The browser's
``Preload`` events tell the guard what it refused.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..._util import resolve_url
from ._policy import ALLOWLIST_HEADER
from ._scope import GuardScope

__all__ = ["BINDING", "REMOVER_SOURCE", "RULES_HEADER", "STOP_SOURCE", "WORLD", "SpeculationWatch", "header_rule_sets",
           "rewrite_headers", "speculation_targets"]

logger = logging.getLogger("stagehand_py")

#: The isolated world the remover runs in, and the binding it reports through (only there).
WORLD = "stagehand_py_speculation_guard"
BINDING = "__stagehand_py_speculation_removed__"
RULES_HEADER = "speculation-rules"
_STOP = "__stagehand_py_speculation_stop__"

# Only top-level documents: Chromium ignores speculation rules in frames (measured: srcdoc and
# about:blank frames trigger nothing). The type is read as Blink reads it (trimmed, any case).
REMOVER_SOURCE = """(() => {
  if (window !== window.top || globalThis.STOP) return;
  const isRules = (el) => (el.getAttribute('type') || '').trim().toLowerCase() === 'speculationrules';
  const sweep = () => {
    const report = globalThis.BINDING;
    for (const el of document.querySelectorAll('script')) {
      if (!isRules(el)) continue;
      const rules = el.textContent;
      el.remove();  // removed whether or not it can be reported: the safe side
      if (typeof report === 'function') report(JSON.stringify({rules, base: document.baseURI}));
    }
  };
  const observer = new MutationObserver(sweep);
  observer.observe(document, {subtree: true, childList: true, characterData: true, attributes: true,
                              attributeFilter: ['type']});
  globalThis.STOP = () => observer.disconnect();
  sweep();
})();""".replace("BINDING", BINDING).replace("STOP", _STOP)

#: Ends the remover in a document that outlives the guard.
STOP_SOURCE = f"globalThis.{_STOP} && globalThis.{_STOP}()"

_ACTIONS = ("prefetch", "prerender", "prefetch_with_subresources")


def speculation_targets(payload: str) -> list[tuple[str, str]]:
    """``(action, absolute URL)`` for each URL a removed rule set listed; document rules
    (``"where"``) name no URL. A payload that is not what the remover sends gives nothing."""
    try:
        report = json.loads(payload)
        rules: Any = json.loads(report["rules"])
        base = str(report["base"])
    except (ValueError, KeyError, TypeError):
        return []  # Chromium ignores a rule set that is not JSON as well
    targets: list[tuple[str, str]] = []
    if not isinstance(rules, dict):
        return targets
    for action in _ACTIONS:
        for rule in rules.get(action) or []:
            urls = rule.get("urls") if isinstance(rule, dict) else None
            for url in urls if isinstance(urls, list) else []:
                resolved = resolve_url(base, str(url))
                if resolved is not None:
                    targets.append((action, resolved))
    return targets


def header_rule_sets(value: str, base: str) -> list[str]:
    """The rule-set addresses a ``Speculation-Rules`` header names (a list of quoted URLs),
    resolved against the document's address."""
    found = []
    for item in value.split(","):
        reference = item.strip().split(";", 1)[0].strip().strip('"')
        resolved = resolve_url(base, reference) if reference else None
        if resolved is not None:
            found.append(resolved)
    return found


def rewrite_headers(scope: GuardScope, headers: list[tuple[str, str]], url: str, *,
                    document: bool) -> list[tuple[str, str]] | None:
    """The headers the browser gets for a response the guard lets through: a
    ``Speculation-Rules`` header taken out (the rule sets it names recorded), and a document's
    ``Connection-Allowlist`` set to the allowlist, replacing one the site sent (Chromium
    enforces only the first list); None when nothing changes."""
    allowlist = scope.header if document else None
    kept: list[tuple[str, str]] = []
    for name, value in headers:
        lower = name.lower()
        if lower == RULES_HEADER:  # rules the remover never sees
            for rule_set in header_rule_sets(value, url):
                scope.log.record(rule_set, "speculation", "speculation-rules header")
        elif not (allowlist is not None and lower == ALLOWLIST_HEADER):
            kept.append((name, value))
    if allowlist is not None:
        kept.append((ALLOWLIST_HEADER, allowlist))
    return kept if kept != headers else None


class SpeculationWatch:
    """On each page of the guarded context: prerendering off, every rule set removed as it is
    inserted (the remover), and each speculative load to another host recorded once, whether the
    remover took its rules out or the browser refused it (its ``Preload`` events)."""

    def __init__(self, scope: GuardScope) -> None:
        self._scope = scope

    async def watch(self, session: Any) -> None:
        """Set up ``session`` (a page's DevTools session, ``Page`` already enabled)."""
        session.on("Preload.prefetchStatusUpdated", lambda e: self._on_preload(e, "prefetch"))
        session.on("Preload.prerenderStatusUpdated", lambda e: self._on_preload(e, "prerender"))
        session.on("Runtime.bindingCalled", self._on_rules_removed)
        await session.send("Page.setPrerenderingAllowed", {"isAllowed": False})
        await session.send("Runtime.enable")  # a binding reaches an isolated world only with Runtime on
        await session.send("Runtime.addBinding", {"name": BINDING, "executionContextName": WORLD})
        await session.send("Page.addScriptToEvaluateOnNewDocument", {
            "source": REMOVER_SOURCE, "worldName": WORLD, "runImmediately": True})
        await session.send("Preload.enable")

    async def end(self, session: Any, frame_id: str) -> None:
        """Stop the remover in the page's current document (it outlives the guard: its rules work again)."""
        world = await session.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD})
        await session.send("Runtime.evaluate", {"expression": STOP_SOURCE, "contextId": world["executionContextId"]})

    def _on_rules_removed(self, event: dict[str, Any]) -> None:
        if event.get("name") != BINDING:
            return
        # Every rule set is removed, also one that lists allowed addresses only: the browser follows
        # a prefetch's redirects itself, unchecked. Addresses outside the allowlist are recorded.
        targets = speculation_targets(str(event.get("payload", "")))
        for action, url in targets:
            self._record(url, action)
        logger.info("allowed_domains: removed a speculation rule set asking for %s",
                    self._scope.redact(", ".join(url for _, url in targets) or "no listed address"))

    def _on_preload(self, event: dict[str, Any], what: str) -> None:
        url = str(event.get("prefetchUrl") or event.get("key", {}).get("url") or "")
        if not self._record(url, what):
            return
        # A rule set the remover could not reach (docs/security.md). Chromium sends the prefetch
        # (a prerender begins with one) from the browser process, past every route and DevTools
        # interception of this guard; the document's Connection-Allowlist refuses it there.
        if self._scope.header is not None:
            logger.info("allowed_domains: the page asked the browser to %s %s, outside the allowlist, with rules the "
                        "guard could not remove; the browser refuses it (Connection-Allowlist)", what,
                        self._scope.redact(url))
        else:
            logger.warning("allowed_domains: the page asked the browser to %s %s, outside the allowlist, with rules "
                           "the guard could not remove; the prerender is refused but this browser sends the prefetch",
                           what, self._scope.redact(url))

    def _record(self, url: str, what: str) -> bool:
        """Record a speculative load to another host once per address; whether it was new."""
        if not url or self._scope.allows(url) or self._scope.log.has_speculation(url):
            return False
        self._scope.log.record(url, "speculation", what)
        return True
