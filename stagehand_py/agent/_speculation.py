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

import fnmatch
import json
import re
from collections.abc import Sequence
from typing import Any

from .._util import resolve_url

__all__ = ["ALLOWLIST_HEADER", "BINDING", "REMOVER_SOURCE", "RULES_HEADER", "STOP_SOURCE", "WORLD", "allowlist_enforced",
           "connection_allowlist", "header_rule_sets", "speculation_targets"]

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


#: The response header that makes Chromium (152+) refuse a document's connections elsewhere.
ALLOWLIST_HEADER = "connection-allowlist"
#: The first Chromium that enforces it (on by default).
_ALLOWLIST_SINCE = 152
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}
# Characters with a meaning in URL pattern syntax (escaped with a backslash to stand for themselves).
_PATTERN_SPECIAL = re.compile(r"([\\+*?:{}()\[\]])")


def _literal(text: str) -> str:
    return _PATTERN_SPECIAL.sub(r"\\\1", text)


def _glob_as_url_pattern(glob: str) -> str:
    """An allowlist glob (``fnmatch``: ``*``, ``?``, ``[seq]``, ``[!seq]``) as the URL pattern
    component that matches the same strings."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        i += 1
        if char == "*":
            out.append("*")
        elif char == "?":
            out.append("(.)")
        elif char == "[":
            end = i + 1 if i < len(glob) and glob[i] in "!]" else i
            if i < len(glob) and glob[i] == "!" and end < len(glob) and glob[end] == "]":
                end += 1
            end = glob.find("]", end)
            if end < 0:  # no closing bracket: fnmatch reads a plain "["
                out.append("\\[")
                continue
            members = glob[i:end].replace("\\", "\\\\")
            out.append("([" + ("^" + members[1:] if members.startswith("!") else members) + "])")
            i = end + 1
        else:
            out.append(_literal(char))
    return "".join(out)


def connection_allowlist(patterns: Sequence[tuple[str | None, str, str | None]]) -> str:
    """The ``Connection-Allowlist`` header value that admits exactly what the allowlist's parsed
    ``(scheme, host, port)`` patterns admit: a structured-field inner list of URL patterns.
    Redirects are allowed (the spec's default refuses every redirect, allowed ones too): the
    guard checks each later hop itself. A port the pattern names matches a URL where it is the
    scheme's default too (``example.com:443`` admits ``https://example.com/``), as the guard does."""
    found: list[str] = []
    for scheme, host, port in patterns:
        if not host.isascii():  # not a host a browser asks for: it admits nothing
            continue
        protocol = _glob_as_url_pattern(scheme) if scheme is not None else "*"
        hostname = _glob_as_url_pattern(host)
        any_port = port is None or port == "*"
        wanted = [f"{protocol}://{hostname}:{'*' if any_port else _literal(str(port))}/*"]
        if not any_port:
            wanted += [f"{name}://{hostname}/*" for name, default in _DEFAULT_PORTS.items()
                       if default == port and (scheme is None or fnmatch.fnmatchcase(name, scheme))]
        found += [item for item in wanted if item not in found]
    quoted = " ".join('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"' for item in found)
    return f"({quoted});redirects=allow"


def allowlist_enforced(version: str) -> bool:
    """Whether the browser of ``version`` (Playwright's ``browser.version``, e.g. ``156.0.7632.6``,
    or a DevTools product string, ``HeadlessChrome/156.0...``) enforces ``Connection-Allowlist``."""
    found = re.search(r"(?:^|/)(\d+)\.", version.strip())
    return found is not None and int(found.group(1)) >= _ALLOWLIST_SINCE
