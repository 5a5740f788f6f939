"""Every entry point checks its input like the verbs do, through one validator
(``stagehand_py._inputs.check_inputs``): ``agent.execute``'s variables, output schema and timeout,
the MCP server's variables, the batch task spec's schema; and ``snapshot()`` is bounded by
default, with a typed error naming the busy page.

A schema with a remote ``$ref`` pointing at the hostile host (``localhost``, the second host) is
refused, never fetched; the control validates with jsonschema the way the agent's output check
did (no registry) and shows the hostile host is reached.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import warnings
from pathlib import Path

import jsonschema
import pytest
from _server import Response

from stagehand_py import InvalidArgumentError, InvalidSchemaError, Stagehand, StagehandTimeoutError
from stagehand_py._util import ref_target
from stagehand_py.testing import FunctionLLM


@pytest.fixture
def schema_host(cross_server):
    """A schema the hostile host serves, and the requests it got for it."""
    with cross_server.recording("/schema.json", Response.json({"type": "string"})) as hits:
        yield cross_server.url("schema.json"), hits


def _remote(url: str) -> dict:
    return {"type": "object", "properties": {"name": {"$ref": url}}, "required": ["name"]}


MISSING_LOCAL = {"type": "object", "properties": {"name": {"$ref": "#/$defs/Name"}}}


def _no_model(request) -> dict:
    raise AssertionError("the run must not start")


@pytest.mark.parametrize("variables", [["password"], "password", {"my-pass": "x"}, {"pw": ["x"]}, {"pw": {"description": "no value"}}],
                         ids=["list", "string", "bad-name", "bad-value", "no-value"])
async def test_agent_execute_variables_get_a_typed_error(new_stagehand, variables) -> None:
    sh = await new_stagehand(model=FunctionLLM(_no_model))
    with pytest.raises(InvalidArgumentError, match=r"agent\.execute\(variables=\.\.\.\)"):
        await sh.agent().execute("sign in", variables=variables)


def test_control_the_agent_used_to_take_variables_with_dict() -> None:
    for variables in (["password"], "password"):
        with pytest.raises(ValueError) as info:
            dict(variables)  # what Run did with them: an untyped ValueError
        assert not isinstance(info.value, InvalidArgumentError)


@pytest.mark.parametrize("timeout", ["5", 0, -1, True])
async def test_agent_execute_timeout_gets_a_typed_error(new_stagehand, timeout) -> None:
    sh = await new_stagehand(model=FunctionLLM(_no_model))
    with pytest.raises(InvalidArgumentError, match="timeout"):
        await sh.agent().execute("sign in", timeout=timeout)


async def test_agent_output_with_a_remote_ref_is_refused_not_fetched(new_stagehand, schema_host) -> None:
    url, hits = schema_host
    sh = await new_stagehand(model=FunctionLLM(_no_model))
    with pytest.raises(InvalidSchemaError, match="remote \\$ref"):
        await sh.agent().execute("find the name", output=_remote(url))
    with pytest.raises(InvalidSchemaError, match="names nothing"):
        await sh.agent().execute("find the name", output=MISSING_LOCAL)
    await sh.page.set_content("<p>Ada</p>")
    with pytest.raises(InvalidSchemaError, match="remote \\$ref"):
        await sh.extract("the name", _remote(url))
    assert hits == []


def test_control_jsonschema_without_a_registry_fetches_the_remote_ref(schema_host) -> None:
    url, hits = schema_host
    schema = _remote(url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # jsonschema's old automatic retrieval
        errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors({"name": 5}))
    assert errors and hits == ["/schema.json"]  # the Python process asked the hostile host
    with pytest.raises(KeyError):
        ref_target(MISSING_LOCAL, "#/$defs/Name")  # and a missing local one was a bare KeyError


def test_the_batch_task_spec_schema_is_checked_when_loaded(tmp_path: Path, schema_host) -> None:
    from stagehand_py.batch._spec import load_spec

    url, hits = schema_host
    spec = tmp_path / "task.json"
    spec.write_text(json.dumps({"goal": "find the name", "output_schema": _remote(url)}))
    with pytest.raises(InvalidSchemaError, match="output_schema"):
        load_spec(spec)
    spec.write_text(json.dumps({"goal": "find the name", "output_schema": MISSING_LOCAL}))
    with pytest.raises(InvalidSchemaError, match="names nothing"):
        load_spec(spec)
    assert hits == []


def test_the_mcp_servers_variables_are_checked_when_it_is_built() -> None:
    from stagehand_py.mcp._config import MCPServerConfig
    from stagehand_py.mcp._server import build_server

    with pytest.raises(InvalidArgumentError, match="MCP server's configuration"):
        build_server(MCPServerConfig(variables={"my-pass": "x"}))


def test_the_pytest_marker_variables_use_the_same_check() -> None:
    import stagehand_py.pytest_plugin as plugin

    assert "check_inputs(" in inspect.getsource(plugin)


def test_snapshot_has_a_default_bound() -> None:
    default = inspect.signature(Stagehand.snapshot).parameters["timeout"].default
    assert isinstance(default, float) and 10 <= default <= 120


# The busy loop spins until the test releases it (a worker thread, not blocked by the loop, asks
# the server and flips a shared flag the loop reads; SharedArrayBuffer needs the page
# cross-origin isolated), or at the latest after 60 s: the page is busy exactly as long as the
# test needs it to be, not a fixed 20 s.
ISOLATED = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}
BUSY = """<title>Busy</title><button>Busy</button><script>
window.busyFlag = new Int32Array(new SharedArrayBuffer(4));
const releaser = `onmessage = ({data: [flag, url]}) => { const poll = () => fetch(url).then((r) => r.text()).then(
  (said) => said === 'go' ? Atomics.store(flag, 0, 1) : setTimeout(poll, 100)); poll(); };`;
new Worker(URL.createObjectURL(new Blob([releaser]))).postMessage([busyFlag, new URL('/busy-release', location.href).href]);
</script>"""
LOOP = ("setTimeout(() => { const end = Date.now() + 60000;"
        " while (Atomics.load(busyFlag, 0) === 0 && Date.now() < end) {} }, 50)")


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "control-unbounded"])
async def test_a_busy_page_gets_a_typed_error_naming_it(new_stagehand, server, bounded: bool) -> None:
    sh = await new_stagehand()
    released = threading.Event()
    with server.route("/busy", lambda req: Response(200, BUSY, "text/html; charset=utf-8", dict(ISOLATED))), \
            server.route("/busy-release", lambda req: Response(200, "go" if released.is_set() else "wait")):
        await sh.page.goto(server.url("busy?pw=hunter2-secret"))
        assert await sh.page.evaluate("crossOriginIsolated")  # else the loop cannot be released
        await sh.page.evaluate(LOOP)
        await asyncio.sleep(0.3)
        if bounded:
            with pytest.raises(StagehandTimeoutError) as info:
                await sh.snapshot(timeout=3)
            assert server.url("busy") in str(info.value) and "hunter2" not in str(info.value)
            released.set()
        else:
            snap = asyncio.ensure_future(sh.snapshot(timeout=None))
            done, _ = await asyncio.wait([snap], timeout=8)
            assert not done  # the control: with no bound the snapshot is still waiting on the busy page
            released.set()
            await snap  # it returns once the page's loop ends
        await sh.page.wait_for_function("true", timeout=60_000)  # the page recovers
    assert "button: Busy" in (await sh.snapshot()).tree
