"""Exported agent runs check their outcome (issue 38): the orders run of the shop app (sign in with a coupon,
paginate, save_progress, done with an output schema) exported with ``to_pytest``/``to_script`` and run as a user
runs it, and checked with ``stagehand-py replay --check``.

The run is recorded once per page kind (a page the test launched and wrapped, and ``Stagehand.launch()``). The
exported files do not depend on the page kind: when both kinds' files are byte-identical, the second kind's checks
read the first kind's subprocess runs (:func:`_once`) instead of running them again. The same files type-check
under ``mypy --strict`` in tests/test_typing.py (on its warm cache).
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
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus
from xml.etree import ElementTree

import pytest
from _server import StaticServer
from llm._fake_provider import FakeProvider, chat_completion

from stagehand_py import AgentResult
from stagehand_py.agent._outcome import EndState
from stagehand_py.testing import FunctionLLM

from . import test_replay
from ._script import AgentScript, call

ROOT, SECRET, COUPON, ORDERS, Shop = test_replay.ROOT, test_replay.SECRET, test_replay.COUPON, test_replay.ORDERS, test_replay.Shop
#: Both page kinds, and the shop app as recorded (test_replay's fixtures).
make, shop = test_replay.make, test_replay.shop



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
        make, shop, orders_recorded, changed, tmp_path):
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
    total = report["test_total_changed"]
    assert ("step 6 read other data than the page shows now at "
            f"{changed['total_changed'].url('replay/orders?coupon=%coupon%&page=2')} (titled 'Orders, page 2 of 2'):") in total
    assert "  - orders[1]: expected {'id': 'A-1004', 'total': '$8.75'}; '$8.75' not shown; the page shows 'A-1004 | $9.75' there" \
        in total, total
    assert "purpose 'heal'" in report["test_renamed"] and "--stagehand-record once" in report["test_renamed"]
    assert "async def functions are not natively supported" in report["test_unmarked"]
    project = ran["project"].process
    assert project.returncode == 0 and "2 passed" in project.stdout and "created: 2/2 workers" in project.stdout, \
        project.stdout[-3000:] + project.stderr[-2000:]
    recorded, replayed, requests, cassette = ran["claim"]
    assert recorded.report == replayed.report == {"test_orders_claim": "passed"} and requests == 1, \
        recorded.process.stdout[-2000:] + replayed.process.stdout[-2000:]
    assert '"verdict": "yes"' in cassette.replace('\\"', '"') and _leaks(cassette) == []


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
    # A row none of whose values is left: what the page shows instead is the row most like it.
    assert ("orders[0]: expected {'id': 'A-1003', 'total': '$27.00'}; 'A-1003', '$27.00' not shown; "
            "the row or item most like it on the page shows 'A-1002 | $40.00'") in moved, moved
    assert ("URL: expected " + repr(changed["next_leads_back"].url("replay/orders?coupon=%coupon%&page=2"))
            + "; the page is at " + repr(changed["next_leads_back"].url("replay/orders?coupon=%coupon%&page=1"))) in moved


def _cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagehand_py.batch._cli", "replay", *args], cwd=folder,
                          env=_subprocess_env(folder), capture_output=True, text=True, timeout=1200)


async def test_replay_check_names_a_drifted_element_and_a_changed_outcome(make, shop, orders_recorded, changed, tmp_path):
    cache, run = orders_recorded
    [stored] = (cache / "agent-runs").iterdir()
    sources = {"stored": (stored.read_text(), "json"), "exported": (run.to_pytest(tmp_path / "x.py").read_text(), "py")}
    checks = sorted({(kind, change) for kind in sources for change in ("as_recorded", "next_leads_back")}
                    | {("exported", "renamed")})
    paths = {}
    for kind, change in checks:
        text, suffix = sources[kind]
        paths[kind, change] = path = tmp_path / f"{kind}_{change}.{suffix}"
        path.write_text(text if change == "as_recorded" else _moved(text, shop, changed[change]))

    # One process checks the five files in turn (one interpreter start, not five), each under its own "== FILE";
    # beside it, a file that is not there (the same for both page kinds, so run once too).
    ran = await _once({**{k: t for k, (t, _) in sources.items()}, "origin": shop.origin, "cli": "3"},
                      {"all": lambda: _cli(tmp_path, *(str(paths[c]) for c in checks), "--check"),
                       "missing": lambda: _cli(tmp_path, str(tmp_path / "nothing.json"), "--check")})
    process = ran["all"]
    assert process.returncode == 1, process.stdout + process.stderr  # the worst of the five: a drift, no error
    sections = dict(zip([Path(p).stem for p in re.findall(r"^== (\S+)$", process.stdout, re.M)],
                        re.split(r"^== \S+\n", process.stdout, flags=re.M)[1:], strict=True))
    # Each file's exit code, as a scheduled job reads it: 1 for a drifted element and for a changed outcome.
    assert [re.sub(r": .*/", ": ", line) for line in process.stdout.split("== each file:\n")[1].splitlines()] == [
        f"{'as recorded' if change == 'as_recorded' else 'drifted'}: {paths[kind, change].name}" for kind, change in checks]
    for kind in sources:
        same = sections[f"{kind}_as_recorded"]
        assert same.count(" replayed ") == 7 and "outcome   as recorded" in same and "model calls: 0" in same, same
        # The outcome changed with every name the same: the data steps and the end state are named.
        moved = sections[f"{kind}_next_leads_back"]
        lines = moved.splitlines()
        assert " drifted " in lines[5] and "A-1003" in lines[5] and " drifted " in lines[6], moved
        assert "outcome   differs" in moved and "- URL: expected " in moved, moved
        assert "- title: expected 'Orders, page 2 of 2'; the page's title is 'Orders, page 1 of 2'" in moved
    drifted = sections["exported_renamed"]  # an element drifted: named, the rest skipped, the outcome not checked
    lines = drifted.splitlines()
    assert " drifted " in lines[4] and "was link 'Next page', now link 'Continue'" in lines[4], drifted
    assert " skipped " in lines[5] and "outcome   not checked" in drifted and "model calls: 0" in drifted
    assert ran["missing"].returncode == 2, ran["missing"].stdout + ran["missing"].stderr
