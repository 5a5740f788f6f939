"""What a page showed, for checks that need no model: where a run ended and the data it read.

A :class:`PageView` is one read of a page (a snapshot and the title; no model): its URL in kept
form, its title, its main heading and its outline, every variable's value (in any encoding) as
``%name%``. Exported tests and scripts, ``stagehand-py replay --check`` and the agent's replay
compare what a run recorded with it. The rules, stated once (``docs/guides/replay.md`` repeats them):

- **Kept URL** (:func:`kept_url`): scheme and host lower-cased, the default port and a trailing
  slash dropped, the query sorted. Left out as volatile: the fragment (unless it is a route,
  ``#/...`` or ``#!...``), ``;jsessionid=``-style path parameters, query keys named as session ids,
  CSRF tokens, nonces, cache busters or trackers (:data:`VOLATILE_KEYS`), and any query value
  shaped like one: a UUID, 16+ hex digits, a 20+ character token mixing letters and digits, or a
  10+ digit number (a timestamp).
- **Main heading**: the first ``<h1>`` of the top document, else its first heading; "" if none.
- **Data compared as data** (:meth:`PageView.not_shown`): every string and number of the data is
  a value the page must show as a whole token (``"12"`` is not found in ``"$120"``); a number is
  compared as a number (``12.5`` is shown by ``$12.50``); ``None``, booleans and empty strings are
  not pinned. The values of one object inside a list (a row, an item) must be shown together: in
  one stretch of the outline that holds no other whole object of that list, so two rows whose
  totals were swapped do not pass. The paths given as ``apart`` are checked value by value
  (the page did not show that object as a unit when the run read it).
"""

from __future__ import annotations

import difflib
import math
import re
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from .._secrets import VariableSet
from ..snapshot import Snapshot, parse_outline

if TYPE_CHECKING:
    from playwright.async_api import Page
    from playwright.sync_api import Page as SyncPage

    from .._types import Variables

__all__ = ["VOLATILE_KEYS", "EndState", "PageView", "data_pins", "has_values", "kept_url", "not_shown_on", "output_pins", "prune", "rows_in", "url_keys",
           "view_of"]

#: Query keys left out of a kept URL whatever their value (case-insensitive, whole key).
VOLATILE_KEYS = re.compile(
    r"^(?:utm_\w*|fbclid|gclid|msclkid|mc_eid|_ga|_gl"  # trackers
    r"|sid|sess|session|sessionid|session_id|phpsessid|jsessionid|aspsessionid\w*"  # session ids
    r"|csrf\w*|_csrf|xsrf\w*|nonce|token|auth_token"  # one-use tokens
    r"|_|cb|cachebust\w*|cache_bust\w*|nocache|rnd|rand|random)$",  # cache busters
    re.IGNORECASE,
)
_VOLATILE_VALUE = re.compile(
    r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a UUID
    r"|[0-9a-f]{16,}"  # a long hex id
    r"|\d{10,}"  # a timestamp
    r"|(?=[A-Za-z0-9_-]*[A-Za-z])(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,})$",  # a token mixing letters and digits
    re.IGNORECASE,
)
_PATH_PARAMETER = re.compile(r";[^/]*")


def kept_url(url: str) -> str:
    """``url`` as an end-state check compares it: volatile parts left out (the module's rule)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a URL (about:blank, a data: URL's oddities): compared as written
        return url
    if not parts.netloc:
        return url
    host = (parts.hostname or "").lower()
    if port is not None and (parts.scheme.lower(), port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    path = _PATH_PARAMETER.sub("", parts.path).rstrip("/") or "/"
    kept = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                  if not VOLATILE_KEYS.match(k) and not _VOLATILE_VALUE.match(v))
    fragment = parts.fragment if parts.fragment.startswith(("/", "!")) else ""
    return urlunsplit((parts.scheme.lower(), host, path, urlencode(kept), fragment))


def url_keys(url: str) -> list[str]:
    """The query keys a kept URL still has (for the comment that says what it pins)."""
    try:
        return sorted({k for k, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)})
    except ValueError:
        return []


class EndState(BaseModel):
    """Where a run ended, as recorded (secrets as ``%name%``); None: not pinned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    title: str | None = None
    heading: str | None = None


# --- data as groups of values ------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """Values checked as one: an object's own strings and numbers, or a lone value."""

    path: str
    leaves: tuple[tuple[str, str | int | float], ...]
    #: Objects of the same list share a key: a group must not be shown "together" across one of them.
    family: int | None


def _pinnable(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return math.isfinite(value)
    return isinstance(value, str) and bool(value.strip())


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _groups(data: Any) -> list[_Group]:
    out: list[_Group] = []
    families = iter(range(1_000_000))

    def walk(value: Any, path: str, family: int | None) -> None:
        if isinstance(value, Mapping):
            leaves = tuple((_join(path, k), v) for k, v in value.items() if _pinnable(v))
            if family is None:  # an object outside a list: each value on its own
                out.extend(_Group(leaf[0], (leaf,), None) for leaf in leaves)
            elif leaves:
                out.append(_Group(path, leaves, family))
            for k, v in value.items():
                if isinstance(v, Mapping | list | tuple):
                    walk(v, _join(path, k), None)
        elif isinstance(value, list | tuple):
            family_of_items = next(families)
            for n, item in enumerate(value):
                if isinstance(item, Mapping | list | tuple):
                    walk(item, f"{path}[{n}]", family_of_items if isinstance(item, Mapping) else None)
                elif _pinnable(item):
                    out.append(_Group(f"{path}[{n}]", ((f"{path}[{n}]", item),), None))
        elif _pinnable(value):
            out.append(_Group(path, ((path, value),), None))

    walk(data, "", None)
    return out


def prune(data: Any, paths: Sequence[str], path: str = "") -> Any:
    """``data`` without the values at ``paths`` (what a check leaves unpinned): a key is dropped, a
    list item becomes None, so the paths of the other values stay the same."""
    if not paths:
        return data
    if isinstance(data, Mapping):
        return {k: prune(v, paths, _join(path, k)) for k, v in data.items() if _join(path, k) not in paths}
    if isinstance(data, list | tuple):
        return [None if f"{path}[{n}]" in paths else prune(v, paths, f"{path}[{n}]") for n, v in enumerate(data)]
    return data


def has_values(data: object) -> bool:
    """True when ``data`` has a value a check pins."""
    return bool(_groups(data))


def rows_in(data: object, apart: Sequence[str] = ()) -> int:
    """How many objects of ``data``'s lists a check holds together (for the comment that says so)."""
    return sum(1 for g in _groups(data) if g.family is not None and len(g.leaves) > 1 and g.path not in apart)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\d+(?:\.\d+)?")


def _numbers(text: str) -> list[float]:
    return [float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def _shown_in(value: str | int | float, text: str) -> bool:
    """True when ``text`` (normalised) shows ``value`` as a whole token (a number: as a number)."""
    if isinstance(value, int | float):
        return any(math.isclose(n, float(value), rel_tol=1e-9, abs_tol=1e-9) for n in _numbers(text))
    needle = re.escape(_norm(value))
    return re.search(rf"(?<!\w)(?<!\d[.,]){needle}(?!\w)(?![.,]\d)", text) is not None


# --- one read of a page ------------------------------------------------------------------------


class _Readable(Protocol):
    @property
    def page(self) -> Page: ...

    async def snapshot(self) -> Snapshot: ...


class _SyncReadable(Protocol):
    @property
    def page(self) -> SyncPage: ...

    def snapshot(self) -> Snapshot: ...


@dataclass(frozen=True)
class PageView:
    """One read of a page with no model: kept URL, title, main heading and outline lines
    (``depth``, text), every variable's value as ``%name%`` (see the module docstring).

    ``await PageView.read(stagehand, variables=...)`` (``PageView.read_sync`` for
    ``stagehand_py.sync_api``); then :meth:`not_shown` for data a run read, :meth:`differences`
    for where it ended."""

    url: str
    title: str
    heading: str
    lines: tuple[tuple[int, str], ...] = ()
    _folded: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_folded", tuple(text.casefold() for _, text in self.lines))  # matched, not shown

    @classmethod
    async def read(cls, stagehand: _Readable, /, *, variables: Variables | None = None) -> PageView:
        """Read the page of ``stagehand`` (a :class:`~stagehand_py.Stagehand`): one snapshot, no model."""
        snapshot = await stagehand.snapshot()
        return view_of(snapshot, url=stagehand.page.url, title=await stagehand.page.title(),
                       variables=VariableSet.of(variables, what="PageView.read"))

    @classmethod
    def read_sync(cls, stagehand: _SyncReadable, /, *, variables: Variables | None = None) -> PageView:
        """:meth:`read` for a ``stagehand_py.sync_api.Stagehand``."""
        snapshot = stagehand.snapshot()
        return view_of(snapshot, url=stagehand.page.url, title=stagehand.page.title(),
                       variables=VariableSet.of(variables, what="PageView.read_sync"))

    @property
    def text(self) -> str:
        """The outline's text, one line per element (names and values, no ids)."""
        return "\n".join(text for _, text in self.lines if text)

    def differences(self, *, url: str | None = None, title: str | None = None, heading: str | None = None) -> list[str]:
        """How this page differs from the end state given (None: not checked); empty when it matches."""
        out = []
        if url is not None and self.url != url:
            out.append(f"URL: expected {url!r}; the page is at {self.url!r}")
        if title is not None and self.title != title:
            out.append(f"title: expected {title!r}; the page's title is {self.title!r}")
        if heading is not None and self.heading != heading:
            out.append(f"main heading: expected {heading!r}; the page shows {self.heading or 'no heading'!r}")
        return out

    def not_shown(self, data: object, *, apart: Sequence[str] = ()) -> list[str]:
        """What of ``data`` this page does not show (the module's rules), one sentence each; empty
        when all of it is shown. ``apart``: paths of objects to check value by value."""
        return not_shown_on([self], data, apart=apart)

    @staticmethod
    def not_shown_on(pages: Sequence[PageView], data: object, *, apart: Sequence[str] = ()) -> list[str]:
        """:meth:`not_shown` where each object or value may be shown by any one of ``pages``."""
        return not_shown_on(pages, data, apart=apart)


def view_of(snapshot: Snapshot, *, url: str, title: str, variables: VariableSet) -> PageView:
    """The :class:`PageView` of a snapshot already taken (redacted with ``variables``)."""
    elements = parse_outline(variables.redact(snapshot.tree))
    lines = tuple((e.depth, " ".join(" ".join(p for p in (e.name, e.value or "") if p).split())) for e in elements)
    top = [e for e in snapshot.elements if e.role == "heading" and e.id.startswith("0-")]
    main = next((e for e in top if re.search(r"/h1\[\d+\]$", e.xpath)), top[0] if top else None)
    return PageView(url=variables.redact(kept_url(url)), title=variables.redact(" ".join(title.split())),
                    heading=variables.redact(main.name) if main is not None else "", lines=lines)


# --- showing data ------------------------------------------------------------------------------


@dataclass
class _Found:
    """Where one page shows a group's values: line numbers per value (sorted)."""

    positions: list[list[int]]

    @property
    def complete(self) -> bool:
        return all(self.positions)


def _find(view: PageView, group: _Group) -> _Found:
    return _Found([[n for n, text in enumerate(view._folded) if text and _shown_in(value, text)]
                   for _, value in group.leaves])


def _has_in(positions: list[int], low: int, high: int) -> bool:
    i = bisect_left(positions, low)
    return i < len(positions) and positions[i] <= high


def _windows(found: _Found) -> Iterator[tuple[int, int]]:
    """Stretches of lines holding one of each value: around each place the rarest value is shown."""
    rarest = min(found.positions, key=len)
    for anchor in rarest:
        nearest = [min(p, key=lambda n: abs(n - anchor)) for p in found.positions]
        yield min(nearest), max(nearest)


def _together(view: PageView, group: _Group, found: _Found, family: list[tuple[_Group, _Found]]) -> bool:
    if len(group.leaves) < 2 or not family:
        return True
    values = sorted(map(str, (v for _, v in group.leaves)))
    others = [f for g, f in family if g is not group and f.complete and sorted(map(str, (v for _, v in g.leaves))) != values]
    return any(not any(all(_has_in(p, low, high) for p in other.positions) for other in others)
               for low, high in _windows(found))


def _shows(view: PageView, group: _Group, groups: list[_Group], apart: Sequence[str], cache: dict[int, _Found]) -> bool:
    found = cache.setdefault(id(group), _find(view, group))
    if not found.complete:
        return False
    if group.path in apart or group.family is None:
        return True
    family = [(g, cache.setdefault(id(g), _find(view, g))) for g in groups if g.family == group.family]
    return _together(view, group, found, family)


def not_shown_on(pages: Sequence[PageView], data: object, *, apart: Sequence[str] = ()) -> list[str]:
    """See :meth:`PageView.not_shown_on`."""
    groups = _groups(data)
    caches: list[dict[int, _Found]] = [{} for _ in pages]
    out = []
    for group in groups:
        if any(_shows(view, group, groups, apart, cache) for view, cache in zip(pages, caches, strict=True)):
            continue
        out.append(_explain(pages, group, caches))
    return out


def _explain(pages: Sequence[PageView], group: _Group, caches: list[dict[int, _Found]]) -> str:
    """One sentence: what was expected, and what the page shows where it was."""
    label = group.path or "the value"
    expected = {p.rsplit(".", 1)[-1]: v for p, v in group.leaves} if group.family is not None else group.leaves[0][1]
    best, found = max(((v, c.get(id(group)) or _find(v, group)) for v, c in zip(pages, caches, strict=True)),
                      key=lambda pair: sum(map(bool, pair[1].positions)), default=(None, None))
    if best is None or found is None:
        return f"{label}: expected {expected!r}; no page was read"
    missing = [repr(v) for (_, v), p in zip(group.leaves, found.positions, strict=True) if not p]
    if not missing:
        return f"{label}: expected {expected!r} together (one row or item); the page shows these values apart"
    where = _nearby(best, group, found)
    if group.family is None:
        return f"{label}: expected {expected!r}; not on the page" + (f" (the nearest line shows {where!r})" if where else "")
    if where:
        return f"{label}: expected {expected!r}; {', '.join(missing)} not shown; the page shows {where!r} there"
    like = _most_like(best, group)
    shown = f"; the row or item most like it on the page shows {like!r}" if like else ""
    return f"{label}: expected {expected!r}; {', '.join(missing)} not shown{shown}"


def _most_like(view: PageView, group: _Group) -> str:
    """The element around the line most like one of a row's values (a row none of whose values
    the page shows: what stands where it was, as "A-1001 | $12.50" for an expected "A-1003")."""
    folded = [text for text in view._folded if text]
    best: tuple[float, str] = (0.0, "")
    for _, value in group.leaves:
        if not isinstance(value, str) or len(value) < 3:
            continue
        for match in difflib.get_close_matches(_norm(value), folded, n=1, cutoff=0.6):
            score = difflib.SequenceMatcher(None, _norm(value), match).ratio()
            best = max(best, (score, match))
    return _element_text(view, view._folded.index(best[1])) if best[1] else ""


def _nearby(view: PageView, group: _Group, found: _Found) -> str:
    """What the page shows where the missing values were: the element around the values still
    shown, else the line that names the value's key, else the line most like the value."""
    hits = [p[0] for p in found.positions if p]
    if hits:
        return _element_text(view, hits[0])
    if group.family is not None:  # a row none of whose values is left: no one place to show (see _most_like)
        return ""
    key = re.sub(r"\[\d+\]", "", group.leaves[0][0]).rsplit(".", 1)[-1].replace("_", " ")
    for (_, text), folded in zip(view.lines, view._folded, strict=True):
        if len(key) > 2 and folded and _shown_in(key, folded):
            return text
    texts = {folded: text for (_, text), folded in zip(view.lines, view._folded, strict=True) if text}
    close = difflib.get_close_matches(_norm(str(group.leaves[0][1])), list(texts), n=1, cutoff=0.5)
    return texts[close[0]] if close else ""


def _element_text(view: PageView, line: int, limit: int = 200) -> str:
    """The text of the element around ``line``: its parent and everything under it."""
    depth = view.lines[line][0]
    start = next((n for n in range(line, -1, -1) if view.lines[n][0] < depth), line)
    end = next((n for n in range(start + 1, len(view.lines)) if view.lines[n][0] <= view.lines[start][0]), len(view.lines))
    text = " | ".join(t for _, t in view.lines[start:end] if t)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def data_pins(pages: Sequence[PageView], data: object, *,
              together_on: Sequence[PageView] | None = None) -> tuple[list[str], list[str]]:
    """What of ``data`` the ``pages`` showed when a run read it: the paths of values none showed
    (left unpinned: :func:`prune`), and of the objects of the pinned data none of
    ``together_on`` (default: ``pages``) showed as one row or item (checked ``apart``)."""
    unshown = [path for group in _groups(data) for path, value in group.leaves
               if not any(text and _shown_in(value, text) for view in pages for text in view._folded)]
    groups = _groups(prune(data, unshown))
    rows = pages if together_on is None else together_on
    caches: list[dict[int, _Found]] = [{} for _ in rows]
    apart = [g.path for g in groups if g.family is not None and len(g.leaves) > 1
             and not any(_shows(view, g, groups, (), cache) for view, cache in zip(rows, caches, strict=True))]
    return unshown, apart


def output_pins(read: Sequence[tuple[object, Sequence[str]]], end: PageView | None,
                output: object) -> tuple[list[str], list[str]]:
    """:func:`data_pins` for a run's output, from what its data steps pinned (``read``: each
    step's pinned data and its ``apart`` paths) and the page it ended on: a value is pinned when a
    step pinned it or the last page shows it; an object is together when a step read it as one
    row or item, or the last page shows it so."""
    groups = [(g, apart) for data, apart in read for g in _groups(data)]
    values = PageView("", "", "", tuple((0, str(v)) for g, _ in groups for _, v in g.leaves))
    rows = PageView("", "", "", tuple((0, " | ".join(str(v) for _, v in g.leaves))
                                      for g, apart in groups if g.path not in apart))
    last = [end] if end is not None else []
    return data_pins([values, rows, *last], output, together_on=[rows, *last])
