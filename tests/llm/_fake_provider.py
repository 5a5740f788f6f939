"""A scriptable HTTP server on 127.0.0.1 that speaks just enough of the OpenAI chat
completions and Responses (computer use), the Anthropic messages (tool use, the computer
tool on the beta API) and the Gemini ``generateContent`` wire formats for the real SDKs to talk
to it (Azure OpenAI is the chat completions format under ``/openai/deployments/<name>/``).

Each test queues the answers it wants (status, JSON body, headers, delay, raw bytes) and
then reads back the exact requests the SDK sent.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeProvider:
    """``with FakeProvider() as fake: fake.reply(...); fake.url``; binds 127.0.0.1 only."""

    def __init__(self) -> None:
        self.replies: queue.Queue[Reply] = queue.Queue()
        self.seen: list[Seen] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw.decode("utf-8", errors="replace")
                owner.seen.append(Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                try:
                    reply = owner.replies.get_nowait()
                except queue.Empty:
                    reply = Reply(status=599, body={"error": {"message": "fake server: no reply queued"}})
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.headers.pop("content-type", "application/json"))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-provider", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, body: Any = None, *, status: int = 200, headers: dict[str, str] | None = None,
              delay: float = 0.0, raw: bytes | None = None) -> None:
        self.replies.put(Reply(status=status, body=body, headers=dict(headers or {}), delay=delay, raw=raw))

    def reset(self) -> None:
        self.seen.clear()
        while not self.replies.empty():
            self.replies.get_nowait()

    @contextmanager
    def emptied(self) -> Iterator[FakeProvider]:
        """This server with no reply queued and no request seen, and emptied again after the
        block: a fixture's way of sharing one server between tests that must not see each other."""
        self.reset()
        try:
            yield self
        finally:
            self.reset()

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --- wire-format answers -------------------------------------------------------------------


def chat_completion(content: str | None = None, *, tool_call: tuple[str, str] | None = None, refusal: str | None = None,
                    prompt_tokens: int = 11, completion_tokens: int = 7, cached: int = 0, reasoning: int = 0,
                    finish_reason: str = "stop", model: str = "gpt-4.1-mini") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_call is not None:
        name, arguments = tool_call
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}]
        finish_reason = "tool_calls"
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


def anthropic_message(*, text: str | None = None, tool_use: tuple[str, dict[str, Any]] | None = None,
                      stop_reason: str = "end_turn", input_tokens: int = 20, output_tokens: int = 5,
                      cache_read: int = 0, cache_write: int = 0, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_use is not None:
        name, arguments = tool_use
        content.append({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})
        stop_reason = "tool_use"
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write},
    }


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def anthropic_tool_uses(*calls: tuple[str, str, dict[str, Any]], text: str | None = None, input_tokens: int = 20,
                        output_tokens: int = 5, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    """A message with several ``tool_use`` blocks, each ``(id, name, input)``: e.g. the native
    computer tool's ``("toolu_1", "computer", {"action": "left_click", "coordinate": [x, y]})``."""
    body = anthropic_message(text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=model)
    body["content"] += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    if calls:
        body["stop_reason"] = "tool_use"
    return body


def openai_response(*, id: str = "resp_1", computer_call: tuple[str, dict[str, Any]] | None = None,
                    safety_checks: list[dict[str, Any]] | None = None, text: str | None = None,
                    refusal: str | None = None, input_tokens: int = 50, output_tokens: int = 8, cached: int = 0,
                    reasoning: int = 0, model: str = "computer-use-preview") -> dict[str, Any]:
    """A Responses API answer: a reasoning item, then a ``computer_call`` ``(call_id, action)``
    with its ``pending_safety_checks``, and/or an assistant message (text or refusal)."""
    output: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    if computer_call is not None:
        call_id, action = computer_call
        output.append({"type": "computer_call", "id": f"cu_{call_id}", "call_id": call_id, "action": action,
                       "pending_safety_checks": safety_checks or [], "status": "completed"})
    if text is not None or refusal is not None:
        part = {"type": "output_text", "text": text, "annotations": []} if text is not None else {"type": "refusal", "refusal": refusal}
        output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [part]})
    return {
        "id": id, "object": "response", "created_at": 1, "status": "completed", "model": model, "output": output,
        "error": None, "incomplete_details": None, "instructions": None, "metadata": {}, "parallel_tool_calls": True,
        "temperature": 1.0, "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "auto",
        "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
                  "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning},
                  "total_tokens": input_tokens + output_tokens},
    }


def gemini_response(text: str | None = None, *, function_call: tuple[str, dict[str, Any]] | None = None,
                    finish_reason: str = "STOP", prompt_tokens: int = 20, output_tokens: int = 5, cached: int = 0,
                    thoughts: int = 0, thought_text: str | None = None,
                    model: str = "gemini-2.5-flash") -> dict[str, Any]:
    """A ``generateContent`` answer: text and/or one ``functionCall`` ``(name, args)``, after an
    optional thought part (which is not the answer)."""
    parts: list[dict[str, Any]] = []
    if thought_text is not None:
        parts.append({"text": thought_text, "thought": True})
    if text is not None:
        parts.append({"text": text})
    if function_call is not None:
        name, args = function_call
        parts.append({"functionCall": {"id": "fc_1", "name": name, "args": args}})
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
                             "totalTokenCount": prompt_tokens + output_tokens + thoughts}
    if cached:
        usage["cachedContentTokenCount"] = cached
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
        "usageMetadata": usage, "modelVersion": model, "responseId": "resp-gemini-1",
    }


def gemini_error(code: int, message: str, status: str, *, reason: str | None = None) -> dict[str, Any]:
    """A Gemini API error body (``reason`` goes into an ErrorInfo detail, e.g. API_KEY_INVALID)."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if reason is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                             "domain": "googleapis.com"}]
    return {"error": error}
