"""How tests and benchmarks launch Debian's Chromium (Playwright's download is unavailable here)."""

from __future__ import annotations

CHROMIUM_EXECUTABLE = "/usr/bin/chromium"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    # Without these Chromium keeps dialing hosts this network refuses.
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    # Exposes computed role/name to the page (element.computedRole / computedName).
    "--enable-blink-features=ComputedAccessibilityInfo",
]


async def launch_chromium(playwright, **kwargs):
    """``playwright.chromium.launch`` with the flags above; extra kwargs pass through."""
    kwargs.setdefault("headless", True)
    return await playwright.chromium.launch(
        executable_path=CHROMIUM_EXECUTABLE, args=list(CHROMIUM_ARGS), **kwargs
    )
