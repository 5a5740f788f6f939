"""Absent is an answer, and an empty answer on a page still rendering is not one yet.

- An extract whose answer is nothing but blank strings, on a page that is still changing by
  itself, counts as empty (like an empty required field): the page is read again as it changes.
- For an optional or nullable field the model may say "not on the page": the library returns
  None, never '' (and no made-up value).
- A URL field takes only the page's own links (by id or exact URL); a link's name is that link
  when the page's links so named all go to one URL; anything else is re-asked (a name that
  several links share with their ids).
"""

from __future__ import annotations

import re

import pytest
from _server import Response
from pydantic import BaseModel, HttpUrl

from stagehand_py.llm import LLMRequest
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import find_id, first_user, prompt_text
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
    answer comes back (as an absent optional field: left out, never '') — the test above gets the
    price only by waiting; a page without scripts is not waited for at all."""
    sh = await _deals(make_stagehand, server, LATE, "blank-short.html", dom_settle_timeout=1.0)
    assert await sh.extract("the price of the Late offer", OPTIONAL_PRICE) == {}
    with server.route("/blank-static.html", lambda req: Response.html("<h1>Deals</h1><p>No offers today.</p>")):
        await sh.page.goto(server.url("blank-static.html"))
    with capture_requests() as calls:
        assert await sh.extract("the price of the Late offer", OPTIONAL_PRICE) == {}
    assert len(calls) == 1


BOOK_PAGE = """<!DOCTYPE html><html><body><h1>Dune</h1><p>by Frank Herbert</p>
<a href="/reviews/dune">Reviews</a></body></html>"""


class Book(BaseModel):
    title: str
    subtitle: str | None = None
    reviews: HttpUrl | None = None
    shop: HttpUrl | None = None


async def test_optional_and_nullable_fields_answered_blank_come_back_as_none(make_stagehand, server):
    answers: list[dict] = []

    def model(request: LLMRequest) -> dict[str, object]:
        reviews = find_id(request, "link: Reviews")
        answer = [{"title": "Dune", "subtitle": "", "reviews": reviews, "shop": ""},
                  {"title": "Dune", "subtitle": "", "reviews": reviews, "shop": ""}][len(answers)]
        answers.append(answer)
        return {"data": answer, "instruction_satisfied": True}

    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route("/dune.html", lambda req: Response.html(BOOK_PAGE)):
        await sh.page.goto(server.url("dune.html"))
    with capture_requests() as calls:
        book = await sh.extract("the book's title, subtitle, reviews link and shop link", schema=Book)
    assert len(calls) == 1  # a blank link is "not on the page", not a wrong link to re-ask
    assert book.subtitle is None and book.shop is None  # None, never ''
    assert str(book.reviews) == server.url("reviews/dune")
    # A JSON Schema field that is optional but not nullable is left out rather than ''.
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "isbn": {"type": "string"}},
              "required": ["title"]}
    answers.clear()
    sh2 = await make_stagehand(model=FunctionLLM(lambda r: {"data": {"title": "Dune", "isbn": " "},
                                                            "instruction_satisfied": True}))
    with server.route("/dune2.html", lambda req: Response.html(BOOK_PAGE)):
        await sh2.page.goto(server.url("dune2.html"))
    assert await sh2.extract("the title and the ISBN", schema=schema) == {"title": "Dune"}


# A made-up URL is re-asked: a URL field takes only the page's own links.
async def test_a_url_field_takes_only_the_pages_own_links_and_re_asks_otherwise(make_stagehand, server):
    given = iter(["https://shop.example.com/dune", "{reviews}"])

    def model(request: LLMRequest) -> dict[str, object]:
        link = next(given).format(reviews=find_id(request, "link: Reviews"))
        return {"data": {"title": "Dune", "reviews": link}, "instruction_satisfied": True}

    sh = await make_stagehand(model=FunctionLLM(model))
    with server.route("/dune3.html", lambda req: Response.html(BOOK_PAGE)):
        await sh.page.goto(server.url("dune3.html"))
    with capture_requests() as calls:
        book = await sh.extract("the book's title and reviews link", schema=Book)
    assert len(calls) == 2 and "is not the id of a link" in prompt_text(calls[1].request)
    assert str(book.reviews) == server.url("reviews/dune")


TWO_REVIEWS = BOOK_PAGE.replace("</body>", '<footer><a href="/reviews/all">Reviews</a></footer></body>')


# The link's name where its id belongs (a real small model answered "Stagehand Docs" so): taken
# when one link has that name; with two such links (to different URLs) re-asked with their ids.
@pytest.mark.parametrize("page", ["one link", "two links"])
async def test_a_link_named_instead_of_its_id_is_that_link_only_when_the_page_has_one(make_stagehand, server, page):
    given = iter(["Reviews", "{reviews}"])

    def model(request: LLMRequest) -> dict[str, object]:
        link = next(given).format(reviews=find_id(request, "link: Reviews"))
        return {"data": {"title": "Dune", "reviews": link}, "instruction_satisfied": True}

    sh = await make_stagehand(model=FunctionLLM(model))
    html = BOOK_PAGE if page == "one link" else TWO_REVIEWS
    with server.route("/dune4.html", lambda req: Response.html(html)):
        await sh.page.goto(server.url("dune4.html"))
    with capture_requests() as calls:
        result = await sh.extract("the book's title and reviews link", schema=Book, report=True)
    assert str(result.data.reviews) == server.url("reviews/dune")
    (fixed,) = result.repairs
    assert fixed.kind == "link_name_to_id" and fixed.answered.startswith("$.reviews: 'Reviews'")
    if page == "one link":
        assert len(calls) == 1 and fixed.outcome == "corrected" and "the only link so named" in fixed.done
        return
    ids = re.findall(r"\[(\d+-\d+)\] link: Reviews", first_user(calls[0].request))
    reask = prompt_text(calls[1].request)
    assert len(calls) == 2 and len(ids) == 2 and fixed.outcome == "re-asked"
    assert f"is the name of 2 links ([{ids[0]}], [{ids[1]}])" in reask and ids[0] in fixed.done and ids[1] in fixed.done
