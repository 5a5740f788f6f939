"""Pure outline building: a CDP DOM tree + per-element accessibility info -> text outline,
id -> XPath and id -> URL maps. No I/O here, so every rule is testable without a browser.

Rules (the documented outline format):
- one line per kept node: ``[<frameOrdinal>-<n>] <role>: <name>`` (``n``: the node's number in the walker's store, under the key ``backendNodeId``) followed by
  ``value="..."`` for inputs and flags like ``[checked]``; two spaces of indent per level;
- hidden nodes (not rendered, ``aria-hidden``, ``inert``) are left out, their visible
  descendants are not;
- a structural wrapper (role generic/none, no name, no state) with one kept child collapses
  into that child and with none disappears; with several it stays, shown by its tag name;
- a text node whose text is already part of an ancestor's name is not repeated;
- an iframe's document appears inline under its ``iframe`` line, with that frame's ordinal.

XPaths are canonical: steps ``tag[n]`` (HTML elements), ``*[local-name()='x'][n]`` (SVG and
other namespaces), ``text()[normalize-space()][n]`` (text; CDP drops whitespace-only text
nodes, so counting only non-blank ones keeps indices exact). A step after ``iframe[n]``
continues in that frame's document; ``//`` after an element step enters its shadow root.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from .._util import xpath_literal

__all__ = ["TARGET_INFO_KEY", "TEXT_INDEX_KEY", "ElementInfo", "OutlineResult", "build_outline", "SKIPPED_TAGS", "STRUCTURAL_ROLES"]

# Bits set by _walker.js (keep in sync).
VISIBLE, CHECKED, MIXED, SELECTED, DISABLED, EXPANDED, COLLAPSED, SCROLLABLE, FILLED, REQUIRED, FOCUSED = (
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
)
FALLBACK_UNUSED = 2048  # a <slot> whose fallback children are not rendered
_FLAG_NAMES: tuple[tuple[int, str], ...] = (
    (CHECKED, "[checked]"),
    (MIXED, "[mixed]"),
    (SELECTED, "[selected]"),
    (DISABLED, "[disabled]"),
    (EXPANDED, "[expanded]"),
    (COLLAPSED, "[collapsed]"),
    (REQUIRED, "[required]"),
    (FILLED, "[filled]"),
    (FOCUSED, "[focused]"),
    (SCROLLABLE, "[scrollable]"),
)
_FLAG_MASK = CHECKED | MIXED | SELECTED | DISABLED | EXPANDED | COLLAPSED | FILLED | SCROLLABLE

SKIPPED_TAGS = frozenset({"head", "script", "style", "noscript", "template", "meta", "link", "title", "base"})
STRUCTURAL_ROLES = frozenset({"", "generic", "none", "presentation", "ignored", "genericcontainer"})
#: Roles that say nothing once empty (no name, no kept children): text-level and plain
#: containers. Widgets, images and separators stay even when empty: their presence matters.
_SILENT_WHEN_EMPTY = frozenset({
    "emphasis", "strong", "code", "mark", "subscript", "superscript", "deletion", "insertion", "time",
    "paragraph", "term", "definition", "blockquote", "caption", "label", "labeltext", "abbr", "listitem",
    "list", "group", "section", "region", "article", "figure", "note", "contentinfo", "banner", "complementary",
    "navigation", "main", "form", "search", "statictext", "linebreak", "inlinetextbox", "document",
})
_FRAME_TAGS = frozenset({"iframe", "frame"})
_TEXT, _ELEMENT, _DOCUMENT, _FRAGMENT = 3, 1, 9, 11

#: Key under which a document node from another CDP target carries that target's own info
#: map (backend node ids are only unique within one renderer process).
TARGET_INFO_KEY = "stagehand_info"

#: Key under which an element node carries the true XPath index of each text child CDP kept,
#: when Chrome and XPath disagree about which of its text children are blank.
TEXT_INDEX_KEY = "stagehand_text_index"

#: (bits, role, name, value) for one element; role/name None when unknown.
ElementInfo = tuple[int, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class OutlineResult:
    tree: str
    xpath_map: dict[str, str]
    url_map: dict[str, str]



_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _resolve_url(base: str, href: str) -> str:
    """``href`` against ``base`` as a browser does (``new URL(href, base).href``) in the ways that
    matter for comparing links: scheme and host in lower case, no default port, ``/`` for an
    empty path, spaces escaped. (The walker sends links already resolved by the browser; this
    covers nodes read through CDP.)"""
    parts = urlsplit(urljoin(base, href))
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.netloc:
        return urlunsplit(parts)
    host = (parts.hostname or "").lower()
    port = parts.port if parts.port not in (None, _DEFAULT_PORTS[parts.scheme.lower()]) else None
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~-._")
    return urlunsplit((parts.scheme.lower(), netloc, path, quote(parts.query, safe="/%:@!$&'()*+,;=?~-._"), parts.fragment))

def _normalize(text: str) -> str:
    return " ".join(text.split())


def _quote(value: str) -> str:
    return '"' + _normalize(value).replace('"', '\\"') + '"'


class _Rec:
    """A visible element or text node on its way to becoming a line."""

    __slots__ = ("children", "keep", "label", "node_id", "structural", "tag", "url", "xpath")

    def __init__(self, node_id: str, xpath: str, label: str, url: str | None, structural: bool, keep: bool, tag: str) -> None:
        self.node_id = node_id
        self.xpath = xpath
        self.label = label
        self.url = url
        self.structural = structural
        self.keep = keep
        self.tag = tag
        self.children: list[_Rec] = []


_NAME_TEST = re.compile(r"^[^\W\d][\w.\-]*$")
# Blank for XPath's normalize-space() is only space, tab, CR and LF (NBSP is not blank).
_XPATH_NONBLANK = re.compile(r"[^ \t\n\r]")


@lru_cache(maxsize=4096)
def _element_step_head(local: str, html: bool) -> str:
    """``tag`` for HTML names XPath can spell, else ``*[local-name()='...']``."""
    if html and _NAME_TEST.match(local):
        return local
    return f"*[local-name()={xpath_literal(local)}]"


def _child_steps(children: list[dict[str, Any]], text_index: list[int] | None = None) -> list[str | None]:
    """XPath step for each child in a container's child list (None for nodes without one).

    ``text_index`` overrides the text steps' indices (see TEXT_INDEX_KEY).
    """
    counts: dict[str, int] = {}
    text_count = 0
    steps: list[str | None] = []
    for child in children:
        node_type = child.get("nodeType")
        if node_type == _ELEMENT:
            local = child.get("localName") or child.get("nodeName", "").lower()
            counts[local] = counts.get(local, 0) + 1
            # HTML elements carry an upper-case nodeName; anything else is a foreign namespace
            # (SVG, MathML) that a plain name test would not match in an HTML document. Names
            # the HTML parser accepts but XPath cannot spell as a name test (``x:y``) use the
            # local-name() form too.
            steps.append(f"{_element_step_head(local, child.get('nodeName') == local.upper())}[{counts[local]}]")
        elif node_type == _TEXT and _XPATH_NONBLANK.search(child.get("nodeValue") or ""):
            text_count += 1
            k = text_index[text_count - 1] if text_index and text_count <= len(text_index) else text_count
            steps.append(f"text()[normalize-space()][{k}]")
        else:
            steps.append(None)
    return steps


def build_outline(
    root: dict[str, Any],
    *,
    info: Mapping[int, ElementInfo],
    frame_ordinal: Callable[[str], int],
    root_ordinal: int = 0,
    root_xpath: str = "",
    base_url: str = "",
) -> OutlineResult:
    """Build the outline of ``root`` (a CDP document node, or an element node for a scoped
    snapshot whose own XPath is ``root_xpath``).

    ``info`` maps backend node ids to what the page said about the element; elements it does
    not know are treated as visible, structural and unnamed. ``frame_ordinal(frame_id)`` gives
    the stable ordinal of an iframe's frame.
    """
    top = _Rec("", root_xpath, "", None, True, False, "#root")
    # Explicit stack: documents can be thousands of levels deep, deeper than Python's recursion.
    # Items: (node, xpath, parent record, ordinal, nearest ancestor name, base url, info map).
    Info = Mapping[int, ElementInfo]
    stack: list[tuple[dict[str, Any], str, _Rec, int, str, str, Info]] = []
    order: list[_Rec] = []

    def push_children(
        containers: list[tuple[list[dict[str, Any]], str]], parent: _Rec, ordinal: int, ancestor_name: str, base: str,
        infos: Info, text_index: list[int] | None = None,
    ) -> None:
        # Pushed in reverse so they pop in document order.
        for children, prefix in reversed(containers):
            steps = _child_steps(children, text_index if prefix and not prefix.endswith("/") else None)
            for child, step in zip(reversed(children), reversed(steps), strict=True):
                if step is not None:
                    stack.append((child, f"{prefix}/{step}", parent, ordinal, ancestor_name, base, infos))

    if root.get("nodeType") == _DOCUMENT:
        base = root.get("baseURL") or root.get("documentURL") or base_url
        push_children([(root.get("children", []), root_xpath)], top, root_ordinal, "", base, info)
    else:
        stack.append((root, root_xpath, top, root_ordinal, "", base_url, info))

    while stack:
        node, xpath, parent, ordinal, ancestor_name, base, infos = stack.pop()
        if node.get("nodeType") == _TEXT:
            text = _normalize(node.get("nodeValue") or "")
            if not text or parent.tag in ("textarea", "select"):
                continue
            if text in ancestor_name:
                continue  # already said by an ancestor's accessible name
            rec = _Rec(f"{ordinal}-{node['backendNodeId']}", xpath, "StaticText: " + text, None, False, True, "#text")
            parent.children.append(rec)
            order.append(rec)
            continue

        tag = node.get("localName") or node.get("nodeName", "").lower()
        if tag in SKIPPED_TAGS:
            continue
        bits, role, name, value = infos.get(node["backendNodeId"], (VISIBLE, None, None, None))
        holder = parent
        if bits & VISIBLE:
            role = role or ""
            name = _normalize(name) if name else ""
            structural = role.lower() in STRUCTURAL_ROLES
            shown_role = tag if structural else role
            label = f"{shown_role}: {name}" if name else shown_role
            if value:
                label += f" value={_quote(value)}"
            for bit, flag in _FLAG_NAMES:
                if bits & bit:
                    label += " " + flag
            href = None
            if tag in ("a", "area"):
                href = _attribute(node, "href")
            url = None
            if href and not href.lstrip().lower().startswith("javascript:"):
                url = _resolve_url(base, href.strip())
            keep = bool(name) or bool(value) or bool(bits & _FLAG_MASK) or tag in _FRAME_TAGS
            if not structural and not keep and role.lower() in _SILENT_WHEN_EMPTY:
                structural = True  # shown only if it ends up holding something
            rec = _Rec(f"{ordinal}-{node['backendNodeId']}", xpath, label, url, structural, keep, tag)
            parent.children.append(rec)
            order.append(rec)
            holder = rec
            if name:
                ancestor_name = name
        # else: hidden element: its visible descendants attach to the nearest visible ancestor,
        # its own text nodes are hidden with it.

        containers: list[tuple[list[dict[str, Any]], str]] = []
        for shadow in node.get("shadowRoots", ()):
            if shadow.get("shadowRootType") != "user-agent":
                containers.append((shadow.get("children", []), xpath + "/"))
        if node.get("children"):
            if bits & VISIBLE and not bits & FALLBACK_UNUSED:
                containers.append((node["children"], xpath))
            else:
                # Text directly inside a hidden element is hidden too; elements may still show.
                containers.append(([c for c in node["children"] if c.get("nodeType") == _ELEMENT], xpath))
        if containers:
            push_children(containers, holder, ordinal, ancestor_name, base, infos, node.get(TEXT_INDEX_KEY))
        document = node.get("contentDocument")
        if document is not None and tag in _FRAME_TAGS:
            frame_id = node.get("frameId") or document.get("frameId") or ""
            child_ordinal = frame_ordinal(frame_id)
            child_base = document.get("baseURL") or document.get("documentURL") or base
            push_children([(document.get("children", []), xpath)], holder, child_ordinal, "", child_base, document.get(TARGET_INFO_KEY, infos))

    # Bottom-up: decide which records become lines. Children come after parents in `order`,
    # so walking it backwards sees every child before its parent.
    for rec in reversed(order):
        kept: list[_Rec] = []
        for child in rec.children:
            if child.keep or child.children:
                kept.append(child)
        if rec.structural and not rec.keep and rec.tag != "#text":
            if len(kept) == 1:
                # Collapse: this wrapper is replaced by its only child.
                rec.children = kept
                rec.keep = False
                continue
            if len(kept) > 1:
                rec.keep = True
        elif not rec.structural:
            rec.keep = True
        rec.children = kept

    lines: list[str] = []
    xpath_map: dict[str, str] = {}
    url_map: dict[str, str] = {}
    render: list[tuple[_Rec, int]] = [(child, 0) for child in reversed(top.children)]
    while render:
        rec, depth = render.pop()
        if rec.keep:
            lines.append(f"{'  ' * depth}[{rec.node_id}] {rec.label}")
            xpath_map[rec.node_id] = rec.xpath
            if rec.url:
                url_map[rec.node_id] = rec.url
            child_depth = depth + 1
        elif rec.children:
            child_depth = depth  # collapsed wrapper: its child takes its place
        else:
            continue
        for child in reversed(rec.children):
            render.append((child, child_depth))
    return OutlineResult("\n".join(lines), xpath_map, url_map)


def _attribute(node: dict[str, Any], name: str) -> str | None:
    attributes = node.get("attributes") or ()
    for i in range(0, len(attributes) - 1, 2):
        if attributes[i] == name:
            value: str = attributes[i + 1]
            return value
    return None
