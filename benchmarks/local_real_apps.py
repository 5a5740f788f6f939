"""observe / act / extract on real open-source web applications, run by the embedded model, each
task checked from outside the library.

    python benchmarks/local_real_apps.py                                  # all apps, both page kinds
    python benchmarks/local_real_apps.py --app datasette --kinds wrapped --label before \\
        --out benchmarks/results/local_real_apps.json
    python benchmarks/local_real_apps.py --only "facet counts" "absent value"
    python benchmarks/local_real_apps.py --diff before.json after.json     # per task, no model
    python benchmarks/local_real_apps.py --table benchmarks/results/local_real_apps_before.json

Three applications nobody here wrote, started on 127.0.0.1 by this script and stopped after it
(see ``_real_apps.py``): Datasette on a seeded SQLite library, the Django admin of
``benchmarks/django_site``, and the Python documentation (Debian's ``python3-doc``). Each task is
one public-API call, phrased as a new user would phrase it, of the kinds the embedded 1.5B model
tends to answer almost right (issue 37): type into a table page's search box, pick a filter's
column or operator from a ``<select>``, click a facet, find an input, extract a count, a facet
list, a record's values, a link's URL, or a value the page does not have.

A task is right when the application's state or data says so: the page's field values and URL
read with plain Playwright after the act; the element an observed action's selector resolves to
(and ``act()`` on that action running without an error, as a user would run it); extracted data
equal to the seeded database (or to the documentation page's own DOM). The library's own
``success`` is recorded, never trusted. Prints one line per task, then per page kind the totals per
verb and the seconds per call; adds the run to ``--out`` (JSON) for ``--diff``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, HttpUrl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # our helpers only: stagehand_py is whichever the interpreter has installed

import _real_apps as apps
from _real_apps import App
from playwright.async_api import Page

from stagehand_py import Action, Stagehand, StagehandError

# --- extract schemas (as a user would write them) --------------------------------------------------


class RowCount(BaseModel):
    rows: int


class GenreCount(BaseModel):
    genre: str
    count: int


class GenreFacet(BaseModel):
    genres: list[GenreCount]


class BookValues(BaseModel):
    title: str
    year: int
    pages: int


class Link(BaseModel):
    url: HttpUrl


class AuthorDetails(BaseModel):
    name: str
    country: str
    died: str | None = None


class TitleYear(BaseModel):
    title: str
    year: int


class BookRows(BaseModel):
    books: list[TitleYear]


class BookCount(BaseModel):
    books: int


class AdminBook(BaseModel):
    title: str
    author: str
    price: float


class ModuleFacts(BaseModel):
    module: str
    added_in: str | None = None
    deprecated_in: str | None = None


# --- tasks ------------------------------------------------------------------------------------

#: (the page after the call, the app, what the call returned) -> (right, what was seen).
Check = Callable[[Page, App, Any], Awaitable[tuple[bool, str]]]


@dataclass(frozen=True)
class Task:
    app: str
    name: str
    verb: str  # observe | act | extract
    path: str
    instruction: str
    check: Check
    schema: type[BaseModel] | None = None
    #: observe: the CSS selector the first proposed action's element must match.
    expect_css: str | None = None


def norm(text: object) -> str:
    return " ".join(str(text).strip().strip("'\"").split()).casefold()


def query_param(page: Page, name: str) -> str | None:
    values = parse_qs(urlsplit(page.url).query).get(name)
    return values[0] if values else None


def field_is(css: str, want: str) -> Check:
    """The form field ``css`` holds ``want`` (case and spaces aside)."""
    async def check(page: Page, app: App, result: Any) -> tuple[bool, str]:
        values = await page.eval_on_selector_all(css, "els => els.map(e => e.value)")
        return any(norm(v) == norm(want) for v in values), f"{css} = {values!r}; url {urlsplit(page.url).path}"
    return check


def url_param_is(name: str, want: str, *, or_field: str | None = None) -> Check:
    async def check(page: Page, app: App, result: Any) -> tuple[bool, str]:
        got = query_param(page, name)
        if got is not None and norm(got) == norm(want):
            return True, f"url {name}={got}"
        if or_field is not None:
            return await field_is(or_field, want)(page, app, result)
        return False, f"url {page.url.removeprefix(app.base)}"
    return check


def url_path_is(want: str) -> Check:
    async def check(page: Page, app: App, result: Any) -> tuple[bool, str]:
        return urlsplit(page.url).path == want, f"url {page.url.removeprefix(app.base)}"
    return check


def observed(expect_css: str) -> Check:
    """The first proposed action's element matches ``expect_css`` (checked by the benchmark; the
    follow-up act's outcome is checked in ``run_task``)."""
    async def check(page: Page, app: App, result: Any) -> tuple[bool, str]:
        if not result:
            return False, "no action proposed"
        first: Action = result[0]
        try:
            hit = await page.locator(first.selector).first.evaluate("(el, css) => el.matches(css)", expect_css)
        except Exception as exc:  # a selector Playwright cannot resolve is a wrong answer
            return False, f"selector unresolved ({type(exc).__name__})"
        return bool(hit), f"{first.method} {first.arguments} on {first.description!r}"
    return check


def data_is(want: Callable[[App], object], got: Callable[[Any], object]) -> Check:
    async def check(page: Page, app: App, result: Any) -> tuple[bool, str]:
        expected, answered = want(app), got(result)
        return expected == answered, f"answered {apps.short(answered, 90)}; truth {apps.short(expected, 90)}"
    return check


def link_to(path: str | Callable[[Page], Awaitable[str]]) -> Check:
    async def check(page: Page, app: App, result: Any) -> tuple[bool, str]:
        want = path if isinstance(path, str) else await path(page)
        got = urlsplit(str(result.url)).path
        return got == want, f"answered {result.url}; truth {want}"
    return check


def one(app: App, sql: str, *params: object) -> Any:
    return app.rows(sql, *params)[0]


BOOK = 12  # a Datasette row page
AUTHOR_ABSENT = 3  # an author page with no year of death
AUTHOR_ROWS = 6  # an author with 4 books
DJANGO_BOOK = 5
DJ_LIST = "/admin/books/book/"
DJ_BOOK = f"/admin/books/book/{DJANGO_BOOK}/change/"


def datasette_tasks(app: App) -> list[Task]:
    title = one(app, "select title from books where id = ?", BOOK)[0]
    return [
        Task("datasette", "search box", "act", "/library/books", "type harbor into the search box",
             url_param_is("_search", "harbor", or_field="#_search")),
        Task("datasette", "filter column", "act", "/library/books", "choose genre in the filter's column dropdown",
             field_is("select[name=_filter_column]", "genre")),
        Task("datasette", "filter operator", "act", "/library/books", "set the filter's operator to starts with",
             field_is("select[name=_filter_op]", "startswith")),
        Task("datasette", "facet link", "act", "/library/books", "show only the Poetry books",
             url_param_is("genre", "Poetry")),
        Task("datasette", "open row", "act", "/library/books", f"open the page of the book {title}",
             url_path_is(f"/library/books/{BOOK}")),
        Task("datasette", "search input", "observe", "/library/books", "find the search input",
             observed("#_search"), expect_css="#_search"),
        Task("datasette", "filter value input", "observe", "/library/books", "find the input for the filter value",
             observed("input[name=_filter_value]"), expect_css="input[name=_filter_value]"),
        Task("datasette", "filtered count", "extract", "/library/books?genre=Poetry",
             "how many rows match this filter", data_is(
                 lambda a: one(a, "select count(*) from books where genre = 'Poetry'")[0], lambda r: r.rows),
             RowCount),
        Task("datasette", "facet counts", "extract", "/library/books", "the genre facet: every genre with its count",
             data_is(lambda a: sorted((norm(g), n) for g, n in a.rows("select genre, count(*) from books group by genre")),
                     lambda r: sorted((norm(g.genre), g.count) for g in r.genres)), GenreFacet),
        Task("datasette", "row values", "extract", f"/library/books/{BOOK}",
             "the book's title, year and number of pages",
             data_is(lambda a: tuple(map(norm, one(a, "select title, year, pages from books where id = ?", BOOK))),
                     lambda r: (norm(r.title), norm(r.year), norm(r.pages))), BookValues),
        Task("datasette", "table link url", "extract", "/library", "the URL of the authors table",
             link_to("/library/authors"), Link),
        Task("datasette", "absent value", "extract", f"/library/authors/{AUTHOR_ABSENT}",
             "the author's name, country and year of death (if the page gives one)",
             data_is(lambda a: (*map(norm, one(a, "select name, country from authors where id = ?", AUTHOR_ABSENT)), None),
                     lambda r: (norm(r.name), norm(r.country), r.died or None)), AuthorDetails),
        Task("datasette", "rows of a filtered table", "extract", f"/library/books?author_id={AUTHOR_ROWS}",
             "the title and year of every book in the table",
             data_is(lambda a: sorted((norm(t), y) for t, y in a.rows("select title, year from books where author_id = ?",
                                                                AUTHOR_ROWS)),
                     lambda r: sorted((norm(b.title), b.year) for b in r.books)), BookRows),
    ]


def django_tasks(app: App) -> list[Task]:
    genre = one(app, "select genre from books_book where id = ?", DJANGO_BOOK)[0]
    target = "travel" if genre == "poetry" else "poetry"
    return [
        Task("django", "search box", "act", DJ_LIST, "type Calvino into the search box",
             url_param_is("q", "Calvino", or_field="#searchbar")),
        Task("django", "genre select", "act", DJ_BOOK, f"set the Genre to {target.title()}",
             field_is("#id_genre", target)),
        Task("django", "stock filter", "act", DJ_LIST, "Filter the list to books that are not in stock",
             url_param_is("in_stock__exact", "0")),
        Task("django", "price input", "observe", DJ_BOOK, "find the Price input", observed("#id_price"),
             expect_css="#id_price"),
        Task("django", "filtered count", "extract", DJ_LIST + "?genre__exact=poetry", "how many books are in this list",
             data_is(lambda a: one(a, "select count(*) from books_book where genre = 'poetry'")[0], lambda r: r.books),
             BookCount),
        Task("django", "change form values", "extract", DJ_BOOK, "the book's title, author and price",
             data_is(lambda a: (*map(norm, one(a, "select title, author from books_book where id = ?", DJANGO_BOOK)),
                                round(float(one(a, "select price from books_book where id = ?", DJANGO_BOOK)[0]), 2)),
                     lambda r: (norm(r.title), norm(r.author), round(r.price, 2))), AdminBook),
        Task("django", "add link url", "extract", DJ_LIST, "the URL of the Add book link",
             link_to("/admin/books/book/add/"), Link),
    ]


async def next_topic(page: Page) -> str:
    href = await page.eval_on_selector('a[title="next chapter"]', "a => a.href")
    return urlsplit(str(href)).path


def docs_tasks(app: App) -> list[Task]:
    page = "/library/secrets.html"
    return [
        Task("docs", "quick search", "act", page, "type tempfile into the Quick search box",
             field_is("input[name=q]", "tempfile")),
        Task("docs", "search input", "observe", page, "find the Quick search input", observed("input[name=q]"),
             expect_css="input[name=q]"),
        Task("docs", "next topic url", "extract", page, "the URL of the next topic", link_to(next_topic), Link),
        Task("docs", "absent value", "extract", page,
             "the module's name, the Python version it was added in, and the version it was deprecated in (if any)",
             data_is(lambda a: ("secrets", "3.6", None),
                     lambda r: ("secrets" if "secrets" in norm(r.module) else norm(r.module),
                                "3.6" if r.added_in and "3.6" in r.added_in else r.added_in, r.deprecated_in or None)),
             ModuleFacts),
    ]


TASKS = {"datasette": datasette_tasks, "django": django_tasks, "docs": docs_tasks}


# --- running -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    app: str
    task: str
    verb: str
    kind: str
    right: bool
    seconds: float
    calls: int
    prompt_tokens: int
    cached_tokens: int
    detail: str
    error: str = ""
    success: bool | None = None  # the act's own flag, recorded, not trusted
    repairs: list[str] = field(default_factory=list)
    follow_up: str = ""  # observe: act(observed[0]) as a user would run it


def repairs_of(result: Any) -> list[str]:
    """The near misses the library says it repaired (``ActResult.repairs``; absent in older versions)."""
    return [f"{getattr(r, 'kind', '?')}/{getattr(r, 'outcome', '?')}: {apps.short(getattr(r, 'done', r), 80)}"
            for r in (getattr(result, "repairs", None) or [])]


async def run_task(sh: Stagehand, app: App, task: Task, kind: str) -> Outcome:
    page = sh.page
    await page.goto(app.url(task.path))
    before, started = sh.metrics.total, time.perf_counter()
    result: Any = None
    error = ""
    try:
        if task.verb == "observe":
            result = await sh.observe(task.instruction)
        elif task.verb == "act":
            result = await sh.act(task.instruction)
        else:
            assert task.schema is not None
            result = await sh.extract(task.instruction, schema=task.schema)
    except StagehandError as exc:
        error = f"{type(exc).__name__}: {apps.short(exc, 160)}"
    seconds = time.perf_counter() - started
    used = sh.metrics.total - before
    outcome = Outcome(app.name, task.name, task.verb, kind, False, round(seconds, 1), used.requests,
                      used.input_tokens, used.cached_tokens, "", error)
    if task.verb == "act" and result is not None:
        outcome.success, outcome.repairs = result.success, repairs_of(result)
    if error:
        outcome.detail = error
        return outcome
    with contextlib.suppress(Exception):  # a page still navigating: the check reads what is there
        await page.wait_for_load_state()
    outcome.right, outcome.detail = await task.check(page, app, result)
    if task.verb == "act":
        ran = "; ".join(f"{a.method}{a.arguments} on {apps.short(a.description, 40)!r}" for a in result.actions)
        outcome.detail += f" | {ran or 'no action'}"
    if task.verb == "observe" and result:
        try:  # a user acts on what observe proposed; an action that cannot run is a wrong answer
            act = await sh.act(result[0])
            outcome.follow_up = f"act(observed[0]) success={act.success}"
        except StagehandError as exc:
            outcome.follow_up = f"act(observed[0]) raised {type(exc).__name__}: {apps.short(exc, 100)}"
            outcome.right = False
    return outcome


def kind_table(outcomes: list[Outcome], kinds: list[str]) -> str:
    rows: list[list[object]] = []
    for verb in ("observe", "act", "extract"):
        cells: list[object] = [verb]
        for kind in kinds:
            mine = [o for o in outcomes if o.verb == verb and o.kind == kind]
            secs = [o.seconds for o in mine]
            cells += [f"{sum(o.right for o in mine)}/{len(mine)}",
                      f"{statistics.median(secs):.0f}" if secs else "-", f"{sum(secs):.0f}"]
        rows.append(cells)
    cells = ["**all**"]
    for kind in kinds:
        mine = [o for o in outcomes if o.kind == kind]
        secs = [o.seconds for o in mine]
        cells += [f"**{sum(o.right for o in mine)}/{len(mine)}**",
                  f"{statistics.median(secs):.0f}" if secs else "-", f"{sum(secs):.0f}"]
    rows.append(cells)
    header = ["verb"] + [f"{k}: {c}" for k in kinds for c in ("right", "median s/call", "total s")]
    return apps.markdown_table(header, rows)


def task_table(outcomes: list[Outcome], kinds: list[str]) -> str:
    rows: list[list[object]] = []
    for key in dict.fromkeys((o.app, o.task, o.verb) for o in outcomes):
        cells: list[object] = [key[0], key[1], key[2]]
        for kind in kinds:
            o = next((o for o in outcomes if (o.app, o.task, o.verb) == key and o.kind == kind), None)
            cells.append("-" if o is None else f"{'right' if o.right else '**wrong**'}, {o.seconds:.0f} s, {o.calls}")
        rows.append(cells)
    return apps.markdown_table(["app", "task", "verb"] + [f"{k}: result, s, calls" for k in kinds], rows)


def diff(old: Path, new: Path) -> int:
    """Per task and page kind: right before and after, seconds before and after, and what got worse."""
    before, after = apps.latest_outcomes(old), apps.latest_outcomes(new)
    rows: list[list[object]] = []
    worse = 0
    for key in dict.fromkeys([*before, *after]):
        b, a = before.get(key), after.get(key)
        got_worse = bool(b and a and b["right"] and not a["right"])
        worse += got_worse
        rows.append([*key, "-" if b is None else ("right" if b["right"] else "wrong"),
                     "-" if a is None else ("right" if a["right"] else "wrong") + (" (worse)" if got_worse else ""),
                     "-" if b is None else f"{b['seconds']:.0f}", "-" if a is None else f"{a['seconds']:.0f}"])
    print(apps.markdown_table(["app", "task", "kind", "before", "after", "s before", "s after"], rows))
    for name, runs in (("before", before), ("after", after)):
        print(f"{name}: {sum(o['right'] for o in runs.values())}/{len(runs)} right")
    print(f"rows worse: {worse}")
    return 0


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    apps.add_common_options(parser, HERE.parent / ".bench" / "local_real_apps.json")
    parser.add_argument("--only", nargs="+", default=None, help="task names to run (default: all)")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("OLD", "NEW"), help="compare two JSON files; no run")
    parser.add_argument("--table", type=Path, metavar="FILE", help="print the tables of a JSON file's runs; no run")
    args = parser.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if args.table:
        saved = [Outcome(**o) for o in apps.latest_outcomes(args.table).values()]
        kinds = list(dict.fromkeys(o.kind for o in saved))
        print(task_table(saved, kinds), kind_table(saved, kinds), sep="\n\n")
        return 0
    run = apps.start_run(args)
    outcomes: list[Outcome] = []
    async with apps.stagehands(args) as by_kind:
        for name in args.app:
            with apps.running(name) as app:
                tasks = [t for t in TASKS[name](app) if args.only is None or t.name in args.only]
                for kind, sh in by_kind.items():
                    if name == "django" and tasks:
                        await apps.django_login(sh.page, app)
                    for task in tasks:
                        o = await run_task(sh, app, task, kind)
                        outcomes.append(o)
                        apps.save_run(args, run, outcomes)
                        print(f"{kind:8} {name:9} {task.verb:7} {task.name:24} {'right' if o.right else 'WRONG':5} "
                              f"{o.seconds:6.1f} s {o.calls} call(s) {o.prompt_tokens:5} tok {o.cached_tokens:5} "
                              f"cached  {o.detail}{' | ' + o.follow_up if o.follow_up else ''}"
                              f"{' | repairs: ' + '; '.join(o.repairs) if o.repairs else ''}", flush=True)
    apps.finish_run(args, run, [task_table(outcomes, args.kinds), kind_table(outcomes, args.kinds)], outcomes)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
