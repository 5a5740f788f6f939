"""The agent's typed options (AgentConfig, and the same names as keywords) and the Driver protocol:
the agent runs on anything that offers page, snapshot, act, observe and extract."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

from stagehand_py import InvalidArgumentError, Stagehand
from stagehand_py.agent import Agent, AgentConfig, AgentOptions
from stagehand_py.agent._tools import Tool
from stagehand_py.llm import LLMClient

from ._script import AgentScript, call


def test_the_keyword_options_are_exactly_the_config_fields() -> None:
    fields = typing.get_type_hints(AgentConfig)
    assert set(fields) == {f.name for f in dataclasses.fields(AgentConfig)}
    assert typing.get_type_hints(AgentOptions) == fields  # same names, same annotations: Stagehand.agent(**options) is typed in step


def test_a_config_is_frozen_and_keeps_tuples() -> None:
    notes = ["first", " ", "second"]
    config = AgentConfig(allowed_domains=["example.com"], memory_notes=notes, checkpoint_path="run/cp.json")
    notes.append("added later")
    assert config.allowed_domains == ("example.com",) and config.memory_notes == ("first", "second")
    assert str(config.checkpoint_path) == "run/cp.json" and not isinstance(config.checkpoint_path, str)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.mode = "cua"  # type: ignore[misc]
    assert config.max_actions == 1 and AgentConfig(multi_action=True).max_actions == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "web"}, "mode must be 'dom' or 'cua'"),
        ({"mode": "cua", "multi_action": True}, "multi_action needs mode='dom'"),
        ({"max_actions_per_step": 1}, "at least 2"),
        ({"expected_items": 0}, "expected_items"),
        ({"memory_notes": "one string"}, "not one string"),
        ({"allowed_domains": "example.com"}, "list of patterns"),
        ({"history_window": 0}, "history_window must be at least 1"),
        ({"consolidation_timeout": 0}, "consolidation_timeout"),
    ],
)
def test_bad_options_are_typed_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        AgentConfig(**options)


async def test_stagehand_agent_takes_a_config_and_keywords_that_replace_its_fields(page, server) -> None:
    sh = Stagehand(page, model=AgentScript([]))
    config = AgentConfig(system_prompt="Be brief.", history_window=5)
    agent = sh.agent(config, history_window=2)
    assert agent.config.history_window == 2 and agent.config.system_prompt == "Be brief."
    assert config.history_window == 5  # the caller's config is untouched
    assert sh.agent(mode="cua").mode == "cua" and sh.agent().config == AgentConfig()
    with pytest.raises(InvalidArgumentError, match=r"unknown agent option\(s\) max_step;.*max_outline_tokens"):
        sh.agent(max_step=3)  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentError, match="takes an AgentConfig"):
        sh.agent({"mode": "dom"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="tool names must be unique"):
        sh.agent(tools=[_title, _title])


def _title() -> str:
    """A pure tool."""
    return "t"


class OnlyADriver:
    """The five things the agent asks of the browser, and nothing else of Stagehand."""

    def __init__(self, sh: Stagehand) -> None:
        self._sh = sh
        self.calls: list[str] = []

    @property
    def page(self) -> Any:
        return self._sh.page

    async def snapshot(self) -> Any:
        self.calls.append("snapshot")
        return await self._sh.snapshot()

    async def act(self, action: Any, /, *, variables: Any = None, element: Any = None) -> Any:
        self.calls.append("act")
        return await self._sh.act(action, variables=variables, element=element)

    async def observe(self, instruction: Any = None, /, *, variables: Any = None) -> Any:
        self.calls.append("observe")
        return await self._sh.observe(instruction, variables=variables)

    async def extract(self, instruction: Any = None, schema: Any = None, /) -> Any:
        self.calls.append("extract")
        return await self._sh.extract(instruction, schema)


async def test_the_agent_runs_on_any_driver(page, server) -> None:
    await page.goto(server.url("forms.html"))
    script = AgentScript([
        lambda s: call("act", element_id=s.id("textbox", "Username"), method="fill", arguments=["%user%"]),
        call("extract", instruction="the heading"),
        call("done", message="filled"),
    ], others={"extract": lambda request: {"data": {"heading": "Sign in"}, "instruction_satisfied": True}})
    client = LLMClient(script)
    driver = OnlyADriver(Stagehand(page, model=client))
    seen_by_tool: list[Any] = []

    def which_driver(stagehand: Stagehand) -> str:
        """Who the tool gets."""
        seen_by_tool.append(stagehand)
        return "ok"

    agent = Agent(driver, AgentConfig(tools=[which_driver]), client=client)
    result = await agent.execute("Fill in the user name", variables={"user": "ada"}, max_steps=5)
    assert result.status == "done", result.message
    assert await page.input_value("#username") == "ada"
    # a capture per step, and one read of where the run ended (its recording's end state)
    assert driver.calls.count("snapshot") == 4 and "act" in driver.calls and "extract" in driver.calls
    assert [s.tool for s in result.steps] == ["act", "extract", "done"]
    tool = next(t for t in agent._user_tools if t.name == "which_driver")
    assert isinstance(tool, Tool) and tool.browser  # a browser tool: it receives the driver
    outcome = await tool.run(_RunLike(driver), tool.args_model())  # type: ignore[arg-type]
    assert outcome.text == "ok" and seen_by_tool == [driver]


@dataclasses.dataclass
class _RunLike:
    driver: Any
