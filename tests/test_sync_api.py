"""The sync API on real Chromium, driven by sync Playwright.

How these tests run next to pytest-asyncio (session loop, asyncio_mode=auto): they are plain
``def`` tests. pytest-asyncio only runs its loop while an async test or fixture runs, so in a
``def`` test no loop is running and ``sync_playwright()`` starts. But between two sync calls
Playwright marks *its own* loop as the thread's running loop (until it stops), so while a sync
Playwright is open in the main thread neither an async test nor a second ``sync_playwright()``
can run there. Hence: the module's sync Playwright (``sync_browser``) is module-scoped and this
module has no async tests, and the tests that start another sync Playwright
(``Stagehand.launch()``) run it in a worker thread (:func:`in_thread`).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from _browser import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

import stagehand_py
from stagehand_py import (
    Action,
    ActResult,
    ConfigurationError,
    InvalidArgumentError,
    PageClosedError,
    Snapshot,
    sync_api,
)
from stagehand_py._sync_bridge import (
    PlaywrightInternalsChanged,
    async_view,
    check_internals,
    sync_view,
)

T = TypeVar("T")


def in_thread(fn: Callable[[], T], *, timeout: float = 120) -> T:
    """Run ``fn`` in a fresh thread (no asyncio loop, no sync Playwright there) and return its result."""
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=body, name="sync-api-test")
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn} did not finish within {timeout}s"
    if "error" in box:
        raise box["error"]
    return box["result"]


@pytest.fixture(scope="module")
def sync_pw() -> Iterator[Playwright]:
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="module")
def sync_browser(sync_pw: Playwright) -> Iterator[Browser]:
    browser = sync_pw.chromium.launch(executable_path=CHROMIUM_EXECUTABLE, args=CHROMIUM_ARGS, headless=True)
    yield browser
    browser.close()


@pytest.fixture
def sync_page(sync_browser: Browser) -> Iterator[Page]:
    context = sync_browser.new_context()
    yield context.new_page()
    context.close()


# --- the bridge's footing ------------------------------------------------------------------


def test_playwright_internals_the_sync_bridge_relies_on(sync_page: Page) -> None:
    """If this fails after a Playwright upgrade, stagehand_py/_sync_bridge.py needs a new bridge."""
    from playwright._impl import _async_base, _impl_to_api_mapping, _sync_base

    check_internals()
    assert hasattr(sync_page, "_impl_obj"), "sync Page._impl_obj (the shared impl object) is gone"
    assert callable(getattr(sync_page, "_sync", None)), "sync Page._sync(awaitable) is gone"
    assert hasattr(sync_page, "_loop") and hasattr(sync_page, "_dispatcher_fiber"), "SyncBase._loop/_dispatcher_fiber gone"
    for module in (_async_base, _sync_base):
        mapping = getattr(module, "mapping", None)
        assert mapping is not None, f"{module.__name__}.mapping (ImplToApiMapping singleton) is gone"
        for attr in ("from_impl", "from_maybe_impl", "_mapping"):
            assert hasattr(mapping, attr), f"{module.__name__}.mapping.{attr} is gone"
    # The reason for the flavour guard: one cache attribute for both flavours' wrappers.
    api_attr = getattr(_impl_to_api_mapping, "API_ATTR", None)
    assert api_attr is not None, "playwright._impl._impl_to_api_mapping.API_ATTR is gone"
    assert getattr(sync_page._impl_obj, api_attr) is sync_page, (
        "impl objects no longer cache their API wrapper under API_ATTR; revisit _install_flavour_guard"
    )


def test_missing_internal_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright._impl import _async_base

    class Bare:
        from_impl = from_maybe_impl = None

    monkeypatch.setattr(_async_base, "mapping", Bare())
    with pytest.raises(PlaywrightInternalsChanged, match=r"playwright\._impl\._async_base\.mapping\._mapping"):
        check_internals()


def test_views_keep_each_flavour_apart(sync_page: Page) -> None:
    from playwright.async_api import BrowserContext as AsyncContext
    from playwright.async_api import Frame as AsyncFrame
    from playwright.async_api import Page as AsyncPage
    from playwright.sync_api import BrowserContext as SyncContext
    from playwright.sync_api import Frame as SyncFrame

    assert isinstance(sync_page.context, SyncContext)  # the sync side saw the context first
    view = async_view(sync_page)
    assert isinstance(view, AsyncPage) and view._impl_obj is sync_page._impl_obj
    assert isinstance(view.context, AsyncContext) and view.context is view.context
    assert isinstance(view.main_frame, AsyncFrame)  # the async side sees the frame first
    assert isinstance(sync_page.main_frame, SyncFrame) and isinstance(sync_page.context, SyncContext)
    assert sync_view(view) is sync_page
    # Events carry the right flavour to each side's handlers.
    seen: list[Any] = []
    sync_page.on("framenavigated", lambda frame: seen.append(frame))
    sync_page.goto("about:blank")
    assert seen and all(isinstance(frame, SyncFrame) for frame in seen)


# --- the sync Stagehand --------------------------------------------------------------------


def test_snapshot_of_a_page_from_sync_playwright(sync_page: Page, server: Any) -> None:
    sync_page.goto(server.url("forms.html"))
    with sync_api.Stagehand(sync_page) as stagehand:
        assert stagehand.page is sync_page
        snapshot = stagehand.snapshot()
        assert isinstance(snapshot, Snapshot) and snapshot.url == server.url("forms.html")
        assert "textbox: Username" in snapshot.tree and "button: Sign in" in snapshot.tree
        scoped = stagehand.snapshot(selector="#country")
        assert "combobox: Country" in scoped.tree and "Username" not in scoped.tree
    assert not sync_page.is_closed()  # a wrapped page is the user's: close() leaves it open
    sync_page.fill("#username", "still usable")


def test_act_on_an_action_with_no_model(sync_page: Page, server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    sync_page.goto(server.url("forms.html"))
    stagehand = sync_api.Stagehand(sync_page)
    snapshot = stagehand.snapshot()
    username = next(i for i in snapshot.ids if snapshot.line_for(i) == f"[{i}] textbox: Username")
    action = Action(selector="xpath=" + snapshot.xpath_map[username], method="fill", arguments=["%user%"])
    result = stagehand.act(action, variables={"user": "ada"})
    assert isinstance(result, ActResult) and result.success
    assert sync_page.input_value("#username") == "ada"
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):  # the async core's errors, unchanged
        stagehand.observe("the sign in button")


def test_closed_page_raises_page_closed_error(sync_browser: Browser, server: Any) -> None:
    page = sync_browser.new_page()
    try:
        page.goto(server.url("forms.html"))
        stagehand = sync_api.Stagehand(page)
        stagehand.snapshot()
        page.close()
        with pytest.raises(PageClosedError, match="closed"):
            stagehand.snapshot()
        with pytest.raises(PageClosedError):
            stagehand.act(Action(selector="xpath=/html[1]/body[1]", method="click"))
        stagehand.close()  # closing after the page went is fine
    finally:
        page.context.close()


def test_rejects_what_is_not_a_sync_page(sync_page: Page) -> None:
    with pytest.raises(InvalidArgumentError, match="sync Playwright Page, got Page"):
        sync_api.Stagehand(async_view(sync_page))  # an async Page
    with pytest.raises(InvalidArgumentError, match="got str"):
        sync_api.Stagehand("https://example.com")  # type: ignore[arg-type]


def test_launch_drives_its_own_browser_and_closes_it(server: Any) -> None:
    def run() -> tuple[str, bool, str]:
        with sync_api.Stagehand.launch() as stagehand:
            page = stagehand.page
            assert isinstance(page, Page)
            page.goto(server.url("forms.html"))
            tree = stagehand.snapshot().tree
            connected = page.context.browser.is_connected()
        with pytest.raises(PageClosedError, match="Playwright behind this page has been stopped") as stopped:
            stagehand.snapshot()
        return tree, connected, str(stopped.value)

    tree, connected, _ = in_thread(run)
    assert connected and "textbox: Username" in tree


def test_launch_inside_a_running_loop_says_what_to_do() -> None:
    async def main() -> None:
        sync_api.Stagehand.launch()

    with pytest.raises(ConfigurationError, match=r"asyncio loop is running.*await stagehand_py.Stagehand.launch"):
        in_thread(lambda: asyncio.run(main()))


# --- no drift between the two faces ----------------------------------------------------------


def _public_members(cls: type) -> dict[str, Any]:
    return {name: member for name, member in inspect.getmembers(cls) if not name.startswith("_") or name == "__init__"}


def _parameters(func: Any) -> list[tuple[str, Any, Any, Any]]:
    """(name, kind, default, annotation) of each public parameter; `page` is typed per flavour."""
    params = inspect.signature(func).parameters.values()
    return [
        (p.name, p.kind, p.default, None if p.name == "page" else p.annotation) for p in params if not p.name.startswith("_")
    ]


def test_sync_class_mirrors_every_public_async_member() -> None:
    async_cls, sync_cls = stagehand_py.Stagehand, sync_api.Stagehand
    async_members, sync_members = _public_members(async_cls), _public_members(sync_cls)
    assert set(async_members) <= set(sync_members), f"missing in sync_api.Stagehand: {set(async_members) - set(sync_members)}"
    checked = 0
    for name, member in async_members.items():
        mirrored = sync_members[name]
        if isinstance(inspect.getattr_static(async_cls, name), property):
            assert isinstance(inspect.getattr_static(sync_cls, name), property), f"{name} must be a property in both"
            continue
        assert _parameters(mirrored) == _parameters(member), f"sync_api.Stagehand.{name} drifted from the async signature"
        if name != "__init__":
            returns = inspect.signature(member).return_annotation
            assert inspect.signature(mirrored).return_annotation == returns, f"{name} return type drifted"
            assert not inspect.iscoroutinefunction(mirrored), f"sync_api.Stagehand.{name} must not be async"
        checked += 1
    assert checked >= 9  # __init__, launch, connect, close, snapshot, observe, act, extract, agent, evaluate
    assert callable(sync_cls.__enter__) and callable(sync_cls.__exit__)  # `with` for `async with`


def test_observe_act_extract_with_a_scripted_model(sync_page: Page, server: Any) -> None:
    from operations._ops import element, find_id
    from pydantic import BaseModel

    from stagehand_py.testing import FunctionLLM

    class Heading(BaseModel):
        heading: str

    def model(request: Any) -> dict[str, Any]:
        if request.purpose == "observe":
            return {"elements": [element(find_id(request, "textbox: Username"), "fill", ["%user%"], "Username field")]}
        assert request.purpose == "extract"
        return {"data": {"heading": "Sign in"}, "instruction_satisfied": True}

    sync_page.goto(server.url("forms.html"))
    stagehand = sync_api.Stagehand(sync_page, model=FunctionLLM(model))
    [action] = stagehand.observe("the username field", variables={"user": "ada"})
    assert action.arguments == ["%user%"] and action.selector.startswith("xpath=")
    assert stagehand.act(action, variables={"user": "ada"}).success
    assert sync_page.input_value("#username") == "ada"
    assert stagehand.extract("the page heading", schema=Heading) == Heading(heading="Sign in")
    reported = stagehand.extract("the page heading", schema=Heading, report=True)  # the twin takes report= too
    assert reported.data == Heading(heading="Sign in") and reported.mode == "schema" and reported.calls == 1
    assert stagehand.metrics.by_purpose["observe"].requests == 1


def test_agent_tools_may_call_the_sync_api(sync_page: Page, server: Any) -> None:
    """A plain tool runs in a Playwright greenlet, gets the sync Stagehand, and may make sync calls."""
    from stagehand_py.testing import FunctionLLM

    sync_page.goto(server.url("forms.html"))
    stagehand = sync_api.Stagehand(sync_page, model=FunctionLLM(lambda request: {}))
    seen: list[Any] = []

    def page_title(stagehand: sync_api.Stagehand) -> str:
        """The page title."""
        seen.append(stagehand)
        return stagehand.page.title()  # a sync Playwright call from inside the async core

    agent = stagehand.agent(tools=[page_title])
    assert isinstance(agent, sync_api.Agent) and agent.mode == "dom"
    tool = next(t for t in agent._core._user_tools if t.name == "page_title")
    run = SimpleNamespace(driver=stagehand._core)  # what the agent hands a tool: its driver, the (async) Stagehand
    outcome = stagehand._run(tool.run(run, tool.args_model()))
    assert outcome.text == "Forms" and seen == [stagehand]


def test_sync_agent_mirrors_the_async_agent() -> None:
    from stagehand_py.agent import Agent as AsyncAgent

    for name in ("execute", "stream"):
        sync_params = _parameters(getattr(sync_api.Agent, name))
        async_params = _parameters(getattr(AsyncAgent, name))
        if name == "execute":  # callbacks are typed by their alias in the async module
            sync_params = [p for p in sync_params if p[0] != "callbacks"]
            async_params = [p for p in async_params if p[0] != "callbacks"]
        assert [p[:3] for p in sync_params] == [p[:3] for p in async_params], f"sync Agent.{name} drifted"
    assert isinstance(inspect.getattr_static(sync_api.Agent, "mode"), property)


def test_tabs_and_downloads_through_the_sync_twin(sync_page: Page, tmp_path: Any) -> None:
    sh = sync_api.Stagehand(sync_page, downloads_dir=tmp_path)
    sync_page.set_content('<button onclick="window.open(\'about:blank\')">Open</button>'
                          '<a href="data:text/plain,hello" download="hello.txt">Get</a>')
    saved = sh.act(Action(selector="text=Get", method="click")).downloads
    assert [d.suggested_filename for d in saved] == ["hello.txt"] and (tmp_path / "hello.txt").read_text() == "hello"
    sh.act(Action(selector="text=Open", method="click"))
    assert len(sh.pages) == 2 and sh.page is not sync_page and sh.pages[0] is sync_page
    sh.switch_to_page(sync_page)
    assert sh.page is sync_page
    sh.close_page(1)
    assert sh.pages == [sync_page] and sh.downloads == saved
