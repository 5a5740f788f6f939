"""Agent runs that replay: stored, replayed with no model, healed step by step, exported.

A real page on 127.0.0.1 (both page kinds), a scripted model whose calls are counted: the first run
takes model calls; the replay takes none; with the button renamed, exactly one (the heal).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _server import Response

from stagehand_py import Action, ActionFailedError, AgentError, AgentResult, ElementIdentity, InvalidArgumentError
from stagehand_py._prompts.choice import NO_CHOICE, choice_enum
from stagehand_py.agent._recording import load_recording
from stagehand_py.llm import LLMClient
from stagehand_py.testing import FunctionLLM, capture_requests

from . import test_agent_tabs
from ._script import AgentScript, call

ROOT = Path(__file__).resolve().parent.parent.parent
#: Both page kinds: a page the test launched and wrapped (Stagehand(page)), and Stagehand.launch().
make = test_agent_tabs.make
SECRET = "4"  # the quantity is a variable: only %qty% may be stored
STATE = {"label": "Add to cart"}

SHOP = """<!doctype html><title>Shop</title><h1>Tiny shop</h1>
<label>Quantity <input id=qty></label>
<button id=add onclick="document.getElementById('cart').textContent = 'Cart: ' + document.getElementById('qty').value + ' items'">{label}</button>
<p id=cart>Cart: 0 items</p><p>Delivery: Tuesday</p>"""


@pytest.fixture
def shop(server):
    STATE["label"] = "Add to cart"
    route = server.route("/replay/shop", lambda r: Response.html(SHOP.replace("{label}", STATE["label"])))
    yield server
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
    with pytest.raises(AgentError, match="ran out"):  # replay=False: the live agent asks the model (it has no steps)
        await _run(make, cache, shop, AgentScript([]), replay=False)
    sh = await make(model=AgentScript([]))
    with pytest.raises(InvalidArgumentError, match="cache directory"):
        await sh.agent().execute(TASK, replay=True)


def _subprocess_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STAGEHAND_MODEL")}
    env.update(STAGEHAND_MODELS_DIR=str(tmp_path / "no-models"), STAGEHAND_BLOCK_MODEL_REQUESTS="1",
               STAGEHAND_VAR_QTY=SECRET, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    return env


def _pytest(path: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(path), "--rootdir", str(tmp_path),
         "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=session",
         "-o", "asyncio_default_test_loop_scope=session", "--stagehand-artifacts", str(tmp_path / "artifacts")],
        cwd=tmp_path, env=_subprocess_env(tmp_path), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for both page kinds: the second check reads the package and its dependencies
    from it and checks only its own two exported files (-n 0 under load: 63 s for the first kind,
    cold; 33 s for the second, from the cache)."""
    return tmp_path_factory.mktemp("mypy") / "cache"


async def test_an_exported_test_passes_with_model_requests_blocked_and_type_checks(make, shop, tmp_path, mypy_cache, recorded):
    _, first = recorded
    test_file = first.to_pytest(tmp_path / "test_exported_run.py")
    script = first.to_script(tmp_path / "exported_run.py")
    source = test_file.read_text()
    assert "await stagehand.act(" in source and "Action(selector=" in source and "'%qty%'" in source
    assert "element=ElementIdentity(role='button', name='Add to cart')" in source
    assert f"'{SECRET}'" not in source and f"'{SECRET}'" not in script.read_text()
    assert "class " in script.read_text() and "schema=" in script.read_text()  # extract with a pydantic model
    # The type check and the exported test's run (nothing drifted: it passes with every model request blocked)
    # read the two files and nothing else of each other's: they run at once.
    typed, done = await asyncio.gather(
        asyncio.to_thread(subprocess.run, [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache),
                                           str(test_file), str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300),
        asyncio.to_thread(_pytest, test_file, tmp_path))
    assert typed.returncode == 0, typed.stdout + typed.stderr
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


async def test_an_exported_test_fails_on_drift_with_model_requests_blocked(make, shop, tmp_path, recorded):
    _, first = recorded
    test_file = first.to_pytest(tmp_path / "test_exported_run.py")
    STATE["label"] = "Add to basket"
    drifted = _pytest(test_file, tmp_path)
    # The identity check caught the renamed button and asked to heal it: blocked, so the test fails and says how
    # to record the heal (the plugin's hint), instead of clicking whatever is at the old path.
    assert drifted.returncode == 1 and "purpose 'heal'" in drifted.stdout, drifted.stdout[-3000:]
    assert "--stagehand-record once" in drifted.stdout


async def test_an_exported_script_runs_on_the_public_api(make, shop, tmp_path, monkeypatch, recorded):
    _, first = recorded
    path = first.to_script(tmp_path / "exported_script.py")
    monkeypatch.setenv("STAGEHAND_VAR_QTY", SECRET)
    spec = importlib.util.spec_from_file_location("exported_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    extracts: list[str] = []
    sh = await make(model=FunctionLLM(lambda r: extracts.append(r.purpose) or {"data": {"delivery": "Tuesday"},
                                                                             "instruction_satisfied": True}))
    await module.run(sh)
    assert await sh.page.inner_text("#cart") == f"Cart: {SECRET} items" and extracts == ["extract"]


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


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagehand_py.batch._cli", "replay", *args], cwd=tmp_path,
                          env=_subprocess_env(tmp_path), capture_output=True, text=True, timeout=300)


async def test_replay_check_reports_drift_per_step_with_no_model(make, shop, tmp_path, recorded):
    cache, first = recorded
    [stored] = list((cache / "agent-runs").iterdir())
    exported = first.to_pytest(tmp_path / "test_exported_run.py")
    # Each check replays in a browser of its own: the stored run and the exported file are checked at once.
    for same in await asyncio.gather(*(asyncio.to_thread(_cli, tmp_path, str(source), "--check") for source in (stored, exported))):
        assert same.returncode == 0, same.stdout + same.stderr
        assert same.stdout.count(" replayed ") == 3 and "model calls: 0" in same.stdout, same.stdout
    STATE["label"] = "Add to basket"
    for drifted in await asyncio.gather(*(asyncio.to_thread(_cli, tmp_path, str(source), "--check")
                                          for source in (stored, exported))):
        assert drifted.returncode == 1, drifted.stdout + drifted.stderr
        lines = drifted.stdout.splitlines()
        assert " replayed " in lines[0] and " drifted " in lines[1] and " skipped " in lines[2], drifted.stdout
        assert "was button 'Add to cart', now button 'Add to basket'" in lines[1]
        assert "model calls: 0" in drifted.stdout
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
