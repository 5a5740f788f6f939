"""The agent: ``sh.agent(...)`` runs multi-step tasks with tools, hygiene for long runs,
a computer-use mode, allowed domains and a judge.

::

    agent = sh.agent(allowed_domains=["example.com"])
    result = await agent.execute("Find the cheapest plan", max_steps=20, output=Plan)
    result.status, result.output, result.steps, result.evidence
"""

from ._loop import Agent, EventCallback, SafetyCallback
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
    EvaluateResult,
    Evidence,
    SafetyCheck,
    ScreenshotRecord,
)

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentEventType",
    "AgentMode",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "BlockedRequest",
    "CheckpointRecord",
    "EvaluateResult",
    "EventCallback",
    "Evidence",
    "SafetyCallback",
    "SafetyCheck",
    "ScreenshotRecord",
    "Tool",
    "tool_from_function",
]
