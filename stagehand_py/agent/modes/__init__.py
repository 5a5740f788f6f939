"""The agent's modes. A mode supplies the tools, the system prompt, the page capture and the step
(:class:`.._run.Mode`): :class:`DomMode` reads the outline and acts by element id;
:class:`CuaMode` reads a screenshot and acts by coordinates (with the provider's own computer
tool when the model has one). :func:`make_mode` builds the one a config names."""

from ...llm import LLMClient
from .._config import AgentConfig
from .._run import Mode
from ._dom import DomMode
from .cua._mode import CuaMode
from .cua._native import native_provider

__all__ = ["CuaMode", "DomMode", "make_mode"]


def make_mode(config: AgentConfig, client: LLMClient) -> Mode:
    """The mode ``config.mode`` names, set up from the config."""
    if config.mode == "cua":
        return CuaMode(screen=config.cua_screen, native=native_provider(client))
    return DomMode(max_outline_tokens=config.max_outline_tokens, use_vision=config.use_vision)
