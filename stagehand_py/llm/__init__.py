"""The LLM layer: one client, one message type, structured output for every provider.

Usage::

    from stagehand_py.llm import LLMClient, SystemMessage, UserMessage

    client = LLMClient("openai/gpt-4.1-mini")          # key from OPENAI_API_KEY
    result = await client.generate(
        [SystemMessage("You extract data."), UserMessage("Title: Dune, 1965")],
        purpose="extract",
        output=Book,                                    # a pydantic model or a JSON Schema dict
    )
    result.output, result.usage, client.metrics
"""

from .._secrets import REDACTED, Redactor
from .._usage import Metrics, Usage, UsageLimits
from ._client import GenerateResult, LLMClient
from ._hooks import BLOCK_ENV_VAR, CapturedCall
from ._messages import (
    AssistantMessage,
    ImageMediaType,
    ImagePart,
    Message,
    PendingSafetyCheck,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
)
from ._policy import EMBEDDED_MODEL_FILE, HOSTED_DEFAULTS, LOCAL_TOKEN_BUDGET, ModelChoice, default_model
from ._pricing import PRICES_AS_OF, ModelPrice, price_for
from ._profiles import (
    LOCAL_TIMING,
    OutputMode,
    Profile,
    ResponseFormat,
    Timing,
    default_profile,
    llama_cpp_server_profile,
)
from ._providers._local import LocalModel, ModelLoad, release_local_models
from ._request import ComputerTool, LanguageModel, LLMRequest, ModelResponse, ProviderTool
from ._retry import RetryPolicy

__all__ = [
    "LLMClient",
    "GenerateResult",
    "LLMRequest",
    "ModelResponse",
    "LanguageModel",
    "Message",
    "SystemMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolMessage",
    "TextPart",
    "ImagePart",
    "ImageMediaType",
    "ToolCallPart",
    "ToolResultPart",
    "PendingSafetyCheck",
    "ComputerTool",
    "ProviderTool",
    "Profile",
    "OutputMode",
    "default_profile",
    "ResponseFormat",
    "llama_cpp_server_profile",
    "Timing",
    "LOCAL_TIMING",
    "LocalModel",
    "ModelLoad",
    "release_local_models",
    "default_model",
    "ModelChoice",
    "EMBEDDED_MODEL_FILE",
    "HOSTED_DEFAULTS",
    "LOCAL_TOKEN_BUDGET",
    "RetryPolicy",
    "Usage",
    "UsageLimits",
    "ModelPrice",
    "PRICES_AS_OF",
    "price_for",
    "Metrics",
    "Redactor",
    "REDACTED",
    "CapturedCall",
    "BLOCK_ENV_VAR",
]
