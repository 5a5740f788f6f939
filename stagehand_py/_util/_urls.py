"""URL normalising: two URLs for the same page compare equal."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["normalise_url", "page_address"]

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
