"""``local/<file>.gguf``: a GGUF model run in this process by llama.cpp, through ``xllamacpp``.

Installed with the ``stagehand_py[local]`` extra: xllamacpp ships prebuilt wheels (no compiler),
needs only Debian's ``libgomp1``, and runs llama.cpp's own server loop in-process, so answers are
constrained by the JSON Schema (a grammar) and the prompt's key/value cache is reused across calls
that share a prefix (system prompt first, then the page), which is what makes a CPU model usable.

Choices made here, and why:

- **One engine per model file per process.** Loading a 1.5B model takes seconds and ~2 GB; every
  ``LocalModel``/``LLMClient``/``Stagehand`` on the same file and settings shares one engine (a
  process-wide registry, the one piece of shared state in the library: it holds no keys and no
  user data). :meth:`LocalModel.aclose` drops a user's reference; the last one frees the memory;
  :func:`release_local_models` frees all.
- **Concurrency.** The engine has one slot; calls from any thread or event loop queue on a lock
  and run one at a time.
- **Cancellation.** Answers are streamed inside the process; when the awaiting task is
  cancelled (a timeout), generation stops at the next token, so a retry never queues behind an
  abandoned answer. Prompt processing itself cannot be interrupted.
- **Time.** A request's bound comes from the profile (:data:`~stagehand_py.llm.LOCAL_TIMING`: a
  base plus the prompt and the answer at a slow CPU's speed) and starts when the engine takes the
  request, not while it waits behind another one: a model that is computing is not hung.
- **Busy-waiting OpenMP threads.** llama.cpp's OpenMP threads spin between tokens and starve the
  browser; libgomp reads ``OMP_WAIT_POLICY`` once, when xllamacpp is imported, so the first import
  here sets ``OMP_WAIT_POLICY=PASSIVE`` unless the user has set it (a value you set is kept).
- **The listening socket.** xllamacpp always opens its HTTP server too (there is no switch to
  turn it off): it is bound to 127.0.0.1 on a free port, protected by a random API key that
  never leaves this process, and closed when the engine is freed or the process exits.
- **Errors before loading.** A missing file, a file that is not GGUF, too little free memory and a
  missing libgomp each raise a :class:`ConfigurationError` that says what to do.
- **Loading in the background.** :meth:`LocalModel.start_loading` loads the engine in a thread at
  once (a ``Stagehand`` calls it when it starts) and, given the fixed system prompt, has its prefix
  ready in the slot: restored from the file saved beside the model, or computed and saved for the
  next process (:mod:`._local_prefix`). Requests made meanwhile wait for the load; the warm-up
  holds the engine's lock, so a request queues behind it and reuses what it computed.
  :meth:`LocalModel.ready` waits for the load and says what it took (:class:`ModelLoad`). A load
  that fails is raised by the next request, never swallowed; at exit the process waits for a
  running load and at most one warm-up piece.

Nothing here imports ``xllamacpp`` until the first request (or the background load), so
``import stagehand_py`` stays light.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..._errors import BadRequestError, ConfigurationError, InvalidArgumentError, ProviderError, StagehandError
from ..._prompts.llm import prompted_json_instructions
from ..._usage import Usage
from .._messages import ImagePart
from .._model_files import MODELS_DIR_ENV, models_dir
from .._profiles import Profile, default_profile
from .._request import LLMRequest, ModelResponse, estimate_input_tokens
from ._common import timeout_error
from ._local_checks import check_gguf, check_memory, import_engine, physical_cores, resolve_model_path
from ._local_prefix import Prefix, cache_folder, prepare_prefix

__all__ = [
    "DEFAULT_N_BATCH",
    "DEFAULT_N_UBATCH",
    "MODELS_DIR_ENV",
    "LocalModel",
    "ModelLoad",
    "check_memory",
    "import_engine",
    "models_dir",
    "physical_cores",
    "release_local_models",
    "resolve_model_path",
]

logger = logging.getLogger("stagehand_py")

#: Prompt tokens per decode call (``n_batch``) and per compute pass (``n_ubatch``); chosen from
#: ``benchmarks/local_engine_sizes.py`` (its table is in benchmarks/README.md).
DEFAULT_N_BATCH = 2048
DEFAULT_N_UBATCH = 512


@dataclass(frozen=True)
class _Sizes:
    """How an engine is loaded; models with equal sizes share one engine."""

    n_ctx: int
    n_threads: int | None
    seed: int
    n_batch: int
    n_ubatch: int


@dataclass
class _Engine:
    """One loaded model: an xllamacpp server (in-process calls) and the lock that queues them."""

    server: Any
    api_key: str
    #: Where its fixed prompts' caches are saved: beside the file it was loaded from.
    cache_folder: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0
    #: What became of each fixed prompt prepared on this engine (see :mod:`._local_prefix`).
    prefixes: dict[str, Prefix] = field(default_factory=dict)


_ENGINES: dict[tuple[str, _Sizes], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _acquire_engine(path: Path, sizes: _Sizes, *, hold: bool = False) -> _Engine:
    """The engine for ``path`` and ``sizes``, loaded when there is none; ``hold``: returned with its
    lock held (taken before any request can, when this call loaded it)."""
    key = (str(path.resolve()), sizes)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        fresh = engine is None
        if engine is None:
            engine = _load(path, sizes)
            _ENGINES[key] = engine
        engine.users += 1
        if hold and fresh:
            engine.lock.acquire()
    if hold and not fresh:
        engine.lock.acquire()
    return engine


def _release_engine(engine: _Engine) -> None:
    with _ENGINES_LOCK:
        engine.users -= 1
        if engine.users <= 0:
            for key, value in list(_ENGINES.items()):
                if value is engine:
                    del _ENGINES[key]
            with engine.lock:  # wait for a running answer before the engine goes
                engine.server = None


def release_local_models() -> None:
    """Free every loaded local model now (each is loaded again on its next request)."""
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for engine in engines:
        with engine.lock:
            engine.server = None


def _load(path: Path, sizes: _Sizes) -> _Engine:
    check_gguf(path)
    check_memory(path, sizes.n_ctx)
    xllamacpp = import_engine()
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = sizes.n_ctx
    params.n_batch = sizes.n_batch
    params.n_ubatch = sizes.n_ubatch
    params.n_parallel = 1  # one slot: one answer at a time, and its cache reused by the next prompt
    params.verbosity = -1
    params.hostnames = ["127.0.0.1"]  # the HTTP side xllamacpp always opens: loopback only, a free port
    params.port = 0
    api_key = secrets.token_urlsafe(24)
    params.api_keys = [api_key]
    threads = sizes.n_threads if sizes.n_threads is not None else physical_cores()
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    # Where the fixed prompt's cache is saved and restored (a folder beside the model; created when
    # the first one is saved). Only this process can use it: the HTTP side wants the key above.
    params.slot_save_path = str(cache_folder(path)) + os.sep
    started = time.perf_counter()
    try:
        server = xllamacpp.Server(params)
    except (RuntimeError, ValueError, OSError) as exc:
        raise ConfigurationError(
            f"local model {path.name} could not be loaded from {path} ({exc}): the file may be truncated or not "
            "a model llama.cpp knows. Fetch it again (`stagehand-py model fetch` checks its SHA-256)."
        ) from exc
    logger.info("loaded local model %s in %.1f s (n_ctx=%d, n_batch=%d, n_ubatch=%d, %d threads)", path.name,
                time.perf_counter() - started, sizes.n_ctx, sizes.n_batch, sizes.n_ubatch, threads)
    return _Engine(server=server, api_key=api_key, cache_folder=cache_folder(path))


@dataclass(frozen=True)
class ModelLoad:
    """How a model got ready to answer (``await Stagehand.model_ready()``).

    ``seconds``: the load itself (the file into memory and, when its cache was saved, the fixed
    prompt restored), apart from any call; 0 for a hosted model or an engine already loaded.
    ``prompt_cache``: what became of the fixed prompt every verb starts with: ``"restored"`` from
    the file saved beside the model by an earlier run, ``"computing"`` now in the background (no
    saved file yet: the first call waits for it, and it is saved for the next run), ``"saved"``
    (computed and saved), ``"computed"`` (not saved: the folder is not writable), ``"off"`` (a
    hosted model, or no fixed prompt). ``cached_tokens``: that prompt's tokens.
    """

    model: str
    seconds: float
    prompt_cache: Literal["restored", "computing", "saved", "computed", "off"]
    cached_tokens: int = 0


#: Set at exit: a warm-up stops after its current piece.
_STOP = threading.Event()
_LOADERS: set[threading.Thread] = set()


@atexit.register
def _wait_for_loaders() -> None:
    """At exit, let a running load finish (an engine torn down under it would crash the process)."""
    _STOP.set()
    for thread in list(_LOADERS):
        thread.join(timeout=120)


class LocalModel:
    """A GGUF model run in-process by llama.cpp; ``LLMClient("local/<file>.gguf")`` makes one.

    Make it directly for more control::

        LLMClient(LocalModel("~/models/qwen.gguf", n_ctx=8192, n_threads=2))

    ``n_ctx`` bounds prompt plus answer (keep ``Stagehand(token_budget=...)`` below it);
    ``n_threads`` defaults to the physical cores this process may use (:func:`physical_cores`);
    ``n_batch``/``n_ubatch`` are the prompt tokens per decode call and per compute pass (defaults
    measured on 2 CPU cores, see benchmarks/README.md); ``timeout`` (seconds per request, counted from
    when the engine starts on it) defaults to the profile's bound for each prompt's size. The file
    is checked here; the model is loaded
    (``import xllamacpp`` included) by :meth:`start_loading` or on the first request, and shared with
    every other ``LocalModel`` of the same file and settings in this process.
    """

    provider = "local"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_batch: int = DEFAULT_N_BATCH,
        n_ubatch: int = DEFAULT_N_UBATCH,
        seed: int = 0,
        profile: Profile | None = None,
        timeout: float | None = None,
    ) -> None:
        if n_ctx < 512:
            raise InvalidArgumentError(f"n_ctx must be at least 512 tokens, not {n_ctx}.")
        if n_threads is not None and n_threads < 1:
            raise InvalidArgumentError(f"n_threads must be 1 or more, not {n_threads}.")
        if n_ubatch < 1 or n_batch < n_ubatch:
            raise InvalidArgumentError(
                f"n_batch={n_batch} and n_ubatch={n_ubatch}: both must be 1 or more and n_batch at least n_ubatch "
                f"(the defaults are n_batch={DEFAULT_N_BATCH}, n_ubatch={DEFAULT_N_UBATCH}).")
        if timeout is not None and timeout <= 0:
            raise InvalidArgumentError(f"timeout must be a positive number of seconds (or None: from the profile), not {timeout}.")
        self.path = resolve_model_path(os.fspath(path))
        self.model_name = self.path.name
        self.profile = profile or default_profile("local", self.model_name, base_url=None)
        self._n_ctx = n_ctx
        self._sizes = _Sizes(n_ctx=n_ctx, n_threads=n_threads, seed=seed, n_batch=n_batch, n_ubatch=n_ubatch)
        self._timeout = timeout
        self._engine: _Engine | None = None
        self._engine_lock = threading.Lock()
        self._loaded: threading.Event | None = None  # set once a background load is over
        self._load: ModelLoad | None = None
        self._load_error: StagehandError | None = None

    def __repr__(self) -> str:
        return f"LocalModel({str(self.path)!r}, n_ctx={self._n_ctx})"

    async def aclose(self) -> None:
        """Drop this model's hold on the shared engine (the last holder frees its memory)."""
        if self._loaded is not None:  # a background load: its engine is this model's hold too
            await asyncio.to_thread(self._loaded.wait)
        with self._engine_lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            await asyncio.to_thread(_release_engine, engine)

    def start_loading(self, *, fixed_prompt: str | None = None) -> None:
        """Load the engine now, in a background thread, and have ``fixed_prompt``'s prefix ready
        (restored from the file beside the model, or computed and saved there; see
        :mod:`._local_prefix`). ``fixed_prompt`` is written to disk as the model's cache: pass fixed
        instructions only, never page text or a value. Returns at once; does nothing when a load
        already started or the engine is loaded."""
        with self._engine_lock:
            if self._loaded is not None or (self._engine is not None and self._engine.server is not None):
                return
            loaded = self._loaded = threading.Event()
        thread = threading.Thread(target=self._load_in_background, args=(fixed_prompt, loaded), daemon=True,
                                  name=f"stagehand-load-{self.model_name}")
        _LOADERS.add(thread)
        thread.start()

    async def ready(self) -> ModelLoad:
        """Wait for the engine (loading it now when nothing started it) and say what the load took.
        Raises what the load raised (a :class:`ConfigurationError` saying what to do)."""
        self.start_loading()
        loaded = self._loaded
        if loaded is not None:
            await asyncio.to_thread(loaded.wait)
        await asyncio.to_thread(self._get_engine)
        return self._load or ModelLoad(self.model_name, 0.0, "off")

    def _load_in_background(self, fixed_prompt: str | None, loaded: threading.Event) -> None:
        started = time.perf_counter()
        try:
            engine = _acquire_engine(self.path, self._sizes, hold=True)
        except StagehandError as exc:
            self._load_error = exc
            loaded.set()
            _LOADERS.discard(threading.current_thread())
            return
        try:
            with self._engine_lock:
                self._engine = engine
            seconds = time.perf_counter() - started
            self._load = ModelLoad(self.model_name, seconds, "off")
            if fixed_prompt and engine.server is not None:
                prefix = engine.prefixes.get(fixed_prompt)
                if prefix is None:
                    def computing() -> None:  # no saved file: requests may go on waiting behind the warm-up
                        self._load = ModelLoad(self.model_name, seconds, "computing")
                        loaded.set()

                    prefix = prepare_prefix(engine.server, engine.api_key, model=self.path, folder=engine.cache_folder,
                                            system=fixed_prompt, settings=self._cache_settings(), stop=_STOP,
                                            on_compute=computing)
                    engine.prefixes[fixed_prompt] = prefix
                restored = prefix.seconds if prefix.outcome == "restored" else 0.0
                self._load = ModelLoad(self.model_name, seconds + restored, prefix.outcome, prefix.tokens)
        finally:
            engine.lock.release()
            loaded.set()
            _LOADERS.discard(threading.current_thread())

    def _cache_settings(self) -> dict[str, Any]:
        """What, besides the model file and the prompt, keys the saved prompt cache."""
        import xllamacpp

        return {"n_ctx": self._sizes.n_ctx, "n_batch": self._sizes.n_batch, "n_ubatch": self._sizes.n_ubatch,
                "engine": str(getattr(xllamacpp, "__version__", "?"))}

    def _get_engine(self) -> _Engine:
        if self._loaded is not None:
            self._loaded.wait()  # a background load: its engine, or its error
        with self._engine_lock:
            if self._load_error is not None:
                error, self._load_error, self._loaded = self._load_error, None, None  # the next call tries again
                raise ConfigurationError(str(error)) from error
            if self._engine is None or self._engine.server is None:
                self._engine = _acquire_engine(self.path, self._sizes)
            return self._engine

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The OpenAI-style chat request the engine gets (public for tests and logs)."""
        from ._openai import to_openai_messages

        schema = request.output_schema
        mode = self.profile.output_mode
        extra_system = prompted_json_instructions(schema) if schema is not None and mode == "prompted" else None
        params: dict[str, Any] = {
            "messages": to_openai_messages(request, extra_system),
            "max_tokens": request.max_output_tokens or self.profile.max_output_tokens,
            "temperature": 0.0 if request.temperature is None else request.temperature,
            "seed": self._sizes.seed,
            "stream": True,  # streamed inside the process only: lets a cancelled call stop at the next token
            "cache_prompt": True,
        }
        if schema is not None:
            # Every mode is grammar-constrained here: the grammar is free and the answer exact.
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.output_name or "answer", "schema": schema},
            }
        return params

    async def request(self, request: LLMRequest) -> ModelResponse:
        if any(isinstance(p, ImagePart) for m in request.messages for p in m.content):
            raise InvalidArgumentError(
                f"local model {self.model_name!r} does not take images: call without vision "
                "(vision=False) or use a model that sees."
            )
        params = self.build_params(request)
        input_tokens = estimate_input_tokens(request)
        bound = self._timeout if self._timeout is not None else self.profile.timing.seconds_for(
            input_tokens=input_tokens, max_output_tokens=int(params["max_tokens"]))
        cancelled = threading.Event()
        began = threading.Event()  # set when the engine takes this request (after any queue)
        started = time.perf_counter()
        work = asyncio.ensure_future(asyncio.to_thread(self._generate, params, cancelled, began))
        try:
            await self._wait_within(work, began, bound)
        except asyncio.CancelledError:
            cancelled.set()  # the worker stops at its next token and frees the slot
            raise
        except TimeoutError:
            cancelled.set()
            raise timeout_error(provider=self.provider, model=self.model_name, waited=bound,
                                input_tokens=input_tokens, profile=self.profile, given=self._timeout) from None
        return self._parse(work.result(), wall_ms=(time.perf_counter() - started) * 1000)

    @staticmethod
    async def _wait_within(work: asyncio.Future[Any], began: threading.Event, bound: float) -> None:
        """Wait for ``work``; raise ``TimeoutError`` once it has run ``bound`` seconds on the engine.

        Time spent queued behind another request does not count: that one is computing, not hung.
        """
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        while not work.done():
            if deadline is None and began.is_set():
                deadline = loop.time() + bound
            wait = 0.05 if deadline is None else max(0.0, deadline - loop.time())
            await asyncio.wait({work}, timeout=wait)
            if not work.done() and deadline is not None and loop.time() >= deadline:
                raise TimeoutError
        work.result()  # re-raise what the worker raised

    def _generate(self, params: dict[str, Any], cancelled: threading.Event,
                  began: threading.Event | None = None) -> list[dict[str, Any]]:
        engine = self._get_engine()
        chunks: list[dict[str, Any]] = []

        def on_chunk(raw: str) -> bool:
            chunks.append(json.loads(raw))
            return cancelled.is_set()  # True stops the generation

        with engine.lock:
            if began is not None:
                began.set()
            if cancelled.is_set():  # abandoned while it queued: do not compute it at all
                return chunks
            if engine.server is None:
                raise ProviderError(f"local model {self.model_name!r} was released while a request waited for it.",
                                    provider=self.provider, model=self.model_name)
            result = engine.server.handle_chat_completions(json.dumps(params, ensure_ascii=False), on_chunk)
        if isinstance(result, dict):  # an error answered at once, e.g. a prompt over the context size
            chunks.append(result)
        return chunks

    def _parse(self, chunks: list[dict[str, Any]], *, wall_ms: float) -> ModelResponse:
        text: list[str] = []
        finish: str | None = None
        usage_raw: dict[str, Any] = {}
        timings: dict[str, Any] = {}
        for chunk in chunks:
            error = chunk.get("error")
            if error is not None:
                self._raise_error(error)
            for choice in chunk.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    text.append(content)
                finish = choice.get("finish_reason") or finish
            usage_raw = chunk.get("usage") or usage_raw
            timings = chunk.get("timings") or timings
        # llama.cpp's timings: prompt_n tokens computed now, cache_n taken from the slot's cache
        # (the prefix this prompt shares with the slot's previous one). A streamed answer carries
        # no usage unless asked; when it does, its prompt_tokens_details say the same.
        cached = int(timings.get("cache_n", 0) or 0)
        if usage_raw:
            input_tokens = int(usage_raw.get("prompt_tokens", 0) or 0)
            output_tokens = int(usage_raw.get("completion_tokens", 0) or 0)
            details = usage_raw.get("prompt_tokens_details") or {}
            cached = int(details.get("cached_tokens", 0) or 0) or cached
        else:
            input_tokens = int(timings.get("prompt_n", 0) or 0) + cached
            output_tokens = int(timings.get("predicted_n", 0) or 0)
        usage = Usage(requests=1, input_tokens=input_tokens, output_tokens=output_tokens,
                      cached_tokens=min(cached, input_tokens), wall_ms=wall_ms)
        return ModelResponse(text="".join(text), usage=usage, model=self.model_name, finish_reason=finish)

    def _raise_error(self, error: Any) -> None:
        details = error if isinstance(error, dict) else {"message": str(error)}
        message = str(details.get("message", details))
        if details.get("type") == "exceed_context_size_error" or details.get("code") == 400:
            raise BadRequestError(
                f"local model {self.model_name!r}: {message}. Lower Stagehand(token_budget=...) or raise "
                f"LocalModel(n_ctx=...) (now {self._n_ctx}).",
                provider=self.provider, model=self.model_name, status=400, body=message,
            )
        raise ProviderError(f"local model {self.model_name!r} failed: {message}",
                            provider=self.provider, model=self.model_name)
