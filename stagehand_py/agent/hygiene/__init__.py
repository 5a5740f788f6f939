"""The agent's hygiene for long tasks: plain objects and functions with no I/O, each testable on
its own; the loop and step functions (:mod:`.._loop`, :mod:`.._step`, :mod:`.._tool_calls`) wire
them together.

- :mod:`._budget`: steps and wall time (:class:`StepBudget`);
- :mod:`._stall`: stalled steps and nudges (:class:`StallDetector`, :func:`page_signature`);
- :mod:`._failures`: consecutive failures and the circuit breaker (:class:`FailureTracker`,
  :func:`classify_error`);
- :mod:`._history`: the history the model reads (:func:`history_split`, :func:`summarise_steps`,
  :func:`sanitise`);
- :mod:`._output`: ``done``'s output (:func:`check_done_output`, :func:`item_count`);
- :mod:`._pagination` and :mod:`._multi_action`: the long-horizon extras.
"""

from ._budget import StepBudget
from ._failures import ErrorKind, FailureState, FailureTracker, classify_error
from ._history import history_split, sanitise, summarise_steps
from ._multi_action import batch_abort_reason, count_actionable
from ._output import check_done_output, item_count
from ._pagination import is_pagination_control
from ._stall import NUDGE_LEVELS, StallDetector, StallState, action_signature, page_signature

__all__ = [
    "NUDGE_LEVELS",
    "ErrorKind",
    "FailureState",
    "FailureTracker",
    "StallDetector",
    "StallState",
    "StepBudget",
    "action_signature",
    "batch_abort_reason",
    "check_done_output",
    "classify_error",
    "count_actionable",
    "history_split",
    "is_pagination_control",
    "item_count",
    "page_signature",
    "sanitise",
    "summarise_steps",
]
