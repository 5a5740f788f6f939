"""Multi-step ``agent().execute(...)`` tasks on real open-source web applications, run by the
embedded model, each checked from outside the library.

    python benchmarks/local_agent_real_apps.py                          # all tasks, launched page
    python benchmarks/local_agent_real_apps.py --app django --kinds wrapped launched --max-steps 8
    python benchmarks/local_agent_real_apps.py --label before --out benchmarks/results/local_agent_real_apps.json
    python benchmarks/local_agent_real_apps.py --diff before.json after.json   # per task, no model

The applications of ``_real_apps.py`` (Datasette on a seeded SQLite library, the Django admin,
the Python documentation), started on 127.0.0.1 by this script and stopped after it. Six tasks a
new user would give an agent (issue 41): filter a table and count its rows, open a record and
read a value from it, search a table and count the matches, sign in and create a record, filter
the admin's list and count it, find a documentation page and read a fact from it.

A task is right when the application says so: the answer equal to the seeded database (a count,
a value), the record present in the admin's database with every field asked for, and where the
task says to open a page, that page among the ones the browser loaded (recorded with plain
Playwright, outside the library). Per task it prints right or wrong, the status the agent
reported (any string: a status this script does not know is printed as it is), a false ``done``
(reported ``done`` but wrong), steps, model calls and seconds. Each run is bounded by
``--max-steps`` and ``--task-timeout`` (``execute(timeout=...)``); the benchmark's own guard
stops a run that overstays that bound by a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # our helpers only: stagehand_py is whichever the interpreter has installed

import _real_apps as apps
from _real_apps import App

from stagehand_py import Stagehand, StagehandError


class Count(BaseModel):
    count: int


class Version(BaseModel):
    version: str


@dataclass
class Seen:
    """What the browser did during a run, recorded by Playwright: every URL a frame navigated to."""

    urls: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [urlsplit(u).path for u in self.urls]


#: (the app, the agent's result, what the browser loaded) -> (right, what was found).
Check = Callable[[App, Any, Seen], Awaitable[tuple[bool, str]]]


@dataclass(frozen=True)
class AgentTask:
    app: str
    name: str
    start: str
    instruction: str
    check: Check
    output: type[BaseModel] | None = None
    variables: dict[str, str] | None = None
    signed_in: bool = False  # the Django admin session made with Playwright before the run


def output_field(result: Any, name: str) -> Any:
    return getattr(result.output, name, None) if result.output is not None else None


def count_is(sql: str, *, opened: str | None = None) -> Check:
    """The answered count equals ``sql``'s (and the page ``opened`` was loaded during the run)."""
    async def check(app: App, result: Any, seen: Seen) -> tuple[bool, str]:
        truth = app.rows(sql)[0][0]
        answered = output_field(result, "count")
        visited = opened is None or opened in seen.paths()
        return answered == truth and visited, (f"answered {answered!r}, truth {truth}"
                                               + ("" if opened is None else f", {opened} opened: {visited}"))
    return check


AUTHOR = 9  # Chinua Achebe: 6 books in the seeded library
NEW_BOOK = {"title": "Harbor Lights", "author": "Mary Shelley", "genre": "travel", "published": "2001-05-04",
            "price": 12.5}


async def book_created(app: App, result: Any, seen: Seen) -> tuple[bool, str]:
    found = app.rows("select title, author, genre, published, price from books_book where title = ?",
                 NEW_BOOK["title"])
    if not found:
        return False, "no such book in the database"
    author, genre, published, price = found[-1][1:]
    wrong = [name for name, got in (("author", author), ("genre", genre), ("published", str(published)),
                                    ("price", float(price))) if got != NEW_BOOK[name]]
    return not wrong, f"saved; wrong fields: {wrong}" if wrong else "saved with every field"


async def docs_page_fact(app: App, result: Any, seen: Seen) -> tuple[bool, str]:
    answered = str(output_field(result, "version") or "")
    visited = "/library/secrets.html" in seen.paths()
    return "3.6" in answered and visited, f"answered {answered!r}, secrets.html opened: {visited}"


def tasks_for(app: App) -> list[AgentTask]:
    if app.name == "datasette":
        author = app.rows("select name from authors where id = ?", AUTHOR)[0][0]
        return [
            AgentTask("datasette", "filter and count", "/library/books",
                      "Filter the books table to the Poetry genre, then tell me how many books it has.",
                      count_is("select count(*) from books where genre = 'Poetry'"), Count),
            AgentTask("datasette", "open a record", "/library/authors",
                      f"Open the page of the author {author} and tell me how many books link to that author.",
                      count_is(f"select count(*) from books where author_id = {AUTHOR}",
                               opened=f"/library/authors/{AUTHOR}"), Count),
            AgentTask("datasette", "search and count", "/library/books",
                      "Search the books for the word harbor and tell me how many books match.",
                      count_is("select count(*) from books_fts where books_fts match 'harbor'"), Count),
        ]
    if app.name == "django":
        return [
            AgentTask("django", "sign in and create", "/admin/login/",
                      "Sign in with username %user% and password %password%, then add a new book titled "
                      f"'{NEW_BOOK['title']}' by {NEW_BOOK['author']}, genre Travel, published {NEW_BOOK['published']}, "
                      "price 12.50, and save it.", book_created, variables={"user": "admin", "password": "admin"}),
            AgentTask("django", "filter and count", "/admin/books/book/",
                      "Show only the books that are not in stock and tell me how many there are.",
                      count_is("select count(*) from books_book where in_stock = 0"), Count, signed_in=True),
        ]
    return [
        AgentTask("docs", "find a page", "/index.html",
                  "Find the documentation page of the secrets module and tell me which Python version added it.",
                  docs_page_fact, Version),
    ]


@dataclass
class AgentOutcome:
    app: str
    task: str
    kind: str
    right: bool
    status: str
    false_done: bool
    steps: int
    calls: int
    seconds: float
    detail: str
    message: str = ""
    error: str = ""
    #: The done checks the run recorded (issue 41), one per check and claim: "values: yes", "verdict: no"...
    checks: str = ""


async def run_agent_task(sh: Stagehand, app: App, task: AgentTask, kind: str, *, max_steps: int,
                         task_timeout: float) -> AgentOutcome:
    page = sh.page
    await page.context.clear_cookies()  # each task starts signed out, unless it says otherwise
    if task.signed_in:
        await apps.django_login(page, app)
    await page.goto(app.url(task.start))
    seen = Seen()

    def on_navigated(frame: Any) -> None:
        if frame == page.main_frame:
            seen.urls.append(frame.url)

    page.on("framenavigated", on_navigated)
    before, started = sh.metrics.total, time.perf_counter()
    status, steps, message, error = "error", 0, "", ""
    result: Any = None
    try:
        agent = sh.agent()
        # The run's own bound is execute(timeout=); the guard only keeps the benchmark finite.
        result = await asyncio.wait_for(
            agent.execute(task.instruction, max_steps=max_steps, output=task.output, variables=task.variables,
                          timeout=task_timeout), task_timeout + 60)
        status, steps, message = str(result.status), len(result.steps), apps.short(result.message, 160)
    except TimeoutError as exc:  # the guard, or a TimeoutError that escaped execute()
        error = f"{type(exc).__name__}: {apps.short(exc, 160) or 'the benchmark guard expired'}"
    except StagehandError as exc:  # what escaped execute(): recorded, the benchmark goes on
        error = f"{type(exc).__name__}: {apps.short(exc, 160)}"
    seconds = time.perf_counter() - started
    page.remove_listener("framenavigated", on_navigated)
    used = sh.metrics.total - before
    right, detail = False, error
    if result is not None:
        right, detail = await task.check(app, result, seen)
    return AgentOutcome(app.name, task.name, kind, right, status, status == "done" and not right, steps,
                        used.requests, round(seconds, 1), f"{detail}; final url {page.url.removeprefix(app.base)}",
                        message, error, _checks(result))


def _checks(result: Any) -> str:
    """What the run's done checks found, in order (a library without them records none)."""
    said = {True: "yes", False: "no", None: "n/a"}
    return ", ".join(f"step {c.step} {c.check}: {said[c.passed]}" for c in getattr(result, "checks", None) or [])


def table(outcomes: list[AgentOutcome]) -> str:
    body: list[list[object]] = [
        [o.app, o.task, o.kind, "right" if o.right else "**wrong**", o.status, "**yes**" if o.false_done else "no",
         o.steps, o.calls, f"{o.seconds:.0f}"] for o in outcomes]
    body.append(["**all**", "", "", f"**{sum(o.right for o in outcomes)}/{len(outcomes)}**",
                 ", ".join(f"{s} {sum(o.status == s for o in outcomes)}" for s in dict.fromkeys(o.status for o in outcomes)),
                 f"**{sum(o.false_done for o in outcomes)}**", sum(o.steps for o in outcomes),
                 sum(o.calls for o in outcomes), f"{sum(o.seconds for o in outcomes):.0f}"])
    return apps.markdown_table(["app", "task", "kind", "result", "status", "false done", "steps", "model calls", "s"], body)


def diff(old: Path, new: Path) -> int:
    before, after = apps.latest_outcomes(old), apps.latest_outcomes(new)

    def cell(o: dict[str, Any] | None) -> str:
        return "-" if o is None else f"{'right' if o['right'] else 'wrong'}, {o['status']}, {o['seconds']:.0f} s"

    body = [[*key, cell(before.get(key)), cell(after.get(key))] for key in dict.fromkeys([*before, *after])]
    print(apps.markdown_table(["app", "task", "kind", "before", "after"], body))
    for name, runs in (("before", before), ("after", after)):
        print(f"{name}: {sum(o['right'] for o in runs.values())}/{len(runs)} right, "
              f"{sum(o['false_done'] for o in runs.values())} false done")
    return 0


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    apps.add_common_options(parser, HERE.parent / ".bench" / "local_agent_real_apps.json")
    parser.set_defaults(kinds=["launched"])
    parser.add_argument("--only", nargs="+", default=None, help="task names to run (default: all)")
    parser.add_argument("--max-steps", type=int, default=10, help="execute(max_steps=...) per task")
    parser.add_argument("--task-timeout", type=float, default=480.0, help="execute(timeout=...) per task, seconds")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("OLD", "NEW"), help="compare two JSON files; no run")
    parser.add_argument("--table", type=Path, metavar="FILE", help="print the table of a JSON file's runs; no run")
    args = parser.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if args.table:
        print(table([AgentOutcome(**o) for o in apps.latest_outcomes(args.table).values()]))
        return 0
    run = apps.start_run(args, f"; max {args.max_steps} steps, {args.task_timeout:.0f} s a task")
    run.update(max_steps=args.max_steps, task_timeout=args.task_timeout)
    outcomes: list[AgentOutcome] = []
    async with apps.stagehands(args) as by_kind:
        for name in args.app:
            with apps.running(name) as app:
                for kind, sh in by_kind.items():
                    for task in [t for t in tasks_for(app) if args.only is None or t.name in args.only]:
                        o = await run_agent_task(sh, app, task, kind, max_steps=args.max_steps,
                                                 task_timeout=args.task_timeout)
                        outcomes.append(o)
                        apps.save_run(args, run, outcomes)
                        print(f"{kind:8} {name:9} {task.name:20} {'right' if o.right else 'WRONG':5} "
                              f"status={o.status:10} false_done={o.false_done!s:5} {o.steps:2} steps "
                              f"{o.calls:2} calls {o.seconds:6.0f} s  {o.detail} | {o.message} | checks: {o.checks or '-'}", flush=True)
    apps.finish_run(args, run, [table(outcomes)], outcomes)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
