"""The real applications of ``local_real_apps.py`` and ``local_agent_real_apps.py``: seeded, started
on 127.0.0.1 and stopped by the benchmark, with the truth each task is checked against read from
the application's own database (never from the library's answer).

- ``datasette``: Datasette (PyPI) serving a seeded SQLite library (48 books, 12 authors, a
  full-text index on titles, facets on genre and country, authors' names as link labels).
- ``django``: the Django admin of ``benchmarks/django_site`` (200 seeded books), on a fresh
  sqlite file per run, signed in as admin/admin.
- ``docs``: the Python documentation HTML Debian's ``python3-doc`` installs, served by
  ``python -m http.server``.

Only the public API of ``stagehand_py`` is used, so the same file measures an old and a new
checkout: run it with that checkout's interpreter (the header says which package it imported).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DJANGO_SITE = HERE / "django_site"
DOCS_DIRS = [Path("/usr/share/doc/python3-doc/html"), *sorted(Path("/usr/share/doc").glob("python3*/html"))]
CHROMIUM = os.environ.get("STAGEHAND_CHROMIUM_PATH", "/usr/bin/chromium")
# The flags a headless Chromium needs here (shared/README.md): no sandbox as root, no calls home.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
EMBEDDED = "local/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
APPS = ("datasette", "django", "docs")


# --- the seeded library database Datasette serves ----------------------------------------------

AUTHORS = [  # name, country, born
    ("Primo Levi", "Italy", 1919), ("Italo Calvino", "Italy", 1923), ("Natalia Ginzburg", "Italy", 1916),
    ("Mary Shelley", "United Kingdom", 1797), ("Ada Lovelace", "United Kingdom", 1815),
    ("Virginia Woolf", "United Kingdom", 1882), ("Jorge Luis Borges", "Argentina", 1899),
    ("Clarice Lispector", "Brazil", 1920), ("Chinua Achebe", "Nigeria", 1930),
    ("Wislawa Szymborska", "Poland", 1923), ("Toni Morrison", "United States", 1931),
    ("Ursula K. Le Guin", "United States", 1929),
]
GENRES = ["Fiction", "Poetry", "History", "Science", "Travel"]
_ADJ = ("Copper Silent Winter Hidden Northern Salt Glass Burning Quiet Distant Paper Iron Golden Hollow "
        "Lost Amber").split()
_NOUN = ("Harbor Lantern Orchard Atlas River Garden Island Meadow Letters Crown Storm Mountain Archive "
         "Bridge Mirror Compass").split()
BOOK_COUNT = 48


def seed_library(path: Path) -> None:
    """Write the library database: the same 48 books on every machine (a fixed seed)."""
    rng = random.Random(1937)
    titles: list[str] = []
    while len(titles) < BOOK_COUNT:
        title = f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)}"
        if title not in titles:
            titles.append(title)
    db = sqlite3.connect(path)
    db.executescript("""
        create table authors (id integer primary key, name text not null, country text not null, born integer);
        create table books (id integer primary key, title text not null,
                            author_id integer not null references authors(id), genre text not null,
                            year integer not null, pages integer not null);
        create virtual table books_fts using fts5(title, content="books", content_rowid="id");
    """)
    db.executemany("insert into authors (id, name, country, born) values (?, ?, ?, ?)",
                   [(n, *a) for n, a in enumerate(AUTHORS, start=1)])
    db.executemany(
        "insert into books (id, title, author_id, genre, year, pages) values (?, ?, ?, ?, ?, ?)",
        [(n, title, rng.randrange(1, len(AUTHORS) + 1), rng.choice(GENRES), rng.randrange(1950, 2020),
          rng.randrange(90, 700)) for n, title in enumerate(titles, start=1)])
    db.execute("insert into books_fts (rowid, title) select id, title from books")
    db.commit()
    db.close()


DATASETTE_METADATA = {
    "title": "City Library",
    "databases": {"library": {"tables": {
        "books": {"facets": ["genre", "author_id"], "label_column": "title"},
        "authors": {"facets": ["country"], "label_column": "name"},
    }}},
}


def query(db: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the application's own database: the truth a task is checked against."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return list(conn.execute(sql, params))


# --- starting and stopping the applications ----------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(proc: subprocess.Popen[bytes], port: int, name: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with code {proc.returncode} before listening on 127.0.0.1:{port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@dataclass
class App:
    """One running application: its base URL, the database holding its truth, its process."""

    name: str
    base: str
    db: Path | None = None
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path

    def rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        """``sql``'s rows on the app's own database: the truth its tasks are checked against."""
        assert self.db is not None, f"{self.name} has no database"
        return query(self.db, sql, *params)


def _spawn(args: list[str], name: str, port: int, log: Path, **kwargs: Any) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    try:
        wait_listening(proc, port, name)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


def _start_datasette(folder: Path) -> App:
    db = folder / "library.db"
    seed_library(db)
    meta = folder / "metadata.json"
    meta.write_text(json.dumps(DATASETTE_METADATA))
    port = free_port()
    proc = _spawn([sys.executable, "-m", "datasette", "serve", str(db), "--metadata", str(meta),
                   "--host", "127.0.0.1", "--port", str(port)], "datasette", port, folder / "datasette.log")
    return App("datasette", f"http://127.0.0.1:{port}", db, [proc])


def _start_django(folder: Path) -> App:
    db = folder / "django.sqlite3"
    env = {**os.environ, "BENCH_DJANGO_DB": str(db)}  # a fresh admin: no earlier run's saves
    subprocess.run([sys.executable, str(DJANGO_SITE / "serve.py"), "--prepare"], check=True, env=env)
    port = free_port()
    proc = _spawn([sys.executable, str(DJANGO_SITE / "manage.py"), "runserver", f"127.0.0.1:{port}", "--noreload"],
                  "django runserver", port, folder / "django.log", cwd=DJANGO_SITE, env=env)
    return App("django", f"http://127.0.0.1:{port}", db, [proc])


def docs_dir() -> Path:
    found = next((d for d in DOCS_DIRS if (d / "library" / "secrets.html").is_file()), None)
    if found is None:
        raise RuntimeError("the Python docs are missing: apt-get install -y python3-doc")
    return found


def _start_docs(folder: Path) -> App:
    port = free_port()
    proc = _spawn([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(docs_dir()),
                   str(port)], "docs http.server", port, folder / "docs.log")
    return App("docs", f"http://127.0.0.1:{port}", None, [proc])


@contextlib.contextmanager
def running(name: str) -> Iterator[App]:
    """Start application ``name`` in a fresh temporary folder; stop it (and remove the folder) after."""
    starters = {"datasette": _start_datasette, "django": _start_django, "docs": _start_docs}
    with tempfile.TemporaryDirectory(prefix=f"real-app-{name}-") as scratch:
        app = starters[name](Path(scratch))
        try:
            yield app
        finally:
            for proc in app.procs:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


async def django_login(page: Any, app: App) -> None:
    """Sign ``page`` in to the admin as admin/admin with plain Playwright (a task's starting state)."""
    await page.goto(app.url("/admin/login/"))
    await page.fill("#id_username", "admin")
    await page.fill("#id_password", "admin")
    await page.click("input[type=submit]")
    await page.wait_for_url("**/admin/")


# --- the library under test, the browser, the page kinds ----------------------------------------

def library_identity() -> dict[str, str]:
    """Which stagehand_py this process imported: its folder and that checkout's commit."""
    import stagehand_py

    folder = Path(stagehand_py.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--", "stagehand_py"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", ""
    return {"path": str(folder), "commit": commit + ("+changes" if dirty else "")}


def load() -> str:
    """The load average: on shared cores every second printed depends on it."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1/5/15 min) on {os.cpu_count()} CPUs"


async def launch_browser(playwright: Any) -> Any:
    """The benchmark's own Chromium, for the wrapped page kind (``Stagehand(page)``)."""
    return await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


async def stagehand_for(kind: str, browser: Any, model: str, llm_options: dict[str, Any] | None) -> Any:
    """``wrapped``: a new page of ``browser`` in ``Stagehand(page)``; ``launched``: ``Stagehand.launch()``.

    The model is named as a user with no key names the embedded one (``local/<file>``); the token
    budget is the library's default for it."""
    from stagehand_py import Stagehand

    options: dict[str, Any] = {"model": model}
    if model == "none":  # --dry-run: a scripted model that answers nothing useful (plumbing only)
        from stagehand_py.testing import FunctionLLM

        options["model"] = FunctionLLM(lambda request: {})
    if llm_options:
        options["llm_options"] = llm_options
    if kind == "wrapped":
        return Stagehand(await browser.new_page(), **options)
    return await Stagehand.launch(executable_path=CHROMIUM, **options)


@contextlib.asynccontextmanager
async def stagehands(args: Any) -> AsyncIterator[dict[str, Any]]:
    """A Stagehand per page kind of ``args.kinds``, on one Chromium of the benchmark's (wrapped) and
    one the library launches, closed after."""
    from playwright.async_api import async_playwright

    llm_options = {"timeout": args.timeout} if args.timeout else None
    async with async_playwright() as pw:
        browser = await launch_browser(pw)
        made: dict[str, Any] = {}
        try:
            for kind in args.kinds:
                made[kind] = await stagehand_for(kind, browser, args.model, llm_options)
            yield made
        finally:
            for sh in made.values():
                await sh.close()
            await browser.close()


def start_run(args: Any, note: str = "") -> dict[str, Any]:
    """Print which library and model run, and the load; the run's record for ``save_run``/``finish_run``."""
    library = library_identity()
    print(f"stagehand_py from {library['path']} ({library['commit']}); model {args.model}{note}; {load()}",
          flush=True)
    return {"run_id": f"{os.getpid()}-{time.time():.0f}", "label": args.label,
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
            "library": library, "model": args.model, "apps": args.app, "kinds": args.kinds, "load_start": load()}


def save_run(args: Any, run: dict[str, Any], outcomes: list[Any], *, finished: bool = False, **more: Any) -> None:
    """Write the run so far into ``args.out`` (after every task: a run cut short keeps what it measured;
    ``finished`` false says it was cut)."""
    save = {**run, **more, "finished": finished, "load_end": load(), "outcomes": [asdict(o) for o in outcomes]}
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = [r for r in (json.loads(out.read_text()) if out.exists() else []) if r.get("run_id") != run["run_id"]]
    out.write_text(json.dumps([*runs, save], indent=1) + "\n")


def finish_run(args: Any, run: dict[str, Any], tables: list[str], outcomes: list[Any], **more: Any) -> None:
    """Print the tables and the load at the end; write the finished run into ``args.out``."""
    for text in tables:
        print()
        print(text)
    print(f"\n{load()} at the end (at the start: {run['load_start']})")
    save_run(args, run, outcomes, finished=True, **more)


def add_common_options(parser: Any, default_out: Path) -> None:
    parser.add_argument("--app", nargs="+", choices=APPS, default=list(APPS), help="the applications to run")
    parser.add_argument("--kinds", nargs="+", choices=["wrapped", "launched"], default=["wrapped", "launched"],
                        help="page kinds: Stagehand(page) on the benchmark's page, or Stagehand.launch()")
    parser.add_argument("--model", default=EMBEDDED,
                        help=f"what Stagehand(model=...) gets (default {EMBEDDED}); 'none': a scripted model that "
                             "answers nothing, to check the apps and the checks start and stop (every task wrong)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds one model request may take (default: the library's bound for a local model)")
    parser.add_argument("--label", default="", help="a name for this run in the JSON file (e.g. before, after)")
    parser.add_argument("--out", type=Path, default=default_out, help="JSON file the run is added to")


def latest_outcomes(path: Path, label: str | None = None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(app, task, kind) -> the latest outcome in a JSON file of runs (of ``label`` when given)."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run in json.loads(path.read_text()):
        if label is None or run.get("label") == label:
            for o in run["outcomes"]:
                found[(o["app"], o["task"], o["kind"])] = o
    return found


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    def line(cells: list[object]) -> str:
        return "| " + " | ".join(str(c) for c in cells) + " |"

    return "\n".join([line(list(header)), "|" + "---|" * len(header), *(line(r) for r in rows)])


def short(text: object, size: int = 110) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"
