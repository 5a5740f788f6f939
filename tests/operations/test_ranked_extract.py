"""Ranked extraction (issue 15.4): a lookup on a page of many parts sends the part that holds
the named row first and stops once the schema is filled; a list walks every part and comes back
in page order. URLs (15.5, 15.6): as the browser resolves the href, also when the model answers
with the link's URL instead of its id."""

from __future__ import annotations

import re

from _server import Response

from stagehand_py._operations._relevance import rank_chunks
from stagehand_py.snapshot import OutlineChunk
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import first_user, request_tokens


def _chunk(index: int, text: str) -> OutlineChunk:
    return OutlineChunk(index, text, len(text) // 4, index, index, 0)


def test_literal_values_and_positions_decide_the_order() -> None:
    chunks = [_chunk(0, "[0-42] columnheader: Item\n[0-43] columnheader: Price\ncell: Widget 1"),
              _chunk(1, "cell: Widget 42\ncell: $9"), _chunk(2, "cell: Widget 420\ncell: $3\nStaticText: Copyright 2026")]
    by_label = rank_chunks(chunks, "the price of the row labelled 'Widget 42'", hints="price")
    assert by_label[0].index == 1  # not the header's "Price", not "Widget 420"
    assert rank_chunks(chunks, "the price of Widget 42")[0].index == 1
    assert [c.index for c in rank_chunks(chunks, "the notice at the bottom of the page")] == [2, 1, 0]
    assert [c.index for c in rank_chunks(chunks, "the heading at the top of the page")] == [0, 1, 2]
    assert [c.index for c in rank_chunks(chunks, None)] == [0, 1, 2]


def _table(rows: int) -> str:
    body = "".join(f"<tr><td>Widget {i}</td><td>${i}.50</td></tr>" for i in range(rows))
    return (f"<!DOCTYPE html><html><body><h1>Stock</h1><table><thead><tr><th>Item</th><th>Price</th></tr></thead>"
            f"<tbody>{body}</tbody></table><p>End of stock list</p></body></html>")


PRICE = {"type": "object", "properties": {"price": {"type": "string"}}, "required": ["price"]}
NAMES = {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}, "required": ["names"]}


async def test_a_lookup_reads_the_part_with_the_row_first_and_stops(make_stagehand, server):
    def model(request):  # correct data, but cautious: never says it is satisfied
        text = first_user(request).split("Page outline", 1)[1]
        if "names" in request.output_schema["properties"]["data"]["properties"]:
            return {"data": {"names": re.findall(r"cell: (Widget \d+)", text)}, "instruction_satisfied": False}
        m = re.search(r"cell: Widget 1234\n\s*\[\S+\] cell: (\S+)", text)
        return {"data": {"price": m.group(1) if m else ""}, "instruction_satisfied": False}

    budget = 4_000
    sh = await make_stagehand(model=FunctionLLM(model), token_budget=budget)
    with server.route("/stock.html", lambda req: Response.html(_table(1500))):
        await sh.page.goto(server.url("stock.html"))
    with capture_requests() as calls:
        data = await sh.extract("the price of the row labelled 'Widget 1234'", PRICE)
    parts = int(re.search(r"part \d+ of (\d+)", first_user(calls[0].request)).group(1))
    assert parts > 10 and data == {"price": "$1234.50"}
    assert len(calls) == 1 and request_tokens(calls[0].request) <= budget  # one call, one budget

    with capture_requests() as calls:  # a list needs every part: all are read, merged in page order
        names = (await sh.extract("every item name in the table", NAMES))["names"]
    parts = int(re.search(r"part \d+ of (\d+)", first_user(calls[0].request)).group(1))
    assert len(calls) == parts and names == [f"Widget {i}" for i in range(1500)]
    assert max(request_tokens(c.request) for c in calls) <= budget


LINKS = """<!DOCTYPE html><html><head><base href="/docs/guide/"></head><body>
<a href="https://example.com">Example</a> <a href="../api/">API</a> <a href="?page=2">Next</a>
<a href="a b.html">Spaced</a> <a href="HTTP://Example.COM:80/x">Upper</a></body></html>"""


async def test_urls_are_what_the_browser_resolves_in_the_url_map_and_in_extract(make_stagehand, server):
    def model(request):
        text = first_user(request)
        ids = dict((name, eid) for eid, name in re.findall(r"\[(\d+-\d+)\] link: (\w+)", text))
        # A real small model answered one URL field with the link's URL as written, not its id.
        return {"data": {"example": ids["Example"], "api": "../api/", "next": ids["Next"], "spaced": ids["Spaced"],
                         "upper": ids["Upper"]}, "instruction_satisfied": True}

    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route("/docs/guide/links.html", lambda req: Response.html(LINKS)):
        await sh.page.goto(server.url("docs/guide/links.html"))
    browser = await sh.page.eval_on_selector_all("a", "links => links.map(a => new URL(a.getAttribute('href'), document.baseURI).href)")
    snapshot = await sh.snapshot()
    assert sorted(snapshot.url_map.values()) == sorted(browser)
    fields = ["example", "api", "next", "spaced", "upper"]
    schema = {"type": "object", "properties": {f: {"type": "string", "format": "uri"} for f in fields}, "required": fields}
    with capture_requests() as calls:
        data = await sh.extract("the links", schema)
    assert len(calls) == 1  # the URL answer was taken, not re-asked
    assert [data[f] for f in fields] == browser
    assert data["example"] == "https://example.com/" and data["api"] == f"{server.origin}/docs/api/"
