"""The agent: ``sh.agent(...)`` runs multi-step tasks with tools, hygiene for long runs,
a computer-use mode, allowed domains and a judge.

::

    agent = sh.agent(allowed_domains=["example.com"])   # or sh.agent(AgentConfig(...))
    result = await agent.execute("Find the cheapest plan", max_steps=20, output=Plan)
    result.status, result.output, result.steps, result.evidence, result.checks

A ``done`` is checked before it is reported (``verify``, on by default): values found on the
pages the run saw, the final page the one the claim names, and (``self_check``) a model's verdict
on it; a claim that does not check out after one more turn ends ``unverified``.
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
    DoneCheck,
    Driver,
    EvaluateResult,
    Evidence,
    SafetyCheck,
    ScreenshotRecord,
    ValueRead,
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
    "DoneCheck",
    "Driver",
    "EvaluateResult",
    "EventCallback",
    "Evidence",
    "PageView",
    "SafetyCallback",
    "SafetyCheck",
    "ScreenshotRecord",
    "Tool",
    "ValueRead",
    "tool_from_function",
]
