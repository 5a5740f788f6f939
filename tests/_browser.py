"""How tests and benchmarks launch Debian's Chromium (Playwright's download is unavailable here)."""

from __future__ import annotations

from stagehand_py.browser._chromium import DEFAULT_CHROMIUM_ARGS

CHROMIUM_EXECUTABLE = "/usr/bin/chromium"

# The library's own flags for a headless session (one list for the project), plus QUIC off:
# this network refuses UDP to the outside.
CHROMIUM_ARGS = [*DEFAULT_CHROMIUM_ARGS, "--disable-quic"]


async def launch_chromium(playwright, **kwargs):
    """``playwright.chromium.launch`` with the flags above; extra kwargs pass through."""
    kwargs.setdefault("headless", True)
    return await playwright.chromium.launch(
        executable_path=CHROMIUM_EXECUTABLE, args=list(CHROMIUM_ARGS), **kwargs
    )
