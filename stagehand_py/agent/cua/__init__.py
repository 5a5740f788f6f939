"""Computer-use mode: the model sees a screenshot and answers with coordinate actions.

The loop speaks a small internal protocol (:mod:`._actions`: click, double_click, type,
keypress, scroll, drag, move, wait, goto, plus save_progress/done/fail) through the LLM
layer's structured output, so it works with every provider and with the test doubles.
:func:`from_anthropic` and :func:`from_openai` translate the providers' native computer-use
actions into that protocol.
"""

from ._actions import (
    CuaAction,
    ScreenGeometry,
    from_anthropic,
    from_openai,
    normalise_key,
)

__all__ = ["CuaAction", "ScreenGeometry", "from_anthropic", "from_openai", "normalise_key"]
