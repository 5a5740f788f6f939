"""An optional on-disk record of every model request and response, one JSON file each.

Off by default. Meant for debugging prompts and for evidence in bug reports, so it redacts
secret values and secret-marked parts before anything touches the disk, and it writes image
sizes rather than image bytes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._secrets import REDACTED, Redactor
from ._messages import ImagePart, TextPart, ToolResultPart
from ._request import LLMRequest, ModelResponse

__all__ = ["InferenceLog", "request_record"]

logger = logging.getLogger("stagehand_py")


def request_record(request: LLMRequest) -> dict[str, Any]:
    """The request as JSON-ready data, with secret parts redacted and images summarized."""
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "text": REDACTED if part.secret else part.text})
            elif isinstance(part, ImagePart):
                parts.append(_image(part))
            elif isinstance(part, ToolResultPart) and not isinstance(part.content, str):
                record = part.model_dump(mode="json", exclude={"content"})
                record["content"] = [
                    _image(p) if isinstance(p, ImagePart) else {"type": "text", "text": REDACTED if p.secret else p.text}
                    for p in part.content
                ]
                parts.append(record)
            else:
                parts.append(part.model_dump(mode="json"))
        messages.append({"role": message.role, "content": parts})
    return {
        "purpose": request.purpose,
        "attempt": request.attempt,
        "output_name": request.output_name,
        "output_schema": request.output_schema,
        "messages": messages,
        **({"tools": [t.model_dump(mode="json") for t in request.tools]} if request.tools else {}),
        **({"previous_response_id": request.previous_response_id} if request.previous_response_id else {}),
    }


def _image(part: ImagePart) -> dict[str, Any]:
    return {"type": "image", "media_type": part.media_type, "bytes": len(part.data)}


class InferenceLog:
    """Writes ``<dir>/<utc time>-<seq>-<purpose>-a<attempt>.json`` per model call (and
    ``...-note.json`` per note: :meth:`write_note`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._seq = itertools.count(1)

    async def write(
        self,
        *,
        model: str,
        request: LLMRequest,
        response: ModelResponse | None,
        error: BaseException | None,
        redactor: Redactor,
    ) -> Path | None:
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(),
            "model": model,
            "request": request_record(request),
            "response": None,
            "error": None,
        }
        if response is not None:
            entry["response"] = {
                "text": response.text,
                "output": response.output,
                "refusal": response.refusal,
                "finish_reason": response.finish_reason,
                "model": response.model,
                "usage": response.usage.model_dump(),
            }
            if response.tool_calls:
                entry["response"]["tool_calls"] = [c.model_dump(mode="json") for c in response.tool_calls]
            if response.response_id:
                entry["response"]["response_id"] = response.response_id
        if error is not None:
            entry["error"] = {"type": type(error).__name__, "message": str(error)}
        return await self._save(entry, request.purpose, f"a{request.attempt}", redactor)

    async def write_note(self, *, model: str, purpose: str, note: dict[str, Any], redactor: Redactor) -> Path | None:
        """A record that is no model call: what the caller made of the answers (the near misses it
        repaired, say), as ``<utc time>-<seq>-<purpose>-note.json``, redacted like the calls."""
        entry = {"time": datetime.now(UTC).isoformat(), "model": model, "purpose": purpose, "note": note}
        return await self._save(entry, purpose, "note", redactor)

    async def _save(self, entry: dict[str, Any], purpose: str, tail: str, redactor: Redactor) -> Path | None:
        entry = redactor.data(entry)
        purpose = re.sub(r"[^a-zA-Z0-9_-]", "_", purpose)[:40]
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        path = self.directory / f"{stamp}-{next(self._seq):05d}-{purpose}-{tail}.json"
        text = json.dumps(entry, indent=2, default=str, ensure_ascii=False)
        try:
            await asyncio.to_thread(_write, path, text)
        except OSError as exc:
            # A debugging aid must not fail the (already paid for) model call.
            logger.warning(
                "cannot write the inference log to %s (%s); pass a writable inference_log_dir "
                "or None to switch the log off",
                self.directory, exc.strerror or type(exc).__name__,
            )
            return None
        return path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
