"""Absent is an answer, and an empty answer on a page still rendering is not one yet.

- An extract whose answer is nothing but blank strings, on a page that is still changing by
  itself, counts as empty (like an empty required field): the page is read again as it changes.
- For an optional or nullable field the model may say "not on the page": the library returns
  None, never '' (and no made-up value).
- A URL field takes only the page's own links (by id or exact URL); anything else is re-asked.
"""

from __future__ import annotations

import re

from _server import Response

from stagehand_py.llm import LLMRequest
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import first_user
from .test_late_content import LATE

# Optional field: an empty answer is valid for the schema, so only "all blank" can tell it waits.
OPTIONAL_PRICE = {"type": "object", "properties": {"price": {"type": "string"}}}


def blank_until_shown(request: LLMRequest) -> dict[str, object]:
    """A model that answers '' (not null) for a price the outline does not show yet."""
    m = re.search(r"StaticText: Late offer costs (\S+)", first_user(request))
    return {"data": {"price": m.group(1) if m else ""}, "instruction_satisfied": bool(m)}


async def _deals(make_stagehand, server, html: str, name: str, **options):
    sh = await make_stagehand(model=FunctionLLM(blank_until_shown), **options)
    with server.route(f"/{name}", lambda req: Response.html(html)):
        await sh.page.goto(server.url(name))
    return sh


async def test_an_all_blank_answer_on_a_page_still_rendering_waits_for_the_content(make_stagehand, server):
    sh = await _deals(make_stagehand, server, LATE, "blank-late.html")
    assert await sh.extract("the price of the Late offer", OPTIONAL_PRICE) == {"price": "$40"}


async def test_control_with_a_short_settle_window_the_blank_answer_comes_back(make_stagehand, server):
    """The same page and model with a 1 s window: the 4 s offer is not there yet, and a blank
    answer is returned as it is (the test above gets the price only by waiting); a page without
    scripts is not waited for at all."""
    sh = await _deals(make_stagehand, server, LATE, "blank-short.html", dom_settle_timeout=1.0)
    assert await sh.extract("the price of the Late offer", OPTIONAL_PRICE) == {"price": ""}
    with server.route("/blank-static.html", lambda req: Response.html("<h1>Deals</h1><p>No offers today.</p>")):
        await sh.page.goto(server.url("blank-static.html"))
    with capture_requests() as calls:
        assert await sh.extract("the price of the Late offer", OPTIONAL_PRICE) == {"price": ""}
    assert len(calls) == 1
