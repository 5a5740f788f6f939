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

Not reached: a rule set inside a shadow root (a document-wide observer does not see into
shadow trees) and one an opener writes into a new window's first ``about:blank`` document
before the guard attaches to it; those are recorded from the browser's ``Preload`` events, not
stopped (docs/security.md).
"""

from __future__ import annotations

import json
from typing import Any

from .._util import resolve_url

__all__ = ["BINDING", "REMOVER_SOURCE", "RULES_HEADER", "STOP_SOURCE", "WORLD", "header_rule_sets", "speculation_targets"]

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
