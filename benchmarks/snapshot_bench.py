"""Snapshot speed and size, side by side: stagehand_py on a wrapped page and on a launched one vs
TS Stagehand 3.7.3 vs Playwright's aria_snapshot.

    python benchmarks/snapshot_bench.py [--pages json,stdtypes,...] [--runs 5] [--skip-ts]

For each page and engine: the first (cold) call's ms, the median of N warm calls, CPU ms per
warm call of this Python process and of the browser processes, bytes the snapshot moved from the
page into Python, the output's characters and estimated tokens (chars/4). The engines run one
after the other on each page, never at the same time, so the ratios printed at the end compare
like with like. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(HERE / "django_site")]

from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE, launch_chromium  # noqa: E402  (tests/_browser.py: same flags as the tests)
from _server import StaticServer  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

DOCS_CANDIDATES = [Path("/usr/share/doc/python3-doc/html"), *Path("/usr/share/doc").glob("python3*/html")]
TS_VERSION = "3.7.3"
# TS Stagehand lives in a scratch folder outside the repo (node_modules never near our tree):
# --ts-dir, else $STAGEHAND_TS_DIR, else this user cache folder.
TS_DIR = Path(os.environ.get("STAGEHAND_TS_DIR") or Path.home() / ".cache" / "stagehand_py" / "ts-stagehand")
TS_SCRIPT = HERE / "ts_snapshot.mjs"

# name -> path under the Python docs, "django" for the admin changelist, "assets:<path>" for a
# test page (served with a second origin for cross-site frames), "table" for a generated table.
PAGES = {
    "json": "library/json.html",
    "stdtypes": "library/stdtypes.html",
    "os": "library/os.html",
    "genindex": "genindex-all.html",
    "table5000": "table",
    "django": "django",
    "frames": "assets:frames/outer.html",
    "cross_site": "assets:cross_site.html",
    "shadow": "assets:shadow.html",
}
TABLE_ROWS = 5000


@dataclass
class Result:
    engine: str
    first_ms: float | None = None
    ms: list[float] = field(default_factory=list)
    chars: int | None = None
    error: str | None = None
    py_cpu_ms: float | None = None  # per warm call, this process
    browser_cpu_ms: float | None = None  # per warm call, the browser processes
    bytes_in: int | None = None  # per call, what the snapshot moved from the page into Python

    @property
    def median(self) -> float | None:
        return statistics.median(self.ms) if self.ms else None

    @property
    def tokens(self) -> int | None:
        return None if self.chars is None else self.chars // 4


@dataclass
class Target:
    name: str
    url: str
    login: Callable[[object], Awaitable[None]] | None = None  # logs a Playwright page in


# Seconds one snapshot call may take before the engine's row becomes an error (--timeout).
CALL_TIMEOUT = 120.0


async def _within(coro: Awaitable, seconds: float):
    """Like ``asyncio.wait_for``, but gives up even when the awaited code ignores
    cancellation (wait_for would then wait for it forever)."""
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # no "never retrieved"
        raise TimeoutError
    return task.result()


def _browser_cpu_s() -> float:
    """CPU seconds used so far by the Chromium processes under this process (both browsers: the
    one not being timed is idle)."""
    try:
        import psutil
    except ImportError:
        return float("nan")
    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" in proc.name():
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            continue
    return total


async def time_calls(call: Callable[[], Awaitable[str]], runs: int, engine: str) -> Result:
    """One cold call, then ``runs`` warm ones; the output's length is taken from the last."""
    times, text = [], ""
    py0 = br0 = 0.0
    for i in range(runs + 1):
        if i == 1:
            py0, br0 = time.process_time(), _browser_cpu_s()
        t0 = time.perf_counter()
        text = await _within(call(), CALL_TIMEOUT)
        times.append((time.perf_counter() - t0) * 1000)
    py = (time.process_time() - py0) * 1000 / max(runs, 1)
    br = (_browser_cpu_s() - br0) * 1000 / max(runs, 1)
    return Result(engine, times[0], times[1:], len(text), py_cpu_ms=py, browser_cpu_ms=br if br == br else None)


# --- engines ---------------------------------------------------------------------------------


async def _goto(page, target: Target) -> None:
    await page.goto(target.url)
    if target.login:
        await target.login(page)
        await page.goto(target.url)
    await page.wait_for_load_state("networkidle")


async def bench_ours(sh, target: Target, runs: int, engine: str, *, loaded: bool = False) -> Result:
    """``loaded``: the page is already on the target (a wrapped page the user loaded first)."""
    if not loaded:
        await _goto(sh.page, target)
    from stagehand_py.snapshot import _capture

    moved = [0]
    real_loads = _capture.loads_json

    def counting_loads(raw):  # the walker's JSON, one string per frame
        moved[0] += len(raw)
        return real_loads(raw)

    async def call() -> str:
        return (await sh.snapshot()).tree

    _capture.loads_json = counting_loads
    try:
        result = await time_calls(call, runs, engine)
    finally:
        _capture.loads_json = real_loads
    result.bytes_in = moved[0] // (runs + 1)
    return result


async def bench_wrapped(Stagehand, browser, target: Target, runs: int) -> Result:
    """The headline use: a page the user's own script launched and loaded, then wrapped."""
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await _goto(page, target)
        sh = Stagehand(page)
        try:
            return await bench_ours(sh, target, runs, "wrapped", loaded=True)
        finally:
            await sh.close()
    finally:
        await context.close()


async def bench_aria(browser, target: Target, runs: int, cookies_out: list) -> Result:
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await _goto(page, target)
        if target.login:
            cookies_out[:] = await context.cookies()  # hands the session to the TS run
        body = page.locator("body")
        return await time_calls(body.aria_snapshot, runs, "aria")
    finally:
        await context.close()


def ensure_ts_stagehand() -> str | None:
    """Install TS Stagehand into the gitignored scratch folder on first use; None when ready,
    else why it cannot run."""
    if not (shutil.which("node") and shutil.which("npm")):
        return "node/npm not found (apt-get install -y nodejs npm)"
    pkg = TS_DIR / "node_modules/@browserbasehq/stagehand/package.json"
    if pkg.is_file() and json.loads(pkg.read_text())["version"] == TS_VERSION:
        return None
    TS_DIR.mkdir(parents=True, exist_ok=True)
    if not (TS_DIR / "package.json").exists():
        (TS_DIR / "package.json").write_text('{"name": "ts-stagehand-bench", "private": true}\n')
    print(f"installing @browserbasehq/stagehand@{TS_VERSION} into {TS_DIR} ...", flush=True)
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", f"@browserbasehq/stagehand@{TS_VERSION}"],
        cwd=TS_DIR,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return "npm install failed: " + proc.stderr.strip().splitlines()[-1]
    return None


def bench_ts(target: Target, runs: int, cookies: list) -> Result:
    cmd = ["node", str(TS_SCRIPT), "--stagehand-dir", str(TS_DIR), "--url", target.url,
           "--runs", str(runs), "--executable", CHROMIUM_EXECUTABLE,
           "--chromium-args", json.dumps(CHROMIUM_ARGS)]
    with tempfile.NamedTemporaryFile("w", suffix=".json") as cookie_file:
        if cookies:
            json.dump(cookies, cookie_file)
            cookie_file.flush()
            cmd += ["--cookies", cookie_file.name]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=CALL_TIMEOUT * (runs + 1) + 60
            )
        except subprocess.TimeoutExpired:
            return Result("ts", error=f"no result within {CALL_TIMEOUT:.0f}s per call")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            data = json.loads(line[len("RESULT "):])
            if data["url"].split("?")[0] != target.url.split("?")[0]:
                return Result("ts", error=f"ended on {data['url']} instead of {target.url}")
            return Result("ts", data["first_ms"], data["ms"], data["chars"])
    err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return Result("ts", error=f"exit {proc.returncode}: {err}")


# --- pages -----------------------------------------------------------------------------------


def find_docs() -> Path | None:
    return next((p for p in DOCS_CANDIDATES if (p / "library/json.html").is_file()), None)


def django_login(base: str):
    import serve  # benchmarks/django_site/serve.py

    async def login(page) -> None:
        await serve.login(page, base)

    return login


# --- report ----------------------------------------------------------------------------------


def _num(value: float | int | None, fmt: str = "{:,.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ratio(a: float | int | None, b: float | int | None) -> str:
    return "-" if not a or not b else f"{a / b:.2f}x"


def print_report(results: dict[str, dict[str, Result]], notes: list[str]) -> None:
    labels = {"wrapped": "ours, wrapped", "launched": "ours, launched", "aria": "pw aria_snapshot", "ts": f"TS Stagehand {TS_VERSION}"}
    head = (f"{'page':<10} {'engine':<18} {'cold ms':>8} {'warm ms':>8} {'py cpu':>7} {'br cpu':>7} "
            f"{'bytes in':>10} {'chars':>9} {'~tokens':>8}")
    print("\n" + head + "\n" + "-" * len(head))
    for page, by_engine in results.items():
        for i, (engine, r) in enumerate(by_engine.items()):
            name = page if i == 0 else ""
            if r.error:
                print(f"{name:<10} {labels[engine]:<18} {'error: ' + r.error}")
                continue
            print(
                f"{name:<10} {labels[engine]:<18} {_num(r.first_ms):>8} {_num(r.median):>8} {_num(r.py_cpu_ms):>7} "
                f"{_num(r.browser_cpu_ms):>7} {_num(r.bytes_in):>10} {_num(r.chars):>9} {_num(r.tokens):>8}"
            )
    head = (f"{'page':<10} {'wrapped/TS warm':>15} {'wrapped/TS cold':>15} {'launched/TS warm':>16} "
            f"{'wrapped/aria':>12} {'tokens/TS':>9}")
    print("\n" + head + "\n" + "-" * len(head))
    for page, by_engine in results.items():
        wrapped, launched, ts, aria = (by_engine.get(k) or Result(k) for k in ("wrapped", "launched", "ts", "aria"))
        print(
            f"{page:<10} {_ratio(wrapped.median, ts.median):>15} {_ratio(wrapped.first_ms, ts.first_ms):>15} "
            f"{_ratio(launched.median, ts.median):>16} {_ratio(wrapped.median, aria.median):>12} {_ratio(wrapped.chars, ts.chars):>9}"
        )
    for note in notes:
        print("note:", note)


# --- main ------------------------------------------------------------------------------------


async def run(opts: argparse.Namespace) -> dict[str, dict[str, Result]]:
    notes: list[str] = []
    names = [n.strip() for n in opts.pages.split(",") if n.strip()]
    unknown = [n for n in names if n not in PAGES]
    if unknown:
        sys.exit(f"unknown page(s) {unknown}; choose from {list(PAGES)}")

    Stagehand = None
    if opts.skip_ours:
        notes.append("stagehand_py skipped: --skip-ours given")
    else:
        try:
            from stagehand_py import Stagehand
        except ImportError as exc:
            notes.append(f"stagehand_py skipped: `from stagehand_py import Stagehand` failed ({exc})")

    ts_problem = "--skip-ts given" if opts.skip_ts else ensure_ts_stagehand()
    if ts_problem:
        notes.append(f"TS Stagehand skipped: {ts_problem}")

    targets: list[Target] = []
    cleanups: list[Callable[[], None]] = []
    doc_names = [n for n in names if PAGES[n] not in ("django", "table") and not PAGES[n].startswith("assets:")]
    asset_names = [n for n in names if PAGES[n].startswith("assets:")]
    if asset_names:
        from _server import start_pair  # tests/_server.py: two loopback origins, for cross-site frames

        same, cross = start_pair()
        cleanups += [same.stop, cross.stop]
        targets += [Target(n, same.url(PAGES[n].split(":", 1)[1])) for n in asset_names]
    if "table5000" in names:
        table_dir = Path(tempfile.mkdtemp(prefix="snapshot-bench-"))
        rows = "".join(f"<tr><td>{i}</td><td>Item {i}</td><td><a href='/item/{i}'>Open {i}</a></td><td>{i * 3 % 97}.00</td></tr>"
                       for i in range(TABLE_ROWS))
        (table_dir / "table.html").write_text(
            f"<!doctype html><title>Table</title><table><thead><tr><th>#</th><th>Name</th><th>Link</th><th>Price</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>", encoding="utf-8")
        table_server = StaticServer(table_dir).start()
        cleanups.append(table_server.stop)
        targets.append(Target("table5000", table_server.url("table.html")))
    if doc_names:
        docs = find_docs()
        if docs is None:
            notes.append("Python docs missing: `apt-get install -y python3-doc`; skipped " + ", ".join(doc_names))
        else:
            docs_server = StaticServer(docs).start()  # 127.0.0.1 only
            cleanups.append(docs_server.stop)
            targets += [Target(n, docs_server.url(PAGES[n])) for n in doc_names]
    order = {n: i for i, n in enumerate(names)}
    targets.sort(key=lambda t: order[t.name])
    if "django" in names:
        try:
            import serve

            proc, base = serve.start()
            cleanups.append(lambda: (proc.terminate(), proc.wait(10)))
            targets.append(Target("django", base + serve.CHANGELIST, django_login(base)))
        except ImportError as exc:
            notes.append(f"django skipped: {exc} (`pip install -e '.[bench]'` or `pip install django`)")

    def on_sigterm(*_: object) -> None:
        for cleanup in cleanups:  # do not leave runserver behind when killed
            cleanup()
        os._exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    results: dict[str, dict[str, Result]] = {}
    sh = None
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            if Stagehand is not None:
                sh = await Stagehand.launch(headless=True)
            for target in targets:
                print(f"{target.name}: {target.url}", flush=True)
                row: dict[str, Result] = {}
                if Stagehand is not None:
                    row["wrapped"] = await _guard("wrapped", bench_wrapped(Stagehand, browser, target, opts.runs))
                if sh is not None:
                    row["launched"] = await _guard("launched", bench_ours(sh, target, opts.runs, "launched"))
                    if row["launched"].error:
                        # A timed-out snapshot may keep its renderer busy and skew the other
                        # engines' numbers; a fresh browser ends that work.
                        await _close_quietly(sh)
                        sh = await Stagehand.launch(headless=True)
                cookies: list = []
                row["aria"] = await _guard("aria", bench_aria(browser, target, opts.runs, cookies))
                if not ts_problem:
                    row["ts"] = await asyncio.to_thread(bench_ts, target, opts.runs, cookies)
                results[target.name] = row
            if sh is not None:
                await _close_quietly(sh)
            await browser.close()
    finally:
        for cleanup in cleanups:
            cleanup()
    print_report(results, notes)
    if opts.json:
        Path(opts.json).write_text(
            json.dumps({p: {e: asdict(r) for e, r in row.items()} for p, row in results.items()}, indent=1)
        )
    return results


async def _close_quietly(sh) -> None:
    try:
        await _within(sh.close(), 30)
    except Exception:
        pass  # a wedged browser must not cost us the report; our process exit ends it anyway


async def _guard(engine: str, coro: Awaitable[Result]) -> Result:
    """A failing engine becomes an error row, so one broken engine does not hide the others."""
    try:
        return await coro
    except TimeoutError:
        return Result(engine, error=f"a call took over {CALL_TIMEOUT:.0f}s (--timeout)")
    except Exception as exc:
        first_line = (str(exc).splitlines() or [""])[0][:120]
        return Result(engine, error=f"{type(exc).__name__}: {first_line}")


def main() -> None:
    global CALL_TIMEOUT, TS_DIR
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=",".join(PAGES), help=f"comma list of {', '.join(PAGES)}")
    parser.add_argument("--runs", type=int, default=5, help="warm calls per engine and page")
    parser.add_argument("--skip-ts", action="store_true", help="do not run TS Stagehand")
    parser.add_argument("--skip-ours", action="store_true", help="do not run stagehand_py")
    parser.add_argument("--ts-dir", type=Path, default=TS_DIR,
                        help="scratch folder (outside the repo) holding or receiving TS Stagehand (default %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the raw timings here")
    parser.add_argument("--timeout", type=float, default=CALL_TIMEOUT,
                        help="seconds one snapshot call may take (default %(default)s)")
    opts = parser.parse_args()
    CALL_TIMEOUT = opts.timeout
    TS_DIR = opts.ts_dir.expanduser().resolve()
    if TS_DIR.is_relative_to(REPO):
        parser.error(f"--ts-dir must be outside the repository ({REPO}): npm would put node_modules in our tree")
    asyncio.run(run(opts))


if __name__ == "__main__":
    main()
