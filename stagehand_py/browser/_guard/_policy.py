"""The allowlist as a policy: glob patterns, how a URL is matched against them, and the same
policy written for the browser as a ``Connection-Allowlist`` header.

Patterns: ``"example.com"`` (that host), ``"*.example.com"`` (subdomains only),
``"127.0.0.1:8080"`` (host and port), ``"https://*.example.com"`` (scheme too). ``data:``,
``blob:`` and ``about:`` URLs are always allowed: they load nothing from the network. Hosts are
compared as browsers read them (WHATWG URL parsing, UTS #46 host names: ``_util``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from ..._errors import InvalidArgumentError
from ..._util import normal_host, url_parts

__all__ = ["ALLOWLIST_HEADER", "Pattern", "Policy", "allowlist_enforced", "check_patterns", "connection_allowlist",
           "intersection", "parse_pattern", "url_allowed"]

#: One parsed pattern: (scheme or None, host glob, port or None).
Pattern = tuple[str | None, str, str | None]

_LOCAL_SCHEMES = ("data", "blob", "about", "chrome-error")
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def parse_pattern(pattern: str) -> Pattern:
    if not isinstance(pattern, str):
        raise InvalidArgumentError(f"allowed_domains holds {pattern!r}, not a pattern string such as 'example.com'.")
    scheme: str | None = None
    rest = pattern.strip().lower()
    if "://" in rest:
        scheme, rest = rest.split("://", 1)
    rest = rest.split("/", 1)[0]
    port: str | None = None
    if rest.count(":") == 1:
        rest, port = rest.split(":")
    if not rest:
        raise InvalidArgumentError(f"allowed_domains pattern {pattern!r} names no host; use e.g. 'example.com' or '*.example.com'.")
    return scheme, normal_host(rest), port


def check_patterns(patterns: object, *, what: str = "allowed_domains") -> tuple[str, ...]:
    """``patterns`` as a tuple, each checked; a typed error naming ``what`` for anything else."""
    if isinstance(patterns, str) or not isinstance(patterns, Sequence):
        raise InvalidArgumentError(f"{what} is a list of patterns, e.g. ['example.com', '*.example.com'], "
                                   f"not {type(patterns).__name__}.")
    for pattern in patterns:
        parse_pattern(pattern)
    return tuple(patterns)


def url_allowed(url: str, patterns: Sequence[str]) -> bool:
    """Whether ``url``, read as a browser reads it, matches one of the glob ``patterns``."""
    parts = url_parts(url)
    if parts is None:
        return False
    scheme, host = parts.scheme, parts.host
    if scheme in _LOCAL_SCHEMES:
        return True
    effective_port = parts.port or _DEFAULT_PORTS.get(scheme, "")
    for pattern in patterns:
        p_scheme, p_host, p_port = parse_pattern(pattern)
        if p_scheme is not None and not fnmatch.fnmatchcase(scheme, p_scheme):
            continue
        if p_port is not None and p_port != "*" and p_port != effective_port:
            continue
        if fnmatch.fnmatchcase(host, p_host):
            return True
    return False


class Policy:
    """The allowlist of one context: the pattern sets of everyone who holds its guard (a Stagehand,
    an agent run narrowing it, ...). A URL passes only when every set admits it, so a set added
    later narrows what passes and never widens it."""

    def __init__(self) -> None:
        self._sets: list[tuple[str, ...]] = []

    def add(self, patterns: Sequence[str]) -> tuple[str, ...]:
        """Hold to ``patterns`` too, until :meth:`remove` is given what this returned."""
        added = check_patterns(patterns)
        self._sets.append(added)
        return added

    def remove(self, added: tuple[str, ...]) -> None:
        for i, held in enumerate(self._sets):
            if held is added:
                del self._sets[i]
                return

    @property
    def sets(self) -> list[tuple[str, ...]]:
        return list(self._sets)

    def allows(self, url: str) -> bool:
        return all(url_allowed(url, patterns) for patterns in self._sets)

    def header_patterns(self) -> list[Pattern]:
        """The parsed patterns of the ``Connection-Allowlist`` for the sets held now (their
        :func:`intersection`)."""
        if not self._sets:
            return []
        found = [parse_pattern(p) for p in self._sets[0]]
        for patterns in self._sets[1:]:
            found = intersection(found, [parse_pattern(p) for p in patterns])
        return found


_GLOB = re.compile(r"[*?\[]")


def _narrower(a: str | None, b: str | None) -> tuple[bool, str | None]:
    """The component (scheme, host glob or port; None for any) that admits what both ``a`` and
    ``b`` admit, where this can be told for sure: (True, it); else (False, None)."""
    if a is None or a == "*":
        return True, b
    if b is None or b == "*" or a == b:
        return True, a
    if not _GLOB.search(b) and fnmatch.fnmatchcase(b, a):
        return True, b
    if not _GLOB.search(a) and fnmatch.fnmatchcase(a, b):
        return True, a
    # "*.example.com" and "*.shop.example.com": the longer suffix admits less.
    if a.startswith("*.") and b.startswith("*.") and not _GLOB.search(a[2:] + b[2:]):
        if b.endswith(a[1:]):
            return True, b
        if a.endswith(b[1:]):
            return True, a
    return False, None


def intersection(first: Sequence[Pattern], second: Sequence[Pattern]) -> list[Pattern]:
    """Patterns that admit no URL outside what both lists admit: for each pair, the narrower of
    the two where one plainly contains the other. A pair whose overlap globs cannot state
    (``a?c.example`` and ``ab*.example``) is left out: the list may admit less than both do,
    never more."""
    found: list[Pattern] = []
    for a_scheme, a_host, a_port in first:
        for b_scheme, b_host, b_port in second:
            parts = [_narrower(a_scheme, b_scheme), _narrower(a_host, b_host), _narrower(a_port, b_port)]
            if all(ok for ok, _ in parts):
                (_, scheme), (_, host), (_, port) = parts
                pattern = (scheme, str(host), port)
                if pattern not in found:
                    found.append(pattern)
    return found


# --- the policy written for the browser: Connection-Allowlist --------------------------------

#: The response header that makes Chromium (152+) refuse a document's connections elsewhere.
ALLOWLIST_HEADER = "connection-allowlist"
#: The first Chromium that enforces it (on by default).
_ALLOWLIST_SINCE = 152
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


def connection_allowlist(patterns: Sequence[Pattern]) -> str:
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
