"""Agent runs that replay: stored, replayed with no model, healed step by step, exported.

A real page on 127.0.0.1 (both page kinds), a scripted model whose calls are counted: the first run
takes model calls; the replay takes none; with the button renamed, exactly one (the heal).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import importlib.util
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus
from xml.etree import ElementTree

import pytest
from _server import Response, StaticServer
from llm._fake_provider import FakeProvider, chat_completion

from stagehand_py import (
    Action,
    ActionFailedError,
    AgentError,
    AgentResult,
    ElementIdentity,
    InvalidArgumentError,
    TestDoubleError,
)
from stagehand_py._prompts.choice import NO_CHOICE, choice_enum
from stagehand_py.agent._outcome import EndState
from stagehand_py.agent._recording import load_recording
from stagehand_py.llm import LLMClient
from stagehand_py.testing import FunctionLLM, capture_requests

from . import test_agent_tabs
from ._script import AgentScript, call

ROOT = Path(__file__).resolve().parent.parent.parent
#: Both page kinds: a page the test launched and wrapped (Stagehand(page)), and Stagehand.launch().
make = test_agent_tabs.make
SECRET = "4"  # the quantity is a variable: only %qty% may be stored
COUPON = "SPRING-2731-XQ"  # the orders run's variable: the orders page and its URL show it
STATE = {"label": "Add to cart", "heading": "Tiny shop"}

SHOP = """<!doctype html><title>Shop</title>{banner}<h1>{heading}</h1>
<label>Quantity <input id=qty></label>
<button id=add onclick="document.getElementById('cart').textContent = 'Cart: ' + document.getElementById('qty').value + ' items'">{label}</button>
<p id=cart>Cart: 0 items</p><p>Delivery: Tuesday</p>
<label>Coupon <input id=coupon></label>
<a href=/replay/orders onclick="this.href = '/replay/orders?page=1&coupon=' + encodeURIComponent(document.getElementById('coupon').value) + '&sid={sid}'">Your orders</a>
<a href=/replay/help>{help}</a>"""

ORDERS_PAGE = """<!doctype html><title>{what}, page {page} of 2</title>{banner}
<nav><a href=/replay/shop>Shop</a> <a href=/replay/help>{help}</a></nav>
<h1>{heading}</h1><p>Coupon {coupon} applied</p>
<table><tr><th>Order</th><th>Total</th></tr>{rows}</table>{next}"""
ORDERS = {1: [("A-1001", "$12.50"), ("A-1002", "$40.00")], 2: [("A-1003", "$27.00"), ("A-1004", "$8.75")]}


@dataclass(frozen=True)
class Shop:
    """The shop app as recorded, or changed: where "Next page" leads, a total, a banner, a link's name."""

    next_path: str = "/replay/orders"
    next_page: int = 2
    next_label: str = "Next page"
    totals: tuple[tuple[str, str], ...] = ()
    banner: str = ""
    help_label: str = "Help"

    def routes(self, server) -> list:
        sid = lambda: secrets.token_hex(16)  # noqa: E731  # a session id: new on every page, left out of the kept URL

        def shop(r):
            return Response.html(SHOP.format(banner=self.banner, heading=STATE["heading"], label=STATE["label"],
                                             sid=sid(), help=self.help_label))

        def orders(r, what="Orders", heading="Your orders"):
            page, coupon = int(r.query.get("page", "1")), r.query.get("coupon", "")
            totals = dict(self.totals)
            rows = "".join(f"<tr><td>{i}</td><td>{totals.get(i, t)}</td></tr>" for i, t in ORDERS[page])
            later = (f'<a href="{self.next_path}?page={self.next_page}&coupon={quote(coupon)}&sid={sid()}'
                     f'&_={time.time_ns() // 1_000_000}">{self.next_label}</a>') if page == 1 else ""
            return Response.html(ORDERS_PAGE.format(what=what, heading=heading, page=page, banner=self.banner,
                                                    help=self.help_label, coupon=html.escape(coupon), rows=rows,
                                                    next=later))

        def archive(r):  # the same rows, on another page
            return orders(r, what="Archived orders", heading="Archived orders")

        return [server.route("/replay/shop", shop), server.route("/replay/orders", orders),
                server.route("/replay/archive", archive),
                server.route("/replay/help", lambda r: Response.html("<title>Help</title><h1>Help</h1>"))]


@pytest.fixture
def shop(server):
    STATE.update(label="Add to cart", heading="Tiny shop")
    routes = Shop().routes(server)
    yield server
    for route in routes:
        route.remove()


TASK = "Put %qty% items in the cart and report the delivery day"
SCHEMA = {"type": "object", "properties": {"delivery": {"type": "string"}}, "required": ["delivery"]}


def first_run_model() -> AgentScript:
    return AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Quantity"), method="fill", arguments=["%qty%"]),
        lambda s: call("act", element_id=s.id("button", "Add to cart")),
        call("extract", instruction="the delivery day", schema=SCHEMA),
        call("done", message="added", output={"day": "Tuesday"}),
    ], others={"extract": lambda r: {"data": {"delivery": "Tuesday"}, "instruction_satisfied": True}})


def heal_model(calls: list[str]) -> AgentScript:
    def heal(request):
        calls.append(request.purpose)
        text = "\n".join(p.text for m in request.messages for p in m.content if hasattr(p, "text"))
        line = next(line for line in text.splitlines() if "button: Add to basket" in line)
        eid = line.strip().split("]")[0].lstrip("[")
        return {"elements": [{"element_id": eid, "description": "add button", "method": "click", "arguments": []}]}
    return AgentScript([], others={"heal": heal})


async def _run(make, cache: Path, shop, model, **options):
    sh = await make(model=model, cache_dir=cache)
    await sh.page.goto(shop.url("replay/shop"))
    with capture_requests() as calls:
        result = await sh.agent().execute(TASK, variables={"qty": SECRET}, max_steps=8, **options)
    return sh, result, calls


@pytest.fixture(scope="module")
def first_runs() -> dict[str, tuple[Path, AgentResult]]:
    """The first run of the shop task per page kind (its cache folder, its result), made by the first test that asks."""
    return {}


@pytest.fixture
async def recorded(request, make, shop, tmp_path, tmp_path_factory, first_runs) -> tuple[Path, AgentResult]:
    """The shop task's first run on this test's page kind: this test's own cache folder holding the stored run
    (a copy: replays and heals rewrite it), and the run's result. Recorded once per page kind: the page and the
    scripted model give the same run every time, and a browser launch and four steps per test were the file's
    largest repeated setup. The first test (test_a_run_replays_...) still records and checks its own."""
    kind = request.node.callspec.params["make"]
    if kind not in first_runs:
        source = tmp_path_factory.mktemp(f"first-run-{kind}") / "cache"
        _, first, _ = await _run(make, source, shop, first_run_model())
        assert first.success and first.replay is None, first.message
        first_runs[kind] = (source, first)
    source, first = first_runs[kind]
    shutil.copytree(source, tmp_path / "cache")
    return tmp_path / "cache", first


async def test_a_run_replays_with_no_model_and_heals_only_a_renamed_button(make, shop, tmp_path):
    cache = tmp_path / "cache"
    sh, first, calls = await _run(make, cache, shop, first_run_model())
    assert first.success and first.replay is None and len(calls) == 5  # 4 agent steps + 1 extract
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"
    [stored] = list((cache / "agent-runs").iterdir())
    text = stored.read_text()
    assert "%qty%" in text and f'"{SECRET}"' not in text  # placeholders only, never the value
    recording = load_recording(stored)
    assert [s.kind for s in recording.steps] == ["act", "act", "extract"]
    assert (recording.steps[1].role, recording.steps[1].name) == ("button", "Add to cart")

    # Same task, start URL and variable names: replayed, zero model calls, same outcome.
    sh, again, calls = await _run(make, cache, shop, AgentScript([]))
    assert calls == [] and again.success and again.status == "done"
    assert again.replay is not None and again.replay.replayed == [0, 1, 2] and not again.replay.fell_back
    assert again.output == {"day": "Tuesday"}
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"

    # The button renamed: that step heals with one model call; the others still replay.
    STATE["label"] = "Add to basket"
    purposes: list[str] = []
    sh, healed, calls = await _run(make, cache, shop, heal_model(purposes))
    assert purposes == ["heal"] and len(calls) == 1, [c.request.purpose for c in calls]
    assert healed.success and healed.replay is not None
    assert healed.replay.healed == [1] and healed.replay.replayed == [0, 2]
    assert "Add to cart" in healed.replay.steps[1].detail and "Add to basket" in healed.replay.steps[1].detail
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"
    # The stored run now holds the healed step: the next replay needs no model.
    assert load_recording(stored).steps[1].name == "Add to basket"
    sh, after, calls = await _run(make, cache, shop, AgentScript([]))
    assert calls == [] and after.replay is not None and after.replay.replayed == [0, 1, 2]


async def test_a_replay_that_cannot_heal_falls_back_to_the_live_agent(make, shop, recorded):
    cache, _ = recorded
    STATE["label"] = "Add to basket"
    live = AgentScript([
        lambda s: call("act", element_id=s.id("button", "Add to basket")),
        call("done", message="added", output={"day": "Tuesday"}),
    ], others={"heal": lambda r: {"elements": []}})  # the heal finds nothing
    sh, result, calls = await _run(make, cache, shop, live)
    assert result.success and result.replay is not None and result.replay.fell_back
    assert "step 2" in result.replay.reason and result.replay.replayed == [0]
    assert [s.status for s in result.replay.steps][-1] == "fresh"
    assert [c.request.purpose for c in calls] == ["heal", "agent", "agent"]
    assert await sh.page.inner_text("#cart") == "Cart: 4 items"


async def test_replay_can_be_turned_off_per_call(make, shop, recorded):
    cache, _ = recorded
    # replay=False: the live agent asks the model, whose script has no steps; the run's own time budget also "ran
    # out" in its message, so the match names the script and the cause is the double's.
    ran_out = r"TestDoubleError: the script ran out at agent step 1$"
    assert not re.search(ran_out, "stopped: the time budget ran out; returning the data collected so far")
    with pytest.raises(AgentError, match=ran_out) as caught:
        await _run(make, cache, shop, AgentScript([]), replay=False)
    assert isinstance(caught.value.__cause__, TestDoubleError)
    sh = await make(model=AgentScript([]))
    with pytest.raises(InvalidArgumentError, match="cache directory"):
        await sh.agent().execute(TASK, replay=True)


async def test_a_replay_that_ends_elsewhere_falls_back_to_the_live_agent(make, shop, recorded):
    # Every step's element is unchanged, so every step replays; the page it ends on is not the one recorded.
    # (The control is the first test: the same replay on the page as recorded does not fall back.)
    cache, _ = recorded
    STATE["heading"] = "Tiny shop (closed)"
    live = AgentScript([call("done", message="the shop is closed")])
    _, result, calls = await _run(make, cache, shop, live)
    assert result.replay is not None and result.replay.fell_back and result.replay.replayed == [0, 1, 2]
    assert result.replay.outcome_differences == ["main heading: expected 'Tiny shop'; the page shows 'Tiny shop (closed)'"]
    assert "the outcome differs from the recorded run: main heading" in result.replay.reason
    assert [c.request.purpose for c in calls] == ["agent"] and result.message == "the shop is closed"


# --- the orders run: paginate, save_progress, done with an output schema; exported and checked ---------------------

ORDERS_TASK = "Apply coupon %coupon% and collect every order with its total"
ORDERS_OUTPUT = {"type": "object", "required": ["orders"], "properties": {"orders": {"type": "array", "items": {
    "type": "object", "properties": {"id": {"type": "string"}, "total": {"type": "string"}}, "required": ["id", "total"]}}}}
#: What an extract returns: the rows, and the page's total worked out by the model (no page shows it as written).
ORDER_ROWS = {**ORDERS_OUTPUT, "properties": {**ORDERS_OUTPUT["properties"], "page_total": {"type": "number"}}}
ALL_ROWS = [{"id": i, "total": t} for page in (1, 2) for i, t in ORDERS[page]]


def _text(request) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content if hasattr(p, "text"))


def rows_shown(text: str) -> list[dict[str, str]]:
    """The order rows an outline shows, as a model reading it would answer."""
    cells = re.findall(r"cell: (\S+)", text)
    return [{"id": i, "total": t} for i, t in zip(cells[::2], cells[1::2], strict=True)]


def extracted(request) -> dict:
    rows = rows_shown(_text(request))
    return {"data": {"orders": rows, "page_total": sum(float(r["total"].lstrip("$")) for r in rows)},
            "instruction_satisfied": True}


def orders_model() -> AgentScript:
    collect = call("extract", instruction="every order on this page with its total", schema=ORDER_ROWS)
    return AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Coupon"), method="fill", arguments=["%coupon%"]),
        lambda s: call("act", element_id=s.id("link", "Your orders")),
        collect,
        lambda s: call("save_progress", data={"orders": rows_shown(s.outline)}),
        lambda s: call("act", element_id=s.id("link", "Next page")),
        collect,
        lambda s: call("save_progress", data={"orders": rows_shown(s.outline)}),
        call("done", message="The orders list is on page 2 of 2", output={"orders": ALL_ROWS}),
    ], others={"extract": extracted})


@pytest.fixture(scope="module")
def orders_runs() -> dict[str, tuple[Path, AgentResult]]:
    return {}


@pytest.fixture
async def orders_recorded(request, make, shop, tmp_path_factory, orders_runs) -> tuple[Path, AgentResult]:
    """The orders run on this test's page kind, recorded once per kind (its cache folder, its result)."""
    kind = request.node.callspec.params["make"]
    if kind not in orders_runs:
        cache = tmp_path_factory.mktemp(f"orders-run-{kind}") / "cache"
        sh = await make(model=orders_model(), cache_dir=cache)
        await sh.page.goto(shop.url("replay/shop"))
        result = await sh.agent().execute(ORDERS_TASK, variables={"coupon": COUPON}, max_steps=12, output=ORDERS_OUTPUT)
        assert result.success and result.output == {"orders": ALL_ROWS}, result.message
        orders_runs[kind] = (cache, result)
    return orders_runs[kind]


#: The app changed, each on a server of its own (an exported file runs against one through its origin, so they
#: all run at once). Behaviour changes with every name unchanged; harmless changes; and a renamed element.
CHANGES = {
    "next_leads_back": Shop(next_page=1),  # "Next page" leads back to page 1
    "next_leads_elsewhere": Shop(next_path="/replay/archive"),  # to another page, showing the same rows
    "total_changed": Shop(totals=(("A-1004", "$9.75"),)),  # a total changes
    "harmless": Shop(banner="<div>Free delivery this week!</div>", help_label="Support"),  # a banner, a link renamed
    "renamed": Shop(next_label="Continue"),  # the link the run clicked is renamed: name drift
}


@pytest.fixture(scope="module")
def changed() -> Iterator[dict[str, StaticServer]]:
    servers = {name: StaticServer().start() for name in CHANGES}
    for name, server in servers.items():
        CHANGES[name].routes(server)
    yield servers
    for server in servers.values():
        server.stop()


def _moved(text: str, server: StaticServer, to: StaticServer) -> str:
    """``text`` (an exported file, a stored run) pointed at the app on ``to`` instead of ``server``."""
    return text.replace(server.origin, to.origin)


def _encodings(value: str) -> set[str]:
    raw = value.encode()
    b64 = base64.b64encode(raw).decode()
    return {value, value.casefold(), quote(value), quote_plus(value), html.escape(value), json.dumps(value)[1:-1],
            b64, b64.rstrip("="), base64.urlsafe_b64encode(raw).decode().rstrip("=")}


def _leaks(text: str) -> list[str]:
    """The forms of the coupon (the run's variable) in ``text``; the quantity's quoted form too."""
    return [form for form in _encodings(COUPON) | {f"'{SECRET}'", f'"{SECRET}"'} if form in text]


def _subprocess_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_MODEL")}
    env.update(STAGEHAND_MODELS_DIR=str(tmp_path / "no-models"), STAGEHAND_BLOCK_MODEL_REQUESTS="1",
               STAGEHAND_VAR_QTY=SECRET, STAGEHAND_VAR_COUPON=COUPON,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    env.update(extra)
    return {k: v for k, v in env.items() if v}


@dataclass
class Ran:
    """A pytest subprocess: its output, and per test module "passed" or what its failure said (from the junit
    XML: the modules share one test name)."""

    process: subprocess.CompletedProcess[str]
    report: dict[str, str]


def _pytest(folder: Path, *args: str, **env: str) -> Ran:
    """``pytest`` in ``folder``, which holds no pytest configuration unless the test wrote one. pytest-playwright
    is turned off: the exported test needs only pytest and pytest-asyncio, and ours has no browser to download."""
    process = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:playwright",
                              "--junit-xml", "report.xml", *args],
                             cwd=folder, env=_subprocess_env(folder, **env), capture_output=True, text=True,
                             timeout=1200)  # a guard against a hang, far above a loaded machine's minutes
    report = {}
    if (folder / "report.xml").exists():
        for case in ElementTree.parse(folder / "report.xml").iter("testcase"):
            failed = case.find("failure") if case.find("failure") is not None else case.find("error")
            report[case.get("classname", "")] = "passed" if failed is None else f"{failed.get('message')}\n{failed.text}"
    return Ran(process, report)


def _folder(root: Path, name: str, files: dict[str, str], ini: str = "") -> Path:
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text)
    if ini:
        (folder / "pytest.ini").write_text(ini)
    return folder


#: Subprocess results by the exact files they ran: both page kinds record the run, and when their exports are
#: byte-identical (they are: the page kind is not in the file) the second kind's checks read the first's runs.
RAN: dict[str, dict[str, object]] = {}


async def _once(files: dict[str, str], runs: dict[str, object]) -> dict[str, object]:
    key = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    if key not in RAN:
        names = list(runs)
        done = await asyncio.gather(*(asyncio.to_thread(runs[n]) for n in names))  # type: ignore[arg-type]
        RAN[key] = dict(zip(names, done, strict=True))
    return RAN[key]


async def test_an_extract_heavy_run_records_its_rows_and_where_it_ended(make, shop, orders_recorded):
    cache, run = orders_recorded
    recording = run.recording
    assert recording is not None
    assert [s.kind for s in recording.steps] == ["act", "act", "extract", "save_progress", "act", "extract", "save_progress"]
    assert recording.steps[3].data == {"orders": ALL_ROWS[:2]} and recording.steps[6].data == {"orders": ALL_ROWS[2:]}
    # Each row was shown, as one row; the page's total the model worked out was not, and is left unpinned.
    assert [(s.unshown, s.apart) for s in recording.steps if s.kind == "extract"] == [(["page_total"], [])] * 2
    assert all(s.unshown == [] and s.apart == [] for s in recording.steps if s.kind != "extract")
    # The end: the kept URL (no sid, no cache buster; the coupon as its placeholder), title and main heading.
    assert recording.end == EndState(url=shop.url("replay/orders?coupon=%coupon%&page=2"), title="Orders, page 2 of 2",
                                     heading="Your orders")
    assert recording.output_unshown == [] and recording.output_apart == []
    assert run.data == {"orders": ALL_ROWS}
    [stored] = (cache / "agent-runs").iterdir()
    assert _leaks(stored.read_text()) == [] and _leaks(base64.b64encode(COUPON.encode()).decode())  # control: found


async def test_an_exported_run_checks_its_outcome_with_no_model_and_no_configuration(
        make, shop, orders_recorded, changed, tmp_path, mypy_cache):
    _, run = orders_recorded
    texts = {"test": run.to_pytest(tmp_path / "test_orders.py").read_text(),
             "sync": run.to_pytest(tmp_path / "test_orders_sync.py", sync=True).read_text(),
             "claim": run.to_pytest(tmp_path / "test_orders_claim.py", expect_done=True).read_text(),
             "script": run.to_script(tmp_path / "orders.py").read_text()}
    test = texts["test"]
    assert '@pytest.mark.asyncio(loop_scope="session")' in test and "element=ElementIdentity(role='link', name='Next page')" in test
    assert "arguments=['%coupon%']" in test and "class " in texts["script"] and "schema=" in texts["script"]
    assert f"END_URL = {shop.url('replay/orders?coupon=%coupon%&page=2')!r}" in test
    assert "END_TITLE = 'Orders, page 2 of 2'" in test and "END_HEADING = 'Your orders'" in test
    assert "def test_" in texts["sync"] and "async def" not in texts["sync"] and "stagehand_sync.act(" in texts["sync"]
    assert "await stagehand.expect('The orders list is on page 2 of 2')" in texts["claim"]
    # Each assertion under the comment that says what it pins; what the run could not have seen is said, not pinned.
    lines = test.splitlines()
    asserts = [n for n, line in enumerate(lines) if line.strip().startswith("assert ")]
    assert len(asserts) == 8 and all(lines[n - 1].strip().startswith("# pins ") or lines[n - 2].strip().startswith("# pins ")
                                     for n in asserts), test
    assert test.count("# not pinned (the page did not show them as written when the run read them): page_total") == 2
    assert "'page_total'" not in test and "page_total: float" in texts["script"]  # the script's model still has it
    assert [(name, _leaks(text)) for name, text in texts.items() if _leaks(text)] == []
    files = {f"test_{name}.py": _moved(test, shop, server) for name, server in changed.items() if name != "next_leads_back"}
    unmarked = test.replace('@pytest.mark.asyncio(loop_scope="session")', "")  # control: the mark is what runs it
    # Control: the same file without its end-state assertions passes where "Next page" now leads elsewhere.
    files["test_elsewhere_unpinned.py"] = "\n".join(line for line in files["test_next_leads_elsewhere.py"].splitlines()
                                                     if not line.startswith("    assert end."))
    # The project's own asyncio options, other than the plugin's loop, and two workers.
    project_ini = ("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
                   "asyncio_default_test_loop_scope = function\n")
    claim_folder = _folder(tmp_path, "claim", {"test_orders_claim.py": texts["claim"]})

    def claimed() -> tuple[Ran, Ran, int, str]:
        model = ("--stagehand-model", "openai/fake")
        with FakeProvider() as fake:
            fake.reply(chat_completion(json.dumps({"verdict": "yes", "evidence": "heading: Your orders"})))
            recorded = _pytest(claim_folder, *model, "--stagehand-base-url", f"{fake.url}/v1", "--stagehand-record", "once",
                               "test_orders_claim.py", OPENAI_API_KEY="sk-test", STAGEHAND_BLOCK_MODEL_REQUESTS="")
            # Replayed where the model cannot answer: no key, requests blocked, the server answering 599.
            replayed = _pytest(claim_folder, *model, "--stagehand-base-url", f"{fake.url}/v1", "test_orders_claim.py")
            cassettes = list((claim_folder / "cassettes").rglob("*.json"))
            return recorded, replayed, len(fake.seen), "".join(c.read_text() for c in cassettes)

    ran = await _once({**texts, "origin": shop.origin}, {
        "plain": lambda: _pytest(_folder(tmp_path, "plain", {**files, "test_as_recorded.py": test, "test_sync.py": texts["sync"],
                                                             "test_unmarked.py": unmarked}), "-q"),
        "project": lambda: _pytest(_folder(tmp_path, "project", {"test_orders.py": test, "test_orders_again.py": test},
                                           project_ini), "-n", "2"),
        "claim": claimed,
        "mypy": lambda: subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache),
                                        *(str(tmp_path / f) for f in ("test_orders.py", "test_orders_sync.py",
                                                                      "test_orders_claim.py", "orders.py"))],
                                       cwd=ROOT, capture_output=True, text=True, timeout=1200),
    })
    plain = ran["plain"]
    report = plain.report
    assert {k: v == "passed" for k, v in report.items()} == {
        "test_as_recorded": True, "test_sync": True, "test_harmless": True,  # as written; a banner and a link renamed
        "test_next_leads_elsewhere": False, "test_total_changed": False,  # the outcome changed, every name the same
        "test_elsewhere_unpinned": True,  # control: what fails it is the end state
        "test_renamed": False, "test_unmarked": False}, plain.process.stdout[-3000:]
    # Each failure says what was expected and what the page shows.
    elsewhere = changed["next_leads_elsewhere"]
    assert (f"the run ended at {elsewhere.url('replay/orders?coupon=%coupon%&page=2')!r}; the page is at "
            f"{elsewhere.url('replay/archive?coupon=%coupon%&page=2')!r}") in report["test_next_leads_elsewhere"]
    assert ("orders[1]: expected {'id': 'A-1004', 'total': '$8.75'}; '$8.75' not shown; the page shows 'A-1004 | $9.75' there"
            in report["test_total_changed"]), report["test_total_changed"]
    assert "purpose 'heal'" in report["test_renamed"] and "--stagehand-record once" in report["test_renamed"]
    assert "async def functions are not natively supported" in report["test_unmarked"]
    project = ran["project"].process
    assert project.returncode == 0 and "2 passed" in project.stdout and "created: 2/2 workers" in project.stdout, \
        project.stdout[-3000:] + project.stderr[-2000:]
    recorded, replayed, requests, cassette = ran["claim"]
    assert recorded.report == replayed.report == {"test_orders_claim": "passed"} and requests == 1, \
        recorded.process.stdout[-2000:] + replayed.process.stdout[-2000:]
    assert '"verdict": "yes"' in cassette.replace('\\"', '"') and _leaks(cassette) == []
    typed = ran["mypy"]
    assert typed.returncode == 0, typed.stdout + typed.stderr


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy") / "cache"


async def test_an_exported_script_returns_how_the_outcome_differs(make, shop, orders_recorded, changed, tmp_path, monkeypatch):
    _, run = orders_recorded
    text = run.to_script(tmp_path / "orders.py").read_text()
    monkeypatch.setenv("STAGEHAND_VAR_COUPON", COUPON)
    differences = {}
    for name, at in (("as_recorded", shop), ("next_leads_back", changed["next_leads_back"])):
        path = tmp_path / f"orders_{name}.py"
        path.write_text(_moved(text, shop, at))
        spec = importlib.util.spec_from_file_location(f"orders_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)  # as `python orders.py` has it: pydantic resolves its types there
        spec.loader.exec_module(module)
        model = FunctionLLM(extracted)
        differences[name] = await module.run(await make(model=model))
    assert differences["as_recorded"] == []
    moved = differences["next_leads_back"]
    assert any(d.startswith("orders[0]: expected {'id': 'A-1003', 'total': '$27.00'}") for d in moved), moved
    assert ("URL: expected " + repr(changed["next_leads_back"].url("replay/orders?coupon=%coupon%&page=2"))
            + "; the page is at " + repr(changed["next_leads_back"].url("replay/orders?coupon=%coupon%&page=1"))) in moved


async def test_act_with_element_refuses_another_element_at_the_path(make, shop):
    STATE["label"] = "Delete account"
    sh = await make(self_heal=False)
    await sh.page.goto(shop.url("replay/shop"))
    button = Action(selector="xpath=/html[1]/body[1]/button[1]", method="click")
    await sh.page.fill("#qty", "3")
    # Control: the Action alone clicks whatever is at the path now.
    await sh.act(button)
    assert await sh.page.inner_text("#cart") == "Cart: 3 items"
    await sh.page.fill("#qty", "5")
    with pytest.raises(ActionFailedError, match="Add to cart"):
        await sh.act(button, element=ElementIdentity(role="button", name="Add to cart"))
    assert await sh.page.inner_text("#cart") == "Cart: 3 items"  # nothing was clicked
    with pytest.raises(InvalidArgumentError, match="ElementIdentity"):
        await sh.act("click the button", element=ElementIdentity(role="button", name="Add to cart"))


def _cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagehand_py.batch._cli", "replay", *args], cwd=folder,
                          env=_subprocess_env(folder), capture_output=True, text=True, timeout=1200)


async def test_replay_check_names_a_drifted_element_and_a_changed_outcome(make, shop, orders_recorded, changed, tmp_path):
    cache, run = orders_recorded
    [stored] = (cache / "agent-runs").iterdir()
    sources = {"stored": (stored.read_text(), "json"), "exported": (run.to_pytest(tmp_path / "x.py").read_text(), "py")}
    checks = {(kind, change) for kind in sources for change in ("as_recorded", "next_leads_back")} | {("exported", "renamed")}

    def check(kind: str, change: str):
        text, suffix = sources[kind]
        path = tmp_path / f"{kind}_{change}.{suffix}"
        path.write_text(text if change == "as_recorded" else _moved(text, shop, changed[change]))
        return lambda: _cli(tmp_path, str(path), "--check")

    ran = await _once({**{k: t for k, (t, _) in sources.items()}, "origin": shop.origin, "cli": "1"},
                      {f"{kind} {change}": check(kind, change) for kind, change in sorted(checks)})
    for kind in sources:
        same = ran[f"{kind} as_recorded"]
        assert same.returncode == 0, same.stdout + same.stderr
        assert same.stdout.count(" replayed ") == 7 and "outcome   as recorded" in same.stdout, same.stdout
        assert "model calls: 0" in same.stdout
        # The outcome changed with every name the same: the data steps and the end state are named, exit 1.
        moved = ran[f"{kind} next_leads_back"]
        assert moved.returncode == 1, moved.stdout + moved.stderr
        lines = moved.stdout.splitlines()
        assert " drifted " in lines[5] and "A-1003" in lines[5] and " drifted " in lines[6], moved.stdout
        assert "outcome   differs" in moved.stdout and "- URL: expected " in moved.stdout, moved.stdout
        assert "- title: expected 'Orders, page 2 of 2'; the page's title is 'Orders, page 1 of 2'" in moved.stdout
    drifted = ran["exported renamed"]  # an element drifted: named, the rest skipped, the outcome not checked
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    lines = drifted.stdout.splitlines()
    assert " drifted " in lines[4] and "was link 'Next page', now link 'Continue'" in lines[4], drifted.stdout
    assert " skipped " in lines[5] and "outcome   not checked" in drifted.stdout and "model calls: 0" in drifted.stdout
    assert _cli(tmp_path, str(tmp_path / "nothing.json"), "--check").returncode == 2


async def test_a_heal_onto_another_role_is_asked_again(make, shop, recorded):
    cache, _ = recorded
    STATE["label"] = "Add to basket"
    answered: list[str] = []

    def heal(request):  # first the heading (what the embedded model did), then the button
        text = "\n".join(p.text for m in request.messages for p in m.content if hasattr(p, "text"))
        wanted = "heading: Tiny shop" if not answered else "button: Add to basket"
        answered.append(wanted)
        line = next(line for line in text.splitlines() if wanted in line)
        eid = line.strip().split("]")[0].lstrip("[")
        return {"elements": [{"element_id": eid, "description": "add", "method": "click", "arguments": []}]}

    sh, result, calls = await _run(make, cache, shop, AgentScript([], others={"heal": heal}))
    assert answered == ["heading: Tiny shop", "button: Add to basket"]
    assert [c.request.purpose for c in calls] == ["heal", "heal"]  # one heal: its answer and the re-ask
    assert result.replay is not None and result.replay.healed == [1] and not result.replay.fell_back
    assert await sh.page.inner_text("#cart") == f"Cart: {SECRET} items"


SIGN_IN = """<!doctype html><title>Sign in</title><h1>Sign in</h1>
<label>Username <input id=user></label>
<button type=button disabled>Reset password</button>
<button id=go onclick="document.getElementById('out').textContent = 'Signed in as ' + document.getElementById('user').value">{label}</button>
<p id=out>Not signed in</p>"""


async def test_a_choice_mode_heal_offers_only_enabled_elements_of_the_recorded_role(make, server, tmp_path):
    # A choice-mode heal used to offer every actionable line of the form, and a small model leans to the first
    # ones (the username box, the disabled "Reset password" button: right role, cannot be clicked). Scripted
    # here as a model that always takes the first choice offered; without the filter it never heals.
    label = {"text": "Sign in"}
    route = server.route("/replay/sign-in", lambda r: Response.html(SIGN_IN.replace("{label}", label["text"])))
    task, cache = "Sign in as %user%", tmp_path / "cache"
    try:
        recorder = AgentScript([
            lambda s: call("act", element_id=s.id("textbox", "Username"), method="fill", arguments=["%user%"]),
            lambda s: call("act", element_id=s.id("button", "Sign in")),
            call("done", message="signed in"),
        ])
        sh = await make(model=recorder, cache_dir=cache)
        await sh.page.goto(server.url("replay/sign-in"))
        assert (await sh.agent().execute(task, variables={"user": "ada"})).success
        label["text"] = "Log in"
        offered: list[list[str]] = []

        def first_choice(request):
            assert request.purpose == "heal", request.purpose
            choices = choice_enum(request.output_schema)
            offered.append(choices)
            return {"elements": [{"element": choices[0], "method": "click", "arguments": []}]}

        sh = await make(model=LLMClient(FunctionLLM(first_choice), choice_mode=True), cache_dir=cache)
        await sh.page.goto(server.url("replay/sign-in"))
        result = await sh.agent().execute(task, variables={"user": "ada"})
    finally:
        route.remove()
    assert len(offered) == 1 and [c.split(" [")[0] for c in offered[0]] == ["button: Log in", NO_CHOICE], offered
    assert result.success and result.replay is not None and not result.replay.fell_back, result.message
    assert result.replay.replayed == [0] and result.replay.healed == [1]
    assert await sh.page.inner_text("#out") == "Signed in as ada"
