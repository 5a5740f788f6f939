"""The sync twin's ``allowed_domains``: ``sync_api.Stagehand(page, allowed_domains=...)`` is
guarded when its constructor returns (the caller's next ``page.goto`` to another host is refused),
lists what it refused, and leaves the user's page unrouted after ``close()`` (the control: the same
navigation then reaches the hostile host). Sync Playwright runs in a thread of its own
(``in_thread`` of tests/test_sync_api.py)."""

from __future__ import annotations

from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE
from _server import Response
from playwright.sync_api import sync_playwright
from test_sync_api import in_thread

from stagehand_py import sync_api


def test_the_sync_twin_is_guarded_from_its_constructor(server, cross_server) -> None:
    def scenario() -> tuple[str, list[str], bool]:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM_EXECUTABLE, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                sh = sync_api.Stagehand(page, allowed_domains=[f"127.0.0.1:{server.port}"])
                try:
                    page.goto(cross_server.url("grab?v=guarded"))
                except Exception as exc:  # refused
                    refused = str(exc).splitlines()[0]
                    page.wait_for_url("chrome-error://chromewebdata/")  # committed after goto() raised
                else:
                    refused = ""
                blocked = [b.url for b in sh.blocked_requests]
                sh.close()
                reached = bool(page.goto(cross_server.url("grab?v=closed")))
                return refused, blocked, reached
            finally:
                browser.close()

    with cross_server.recording("/grab", Response.html("<title>hostile</title>")) as hostile:
        refused, blocked, reached = in_thread(scenario)
    assert "ERR_BLOCKED_BY_CLIENT" in refused and blocked == [cross_server.url("grab?v=guarded")]
    assert reached and hostile == ["/grab"]  # only the navigation after close() arrived
