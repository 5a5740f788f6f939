"""Computer-use mode: the model sees a screenshot and answers with coordinate actions.

The loop speaks a small internal protocol (:mod:`._actions`: click, double_click, type,
keypress, scroll, drag, move, wait, goto, plus save_progress/done/fail) through the LLM
layer's structured output, so it works with every provider and with the test doubles.
With an ``anthropic/...`` or ``openai/computer-use...`` model the agent uses the provider's own
computer tool instead (:mod:`._native`): :func:`from_anthropic` and :func:`from_openai`
translate its native actions into that protocol, so both paths run the same tools.
"""

from ._actions import (
    CuaAction,
    ScreenGeometry,
    from_anthropic,
    from_openai,
    normalise_key,
)

__all__ = ["CuaAction", "ScreenGeometry", "from_anthropic", "from_openai", "normalise_key"]
