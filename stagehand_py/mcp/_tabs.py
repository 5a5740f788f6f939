"""The browser's tabs, read straight from Playwright (``page.context.pages``)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page

from .._errors import InvalidArgumentError

__all__ = ["describe_tabs", "tab_at"]


async def describe_tabs(current: Page) -> list[dict[str, Any]]:
    """Every open tab of ``current``'s browser context: index, URL, title, and which is active."""
    tabs = []
    for index, page in enumerate(p for p in current.context.pages if not p.is_closed()):
        try:
            title = await page.title()
        except Exception:  # a tab mid-navigation has no title to give
            title = ""
        tabs.append({"index": index, "url": page.url, "title": title, "active": page is current})
    return tabs


def tab_at(current: Page, index: int) -> Page:
    pages = [p for p in current.context.pages if not p.is_closed()]
    if not 0 <= index < len(pages):
        raise InvalidArgumentError(f"no tab {index}: {len(pages)} tab(s) are open (indexes 0-{len(pages) - 1}); call list_tabs.")
    return pages[index]
