"""The direct CDP websocket a launched Stagehand shares between all its pages: one page's event
listener failing does not end it for the others, and a dropped connection is a typed error that
says why (never websockets' own exception)."""

from __future__ import annotations

import logging

import pytest

from stagehand_py import PageClosedError
from stagehand_py.browser._cdp import DirectConnection


async def _second_connection(launched) -> DirectConnection:
    """A connection of its own to the launched session's browser: these tests break theirs."""
    ws = launched._session.direct._ws
    host, port = ws.remote_address[:2]
    return await DirectConnection.open(f"ws://{host}:{port}{ws.request.path}")


async def test_a_failing_listener_is_logged_and_the_connection_goes_on(launched_stagehand, caplog) -> None:
    connection = await _second_connection(launched_stagehand)
    seen: list[str] = []

    def failing(method: str, params: dict, session_id: str | None) -> None:
        seen.append(method)
        raise RuntimeError("a listener's bug")

    connection.add_listener(failing)
    try:
        with caplog.at_level(logging.ERROR, logger="stagehand_py"):
            # Discovery sends one Target.targetCreated per existing target to the listener.
            await connection.send("Target.setDiscoverTargets", {"discover": True})
            version = await connection.send("Browser.getVersion")
        assert "Target.targetCreated" in seen  # the listener ran and raised (control: not vacuous)
        assert version["product"].startswith(("HeadlessChrome", "Chrome"))
        assert "A CDP event listener failed on Target.targetCreated" in caplog.text
    finally:
        await connection.close()


async def test_a_dropped_connection_is_a_page_closed_error_saying_why(launched_stagehand) -> None:
    connection = await _second_connection(launched_stagehand)
    await connection._ws.close()  # the websocket drops under us (the browser went away)
    await connection._reader
    with pytest.raises(PageClosedError, match=r"Browser\.getVersion.*closed \(the browser closed the websocket\)"):
        await connection.send("Browser.getVersion")
    await connection.close()
    with pytest.raises(PageClosedError, match="its Stagehand closed it"):
        await connection.send("Browser.getVersion")
