"""The agent: ``sh.agent(...)`` runs multi-step tasks with tools, hygiene for long runs,
a computer-use mode, allowed domains and a judge.

::

    agent = sh.agent(allowed_domains=["example.com"])   # or sh.agent(AgentConfig(...))
    result = await agent.execute("Find the cheapest plan", max_steps=20, output=Plan)
    result.status, result.output, result.steps, result.evidence
"""

from ._agent import Agent
from ._config import AgentConfig, AgentOptions, SafetyCallback
from ._outcome import PageView
from ._run import EventCallback
from ._tools import Tool, tool_from_function
from ._types import (
    AgentEvent,
    AgentEventType,
    AgentMode,
    AgentResult,
    AgentStatus,
    AgentStep,
    BlockedRequest,
    CheckpointRecord,
    Driver,
    EvaluateResult,
    Evidence,
    SafetyCheck,
    ScreenshotRecord,
)

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "AgentEventType",
    "AgentMode",
    "AgentOptions",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "BlockedRequest",
    "CheckpointRecord",
    "Driver",
    "EvaluateResult",
    "EventCallback",
    "Evidence",
    "PageView",
    "SafetyCallback",
    "SafetyCheck",
    "ScreenshotRecord",
    "Tool",
    "tool_from_function",
]
