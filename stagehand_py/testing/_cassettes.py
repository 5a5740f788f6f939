"""Record real model traffic once, replay it in CI without a key or a model.

Hosted providers are recorded at the HTTP transport level (the SDKs' ``httpx2`` clients), so what
is replayed is exactly what the provider sent, through the real SDK parsing and our real adapters.
Requests match on method, path and the JSON body (canonicalised, secrets redacted); identical
requests replay in recorded order. ``authorization``/``x-api-key`` and similar headers are never
written. Models with no HTTP of ours to record (the embedded ``local/`` model, a user's own model
object) are recorded at the model boundary instead: the answer keyed by the redacted request
(purpose, messages, schema), so a replay needs neither the model file nor its engine.

Modes (the pytest plugin's ``--stagehand-record none|once|all``):

- ``none``: replay only; a missing cassette or an unmatched request is a ``CassetteError``.
- ``once``: replay when the file exists, otherwise record to it.
- ``all``: always record, replacing the file.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeAlias

import httpx2

from .._errors import CassetteError
from .._prompts.common import FENCE_NONCE
from .._secrets import Redactor
from ..llm._hooks import active_transport
from ..llm._request import LanguageModel, LLMRequest, ModelResponse

__all__ = ["Cassette", "CassetteMode", "use_cassette", "SCRUBBED_HEADERS"]

logger = logging.getLogger("stagehand_py")

CassetteMode: TypeAlias = Literal["none", "once", "all"]
_MODES = ("none", "once", "all")
_FORMAT_VERSION = 1

#: Never written to a cassette.
SCRUBBED_HEADERS = frozenset({
    "authorization", "x-api-key", "api-key", "proxy-authorization", "cookie", "set-cookie",
    "openai-organization", "openai-project", "anthropic-organization-id",
})
#: Not replayed: the stored body is already decoded and its length is recomputed.
_DROPPED_RESPONSE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection"})


def _decode(content: bytes) -> dict[str, Any]:
    text = content.decode("utf-8", errors="replace")
    try:
        return {"json": json.loads(text)} if text else {"text": ""}
    except json.JSONDecodeError:
        return {"text": text}


#: An element id of the outline (``0-42``): the browser numbers nodes differently from run to run.
_ELEMENT_ID = re.compile(r"(?<![\w.])\d+-\d+(?![\w.])")
_ID_SLOT = re.compile(r"<id\d+>")


class _Ids:
    """Element ids of one request, numbered in order of first appearance.

    A recording stores ``<id1>``, ``<id2>``, ... in place of the ids it saw, in the request and in
    the answer, so that a replay on the same page matches even when the browser numbered its nodes
    differently, and the replayed answer names this run's ids.
    """

    def __init__(self, text: str) -> None:
        self.slots: dict[str, str] = {}
        for token in _ELEMENT_ID.findall(text):
            self.slots.setdefault(token, f"<id{len(self.slots) + 1}>")

    def hide(self, text: str) -> str:
        return _ELEMENT_ID.sub(lambda m: self.slots.get(m.group(0), m.group(0)), text)

    def show(self, text: str) -> str:
        ids = {slot: token for token, slot in self.slots.items()}
        return _ID_SLOT.sub(lambda m: ids.get(m.group(0), m.group(0)), text)


def _stable(key: dict[str, Any]) -> tuple[dict[str, Any], _Ids]:
    """``key`` with each request's random fence nonce and its element ids replaced, so the same
    prompt on the same page matches again; and the ids, to translate the answer."""
    text = FENCE_NONCE.sub("NONCE", json.dumps(key))
    ids = _Ids(text)
    stable: dict[str, Any] = json.loads(ids.hide(text))
    return stable, ids


def _translate(data: Any, convert: Any) -> Any:
    """``data`` (JSON-like) with ``convert`` applied to its JSON text."""
    return json.loads(convert(json.dumps(data)))


def _encode(body: dict[str, Any]) -> bytes:
    if "json" in body:
        return json.dumps(body["json"]).encode("utf-8")
    return str(body.get("text", "")).encode("utf-8")


class Cassette:
    """One cassette file and the transport that reads or writes it.

    Use it through :func:`use_cassette` (every ``LLMClient`` model string inside the block
    goes through it), or pass ``http_client=cassette.http_client()`` to one ``LLMClient``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        mode: CassetteMode = "none",
        secrets: Iterable[str] = (),
        real_transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        if mode not in _MODES:
            raise CassetteError(f"cassette mode {mode!r} is not one of {', '.join(_MODES)}.")
        self.path = Path(path)
        self.mode: CassetteMode = mode
        self._redactor = Redactor(secrets)
        self._real = real_transport
        exists = self.path.exists()
        if mode == "none" and not exists:
            raise CassetteError(
                f"cassette {self.path} does not exist and the mode is 'none' (replay only). Record it "
                "once with a real API key: mode='once' (pytest: --stagehand-record once)."
            )
        #: True when requests are answered from the file and never reach the network.
        self.replaying = mode == "none" or (mode == "once" and exists)
        #: How the answers were produced, for a replay that must ask the same way (the pytest
        #: plugin keeps the model's name, choice mode and token budget here).
        self.recorded_with: dict[str, Any] = {}
        self.interactions: list[dict[str, Any]] = self._load() if self.replaying else []
        self._used = [False] * len(self.interactions)
        self.transport = _CassetteTransport(self)

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r}, interactions={len(self.interactions)})"

    @property
    def unused(self) -> int:
        """Recorded interactions not replayed yet."""
        return self._used.count(False)

    def http_client(self, *, timeout: float = 60.0) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=self.transport, timeout=timeout)

    def _load(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            interactions = data["interactions"]
            if not isinstance(interactions, list):
                raise TypeError("interactions is not a list")
            self.recorded_with = dict(data.get("recorded_with") or {})
            return interactions
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CassetteError(
                f"cassette {self.path} cannot be read ({type(exc).__name__}: {exc}). Delete it and "
                "record again with mode='all'."
            ) from exc

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {"version": _FORMAT_VERSION, "interactions": self.interactions}
        if self.recorded_with:
            data["recorded_with"] = self.recorded_with
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    def request_key(self, method: str, path: str, body: bytes) -> tuple[dict[str, Any], _Ids]:
        """What a request is matched on: method, path and query, canonical redacted body."""
        decoded = _decode(body)
        return _stable({"method": method.upper(), "path": path, **self._redactor.data(decoded)})

    def _take(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """The first unused interaction recorded for ``key`` (marked used), or None."""
        canonical = json.dumps(key, sort_keys=True)
        for i, interaction in enumerate(self.interactions):
            if not self._used[i] and json.dumps(interaction["request"], sort_keys=True) == canonical:
                self._used[i] = True
                return interaction
        return None

    @property
    def at_model_boundary(self) -> bool:
        """True when the recorded answers are a model's, not HTTP exchanges."""
        return any("model_response" in interaction for interaction in self.interactions)

    def find(self, key: dict[str, Any]) -> dict[str, Any]:
        found = self._take(key)
        if found is not None:
            return found
        body = json.dumps(key.get("json", key.get("text")), sort_keys=True)[:300]
        raise CassetteError(
            f"cassette {self.path} has no unused recording for {key['method']} {key['path']} with body "
            f"{body}... ({len(self.interactions)} recorded, {self.unused} unused). The request changed "
            "since it was recorded: re-record with mode='all' (pytest: --stagehand-record all)."
        )

    # --- models without HTTP (the embedded model, users' model objects) -------------------------

    def model_key(self, request: LLMRequest) -> tuple[dict[str, Any], _Ids]:
        """What a model-boundary request is matched on: purpose, messages and schema, redacted.

        Images are keyed by their SHA-256; the model's name is left out, so a cassette recorded
        with one model replays wherever the test runs.
        """
        import hashlib

        def part(p: Any) -> Any:
            if getattr(p, "type", None) == "image":
                return {"type": "image", "sha256": hashlib.sha256(p.data).hexdigest()}
            return p.model_dump(mode="json")

        messages = [{"role": m.role, "content": [part(p) for p in m.content]} for m in request.messages]
        key = {"model_request": {"purpose": request.purpose, "messages": messages, "schema": request.output_schema}}
        redacted: dict[str, Any] = self._redactor.data(key)
        return _stable(redacted)

    async def answer(self, request: LLMRequest, model: LanguageModel) -> ModelResponse:
        """Replay the recorded answer to ``request``, or ask ``model`` and record its answer."""
        key, ids = self.model_key(request)
        if self.replaying:
            stored = self.find_model(key)
            return ModelResponse.model_validate(_translate(stored["model_response"], ids.show))
        response = await model.request(request)
        answer = _translate(self._redactor.data(response.model_dump(mode="json")), ids.hide)
        self.interactions.append({"request": key, "model_response": answer})
        self._used.append(True)
        self.save()
        logger.info("cassette %s: recorded a %s answer at the model boundary", self.path, request.purpose)
        return response

    def find_model(self, key: dict[str, Any]) -> dict[str, Any]:
        found = self._take(key)
        if found is not None:
            return found
        purpose = key["model_request"]["purpose"]
        raise CassetteError(
            f"cassette {self.path} has no unused recording for a {purpose!r} request like this one "
            f"({len(self.interactions)} recorded, {self.unused} unused). The page or the prompt changed since it was "
            "recorded: re-record with mode='all' (pytest: --stagehand-record all)."
        )

    def record(self, key: dict[str, Any], response: httpx2.Response, content: bytes, ids: _Ids) -> None:
        headers = {
            k.lower(): v for k, v in response.headers.items()
            if k.lower() not in SCRUBBED_HEADERS and k.lower() not in _DROPPED_RESPONSE_HEADERS
        }
        body = _translate(self._redactor.data(_decode(content)), ids.hide)
        self.interactions.append({"request": key, "response": {"status": response.status_code, "headers": headers, **body}})
        self._used.append(True)
        self.save()


class _CassetteTransport(httpx2.AsyncBaseTransport):
    def __init__(self, cassette: Cassette) -> None:
        self._cassette = cassette

    @property
    def replaying(self) -> bool:
        return self._cassette.replaying

    async def answer(self, request: LLMRequest, model: LanguageModel) -> ModelResponse:
        """A model-boundary answer (see :meth:`Cassette.answer`)."""
        return await self._cassette.answer(request, model)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        path = request.url.raw_path.decode("ascii", errors="replace")
        key, ids = self._cassette.request_key(request.method, path, body)
        if self._cassette.replaying:
            stored = _translate(self._cassette.find(key)["response"], ids.show)
            return httpx2.Response(
                stored["status"], headers=stored.get("headers", {}), content=_encode(stored), request=request
            )
        real = self._cassette._real
        if real is None:
            real = self._cassette._real = httpx2.AsyncHTTPTransport()
        response = await real.handle_async_request(request)
        content = await response.aread()
        await response.aclose()
        self._cassette.record(key, response, content, ids)
        logger.info("cassette %s: recorded %s %s -> %d", self._cassette.path, request.method, path, response.status_code)
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _DROPPED_RESPONSE_HEADERS]
        return httpx2.Response(response.status_code, headers=headers, content=content, request=request)

    async def aclose(self) -> None:
        if self._cassette._real is not None:
            await self._cassette._real.aclose()


@contextmanager
def use_cassette(
    path: str | Path, *, mode: CassetteMode = "none", secrets: Iterable[str] = ()
) -> Iterator[Cassette]:
    """Route every provider request made inside through a cassette.

    ::

        with use_cassette("tests/cassettes/extract_title.json", mode="once"):
            result = await LLMClient("openai/gpt-4.1-mini").generate(...)

    Replays satisfy ``block_model_requests()``: a replayed request is not a real one.
    """
    cassette = Cassette(path, mode=mode, secrets=secrets)
    token = active_transport.set(cassette.transport)
    try:
        yield cassette
    finally:
        active_transport.reset(token)
