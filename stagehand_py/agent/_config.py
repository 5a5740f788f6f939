"""The agent's options as one frozen, typed object (:class:`AgentConfig`), and the same options as
keyword arguments (:class:`AgentOptions`, for ``Stagehand.agent(**options)``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from .._errors import InvalidArgumentError
from ..browser._guard import check_patterns
from ..llm import LanguageModel, LLMClient
from ._tools import Tool
from ._types import AgentMode, SafetyCheck

__all__ = ["AgentConfig", "AgentOptions", "SafetyCallback"]

#: Called with each computer-use safety check; return True to acknowledge and continue.
SafetyCallback = Callable[[SafetyCheck], "bool | Awaitable[bool]"]


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """Everything an agent is made with, checked once when it is built.

    Pass it to :meth:`stagehand_py.Stagehand.agent` (``sh.agent(config)``), or pass the same
    names as keywords (``sh.agent(mode="cua", self_check=True)``); keywords given with a config
    replace its fields. Sequences are kept as tuples.

    - ``model``: the agent's model (default: the Stagehand's); ``fallback_model`` gets one
      attempt when the primary's retries are exhausted on a rate limit, server or connection
      error, and is preferred for the final consolidation when the primary's last call failed.
    - ``system_prompt``: extra instructions; ``tools``: typed Python functions or :class:`Tool` objects.
    - ``mode``: ``"dom"`` (the outline, element ids) or ``"cua"`` (screenshots, coordinates;
      ``cua_screen`` is the screenshot size the model sees; ``on_safety_check`` decides the
      model's safety checks).
    - ``allowed_domains``: glob patterns; every other navigation, request and new tab is
      blocked while a task runs. On a Stagehand with its own ``allowed_domains`` they narrow
      those for the run (a URL must pass both sets), never widen them.
    - ``checkpoint_path``, ``evidence_dir``: where progress and screenshots are written.
    - ``verify`` (default on): a ``done`` is a claim, checked before it is reported, first
      without a model: its output fits the ``output`` schema, every value of it is found in the
      text of a page the run saw (numbers however written, a count as a table's rows), and a
      page it names (its title, heading or address) is the page the run ended on; then, with
      ``self_check`` (default on), a model's verdict on the final page: one more request per
      ``done`` that passed those checks (a short one in choice mode; see the long-horizon guide
      for what it costs). A
      failed check gives the model one more turn with the reason; a run that still ends on an
      unchecked claim is ``unverified``, never ``done``. ``AgentResult.checks`` says what ran and
      what it found. ``verify=False`` reports ``done`` as the model says it (``self_check`` then
      does nothing).
    - ``use_vision``: a screenshot each DOM step; ``max_outline_tokens``: the outline part shown each step.
    - ``history_window`` / ``summarise_every``: recent steps shown in full, older ones folded;
      ``breaker_threshold``: infrastructure failures in a row that stop the run;
      ``consolidation_timeout``: seconds for the final call that turns data into the output.
    - ``multi_action=True``: up to ``max_actions_per_step`` chained actions per answer, each its
      own step on a fresh outline; the chain stops on a navigation, a URL change or a >20% shift
      in the number of actionable elements.
    - ``pagination_bonus_steps=N``: each click on a "next page" / "load more" control adds N
      steps, at most ``max_pagination_bonus`` in all.
    - ``expected_items=N``: once ``save_progress`` holds N items the model is told to finish;
      ``done`` with fewer returns ``partial_success``.
    - ``memory_notes``: short notes shown, fenced, during the first ``memory_steps`` steps.
    """

    model: str | LLMClient | LanguageModel | None = None
    fallback_model: str | LLMClient | LanguageModel | None = None
    system_prompt: str | None = None
    tools: Sequence[Callable[..., Any] | Tool] = ()
    mode: AgentMode = "dom"
    allowed_domains: Sequence[str] | None = None
    checkpoint_path: str | Path | None = None
    evidence_dir: str | Path | None = None
    verify: bool = True
    self_check: bool = True
    use_vision: bool = False
    max_outline_tokens: int = 6000
    history_window: int = 8
    summarise_every: int = 4
    breaker_threshold: int = 3
    on_safety_check: SafetyCallback | None = None
    cua_screen: tuple[int, int] = (1024, 768)
    consolidation_timeout: float = 60.0
    multi_action: bool = False
    max_actions_per_step: int = 3
    pagination_bonus_steps: int = 0
    max_pagination_bonus: int = 20
    expected_items: int | None = None
    memory_notes: Sequence[str] = ()
    memory_steps: int = 3

    def __post_init__(self) -> None:
        if self.mode not in ("dom", "cua"):
            raise InvalidArgumentError(f"mode must be 'dom' or 'cua', not {self.mode!r}.")
        if self.multi_action and self.mode != "dom":
            raise InvalidArgumentError("multi_action needs mode='dom' (computer-use actions are one per step).")
        if self.max_actions_per_step < 2:
            raise InvalidArgumentError(f"max_actions_per_step must be at least 2, not {self.max_actions_per_step}.")
        if self.pagination_bonus_steps < 0 or self.max_pagination_bonus < 0:
            raise InvalidArgumentError("pagination_bonus_steps and max_pagination_bonus must be 0 or more.")
        if self.expected_items is not None and self.expected_items < 1:
            raise InvalidArgumentError(f"expected_items must be at least 1, not {self.expected_items}.")
        for name in ("max_outline_tokens", "history_window", "summarise_every", "breaker_threshold"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be at least 1, not {getattr(self, name)}.")
        if self.memory_steps < 0:
            raise InvalidArgumentError(f"memory_steps must be 0 or more, not {self.memory_steps}.")
        if self.consolidation_timeout <= 0:
            raise InvalidArgumentError(f"consolidation_timeout must be a positive number of seconds, not {self.consolidation_timeout}.")
        if isinstance(self.memory_notes, str):
            raise InvalidArgumentError("memory_notes is a list of short notes, not one string.")
        if isinstance(self.allowed_domains, str):
            raise InvalidArgumentError("allowed_domains is a list of patterns, e.g. ['example.com', '*.example.com'].")
        if isinstance(self.tools, str) or callable(self.tools):
            raise InvalidArgumentError("tools is a list of functions or Tools.")
        if self.allowed_domains is not None:
            check_patterns(self.allowed_domains)  # a bad pattern is an error now, not during a run
        # Frozen: normalised once, here.
        set_ = object.__setattr__
        set_(self, "tools", tuple(self.tools))
        set_(self, "memory_notes", tuple(str(n) for n in self.memory_notes if str(n).strip()))
        if self.allowed_domains is not None:
            set_(self, "allowed_domains", tuple(self.allowed_domains))
        if self.checkpoint_path is not None:
            set_(self, "checkpoint_path", Path(self.checkpoint_path))
        if self.evidence_dir is not None:
            set_(self, "evidence_dir", Path(self.evidence_dir))

    @property
    def max_actions(self) -> int:
        """Actions one answer may run: ``max_actions_per_step`` with ``multi_action``, else 1."""
        return self.max_actions_per_step if self.multi_action else 1

    def replace(self, options: Mapping[str, Any]) -> AgentConfig:
        """A copy with ``options`` in place of those fields; an unknown name is an
        :class:`InvalidArgumentError` naming the known ones."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InvalidArgumentError(
                f"unknown agent option(s) {', '.join(unknown)}; the options are: {', '.join(sorted(known))}."
            )
        return dataclasses.replace(self, **options) if options else self


class AgentOptions(TypedDict, total=False):
    """:class:`AgentConfig`'s fields as keyword arguments (``Stagehand.agent(**options)``)."""

    model: str | LLMClient | LanguageModel | None
    fallback_model: str | LLMClient | LanguageModel | None
    system_prompt: str | None
    tools: Sequence[Callable[..., Any] | Tool]
    mode: AgentMode
    allowed_domains: Sequence[str] | None
    checkpoint_path: str | Path | None
    evidence_dir: str | Path | None
    verify: bool
    self_check: bool
    use_vision: bool
    max_outline_tokens: int
    history_window: int
    summarise_every: int
    breaker_threshold: int
    on_safety_check: SafetyCallback | None
    cua_screen: tuple[int, int]
    consolidation_timeout: float
    multi_action: bool
    max_actions_per_step: int
    pagination_bonus_steps: int
    max_pagination_bonus: int
    expected_items: int | None
    memory_notes: Sequence[str]
    memory_steps: int
