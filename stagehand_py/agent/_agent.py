"""The :class:`Agent`: a driver, a model client and an :class:`AgentConfig`, put together.

``execute`` makes a :class:`._run.Run`, holds the browser context's allowed-domains guard for the
run (narrowing the Stagehand's, or installing one), and hands the run to the loop
(:func:`._loop.run_loop`) with the config's mode (:mod:`.modes`) and the tool set. The guard is
let go on every way out of the run, errors included.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .._errors import InvalidArgumentError
from .._inputs import check_inputs
from .._types import Variables
from ..browser._guard import GuardLease, hold_guard
from ..llm import LLMClient
from ..tracing._spans import traced_agent_run
from ._config import AgentConfig
from ._loop import run_loop
from ._messages import model_label
from ._replayed_run import run_store, run_with_recording
from ._run import EventCallback, Run
from ._tools import Tool, ToolSet, tool_from_function
from ._types import AgentEvent, AgentMode, AgentResult, Driver
from ._viewing import viewing
from .modes import make_mode

__all__ = ["Agent"]


class Agent:
    """A tool-using browser agent on one driver (a :class:`~stagehand_py.Stagehand`). Make one
    with :meth:`Stagehand.agent`; its options are an :class:`AgentConfig`. ``cache_dir``: the folder
    finished DOM runs are stored in and replayed from (:meth:`Stagehand.agent` passes its own
    ``cache_dir``'s)."""

    def __init__(
        self,
        driver: Driver,
        config: AgentConfig | None = None,
        *,
        client: LLMClient,
        fallback_client: LLMClient | None = None,
        before_run: Callable[[], Awaitable[None]] | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self._driver = driver
        # Where finished DOM runs are stored and replayed from (a Stagehand's cache directory).
        self._cache_dir = cache_dir
        # The driver's own preparation before a run (a Stagehand holds its context to its
        # allowed_domains first, so the run narrows that guard rather than making another).
        self._before_run = before_run
        self._config = config if config is not None else AgentConfig()
        self._client = client
        self._fallback_client = fallback_client
        self._user_tools = [t if isinstance(t, Tool) else tool_from_function(t) for t in self._config.tools]
        names = [t.name for t in self._user_tools]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"tool names must be unique, got {names}.")
        self._mode = make_mode(self._config, client)

    @property
    def mode(self) -> AgentMode:
        return self._config.mode

    @property
    def config(self) -> AgentConfig:
        """The options this agent was made with."""
        return self._config

    async def execute(
        self,
        instruction: str,
        *,
        max_steps: int = 20,
        variables: Variables | None = None,
        output: type[BaseModel] | dict[str, Any] | None = None,
        timeout: float | None = None,
        callbacks: EventCallback | Sequence[EventCallback] | None = None,
        checkpoint_path: str | Path | None = None,
        replay: bool | None = None,
    ) -> AgentResult:
        """Run the task and return an :class:`AgentResult` (a failed task is a result, not an error).

        ``output`` (a pydantic model class or a JSON Schema) is what ``done`` must deliver;
        ``variables`` fill ``%name%`` placeholders at execution time only; ``timeout`` is the
        wall-clock budget in seconds; ``callbacks`` receive every :class:`AgentEvent`.
        ``replay``: with a cache directory (``Stagehand(cache_dir=...)``) a finished DOM run is
        stored and the same task (start URL, variable names) replays it with no model while its
        elements still match, healing only a step that drifted; ``None`` (default) replays when a
        run is stored, ``False`` runs live (and stores the new run), ``True`` also requires the
        cache directory. ``result.replay`` says which steps replayed, healed or ran fresh.
        Raises :class:`AgentError` when the run cannot start or the model cannot be used at all
        (authentication, a bad request, the kill switch).
        """
        if not isinstance(instruction, str) or not instruction.strip():
            raise InvalidArgumentError("execute() needs a non-empty instruction.")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise InvalidArgumentError(f"max_steps must be a whole number of at least 1, not {max_steps!r}.")
        checked = check_inputs("agent.execute", variables=variables, schema=output, schema_param="output", timeout=timeout)
        cbs: list[EventCallback] = [] if callbacks is None else [callbacks] if callable(callbacks) else list(callbacks)
        path = Path(checkpoint_path) if checkpoint_path is not None else self._config.checkpoint_path
        run = Run(
            instruction, driver=self._driver, client=self._client, fallback_client=self._fallback_client,
            config=self._config, max_steps=max_steps, variables=checked, output=output, timeout=timeout,
            callbacks=cbs, checkpoint_path=Path(path) if path is not None else None,
        )
        store = run_store(self._cache_dir) if self._config.mode == "dom" else None
        if replay is True and store is None:
            raise InvalidArgumentError("replay=True needs a DOM agent on a Stagehand with a cache directory: "
                                       "Stagehand(page, cache_dir='...') stores runs under it.")

        def live() -> Awaitable[AgentResult]:
            return run_loop(run, self._mode, self._tool_set(run))

        guard: GuardLease | None = None
        try:
            if self._before_run is not None:
                await self._before_run()
            # The run's allowed_domains narrow the context's guard (a URL passes only when the
            # Stagehand's set admits it too); without a guard they make one for the run; without
            # either the run still reads a guard someone else holds (what it blocked).
            guard = await hold_guard(self._driver.page, self._config.allowed_domains, redact=run.redact)
            run.guard = guard
            recording = (store.load(run.redact(instruction), run.redact(self._driver.page.url), run.variables.names)
                         if store is not None and replay is not False else None)
            async with viewing(run):  # its steps as trace groups and run viewer steps; run.html in evidence_dir
                return await traced_agent_run(lambda: run_with_recording(run, recording, live, store),
                                              instruction=instruction, mode=self._config.mode,
                                              model=model_label(self._client), max_steps=max_steps, variables=run.variables)
        finally:
            if guard is not None:
                await guard.release()

    async def stream(self, instruction: str, **options: Any) -> AsyncIterator[AgentEvent]:
        """Run the task and yield its events as they happen; the last one is ``finished``
        (its ``result`` is the :class:`AgentResult`). Takes the options of :meth:`execute`."""
        queue: asyncio.Queue[AgentEvent | BaseException | None] = asyncio.Queue()
        extra = options.pop("callbacks", None)
        cbs: list[EventCallback] = [] if extra is None else [extra] if callable(extra) else list(extra)

        async def runner() -> None:
            try:
                await self.execute(instruction, callbacks=[*cbs, queue.put_nowait], **options)
                queue.put_nowait(None)
            except BaseException as exc:  # handed to the consumer
                queue.put_nowait(exc)

        task = asyncio.create_task(runner())
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass

    def _tool_set(self, run: Run) -> ToolSet:
        tools = {t.name: t for t in self._mode.tools(run.output_schema)}
        for t in self._user_tools:
            if t.name in tools:
                raise InvalidArgumentError(f"tool {t.name!r} has the name of a built-in tool; rename it.")
            tools[t.name] = t
        return ToolSet(tools)
