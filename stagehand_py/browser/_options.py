"""What a browser context is set up with: ``BrowserOptions`` and its checks.

Every value is checked here, before a browser starts, so a typo is a typed error naming the
option rather than a Playwright message from deep inside a launch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._errors import InvalidArgumentError
from ._guard import check_patterns
from ._recording import TraceMode, check_trace_mode

__all__ = ["BrowserOptions", "Geolocation", "ProxySettings", "StorageState", "with_allowed_domains"]

#: A Playwright storage state: a path to its JSON file, or the dict itself.
StorageState = str | os.PathLike[str] | Mapping[str, Any]

_LOCALE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_PROXY_SCHEMES = ("http", "https", "socks4", "socks5")


@dataclass(frozen=True, kw_only=True)
class ProxySettings:
    """Where the browser's traffic goes: ``server`` (``"http://proxy:3128"``,
    ``"socks5://127.0.0.1:1080"``), ``bypass`` (comma-separated hosts that skip it, e.g.
    ``".internal, localhost"``) and optional credentials. The password never appears in a
    ``repr``, a log or an error."""

    server: str
    bypass: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.server, str) or not self.server.strip():
            raise InvalidArgumentError("ProxySettings(server=...) needs the proxy address, e.g. 'http://proxy.example:3128'.")
        parts = urlsplit(self.server if "://" in self.server else f"http://{self.server}")
        if parts.scheme not in _PROXY_SCHEMES or not parts.hostname:
            raise InvalidArgumentError(
                f"ProxySettings(server={_without_userinfo(self.server)!r}) is not a proxy address: use "
                f"<scheme>://host:port with a scheme of {', '.join(_PROXY_SCHEMES)}."
            )
        if parts.username or parts.password:
            raise InvalidArgumentError(
                "ProxySettings(server=...) carries credentials in the URL; pass them as username= and password= "
                "instead (they are kept out of logs and errors there)."
            )
        if (self.username is None) != (self.password is None):
            raise InvalidArgumentError("ProxySettings needs both username= and password=, or neither.")

    def to_playwright(self) -> dict[str, str]:
        settings = {"server": self.server}
        if self.bypass:
            settings["bypass"] = self.bypass
        if self.username is not None and self.password is not None:
            settings["username"], settings["password"] = self.username, self.password
        return settings


@dataclass(frozen=True, kw_only=True)
class Geolocation:
    """A position the page's ``navigator.geolocation`` reports (the permission is granted too)."""

    latitude: float
    longitude: float
    #: Metres.
    accuracy: float = 0.0

    def __post_init__(self) -> None:
        for name, value, low, high in (("latitude", self.latitude, -90, 90), ("longitude", self.longitude, -180, 180),
                                       ("accuracy", self.accuracy, 0, float("inf"))):
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise InvalidArgumentError(f"Geolocation({name}={value!r}) must be a number from {low} to {high}.")


@dataclass(frozen=True, kw_only=True)
class BrowserOptions:
    """How the browser context is set up, for ``Stagehand.launch(browser_options=...)`` and
    ``Stagehand.connect(ws_endpoint=..., browser_options=...)``. Every field is optional.

    - ``storage_state``: cookies and local storage to start with (a path to a JSON file written by
      :meth:`Stagehand.save_storage_state` or Playwright, or the dict); ``save_storage_state_to``:
      a path the state is written to when the Stagehand closes (0600: it holds session cookies).
    - ``user_data_dir``: a persistent Chromium profile folder; everything (cookies, storage,
      cache) survives a relaunch. Not together with ``storage_state``.
    - ``proxy``, ``user_agent``, ``locale`` (``"de-DE"``), ``timezone_id`` (``"Asia/Tokyo"``),
      ``geolocation``, ``viewport`` (``{"width": 1280, "height": 800}``), ``extra_http_headers``
      (sent with every request of the context).
    - ``allowed_domains``: glob patterns (``"example.com"``, ``"*.example.com"``,
      ``"127.0.0.1:8080"``, ``"https://*.example.com"``); every navigation, request, redirect hop,
      new tab and speculative load of the context to another host is refused, from before the
      first page loads until the Stagehand closes (docs/security.md).
    - ``trace``: ``"on"`` records a Playwright trace of the context from before the first page
      loads, written on close to ``trace_path`` (default ``stagehand-traces/trace-<time>.zip``)
      with every variable value scrubbed; ``"retain-on-failure"`` keeps it only when a call failed
      (see ``Stagehand(trace=...)``, docs/guides/debugging.md). ``playwright show-trace`` opens it.
    """

    storage_state: StorageState | None = None
    save_storage_state_to: str | os.PathLike[str] | None = None
    user_data_dir: str | os.PathLike[str] | None = None
    proxy: ProxySettings | None = None
    user_agent: str | None = None
    locale: str | None = None
    timezone_id: str | None = None
    geolocation: Geolocation | None = None
    viewport: Mapping[str, int] | None = None
    extra_http_headers: Mapping[str, str] | None = None
    allowed_domains: Sequence[str] | None = None
    trace: TraceMode = "off"
    trace_path: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        check_trace_mode(self.trace, what="BrowserOptions(trace=...)")
        if self.allowed_domains is not None:
            object.__setattr__(self, "allowed_domains", check_patterns(self.allowed_domains,
                                                                       what="BrowserOptions(allowed_domains=...)"))
        if self.storage_state is not None and self.user_data_dir is not None:
            raise InvalidArgumentError(
                "BrowserOptions: storage_state and user_data_dir exclude each other (a persistent profile keeps its "
                "own cookies). Use one: the profile folder, or a storage state on a fresh context."
            )
        if isinstance(self.storage_state, str | os.PathLike):
            path = Path(self.storage_state)
            if not path.is_file():
                raise InvalidArgumentError(
                    f"BrowserOptions(storage_state={str(path)!r}) is not a file. Save one first with "
                    "Stagehand.save_storage_state(path) (or BrowserOptions(save_storage_state_to=...))."
                )
        elif self.storage_state is not None and not isinstance(self.storage_state, Mapping):
            raise InvalidArgumentError(
                f"BrowserOptions(storage_state=...) takes a path or a dict, not {type(self.storage_state).__name__}."
            )
        if self.user_data_dir is not None and Path(self.user_data_dir).exists() and not Path(self.user_data_dir).is_dir():
            raise InvalidArgumentError(f"BrowserOptions(user_data_dir={str(self.user_data_dir)!r}) exists and is not a folder.")
        if self.proxy is not None and not isinstance(self.proxy, ProxySettings):
            raise InvalidArgumentError("BrowserOptions(proxy=...) takes a ProxySettings(server=..., ...).")
        if self.geolocation is not None and not isinstance(self.geolocation, Geolocation):
            raise InvalidArgumentError("BrowserOptions(geolocation=...) takes a Geolocation(latitude=..., longitude=...).")
        if self.user_agent is not None and (not isinstance(self.user_agent, str) or not self.user_agent.strip()
                                            or "\n" in self.user_agent or "\r" in self.user_agent):
            raise InvalidArgumentError("BrowserOptions(user_agent=...) must be a non-empty single-line string.")
        if self.locale is not None and (not isinstance(self.locale, str) or not _LOCALE.match(self.locale)):
            raise InvalidArgumentError(f"BrowserOptions(locale={self.locale!r}) is not a language tag such as 'en-US' or 'de-DE'.")
        if self.timezone_id is not None:
            _check_timezone(self.timezone_id)
        if self.viewport is not None:
            _check_viewport(self.viewport)
        if self.extra_http_headers is not None:
            _check_headers(self.extra_http_headers)

    def context_options(self) -> dict[str, Any]:
        """Keyword arguments for Playwright's ``new_context`` / ``launch_persistent_context``."""
        options: dict[str, Any] = {}
        if self.storage_state is not None:
            options["storage_state"] = (str(self.storage_state) if isinstance(self.storage_state, str | os.PathLike)
                                        else json.loads(json.dumps(dict(self.storage_state))))
        if self.user_agent is not None:
            options["user_agent"] = self.user_agent
        if self.locale is not None:
            options["locale"] = self.locale
        if self.timezone_id is not None:
            options["timezone_id"] = self.timezone_id
        if self.geolocation is not None:
            options["geolocation"] = {"latitude": self.geolocation.latitude, "longitude": self.geolocation.longitude,
                                      "accuracy": self.geolocation.accuracy}
            options["permissions"] = ["geolocation"]
        if self.viewport is not None:
            options["viewport"] = {"width": self.viewport["width"], "height": self.viewport["height"]}
        if self.extra_http_headers is not None:
            options["extra_http_headers"] = dict(self.extra_http_headers)
        return options


def with_allowed_domains(options: BrowserOptions | None, allowed: object, *,
                         viewport: object = None) -> BrowserOptions | None:
    """``options`` (checked: a :class:`BrowserOptions`) with ``allowed_domains`` given as a keyword
    folded in; given in both, or ``viewport`` given as a keyword and in ``options``: a typed error."""
    if options is not None and not isinstance(options, BrowserOptions):
        raise InvalidArgumentError(f"browser_options must be a BrowserOptions, not {type(options).__name__}.")
    if viewport is not None and options is not None and options.viewport is not None:
        raise InvalidArgumentError("viewport is given twice: pass it as launch(viewport=...) or in BrowserOptions, not both.")
    if allowed is None:
        return options
    if options is not None and options.allowed_domains is not None:
        raise InvalidArgumentError("allowed_domains is given twice: pass it as a keyword or in BrowserOptions, not both.")
    return dataclasses.replace(options or BrowserOptions(), allowed_domains=check_patterns(allowed))


def _without_userinfo(url: str) -> str:
    return re.sub(r"//[^/@]*@", "//", url)


def _check_timezone(timezone_id: object) -> None:
    try:
        if not isinstance(timezone_id, str) or not timezone_id:
            raise ValueError(timezone_id)
        zoneinfo.ZoneInfo(timezone_id)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError) as exc:
        raise InvalidArgumentError(
            f"BrowserOptions(timezone_id={timezone_id!r}) is not an IANA time zone such as 'Europe/Berlin' or 'UTC'."
        ) from exc


def _check_viewport(viewport: Mapping[str, int]) -> None:
    if (not isinstance(viewport, Mapping) or set(viewport) != {"width", "height"}
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in viewport.values())):
        raise InvalidArgumentError(
            f"viewport must be {{'width': <positive int>, 'height': <positive int>}}, got {viewport!r}."
        )


def _check_headers(headers: Mapping[str, str]) -> None:
    if not isinstance(headers, Mapping):
        raise InvalidArgumentError("BrowserOptions(extra_http_headers=...) takes a dict of header name to value.")
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise InvalidArgumentError(f"extra_http_headers: {name!r} is not a valid HTTP header name.")
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            # The value is not quoted: a header may carry a token.
            raise InvalidArgumentError(f"extra_http_headers[{name!r}] must be a single-line string.")
