"""An element id in a prompt is always one the page has: no made-up example ids.

A small model copies an example id ('0-42') from a prompt or a re-ask message instead of reading
the outline. Every prompt of observe (with a re-ask after a wrong id), act and extract (with a
URL field and a re-ask) is scanned: each `<digits>-<digits>` token, in the messages and in the
answer schema sent with them, must be an id of the page's snapshot.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import AnyUrl, BaseModel

from stagehand_py import Stagehand
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id, prompt_text

ID_TOKEN = re.compile(r"(?<![\w.-])(\d+-\d+)(?![\w.-])")


def foreign_ids(text: str, page_ids: set[str]) -> set[str]:
    return {token for token in ID_TOKEN.findall(text) if token not in page_ids}


def test_the_control_a_made_up_example_id_is_caught() -> None:
    assert foreign_ids("use an id from the outline, e.g. '0-42'", {"0-3", "0-4"}) == {"0-42"}
    assert foreign_ids("[0-3] textbox: Username", {"0-3"}) == set()


class Link(BaseModel):
    title: str
    link: AnyUrl


SMALL_PAGE = """<h1>Products</h1><p>Trail Runner Shoes $89.99</p>
<a href="/products.html?page=2">Next page</a>"""


async def test_no_prompt_shows_an_id_the_page_does_not_have(page, server) -> None:
    # A small page: its ids are few, so a made-up example id cannot happen to exist on it.
    await page.goto(server.url("products.html"))
    await page.set_content(SMALL_PAGE)
    asked: dict[str, int] = {}

    def model(request: Any) -> dict[str, Any]:
        asked[request.purpose] = asked.get(request.purpose, 0) + 1
        first = asked[request.purpose] == 1
        if request.purpose == "observe":  # a wrong id first: the re-ask message must not invent one
            # (text that names no line: a line's own name would be taken as that element)
            return {"elements": [element("the next one" if first else find_id(request, "link: Next page"), "click")]}
        if request.purpose == "act":
            return {"elements": [element(find_id(request, "link: Next page"), "click")], "opens_options": False}
        link = "the next page link" if first else find_id(request, "link: Next page")
        return {"data": {"title": "Products", "link": link}, "instruction_satisfied": True}

    sh = Stagehand(page, model=FunctionLLM(model))
    snapshot = await sh.snapshot()
    page_ids = set(snapshot.xpath_map)
    assert len(page_ids) < 10, snapshot.tree
    with capture_requests() as calls:
        await sh.observe("the next page link")
        await sh.extract("the page title and the next page link", schema=Link)
        await sh.act("click the next page link")
    assert asked == {"observe": 2, "extract": 2, "act": 1}, asked  # both re-asks happened
    for call in calls:
        text = prompt_text(call.request) + json.dumps(call.request.output_schema)
        assert not foreign_ids(text, page_ids), (call.request.purpose, foreign_ids(text, page_ids))
