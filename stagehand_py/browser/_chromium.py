"""Finding a Chromium executable and the flags a headless (often root, often sandboxed-CI)
session needs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .._errors import BrowserNotFoundError
from .._logging import logger

__all__ = ["DEFAULT_CHROMIUM_ARGS", "find_chromium"]

#: Flags for a headless session that may run as root, in a container, on a machine whose
#: network only reaches what the user asked for. Nothing the snapshot needs: it computes roles
#: and names itself, so a browser we launch and one the user launched give the same outline.
DEFAULT_CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)

_SYSTEM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def find_chromium(executable_path: str | os.PathLike[str] | None = None, *, playwright_path: str | None = None) -> str:
    """Return the Chromium to launch.

    Order: the explicit argument, ``$STAGEHAND_CHROMIUM_PATH``, Playwright's own browser when
    one is installed (``playwright_path``), then the system Chromium.
    """
    tried: list[str] = []
    for source, candidate in (
        ("executable_path argument", executable_path),
        ("STAGEHAND_CHROMIUM_PATH", os.environ.get("STAGEHAND_CHROMIUM_PATH")),
    ):
        if candidate:
            path = Path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            # An explicit choice that does not exist is an error, not a reason to pick another.
            raise BrowserNotFoundError(
                f"{source} points to {str(path)!r}, which is not an executable file. "
                "Fix the path, or unset it to let stagehand_py look for a Chromium itself."
            )
    if playwright_path:
        if Path(playwright_path).is_file():
            return playwright_path
        tried.append(f"Playwright's browser ({playwright_path})")
    for candidate in (*_SYSTEM_CANDIDATES, shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            logger.debug("using system chromium at %s", candidate)
            return candidate
        if candidate:
            tried.append(candidate)
    raise BrowserNotFoundError(
        "No Chromium executable found (looked at: "
        + ", ".join(dict.fromkeys(tried))
        + "). Install one with `apt-get install -y chromium` (Debian/Ubuntu), or pass "
        "executable_path=..., or set STAGEHAND_CHROMIUM_PATH."
    )
