"""stagehand_py: drive a real browser from Python with natural language.

The public surface is what ``__all__`` lists; everything in a module whose name starts with an
underscore is private and may change.
"""

from ._errors import *  # noqa: F403  (the tree is curated by _errors.__all__)
from ._errors import __all__ as _error_names
from ._stagehand import Stagehand
from ._types import Action, ActionMethod, ActResult, Variables, VariableSpec
from .agent import Agent, AgentEvent, AgentResult, AgentStatus, AgentStep, EvaluateResult
from .snapshot import OutlineChunk, Snapshot

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Stagehand",
    "Snapshot",
    "OutlineChunk",
    "Action",
    "ActionMethod",
    "ActResult",
    "Variables",
    "VariableSpec",
    "Agent",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "AgentEvent",
    "EvaluateResult",
    *_error_names,
]
