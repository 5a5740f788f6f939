"""Test helpers shipped with stagehand_py: model doubles, a kill switch, capture, cassettes.

::

    from stagehand_py.llm import LLMClient
    from stagehand_py.testing import FunctionLLM, ScriptedLLM, block_model_requests, capture_requests

    client = LLMClient(FunctionLLM(lambda req: {"title": "Dune"}))
"""

from ..llm._hooks import BLOCK_ENV_VAR, CapturedCall, model_requests_blocked
from ._cassettes import SCRUBBED_HEADERS, Cassette, CassetteMode, use_cassette
from ._doubles import Answer, FunctionLLM, ScriptedLLM
from ._switches import block_model_requests, capture_requests

__all__ = [
    "FunctionLLM",
    "ScriptedLLM",
    "Answer",
    "block_model_requests",
    "capture_requests",
    "model_requests_blocked",
    "CapturedCall",
    "BLOCK_ENV_VAR",
    "Cassette",
    "CassetteMode",
    "use_cassette",
    "SCRUBBED_HEADERS",
]
