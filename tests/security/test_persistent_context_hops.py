"""allowed_domains in a persistent context (a profile folder): every later redirect hop is checked
there too. Playwright 1.65 gives a persistent context a browser object, so the browser-level
check applies; where no browser-level session can be had, the guard checks the hops on every
page's own DevTools session instead (``guarded-per-page`` forces that path).

Both page kinds: a persistent context the user launched with Playwright and wrapped, and one
``Stagehand.launch(browser_options=BrowserOptions(user_data_dir=...))`` started. The control runs
the guard with neither check (what it did before where the browser session failed: a warning,
only the first hop checked) and shows a navigation chain reaching the hostile host.
"""

from __future__ import annotations

import tempfile

import pytest
import pytest_asyncio
from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE

from stagehand_py import Stagehand
from stagehand_py.browser import BrowserOptions
from stagehand_py.browser._guard import DomainGuard

from .test_allowlist import SCENARIOS as KINDS
from .test_allowlist import _run
from .test_redirect_hops import hops  # noqa: F401  (the fixture)


@pytest_asyncio.fixture(scope="module", loop_scope="session", params=["wrapped", "launched"])
async def persistent(request, pw):
    """A persistent context of each page kind (one per module: launching costs seconds)."""
    with tempfile.TemporaryDirectory(prefix="stagehand-profile-") as folder:
        if request.param == "wrapped":
            context = await pw.chromium.launch_persistent_context(
                folder, executable_path=CHROMIUM_EXECUTABLE, args=list(CHROMIUM_ARGS), headless=True)
            sh = None
        else:
            sh = await Stagehand.launch(executable_path=CHROMIUM_EXECUTABLE, args=["--disable-quic"],
                                        browser_options=BrowserOptions(user_data_dir=folder), _playwright=pw)
            context = sh.page.context
        yield context
        if sh is not None:
            await sh.close()
        else:
            await context.close()


@pytest_asyncio.fixture(loop_scope="session")
async def persistent_page(persistent):
    page = await persistent.new_page()
    Stagehand(page)  # wrapped as a user would; the guard works on the page's context
    yield page
    await page.close()


@pytest.mark.parametrize("how", ["guarded", "guarded-per-page", "control-route-only"])
@pytest.mark.parametrize("kind", list(KINDS))
async def test_every_hop_is_checked_in_a_persistent_context(persistent_page, server, cross_server, hostile, hops,  # noqa: F811
                                                           kind: str, how: str) -> None:
    page = persistent_page
    guard = DomainGuard([f"127.0.0.1:{server.port}"], main_page=page)
    if how == "guarded-per-page":
        async def no_browser_session() -> None:
            raise RuntimeError("no browser-level session (forced by the test)")
        guard._hops._browser_session = no_browser_session  # type: ignore[method-assign]
    elif how == "control-route-only":
        async def no_hop_check(session) -> None:
            return None
        guard._hops.intercept = no_hop_check  # type: ignore[method-assign]
    await guard.install()
    try:
        await _run(page, server, kind, hops["chain"](3, cross_server.url(f"steal?{kind}")))
    finally:
        await guard.uninstall()
    if how != "control-route-only":
        assert hostile == []
        assert [b.url for b in guard.blocked] == [cross_server.url(f"steal?{kind}")]
    else:
        # Only the first hop reaches a route: the navigation chain lands on the hostile host (for a
        # frame, an image and a fetch the route alone held, as in the non-persistent case).
        assert hostile == (["/steal"] if kind == "navigation" else [])
