"""Finding Chromium, launching, connecting and wrapping: what Stagehand opens it closes, what
the user owns it leaves alone."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import tempfile

import pytest
from _server import Response

from stagehand_py import BrowserNotFoundError, InvalidArgumentError, PageClosedError, Stagehand
from stagehand_py.browser._chromium import find_chromium


def _fake_executable(folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(path, 0o755)
    return path


def test_explicit_path_wins_and_a_wrong_one_is_an_error(monkeypatch, tmp_path) -> None:
    mine = _fake_executable(str(tmp_path), "my-chromium")
    from_env = _fake_executable(str(tmp_path), "env-chromium")
    monkeypatch.setenv("STAGEHAND_CHROMIUM_PATH", from_env)
    assert find_chromium(mine) == mine
    assert find_chromium() == from_env
    with pytest.raises(BrowserNotFoundError, match="not an executable file"):
        find_chromium(str(tmp_path / "missing"))
    monkeypatch.setenv("STAGEHAND_CHROMIUM_PATH", str(tmp_path / "also-missing"))
    with pytest.raises(BrowserNotFoundError, match="STAGEHAND_CHROMIUM_PATH"):
        find_chromium()


def test_playwright_browser_comes_before_the_system_one(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("STAGEHAND_CHROMIUM_PATH", raising=False)
    bundled = _fake_executable(str(tmp_path), "pw-chrome")
    assert find_chromium(playwright_path=bundled) == bundled
    assert find_chromium(playwright_path=str(tmp_path / "not-installed")) == "/usr/bin/chromium"


def test_no_browser_anywhere_says_how_to_install_one(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("STAGEHAND_CHROMIUM_PATH", raising=False)
    monkeypatch.setattr("stagehand_py.browser._chromium._SYSTEM_CANDIDATES", (str(tmp_path / "none"),))
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(BrowserNotFoundError, match="apt-get install -y chromium") as caught:
        find_chromium(playwright_path=str(tmp_path / "pw-none"))
    assert "executable_path" in str(caught.value) and "STAGEHAND_CHROMIUM_PATH" in str(caught.value)


def test_wrapping_needs_an_async_page() -> None:
    with pytest.raises(InvalidArgumentError, match="async Playwright Page"):
        Stagehand("not a page")


async def test_close_leaves_the_users_page_and_browser_alone(page, server) -> None:
    await page.goto(server.url("forms.html"))
    async with Stagehand(page) as stagehand:
        await stagehand.snapshot()
    assert not page.is_closed()
    assert await page.title()  # still usable
    with pytest.raises(PageClosedError, match="closed"):
        await stagehand.snapshot()


async def test_launch_owns_its_browser_and_closes_it(server, cross_server) -> None:
    """Also: ``launch(allowed_domains=...)`` returns with the context guarded, before any call (a
    plain ``page.goto`` to the other host is refused at once; the same goto reached it in the
    controls of tests/security/test_stagehand_guard.py)."""
    stagehand = await Stagehand.launch(allowed_domains=[f"127.0.0.1:{server.port}"])
    browser = stagehand.page.context.browser
    with cross_server.recording("/grab", Response.html("<title>hostile</title>")) as hostile:
        with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):
            await stagehand.page.goto(cross_server.url("grab"))
        # The refused navigation's error page commits after goto() raised: wait for it, or it
        # interrupts the next navigation.
        await stagehand.page.wait_for_url("chrome-error://chromewebdata/")
    assert hostile == [] and [b.url for b in stagehand.blocked_requests] == [cross_server.url("grab")]
    await stagehand.page.goto(server.url("links.html"))
    assert "link: Relative link to forms" in (await stagehand.snapshot()).tree
    await stagehand.close()
    assert not browser.is_connected()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_connect_attaches_over_cdp_and_disconnecting_leaves_the_browser_running(server, cross_server) -> None:
    port = _free_port()
    profile = tempfile.mkdtemp(prefix="stagehand-connect-")
    process = subprocess.Popen(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync",
         f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        stagehand = None
        for _ in range(100):  # the debugging port opens about a second after start
            try:
                stagehand = await Stagehand.connect(f"http://127.0.0.1:{port}",
                                                    allowed_domains=[f"127.0.0.1:{server.port}"])
                break
            except Exception:
                await asyncio.sleep(0.1)
        assert stagehand is not None, "could not connect to the browser we started"
        assert stagehand._session.direct is not None  # the fast channel is used for a CDP URL too
        await stagehand.page.goto(server.url("forms.html"))
        assert "button: Sign in" in (await stagehand.snapshot()).tree
        with cross_server.recording("/grab", Response.html("<title>hostile</title>")) as hostile:
            with pytest.raises(Exception, match="ERR_BLOCKED_BY_CLIENT"):  # the connected context is guarded
                await stagehand.page.goto(cross_server.url("grab"))
        assert hostile == [] and len(stagehand.blocked_requests) == 1
        await stagehand.close()
        assert process.poll() is None, "closing a connected Stagehand must not end the user's browser"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_scrollable_containers_are_marked(page, server) -> None:
    await page.goto(server.url("scroll.html"))
    async with Stagehand(page) as stagehand:
        tree = (await stagehand.snapshot()).tree
    assert "list: Scrollable items [scrollable]" in tree
    assert tree.split("\n")[0].endswith("html [scrollable]")  # the page itself scrolls
