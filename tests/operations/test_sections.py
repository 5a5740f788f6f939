"""The right part of a big page: an element is ranked with the heading or group that gives it meaning.

The page mimics a Django admin change list (a long table of books with an "In stock" column, then
a Filter sidebar whose "By in stock" group holds links "All", "Yes", "No"). "Filter the list to
books that are not in stock" must reach "No" under "By in stock": its part goes first, and its
choice line says which "No" it is.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from _server import Response

from stagehand_py._operations._budget import pieces
from stagehand_py._operations._relevance import rank_chunks, sections
from stagehand_py._prompts.choice import NO_CHOICE
from stagehand_py.llm import LLMClient, LLMRequest
from stagehand_py.testing import FunctionLLM, capture_requests

from .test_choice_mode import enum_of

INSTRUCTION = "Filter the list to books that are not in stock"


def _changelist(rows: int, *, paginator: bool = False) -> str:
    """The change list; ``paginator`` adds Django's page links under the table and its action bar's "Go"."""
    body = "".join(
        f"<tr><td><input type=checkbox aria-label='Select this book'></td><th><a href='/b/{i}'>The Book of Harbor {i}</a></th>"
        f"<td>Ada Lovelace</td><td>{'True' if i % 3 else 'False'}</td></tr>" for i in range(rows))
    groups = "".join(
        f"<details open><summary>By {title}</summary><ul>"
        + "".join(f"<li><a href='?{key}={value}'>{label}</a></li>" for label, value in options)
        + "</ul></details>"
        for title, key, options in [
            ("genre", "genre", [("All", ""), ("Fiction", "f"), ("History", "h")]),
            ("in stock", "in_stock", [("All", ""), ("Yes", "1"), ("No", "0")]),
            ("published", "year", [("Any date", ""), ("This year", "y")]),
        ])
    return f"""<!DOCTYPE html><html><head><title>Select book to change</title></head><body>
<nav aria-label="Breadcrumbs"><a href="/">Home</a> › Books</nav>
<aside><input type=search aria-label="Filter navigation items">
<table><caption>Books</caption><tr><th>Change or view list link</th></tr><tr><th><a href="/books/">Books</a></th></tr>
<tr><th><a href="/authors/">Authors of books</a></th></tr></table></aside>
<h1>Select book to change</h1><a href="/add">Add book</a>
<select aria-label="Action"><option>Delete selected books</option><option>Mark books in stock</option></select>{"<button>Go</button>" if paginator else ""}
<form><input type=search aria-label="Search books"><button>Search</button></form>
<table><thead><tr><th>Select</th><th><a href="?o=1">Title</a></th><th><a href="?o=2">Author</a></th>
<th><a href="?o=3">In stock</a></th></tr></thead><tbody>{body}</tbody></table>
<p>{"1 <a href='?p=2'>2</a> " if paginator else ""}{rows} books</p>
<nav aria-label="Filter"><h2>Filter</h2>{groups}</nav></body></html>"""


def test_sections_give_an_element_the_labels_of_its_group() -> None:
    outline = """\
[0-1] navigation: Filter
  [0-2] heading: Filter
  [0-3] group
    [0-4] button: By genre
    [0-5] list
      [0-6] link: All
  [0-7] group
    [0-8] button: By in stock
    [0-9] list
      [0-10] link: No"""
    found = {element.id: labels for element, labels in sections(outline.split("\n")) if element is not None}
    assert found["0-10"] == ("By in stock", "Filter")
    assert found["0-6"] == ("By genre", "Filter")
    assert found["0-8"] == ("Filter",)  # a label does not label the label after it


async def test_the_not_in_stock_filter_is_reached_on_a_big_change_list(make_stagehand, server):
    offered: list[list[str]] = []

    def model(request: LLMRequest) -> dict[str, object]:
        choices = enum_of(request)
        offered.append(choices)
        wanted = [c for c in choices if c.startswith("link: No (By in stock)")]
        line = wanted[0] if wanted else NO_CHOICE
        return {"elements": [{"element": line, "method": "click", "arguments": []}], "opens_options": False}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True), token_budget=6000)
    with server.route("/books/", lambda req: Response.html(_changelist(400))):
        await sh.page.goto(server.url("books/"))
        snapshot = await sh.snapshot()
        assert snapshot.tokens > 12_000  # a page the model sees in parts
        with capture_requests() as calls:
            result = await sh.act(INSTRUCTION, vision=False)
    assert result.success, result.message
    assert len(calls) == 1  # the part with the filter was asked first
    assert parse_qs(urlsplit(sh.page.url).query) == {"in_stock": ["0"]}
    assert len(offered[0]) <= 41  # tens of choices, not hundreds


async def test_control_ranking_parts_by_words_alone_puts_the_table_first(make_stagehand, server):
    sh = await make_stagehand()
    with server.route("/books/", lambda req: Response.html(_changelist(400))):
        await sh.page.goto(server.url("books/"))
        text = (await sh.snapshot()).tree
    chunks = pieces(text, 1500)
    filter_part = next(c.index for c in chunks if "button: By in stock" in c.text)
    assert rank_chunks(chunks, INSTRUCTION, elements=True)[0].index == filter_part
    # Control: by words alone the header part (title, "In stock" column, "books" everywhere) wins.
    assert rank_chunks(chunks, INSTRUCTION)[0].index != filter_part


async def test_a_fill_on_a_big_page_chooses_among_the_fields_only(make_stagehand, server):
    offered: list[list[str]] = []

    def model(request: LLMRequest) -> dict[str, object]:
        choices = enum_of(request)
        offered.append(choices)
        (line,) = [c for c in choices if c.startswith("searchbox: Search books")]
        return {"elements": [{"element": line, "method": "fill", "arguments": ["Calvino"]}], "opens_options": False}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True), token_budget=6000)
    with server.route("/books/", lambda req: Response.html(_changelist(400))):
        await sh.page.goto(server.url("books/"))
        result = await sh.act("type Calvino into the search box", vision=False)
    assert result.success, result.message
    assert await sh.page.input_value("input[aria-label='Search books']") == "Calvino"
    roles = {line.split(" ", 1)[0].rstrip(":") for line in offered[0]}
    assert roles <= {"textbox", "searchbox", "combobox", "spinbutton"}, offered[0]
    assert len(offered[0]) < 10  # the page has ~1,600 actionable lines


async def test_page_2_of_a_big_change_list_is_asked_first(make_stagehand, server):
    """A single digit is a literal the instruction names ("page 2"), and "go to" names no element:
    the part with the paginator's "2" goes first (it is near the end of the page)."""
    offered: list[list[str]] = []

    def model(request: LLMRequest) -> dict[str, object]:
        choices = enum_of(request)
        offered.append(choices)
        wanted = [c for c in choices if c.startswith("link: 2 ")]
        line = wanted[0] if wanted else NO_CHOICE
        return {"elements": [{"element": line, "method": "click", "arguments": []}], "opens_options": False}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True), token_budget=6000)
    with server.route("/books/", lambda req: Response.html(_changelist(400, paginator=True))):
        await sh.page.goto(server.url("books/"))
        chunks = pieces((await sh.snapshot()).tree, 1500)
        assert "link: 2\n" not in chunks[0].text + "\n"  # in page order it would not be asked first
        with capture_requests() as calls:
            result = await sh.act("go to page 2 of the book list", vision=False)
    assert result.success, result.message
    assert len(calls) == 1, offered
    assert parse_qs(urlsplit(sh.page.url).query) == {"p": ["2"]}


async def test_an_acts_choices_come_most_relevant_first(make_stagehand, server):
    """A small model takes the first line that could do: on the change list (a page asked in
    parts) the filter's "No" comes before the rows' checkboxes that precede it on the page. A page
    sent whole keeps page order (test_prompt_reuse: an act shares its observe's choices)."""
    offered: list[list[str]] = []

    def model(request: LLMRequest) -> dict[str, object]:
        offered.append(enum_of(request))
        return {"elements": [{"element": NO_CHOICE, "method": "click", "arguments": []}], "opens_options": False}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True), token_budget=6000,
                              dom_settle_timeout=0.5)
    with server.route("/books/", lambda req: Response.html(_changelist(400))):
        await sh.page.goto(server.url("books/"))
        await sh.act(INSTRUCTION, vision=False)
    first = offered[0]
    assert first[0].startswith("link: No (By in stock)"), first[:5]
    assert any(line.startswith("checkbox: Select this book") for line in first)  # rows before it on the page
