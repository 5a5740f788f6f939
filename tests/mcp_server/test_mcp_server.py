"""`stagehand-py mcp` as an MCP client sees it: the real server process (the installed entry
point) spoken to by the official SDK's client over stdio and over streamable HTTP on 127.0.0.1,
driving a real Chromium on the tests' local site. The model is the server's own configuration,
an OpenAI-compatible server on 127.0.0.1 (the Ollama / vLLM path), scripted by the test."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _server import Response
from llm._fake_provider import FakeProvider, chat_completion, error_body

ENTRY_POINT = str(Path(sys.executable).parent / "stagehand-py")
PASSWORD = "Sw0rdfish-MCP-secret"
USERNAME = "ada-lovelace-mcp"
TOOLS = {"navigate", "snapshot", "act_on_element", "observe", "act", "extract", "screenshot", "list_tabs",
         "switch_tab", "agent"}
TABS_PAGE = '<a href="/forms.html" target="_blank">Open the form</a>'


@pytest.fixture(scope="module")
def fake_model():
    with FakeProvider() as fake:
        yield fake


def write_config(tmp_path: Path, fake: FakeProvider, server: Any) -> Path:
    config = {
        "model": "openai/scripted-model",
        "base_url": f"{fake.url}/v1",
        "variables": {
            "password": {"env": "MCP_TEST_PASSWORD", "description": "the account password"},
            "username": USERNAME,
        },
        "allowed_domains": [server.origin.removeprefix("http://")],
    }
    path = tmp_path / "server.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["MCP_TEST_PASSWORD"] = PASSWORD  # the secret reaches the server through its environment only
    return env


class Transcript:
    """Every tool result the client saw, to check no secret was among them."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.texts: list[str] = []

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, str]:
        result = await self.client.call_tool(tool, arguments)
        text = "\n".join(getattr(c, "text", "") or "" for c in result.content)
        self.texts.append(text)
        return bool(result.is_error), text


def line_id(outline: str, line: str) -> str:
    m = re.search(rf"\[(\d+-\d+)\] {line}", outline)
    assert m, f"no line {line!r} in:\n{outline}"
    return m.group(1)


async def test_stdio_snapshot_act_extract_tabs_and_errors(tmp_path: Path, fake_model: FakeProvider, server: Any,
                                                          cross_server: Any) -> None:
    params = StdioServerParameters(command=ENTRY_POINT, args=["mcp", "--config", str(write_config(tmp_path, fake_model, server))],
                                   env=server_env())
    fake_model.reset()
    with server.route("/mcp_tabs.html", lambda request: Response.html(TABS_PAGE)):
        async with Client(params, read_timeout_seconds=120) as client:
            calls = Transcript(client)
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS

            failed, text = await calls.call("navigate", url=server.url("forms.html"))
            assert not failed and "Forms" in text
            failed, outline = await calls.call("snapshot")
            assert not failed and "textbox: Password" in outline

            # act on element ids, no model: the secret by name, a plain text as the control
            for element, value in (("textbox: Password", "%password%"), ("textbox: Username", "%username%"),
                                   ("textbox: About you", "plain words typed")):
                failed, text = await calls.call("act_on_element", element_id=line_id(outline, element), method="fill",
                                                arguments=[value])
                assert not failed and json.loads(text)["success"], text
            failed, outline = await calls.call("snapshot")
            assert 'value="plain words typed"' in outline  # control: the outline shows what was typed...
            assert 'value="%username%"' in outline  # ...and a variable's value comes back as its name

            fake_model.reply(chat_completion(json.dumps({"data": {"heading": "Sign in", "user": USERNAME},
                                                         "instruction_satisfied": True})))
            schema = {"type": "object", "properties": {"heading": {"type": "string"}, "user": {"type": "string"}},
                      "required": ["heading", "user"]}
            failed, text = await calls.call("extract", instruction="the heading and the user name", schema=schema)
            assert not failed, text
            assert json.loads(text) == {"heading": "Sign in", "user": "%username%"}
            prompt = json.dumps(fake_model.seen[-1].body)
            assert "the heading and the user name" in prompt and PASSWORD not in prompt and USERNAME not in prompt

            fake_model.reply(chat_completion(json.dumps({"elements": [
                {"element_id": line_id(outline, "button: Sign in"), "description": "Sign in button", "method": "click",
                 "arguments": []}]})))
            failed, text = await calls.call("observe", instruction="the sign in button")
            assert not failed, text
            observed = json.loads(text)[0]
            assert observed["method"] == "click" and observed["element_id"] == line_id(outline, "button: Sign in"), text

            # typed errors come back as tool errors, and the server keeps serving
            failed, text = await calls.call("act_on_element", element_id="7-999")
            assert failed and "InvalidArgumentError: no element '7-999'" in text and "snapshot" in text
            failed, text = await calls.call("navigate", url=cross_server.url("forms.html"))
            assert failed and "InvalidArgumentError:" in text and "allowed domains" in text
            fake_model.reply(error_body("no such model: scripted-model"), status=400)
            failed, text = await calls.call("act", instruction="click the sign in button")
            assert failed and "tool act: BadRequestError: " in text and "no such model" in text, text

            failed, text = await calls.call("navigate", url=server.url("mcp_tabs.html"))
            failed, outline = await calls.call("snapshot")
            await calls.call("act_on_element", element_id=line_id(outline, "link: Open the form"))
            deadline = time.monotonic() + 10
            # A tab the driven page opens becomes the driven one (Stagehand's follow_new_tabs rule).
            while True:
                tabs = json.loads((await calls.call("list_tabs"))[1])
                if [t["active"] for t in tabs] == [False, True] or time.monotonic() > deadline:
                    break
            assert [t["active"] for t in tabs] == [False, True] and tabs[1]["url"].endswith("/forms.html")
            failed, text = await calls.call("switch_tab", index=1)
            assert not failed and "Forms" in text
            failed, outline = await calls.call("snapshot")
            assert "textbox: Password" in outline and 'value="%username%"' not in outline  # a fresh form
            failed, text = await calls.call("switch_tab", index=5)
            assert failed and "InvalidArgumentError" in text

            fake_model.reply(chat_completion(json.dumps({
                "evaluation_previous_step": "ok", "memory": "", "next_goal": "finish",
                "action": {"tool": "done", "args": {"message": f"the form is open for {USERNAME}"}}})))
            failed, text = await calls.call("agent", instruction="check that the form is open", max_steps=2)
            assert not failed and json.loads(text)["status"] == "done", text
            assert json.loads(text)["message"] == "the form is open for %username%"

            shot = await client.call_tool("screenshot", {})
            assert not shot.is_error and shot.content[0].type == "image" and shot.content[0].mime_type == "image/png"

    everything = "\n".join(calls.texts)
    assert PASSWORD not in everything and USERNAME not in everything


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_addresses(port: int) -> list[str]:
    """The local addresses listening on ``port`` (Linux's /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(".".join(str(b) for b in reversed(bytes.fromhex(address))) if len(address) == 8 else address)
    return found


async def test_streamable_http_on_loopback(tmp_path: Path, fake_model: FakeProvider, server: Any) -> None:
    port = free_port()
    process = subprocess.Popen([ENTRY_POINT, "mcp", "--http", "--port", str(port), "--config",
                                str(write_config(tmp_path, fake_model, server))],
                               env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            await client.call_tool("navigate", {"url": server.url("forms.html")})
            outline = "\n".join(c.text for c in (await client.call_tool("snapshot", {})).content)
            result = await client.call_tool("act_on_element", {"element_id": line_id(outline, "textbox: Password"),
                                                               "method": "fill", "arguments": ["%password%"]})
            assert not result.is_error and json.loads(result.content[0].text)["success"]
        assert listening_addresses(port) == ["127.0.0.1"]
    finally:
        process.terminate()
        process.wait(timeout=30)
