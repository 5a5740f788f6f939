"""A slow page turns no done act into a failure, and no act is sent twice.

The servers wait (4 s after a POST, like a login that hashes a password on a busy machine); the
model is present, so a self-heal could follow a failed first try. Every submission is counted
at the server: exactly one each, and ``success=True``; and every model request is counted: one
to plan each act, none for a heal (the scripted model cannot answer a heal prompt with anything
but a plan, so ``result.healed`` alone could not show a heal was tried). The flows at the end run with DevTools
CPU throttling (6x). Both page kinds (``make_stagehand``).
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from _server import Request, Response

from stagehand_py.testing import FunctionLLM

from ._ops import element, first_user

SERVER_DELAY = 4.0

LOGIN = """<!doctype html><title>Sign in</title><h1>Sign in</h1>
<form method=post action="/slow-login"><label>Username <input name=username></label>
<label>Password <input name=password type=password></label><button>Sign in</button></form>"""

XHR = """<!doctype html><title>Settings</title><h1>Settings</h1><p id=status>Not saved</p>
<button onclick="fetch('/slow-save', {method: 'POST'}).then(r => r.text()).then(t => {
  document.getElementById('status').textContent = t; })">Save settings</button>"""


def _items(page: int) -> str:
    rows = "".join(f"<li>Item {n}</li>" for n in range((page - 1) * 5 + 1, page * 5 + 1))
    return (f"<!doctype html><title>Items, page {page}</title><h1>Items, page {page}</h1><ul>{rows}</ul>"
            f"<a href='/slow-items?page={page + 1}'>Next page</a>")


#: instruction words -> (outline line regex, method, arguments)
PLAN = {
    "sign in": (r"button: Sign in", "click", []),
    "username": (r"textbox: Username", "fill", ["%user%"]),
    "password": (r"textbox: Password", "fill", ["%password%"]),
    "save settings": (r"button: Save settings", "click", []),
    "next page": (r"link: Next page", "click", []),
}


def _model() -> FunctionLLM:
    def answer(request) -> dict:
        text = first_user(request)
        said = re.search(r"Instruction: (.*)", text)
        wanted = next((plan for words, plan in PLAN.items() if said and words in said.group(1).lower()), None)
        if wanted is None:
            return {"elements": [], "opens_options": False}
        line, method, arguments = wanted
        m = re.search(rf"\[(\d+-\d+)\] {line}", text)
        if m is None:
            return {"elements": [], "opens_options": False}
        return {"elements": [element(m.group(1), method, arguments, line)], "opens_options": False}

    return FunctionLLM(answer)


class Counter:
    def __init__(self) -> None:
        self.posts = 0
        self.lock = threading.Lock()

    def slow(self, body: str, delay: float = SERVER_DELAY, *, until: threading.Event | None = None):
        """A handler answering ``body`` after ``delay`` seconds, or once ``until`` is set (at most 60 s)."""
        def handle(req: Request) -> Response:
            if req.method == "POST":
                with self.lock:
                    self.posts += 1
            if until is None:
                time.sleep(delay)
            else:
                until.wait(60)
            return Response.html(body)

        return handle


@pytest.fixture
def sites(server):
    counter = Counter()
    welcome = "<!doctype html><title>Welcome</title><h1>Welcome, ada</h1>"
    with server.route("/slow-login-form", lambda req: Response.html(LOGIN)), \
            server.route("/slow-login", counter.slow(welcome)), \
            server.route("/slow-settings", lambda req: Response.html(XHR)), \
            server.route("/slow-save", counter.slow("Saved")), \
            server.route("/slow-items", lambda req: Response.html(_items(int(req.query.get("page", "1"))))):
        yield server, counter


@pytest.mark.parametrize("how", ["instruction", "observe-then-act"])
async def test_a_form_answered_4_s_after_the_post_is_submitted_once_and_succeeds(make_stagehand, sites, how) -> None:
    server, counter = sites
    model = _model()
    sh = await make_stagehand(model=model)
    await sh.page.goto(server.url("slow-login-form"))
    if how == "instruction":
        result = await sh.act("click the sign in button")
    else:
        [action] = await sh.observe("click the sign in button")
        result = await sh.act(action)
    assert result.success and not result.healed, result.message
    assert len(model.requests) == 1  # the plan (act's or observe's); no heal was asked for
    assert counter.posts == 1
    assert len(result.dispatched) == 1 and result.dispatched[0].startswith("click on xpath=")
    assert await sh.page.title() == "Welcome"


async def test_an_xhr_submit_answered_after_4_s_is_sent_once_and_succeeds(make_stagehand, sites) -> None:
    server, counter = sites
    model = _model()
    sh = await make_stagehand(model=model)
    await sh.page.goto(server.url("slow-settings"))
    result = await sh.act("click save settings")
    assert result.success and not result.healed, result.message
    assert len(model.requests) == 1  # the plan; no heal
    await sh.page.wait_for_function("document.getElementById('status').textContent === 'Saved'", timeout=30_000)
    assert counter.posts == 1 and len(result.dispatched) == 1
    assert await sh.page.locator("button").count() == 1  # the button is still there: nothing to heal


async def test_an_action_that_fails_after_it_was_sent_is_not_healed_nor_repeated(make_stagehand, sites) -> None:
    """A click whose navigation outlasts the caller's timeout: a typed timeout error (the executor's,
    saying the click was sent, or on a loaded machine the verb's own deadline, a moment later);
    either way the server got one POST, and no heal ran (the model was asked once, to plan)."""
    from stagehand_py import StagehandTimeoutError

    server, counter = sites
    model = _model()
    sh = await make_stagehand(model=model)
    await sh.page.goto(server.url("slow-login-form"))
    await sh.page.evaluate("document.querySelector('form').action = '/slower-login'")
    [action] = await sh.observe("click the sign in button")
    answer = threading.Event()
    with server.route("/slower-login", counter.slow("<title>Welcome</title>", until=answer)):
        # The server answers only once the caller's 6 s bound has run out: the bound is what is tested.
        with pytest.raises(StagehandTimeoutError, match=r"after it was sent to the page|act\(\) did not finish within timeout=6"):
            await sh.act(action, timeout=6)
        answer.set()
        await sh.page.wait_for_url("**/slower-login", timeout=60_000)
    assert counter.posts == 1
    assert len(model.requests) == 1  # observe's; no heal


async def _throttle(sh) -> None:
    session = await sh.page.context.new_cdp_session(sh.page)
    await session.send("Emulation.setCPUThrottlingRate", {"rate": 6})


async def test_login_and_pagination_under_6x_cpu_throttling(make_stagehand, sites) -> None:
    server, counter = sites
    model = _model()
    sh = await make_stagehand(model=model)
    await _throttle(sh)
    await sh.page.goto(server.url("slow-login-form"))
    variables = {"user": "ada", "password": {"value": "s3cret-pass", "description": "the password"}}
    assert (await sh.act("fill the username", variables=variables)).success
    assert (await sh.act("fill the password", variables=variables)).success
    result = await sh.act("click the sign in button")
    assert result.success and counter.posts == 1 and await sh.page.title() == "Welcome"
    await sh.page.goto(server.url("slow-items?page=1"))
    for page in (2, 3):
        asked = len(model.requests)
        result = await sh.act("go to the next page")
        assert result.success and not result.healed, result.message
        assert len(model.requests) == asked + 1  # the plan; no heal
        assert await sh.page.title() == f"Items, page {page}"
