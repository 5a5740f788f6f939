"""URL normalising: two URLs for the same page compare equal."""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import ada_url
import idna

__all__ = ["UrlParts", "normal_host", "normalise_url", "page_address", "resolve_url", "url_parts"]

_TRACKING = re.compile(r"^(utm_|fbclid$|gclid$|mc_eid$|_ga$)")


def normalise_url(url: str) -> str:
    """Scheme and host lower-cased, default port, fragment and tracking parameters dropped,
    query sorted, trailing slash of the path removed: two URLs for the same page compare equal."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a URL, or a port out of range: compared as written
        return url
    host = (parts.hostname or "").lower()
    if port is not None and not ((parts.scheme == "http" and port == 80) or (parts.scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k)))
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), host, path, query, ""))


def page_address(url: str) -> str:
    """``url`` without userinfo, query or fragment: enough to name a page in an error message,
    leaving out the parts where a form or a script may have put a typed value."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "a page with an unreadable address"
    host = parts.hostname or ""
    if port is not None:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", "")) if host else f"{parts.scheme}:"


def normal_host(host: str) -> str:
    """A host as browsers send it: UTS #46 mapped (non-transitional, as Chromium and the WHATWG URL
    standard do: ``faß.example`` is ``xn--fa-hia.example``, not IDNA 2003's ``fass.example``),
    lower case, no trailing dot, every international label in its ASCII form. ``*`` labels (an
    allowlist pattern's wildcards) are kept. The one host normaliser of the allowlist, the MCP
    server and the blocked-request evidence."""
    text = host.strip()
    if not text.isascii():
        try:
            text = idna.uts46_remap(text, std3_rules=False, transitional=False)
        except idna.IDNAError:
            pass  # not mappable: compared as written (it matches nothing real)
    labels = []
    for label in text.rstrip(".").split("."):
        if label.isascii():
            labels.append(label.lower())
            continue
        try:
            labels.append(idna.alabel(label).decode("ascii"))
        except (idna.IDNAError, UnicodeError):
            labels.append(label)
    return ".".join(labels)


class UrlParts(NamedTuple):
    """A URL as a browser reads it: ``scheme`` without ``:``, normal ``host``, ``port`` ("" for the scheme's default)."""

    href: str
    scheme: str
    host: str
    port: str


def url_parts(url: str) -> UrlParts | None:
    """``url`` parsed by the WHATWG URL rules browsers follow (``\\`` as ``/`` in special schemes,
    tabs and newlines dropped, userinfo apart from the host); None when a browser would refuse it."""
    try:
        parsed = ada_url.URL(url)
    except ValueError:
        return None
    return UrlParts(parsed.href, parsed.protocol.rstrip(":").lower(), normal_host(parsed.hostname), parsed.port)


def resolve_url(base: str, reference: str) -> str | None:
    """``reference`` (a ``Location`` header, an ``href``) resolved against ``base`` as a browser
    resolves it (``/\\evil.example/`` is ``//evil.example/``, where ``urljoin`` reads a path);
    None when a browser would refuse it."""
    try:
        return str(ada_url.join_url(base, reference))
    except ValueError:
        return None
