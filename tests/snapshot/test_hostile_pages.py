"""Hostile pages the snapshot must survive, on both paths: text with a lone surrogate (repaired
to U+FFFD, and the connection keeps working), and a script that never yields the main thread
(a typed timeout, not a hang)."""

from __future__ import annotations

import asyncio
import json

import pytest

from stagehand_py import StagehandTimeoutError
from stagehand_py.browser._cdp import loads_json

LONE = """<!doctype html><main><h1>Broken \\ud83d emoji</h1><button id=b>Go</button></main>
<script>document.querySelector('h1').textContent = 'Broken \\ud83d emoji';
document.getElementById('b').setAttribute('aria-label', 'Go \\udc00 now');</script>"""


async def test_a_lone_surrogate_is_repaired_and_the_connection_lives(sh, page) -> None:
    await page.set_content(LONE)
    first = (await sh.snapshot()).tree
    assert "heading: Broken \ufffd emoji" in first and "button: Go \ufffd now" in first
    first.encode("utf-8")  # well-formed: every later step can encode it
    await page.set_content("<button>Still alive</button>")
    assert "button: Still alive" in (await sh.snapshot()).tree


def test_control_orjson_alone_refuses_a_lone_surrogate() -> None:
    import orjson

    raw = json.dumps({"text": "\ud83d"})  # '{"text": "\\ud83d"}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    assert loads_json(raw) == {"text": "\ud83d"}


async def test_a_page_that_never_yields_gets_a_typed_timeout(sh, page) -> None:
    await page.set_content("<button>Busy</button>")
    await page.evaluate("setTimeout(() => { const end = Date.now() + 8000; while (Date.now() < end) {} }, 50)")
    await asyncio.sleep(0.2)
    started = asyncio.get_running_loop().time()
    with pytest.raises(StagehandTimeoutError, match="did not finish within 1 s"):
        await sh.snapshot(timeout=1)
    assert asyncio.get_running_loop().time() - started < 5
    # The page recovers (a script runs again once the 8 s loop ends; no fixed wait); so does the Stagehand.
    assert await page.evaluate("document.title.length >= 0")
    assert "button: Busy" in (await sh.snapshot()).tree
