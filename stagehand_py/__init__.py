"""stagehand_py: drive a real browser from Python with natural language.

The public surface is what ``__all__`` lists here, plus the public subpackages
``stagehand_py.llm``, ``stagehand_py.agent``, ``stagehand_py.testing``, ``stagehand_py.batch``,
``stagehand_py.sync_api`` and ``stagehand_py.pytest_plugin``. Everything whose name starts with an
underscore (``_operations``, ``_actions``, ``_prompts``, ``_vision``, ``_cache`` and every
``_module``) is private and may change without notice.
"""

from ._actions import placeholders_in
from ._cache import ElementIdentity
from ._errors import (
    ActionError,
    ActionFailedError,
    AgentError,
    AmbiguousSelectorError,
    AuthenticationError,
    BadRequestError,
    BrowserError,
    BrowserNotFoundError,
    CacheError,
    CassetteError,
    CDPError,
    ConfigurationError,
    CostLimitExceededError,
    ElementNotFoundError,
    ExpectationError,
    InvalidArgumentError,
    InvalidSchemaError,
    LLMError,
    ModelRequestBlockedError,
    OutputValidationError,
    PageClosedError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    RefusalError,
    SecretInTraceError,
    SecretPlacementError,
    ServerError,
    SnapshotError,
    StagehandError,
    StagehandTimeoutError,
    TestDoubleError,
    UnknownVariableError,
    UnsupportedMethodError,
    UsageLimitExceededError,
)
from ._operations._extract_report import ExtractedValue, ExtractResult
from ._operations.expect import Expectation
from ._secrets import Secret
from ._stagehand import LLMOptions, ModelSpec, Stagehand, StagehandOptions
from ._types import Action, ActionMethod, ActResult, BlockedRequest, Repair, SavedDownload, Variables, VariableSpec
from ._vision import LOW_CONFIDENCE, DomConfidence, measure_dom_confidence
from .agent import Agent, AgentEvent, AgentResult, AgentStatus, AgentStep, EvaluateResult
from .browser._options import BrowserOptions, Geolocation, ProxySettings
from .snapshot import OutlineChunk, Snapshot, SnapshotElement

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Stagehand",
    "BrowserOptions",
    "ProxySettings",
    "Geolocation",
    "SavedDownload",
    "BlockedRequest",
    "ModelSpec",
    "StagehandOptions",
    "LLMOptions",
    "Snapshot",
    "SnapshotElement",
    "OutlineChunk",
    "Action",
    "ActionMethod",
    "ActResult",
    "Repair",
    "ExtractResult",
    "ExtractedValue",
    "ElementIdentity",
    "Variables",
    "Secret",
    "VariableSpec",
    "placeholders_in",
    "Agent",
    "AgentResult",
    "AgentStatus",
    "AgentStep",
    "AgentEvent",
    "EvaluateResult",
    "Expectation",
    "DomConfidence",
    "measure_dom_confidence",
    "LOW_CONFIDENCE",
    # the exception tree (stagehand_py._errors)
    "StagehandError",
    "ConfigurationError",
    "BrowserNotFoundError",
    "InvalidArgumentError",
    "InvalidSchemaError",
    "UnknownVariableError",
    "BrowserError",
    "PageClosedError",
    "CDPError",
    "SnapshotError",
    "ActionError",
    "ElementNotFoundError",
    "AmbiguousSelectorError",
    "UnsupportedMethodError",
    "ActionFailedError",
    "SecretPlacementError",
    "SecretInTraceError",
    "StagehandTimeoutError",
    "LLMError",
    "ProviderError",
    "AuthenticationError",
    "BadRequestError",
    "RateLimitError",
    "ServerError",
    "ProviderConnectionError",
    "OutputValidationError",
    "RefusalError",
    "UsageLimitExceededError",
    "CostLimitExceededError",
    "ModelRequestBlockedError",
    "TestDoubleError",
    "CassetteError",
    "CacheError",
    "AgentError",
    "ExpectationError",
]
