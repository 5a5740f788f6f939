"""Settling after actions: network quiet, long-polls and streams ignored, the cap, navigation and new pages."""

from __future__ import annotations

import asyncio
import time

from _server import Response

from stagehand_py import Action
from stagehand_py._actions import execute_action, wait_for_settled_dom, watch_page

FETCH_AFTER_LOAD = """<!DOCTYPE html><title>after load</title><p id='s'>waiting</p>
<script>
  addEventListener('load', () => setTimeout(async () => {
    await (await fetch('/slow?ms=300')).json();
    document.getElementById('s').textContent = 'done';
  }, 50));
</script>"""

LONG_POLL = """<!DOCTYPE html><title>long poll</title>
<script>
  async function poll() { try { await fetch('/slow?ms=20000&poll=' + Math.random()); } catch (e) {} poll(); }
  poll();
</script>"""

EVENT_STREAM = """<!DOCTYPE html><title>stream</title>
<script>window.source = new EventSource('/slow?ms=20000&stream=1');</script>"""


async def test_waits_for_a_fetch_that_starts_after_load(page, server) -> None:
    with server.route("/settle/after_load.html", lambda req: Response.html(FETCH_AFTER_LOAD)):
        await page.goto(server.url("settle/after_load.html"), wait_until="commit")
        started = time.monotonic()
        await wait_for_settled_dom(page)
        assert time.monotonic() - started >= 0.3
        assert await page.text_content("#s") == "done"


async def test_quiet_page_settles_after_the_quiet_period(page) -> None:
    await page.set_content("<p>static</p>")
    started = time.monotonic()
    await wait_for_settled_dom(page, quiet_ms=200)
    assert 0.2 <= time.monotonic() - started < 1.5


async def test_watch_around_an_action_sees_the_requests_it_causes(page, server) -> None:
    await page.goto(server.url("dynamic.html"))
    async with watch_page(page) as watch:
        await execute_action(page, Action(selector="css=#load"))
        await watch.wait_for_settled()
    assert await page.text_content("#load-status") == "loaded"
    assert not watch.navigated and not watch.new_pages and not watch.url_changed


async def test_long_poll_does_not_block_past_the_threshold(page, server) -> None:
    with server.route("/settle/long_poll.html", lambda req: Response.html(LONG_POLL)):
        # Watch from before the navigation: a request that started earlier is invisible.
        async with watch_page(page) as watch:
            await page.goto(server.url("settle/long_poll.html"))
            started = time.monotonic()
            await watch.wait_for_settled(quiet_ms=300, long_poll_ms=1000, timeout_ms=8000)
            elapsed = time.monotonic() - started
            assert watch.pending_requests == 1  # the poll is still open...
        assert 0.7 <= elapsed < 3.0  # ...but ignored once it is older than long_poll_ms


async def test_the_cap_ends_the_wait_without_raising(page, server, caplog) -> None:
    with server.route("/settle/long_poll.html", lambda req: Response.html(LONG_POLL)):
        caplog.set_level("DEBUG", logger="stagehand_py")
        async with watch_page(page) as watch:
            await page.goto(server.url("settle/long_poll.html"))
            started = time.monotonic()
            await watch.wait_for_settled(quiet_ms=300, long_poll_ms=60_000, timeout_ms=1200)
            assert 1.2 <= time.monotonic() - started < 2.0
        assert any("gave up after 1200 ms" in r.getMessage() for r in caplog.records)


async def test_event_source_is_ignored(page, server) -> None:
    with server.route("/settle/stream.html", lambda req: Response.html(EVENT_STREAM)):
        async with watch_page(page) as watch:
            await page.goto(server.url("settle/stream.html"))
            started = time.monotonic()
            await watch.wait_for_settled(quiet_ms=300, long_poll_ms=60_000, timeout_ms=8000)
            assert time.monotonic() - started < 2.0
            assert await page.evaluate("window.source.readyState") == 0  # still connecting: open


SLOW_DOC = """<!DOCTYPE html><title>slow doc</title><script src="/slow?ms=400"></script><p id='ready'>here</p>"""


async def test_navigation_under_way_and_detection(page, server) -> None:
    with server.route("/settle/slow_doc.html", lambda req: (time.sleep(0.4), Response.html(SLOW_DOC))[1]):
        await page.set_content(f"<a href='{server.url('settle/slow_doc.html')}'>go</a>")
        async with watch_page(page) as watch:
            await execute_action(page, Action(selector="/html[1]/body[1]/a[1]"))
            await watch.wait_for_settled()
        assert watch.navigated and watch.url_changed
        assert page.url.endswith("/settle/slow_doc.html")
        assert await page.evaluate("document.readyState") != "loading"
        assert await page.text_content("#ready") == "here"


async def test_new_page_detection(page, server) -> None:
    await page.set_content(f"<a href='{server.url('index.html')}' target='_blank'>open</a>")
    async with watch_page(page) as watch:
        await execute_action(page, Action(selector="/html[1]/body[1]/a[1]"))
        await watch.wait_for_settled(quiet_ms=200)
        # A loaded (or CPU-throttled) browser may open the tab after the quiet time: wait for the
        # event generously; what is tested is that the watch sees it, not how fast.
        for _ in range(150):
            if watch.new_pages:
                break
            await asyncio.sleep(0.1)
    assert len(watch.new_pages) == 1 and not watch.navigated
    await watch.new_pages[0].close()
