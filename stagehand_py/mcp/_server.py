"""The MCP server: one browser, the public verbs as tools, the configuration's model and variables.

Every tool result and error message passes through the variables' redaction, so a value typed
into the page never travels back to the client; a failure comes back as an MCP tool error
naming the typed error (``ElementNotFoundError: ...``), never as a crash of the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from pydantic import Field

from .._errors import InvalidArgumentError, PageClosedError, StagehandError
from .._inputs import check_inputs
from .._secrets import VariableSet
from .._stagehand import Stagehand
from .._types import Action
from .._vision import masked_screenshot
from ..browser._guard import url_allowed
from ..llm import LLMClient
from ..llm._model_files import FETCH_COMMAND
from ..llm._policy import token_budget_for
from ..snapshot import Snapshot
from ._config import MCPServerConfig
from ._snapshot_pages import snapshot_page
from ._tabs import describe_tabs, tab_at

__all__ = ["ServerBrowser", "build_server"]

logger = logging.getLogger("stagehand_py")

INSTRUCTIONS = """\
Drives one real browser. Start with `navigate`, read the page with `snapshot` (one line per element,
`[id] role: name`), then act on an element by its id with `act_on_element` (no model needed), or in
plain words with `act`, `observe` and `extract`, or hand a whole task to `agent`. Secrets are
server-side variables: write `%name%` in an argument and the server types the value; you never see it."""


class ServerBrowser:
    """The server's browser: launched on the first tool call, one tab driven at a time."""

    def __init__(self, config: MCPServerConfig, *, variables: VariableSet, client: LLMClient | None) -> None:
        self.config = config
        self.variables = variables
        self.client = client
        self._root: Stagehand | None = None
        self._by_page: dict[Page, Stagehand] = {}
        self._current: Page | None = None
        self._xpaths: dict[str, str] = {}
        self._ids: dict[str, str] = {}
        # One browser, one tool at a time: two clicks racing on one page mean nothing useful.
        self.lock = asyncio.Lock()

    def _options(self) -> dict[str, Any]:
        budget = self.config.token_budget
        if budget is None and self.client is not None:
            budget = token_budget_for(self.client.model_name)
        return {"model": self.client, **({"token_budget": budget} if budget is not None else {})}

    async def stagehand(self) -> Stagehand:
        """The Stagehand of the active tab (launching the browser the first time)."""
        if self._root is None:
            # allowed_domains: the launched Stagehand holds the whole context to them (every tab,
            # frame, request and redirect of this browser) from before its first page loads.
            self._root = await Stagehand.launch(headless=self.config.headless, executable_path=self.config.executable_path,
                                                browser_options=self.config.browser_options(),
                                                allowed_domains=self.config.allowed_domains, **self._options())
            self._by_page[self._root.page] = self._root
            self._current = self._root.page
        page = self._current
        if page is None or page.is_closed():
            # The active tab closed: the first tab still open takes over.
            page = next((p for p in self._root.page.context.pages if not p.is_closed()), None)
            if page is None:
                raise PageClosedError("every tab of the server's browser is closed; restart the MCP server.")
            self._current = page
        if page not in self._by_page:
            # A tab the page opened: wrapped (close() leaves it to the browser), same model.
            self._by_page[page] = Stagehand(page, **self._options())
        return self._by_page[page]

    async def switch(self, index: int) -> Page:
        sh = await self.stagehand()
        page = tab_at(sh.page, index)
        await page.bring_to_front()
        self._current = page
        self.remember({})
        return page

    def redact(self, text: str) -> str:
        return self.variables.redact(text)

    def check_url(self, url: str) -> None:
        patterns = self.config.allowed_domains
        if patterns is not None and not url_allowed(url, patterns):
            raise InvalidArgumentError(f"{url} is outside the allowed domains ({', '.join(patterns)}); it was not opened.")

    def remember(self, xpath_map: Mapping[str, str]) -> None:
        self._xpaths = dict(xpath_map)
        self._ids = {xpath: element_id for element_id, xpath in xpath_map.items()}

    def xpath_for(self, element_id: str) -> str | None:
        return self._xpaths.get(element_id.strip("[] "))

    def id_for(self, selector: str) -> str | None:
        return self._ids.get(selector.removeprefix("xpath="))

    async def close(self) -> None:
        if self._root is not None:  # its guard goes with it
            await self._root.close()
        self._root = None
        self._by_page.clear()
        if self.client is not None:
            await self.client.aclose()  # the provider's connections, or the embedded model's engine


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, indent=1)


def build_server(config: MCPServerConfig, *, session: ServerBrowser | None = None) -> tuple[MCPServer, ServerBrowser]:
    """The MCP server for ``config`` and the browser session its tools drive (close it after)."""
    if session is None:
        choice = config.resolved_model()
        client = None if choice is None else LLMClient(choice.model, base_url=choice.base_url or config.base_url)
        variables = check_inputs("the MCP server's configuration", variables=config.resolved_variables())
        session = ServerBrowser(config, variables=variables, client=client)
    browser = session
    server: MCPServer = MCPServer("stagehand-py", instructions=INSTRUCTIONS, log_level="WARNING")

    async def guarded(run: Callable[[Stagehand], Awaitable[Any]]) -> Any:
        """Run a tool on the active tab; typed errors become MCP tool errors, redacted."""
        async with browser.lock:
            try:
                return await run(await browser.stagehand())
            except StagehandError as exc:
                raise ToolError(browser.redact(f"{type(exc).__name__}: {exc}")) from None
            except PlaywrightError as exc:
                raise ToolError(browser.redact(f"BrowserError: {exc.message.splitlines()[0] if exc.message else exc}")) from None
            except ToolError:
                raise
            except Exception as exc:  # not ours: its message may still quote a URL or a value
                raise ToolError(browser.redact(f"{type(exc).__name__}: {exc}")) from None

    def needs_model() -> None:
        if browser.client is None:
            raise InvalidArgumentError(
                "this tool needs a model and the server has none: set OPENAI_API_KEY or ANTHROPIC_API_KEY in the "
                "server's environment, give \"model\" in its configuration, or install the embedded model "
                f"({FETCH_COMMAND}). navigate, snapshot, act_on_element, screenshot and the tab tools work without one."
            )

    @server.tool(description="Open a URL in the active tab. Returns the page's title and final URL.")
    async def navigate(url: Annotated[str, Field(description="absolute http(s) URL")]) -> str:
        async def run(sh: Stagehand) -> str:
            browser.check_url(url)
            response = await sh.page.goto(url, wait_until="domcontentloaded")
            status = f" (HTTP {response.status})" if response is not None else ""
            return browser.redact(f"{await sh.page.title()} — {sh.page.url}{status}")
        result: str = await guarded(run)
        return result

    # The outline paged through, so pages 2.. come from the same snapshot as page 1 (a fresh one
    # could shift every line): (tab, URL, selector) -> the snapshot.
    paged: dict[tuple[Page, str, str | None], Snapshot] = {}

    @server.tool(description="The page as an outline: one line per element, '[id] role: name', indented by nesting. "
                 "Use the ids with act_on_element. A large page comes in pages of at most max_tokens; the header says "
                 "which page of how many. With query, the pages are ranked by relevance to it, best first.")
    async def snapshot(
        selector: Annotated[str | None, Field(description="XPath or CSS of a subtree to limit the outline to")] = None,
        max_tokens: Annotated[int | None, Field(ge=200, description="page size in tokens (default: the server's, "
                                                "20000 unless configured)")] = None,
        page: Annotated[int, Field(ge=1, description="which page, from 1; page 1 takes a fresh snapshot, later "
                                   "pages read the same one")] = 1,
        query: Annotated[str | None, Field(description="what you look for, e.g. 'the price of the Pro plan': pages "
                                           "come ranked by relevance to it")] = None,
    ) -> str:
        async def run(sh: Stagehand) -> str:
            key = (sh.page, sh.page.url, selector)
            snap = paged.get(key) if page > 1 else None
            if snap is None:
                snap = await sh.snapshot(selector=selector)
                paged.clear()
                paged[key] = snap
            browser.remember(snap.xpath_map)
            size = max_tokens or browser.config.snapshot_max_tokens
            return browser.redact(snapshot_page(snap, max_tokens=size, page=page, query=query, selector=selector))
        result: str = await guarded(run)
        return result

    @server.tool(description="Act on an element by the id a snapshot showed (no model call). Arguments may hold "
                 "%name% placeholders of the server's variables; the server types the value.")
    async def act_on_element(
        element_id: Annotated[str, Field(description="an id from the latest snapshot, e.g. '0-12'")],
        method: Annotated[str, Field(description="click, fill, type, press, select_option, check, uncheck, hover, "
                                     "scroll_into_view, ...")] = "click",
        arguments: Annotated[list[str] | None, Field(description="the method's arguments, e.g. ['%password%'] for fill")] = None,
    ) -> str:
        async def run(sh: Stagehand) -> str:
            xpath = browser.xpath_for(element_id)
            if xpath is None:
                browser.remember((await sh.snapshot()).xpath_map)
                xpath = browser.xpath_for(element_id)
            if xpath is None:
                raise InvalidArgumentError(f"no element {element_id!r} on the page; take a new snapshot and use one of its ids.")
            action = Action(selector=f"xpath={xpath}", method=method, arguments=list(arguments or []))
            result = await sh.act(action, variables=browser.variables.given or None)
            return browser.redact(_json({"success": result.success, "message": result.message, "url": sh.page.url}))
        result: str = await guarded(run)
        return result

    @server.tool(description="Find the elements matching an instruction and the action for each (a model call), "
                 "with the element_id act_on_element takes. Arguments use %name% for the server's variables.")
    async def observe(instruction: Annotated[str, Field(description="what to look for, e.g. 'the sign in form fields'")]) -> str:
        async def run(sh: Stagehand) -> str:
            needs_model()
            actions = await sh.observe(instruction, variables=browser.variables.given or None)
            # Ids stay the same across snapshots: give each action the id act_on_element takes.
            browser.remember((await sh.snapshot()).xpath_map)
            return browser.redact(_json([{"element_id": browser.id_for(a.selector), **a.model_dump()} for a in actions]))
        result: str = await guarded(run)
        return result

    @server.tool(description="Do one thing described in plain words (a model call), e.g. 'click Sign in' or "
                 "'type %username% into the email field'.")
    async def act(instruction: Annotated[str, Field(description="one action in plain words")]) -> str:
        async def run(sh: Stagehand) -> str:
            needs_model()
            result = await sh.act(instruction, variables=browser.variables.given or None)
            return browser.redact(_json({"success": result.success, "message": result.message,
                                         "actions": [a.model_dump() for a in result.actions], "url": sh.page.url}))
        result: str = await guarded(run)
        return result

    @server.tool(description="Extract data from the page (a model call). With a JSON Schema the answer is valid "
                 "against it; without one, {'extraction': text}.")
    async def extract(
        instruction: Annotated[str, Field(description="what to extract")],
        schema: Annotated[dict[str, Any] | None, Field(description="JSON Schema of the answer")] = None,
    ) -> str:
        async def run(sh: Stagehand) -> str:
            needs_model()
            data = await sh.extract(instruction, schema)
            return browser.redact(_json(data))
        result: str = await guarded(run)
        return result

    @server.tool(description="A PNG screenshot of the active tab. Fields and text showing a variable's value are "
                 "masked, so no typed value shows.")
    async def screenshot(full_page: bool = False) -> Image:
        async def run(sh: Stagehand) -> Image:
            data = await masked_screenshot(sh.page, browser.variables, full_page=full_page, type="png")
            return Image(data=data, format="png")
        result: Image = await guarded(run)
        return result

    @server.tool(description="The open tabs: index, URL, title, and which one the tools act on.")
    async def list_tabs() -> str:
        async def run(sh: Stagehand) -> str:
            return browser.redact(_json(await describe_tabs(sh.page)))
        result: str = await guarded(run)
        return result

    @server.tool(description="Make the tab at this index (from list_tabs) the one the tools act on.")
    async def switch_tab(index: int) -> str:
        async def run(sh: Stagehand) -> str:
            page = await browser.switch(index)
            return browser.redact(f"tab {index}: {await page.title()} — {page.url}")
        result: str = await guarded(run)
        return result

    @server.tool(description="Hand a multi-step task to the browser agent (many model calls); returns its status, "
                 "message and output.")
    async def agent(
        instruction: Annotated[str, Field(description="the task, e.g. 'find the cheapest plan and return its price'")],
        max_steps: Annotated[int | None, Field(ge=1, le=200, description="steps at most (default: the server's)")] = None,
    ) -> str:
        async def run(sh: Stagehand) -> str:
            needs_model()
            result = await sh.agent(allowed_domains=browser.config.allowed_domains).execute(
                instruction, variables=browser.variables.given or None, max_steps=max_steps or browser.config.agent_max_steps)
            return browser.redact(_json({"status": result.status, "success": result.success, "message": result.message,
                                         "output": result.output, "steps": len(result.steps), "url": sh.page.url}))
        result: str = await guarded(run)
        return result

    return server, session


async def serve(config: MCPServerConfig, *, transport: Literal["stdio", "http"], port: int = 8931) -> None:
    """Run the server until the client goes (stdio) or the process is stopped (HTTP on 127.0.0.1)."""
    server, session = build_server(config)
    try:
        if transport == "stdio":
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host="127.0.0.1", port=port)
    finally:
        await session.close()
