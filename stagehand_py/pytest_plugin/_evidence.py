"""Failure evidence: a failed test's outline, model calls (secret values redacted) and
screenshot (every field holding a secret value masked) saved under the artifacts folder, and a
summary added to its report."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import TYPE_CHECKING, Any

import pytest

from ._config import StagehandTestConfig

if TYPE_CHECKING:
    from ..testing import CapturedCall

__all__ = ["CALL_REPORT", "TestViewer", "async_evidence", "failed", "sync_evidence"]

#: The report stash key under which the call-phase report of a test is kept.
CALL_REPORT = pytest.StashKey[pytest.TestReport]()
_OUTLINE_REPORT_CHARS = 4000


def _calls_record(calls: list[CapturedCall], secrets: list[str]) -> list[dict[str, Any]]:
    from ..llm import Redactor
    from ..llm._inference_log import request_record

    redactor = Redactor(secrets)
    out: list[dict[str, Any]] = []
    for call in calls:
        entry: dict[str, Any] = {"model": call.model, "request": request_record(call.request), "response": None, "error": None}
        if call.response is not None:
            r = call.response
            entry["response"] = {"text": r.text, "output": r.output, "refusal": r.refusal, "usage": r.usage.model_dump()}
        if call.error is not None:
            entry["error"] = {"type": type(call.error).__name__, "message": str(call.error)}
        out.append(redactor.data(entry))
    return out


def _write_evidence(
    item: pytest.Item, cfg: StagehandTestConfig, *, outline: str | None, screenshot: bytes | None,
    calls: list[CapturedCall], problems: list[str],
) -> None:
    from ..llm import Redactor

    redactor = Redactor(cfg.secrets)
    folder = cfg.artifacts_dir
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    if outline is not None:
        outline = redactor.text(outline)
        (folder / "outline.txt").write_text(outline, encoding="utf-8")
        files.append("outline.txt")
    if screenshot is not None:
        (folder / "screenshot.png").write_bytes(screenshot)
        files.append("screenshot.png")
    records = _calls_record(calls, cfg.secrets)
    (folder / "model_calls.json").write_text(json.dumps(records, indent=2, default=str, ensure_ascii=False), encoding="utf-8")
    files.append("model_calls.json")
    report = item.stash.get(CALL_REPORT, None)
    if report is None:
        return
    lines = [f"folder: {folder}", *(f"  {name}" for name in files), f"model calls: {len(records)}"]
    lines += [f"not captured: {p}" for p in problems]
    report.sections.append(("stagehand artifacts", "\n".join(lines)))
    if outline:
        shown = outline if len(outline) <= _OUTLINE_REPORT_CHARS else outline[:_OUTLINE_REPORT_CHARS] + "\n... (truncated; full outline in outline.txt)"
        report.sections.append(("stagehand snapshot outline", shown))
    if records:
        last = records[-1]
        report.sections.append(("stagehand last model call", json.dumps(
            {"purpose": last["request"]["purpose"], "response": last["response"], "error": last["error"]},
            indent=2, default=str, ensure_ascii=False)[:_OUTLINE_REPORT_CHARS]))


async def _screenshot(page: Any, cfg: StagehandTestConfig) -> bytes:
    """The whole page, every field holding a variable's value masked (as a model's screenshot is)."""
    from .._secrets import VariableSet
    from .._vision import masked_screenshot

    return await masked_screenshot(page, VariableSet.of(cfg.variables), full_page=True, timeout=15_000)


def failed(item: pytest.Item) -> bool:
    report = item.stash.get(CALL_REPORT, None)
    return report is not None and report.failed


async def async_evidence(item: pytest.Item, cfg: StagehandTestConfig, sh: Any, calls: list[CapturedCall]) -> None:
    outline = screenshot = None
    problems: list[str] = []
    try:
        outline = (await asyncio.wait_for(sh.snapshot(), 30)).tree
    except Exception as exc:  # evidence is best effort: the test already failed for its own reason
        problems.append(f"outline ({type(exc).__name__}: {exc})")
    try:
        screenshot = await _screenshot(sh.page, cfg)
    except Exception as exc:
        problems.append(f"screenshot ({type(exc).__name__}: {exc})")
    _write_evidence(item, cfg, outline=outline, screenshot=screenshot, calls=calls, problems=problems)


def sync_evidence(item: pytest.Item, cfg: StagehandTestConfig, sh: Any, calls: list[CapturedCall]) -> None:
    outline = screenshot = None
    problems: list[str] = []
    try:
        outline = sh.snapshot().tree
    except Exception as exc:
        problems.append(f"outline ({type(exc).__name__}: {exc})")
    try:
        from .._sync_bridge import async_view, run_sync

        screenshot = run_sync(sh.page, _screenshot(async_view(sh.page), cfg))
    except Exception as exc:
        problems.append(f"screenshot ({type(exc).__name__}: {exc})")
    _write_evidence(item, cfg, outline=outline, screenshot=screenshot, calls=calls, problems=problems)


class TestViewer:
    """A test's run viewer, and its trace with ``--stagehand-tracing``: recorded from before the
    test body on its browser context; on failure ``run.html`` (and a kept ``trace.zip``) go into
    the test's artifacts folder, beside the outline and the model calls."""

    __test__ = False  # not a test class, whatever pytest's name rules say

    def __init__(self, item: pytest.Item, cfg: StagehandTestConfig, page: Any) -> None:
        from .._secrets import VariableSet
        from .._viewer import RunRecorder, watching

        self.item, self.cfg, self.page, self.context = item, cfg, page, page.context
        self.recorder = RunRecorder(title=item.nodeid)
        self.recorder.hide(VariableSet.of(cfg.variables))
        self._watching = watching(self.context, self.recorder)
        self._watching.__enter__()
        self.trace: Any = None

    async def start(self) -> None:
        from ..browser._recording import start_trace

        if self.cfg.tracing != "off":
            self.trace = await start_trace(self.context, title=self.item.nodeid)

    async def finish(self) -> None:
        """Keep what the test's outcome calls for (run.html on failure; the trace as configured)."""
        from .._viewer import write_run_html

        self._watching.__exit__(None, None, None)
        folder, lost = self.cfg.artifacts_dir, failed(self.item)
        kept: list[str] = []
        if lost:
            crash = getattr(getattr(self.item.stash.get(CALL_REPORT, None), "longrepr", None), "reprcrash", None)
            reason = str(getattr(crash, "message", "")).split("\n", 1)[0]  # "AssertionError: <the test's message>"
            self.recorder.meta.update({"status": "failed", "message": self.recorder.variables.redact(reason)[:500],
                                       "kind": "pytest test"})
            last = self.recorder.begin(f"test failed: {reason}")  # the page as the failing assertion found it
            await self.recorder.picture_if_none(self.page, last)
            self.recorder.end(last, ok=False, outcome={"failure": reason})
            kept.append(str(write_run_html(self.recorder, folder / "run.html")))
        if self.trace is not None:
            keep = self.cfg.tracing == "on" or lost
            written = await self.trace.stop(folder / "trace.zip" if keep else None)
            kept += [str(written)] if written is not None else []
        report = self.item.stash.get(CALL_REPORT, None)
        if kept and report is not None:
            commands = [f"stagehand-py show {folder}"] if lost else []
            commands += [f"playwright show-trace {path}" for path in kept if path.endswith(".zip")]
            report.sections.append(("stagehand run viewer", "\n".join([*kept, *commands])))
