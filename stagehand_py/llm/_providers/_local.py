"""``local/<file>.gguf``: a GGUF model run in this process by llama.cpp (``llama-cpp-python``).

Installed with the ``stagehand_py[local]`` extra; PyPI has no wheel of llama-cpp-python, so
pip compiles llama.cpp (16–21 minutes on 2 cores). Nothing here imports ``llama_cpp`` until
the first request, so ``import stagehand_py`` stays light and side-effect free.

Known traps, each handled here:

- **Busy-waiting OpenMP threads.** llama.cpp's OpenMP threads spin between tokens; when
  another process (the browser) wants the CPU, generation gets 20–60× slower. libgomp reads
  ``OMP_WAIT_POLICY`` once, when llama.cpp is loaded, so the first import of ``llama_cpp``
  here sets ``OMP_WAIT_POLICY=PASSIVE`` unless the user has set it (a value you set is kept).
  When ``llama_cpp`` was already imported without it, a warning says so.
- **The AMX path.** A llama.cpp built with AMX crashes (segfault) on the first request on
  some AMX CPUs. When the loaded library reports AMX, the model is loaded with
  ``use_extra_bufts=False`` (no extra buffer types, so no AMX buffers); ``extra_buffers=``
  overrides the choice. Building without AMX (``-DGGML_AMX_*=OFF``) avoids it too.
- **Structured output.** The answer's JSON Schema becomes a grammar (llama-cpp-python's
  ``response_format={"type": "json_object", "schema": ...}``), so the model can only write
  JSON of that shape.

Generation runs in a worker thread, one request at a time per model; a cancelled request stops
at the next token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..._errors import BadRequestError, ConfigurationError, InvalidArgumentError, ProviderError
from ..._prompts.llm import prompted_json_instructions
from .._messages import ImagePart
from .._profiles import Profile, default_profile
from .._request import LLMRequest, ModelResponse
from .._usage import Usage

__all__ = [
    "LocalModel",
    "MODELS_DIR_ENV",
    "amx_in_library",
    "import_llama_cpp",
    "models_dir",
    "resolve_model_path",
]

logger = logging.getLogger("stagehand_py")

#: Folder where ``local/<name>.gguf`` names are looked up (and the fetch script writes).
MODELS_DIR_ENV = "STAGEHAND_MODELS_DIR"
_OMP_ENV = "OMP_WAIT_POLICY"
_INSTALL_HINT = (
    "install the extra with `pip install 'stagehand_py[local]'` (PyPI has no wheel of llama-cpp-python: "
    "pip compiles llama.cpp, 16-21 minutes on 2 cores; see docs/local_models.md)"
)
#: Llama() reads its model parameters from this module function; swapping it for the length
#: of one constructor call is the only way to set use_extra_bufts in llama-cpp-python 0.3.x.
_PARAMS_SWAP = threading.Lock()


def models_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where model names are looked up: ``$STAGEHAND_MODELS_DIR``, else
    ``$XDG_CACHE_HOME/stagehand_py/models``, else ``~/.cache/stagehand_py/models``
    (None when the environment names no home)."""
    env = os.environ if environ is None else environ
    if env.get(MODELS_DIR_ENV, "").strip():
        return Path(env[MODELS_DIR_ENV]).expanduser()
    if env.get("XDG_CACHE_HOME", "").strip():
        return Path(env["XDG_CACHE_HOME"]) / "stagehand_py" / "models"
    if env.get("HOME", "").strip():
        return Path(env["HOME"]) / ".cache" / "stagehand_py" / "models"
    return None


def resolve_model_path(name: str, *, environ: Mapping[str, str] | None = None) -> Path:
    """The GGUF file ``local/<name>`` means: a path (absolute, relative or ``~``), or a bare
    file name in :func:`models_dir`. Raises :class:`ConfigurationError` naming where it looked."""
    if not name.lower().endswith(".gguf"):
        raise ConfigurationError(
            f"local model {name!r} is not a .gguf file: use 'local/<path or name>.gguf', e.g. "
            "'local/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf' or 'local//models/my-model.gguf'."
        )
    given = Path(name).expanduser()
    tried = [given]
    if given.is_file():
        return given
    folder = models_dir(environ)
    if folder is not None and len(given.parts) == 1:
        candidate = folder / name
        tried.append(candidate)
        if candidate.is_file():
            return candidate
    raise ConfigurationError(
        f"local model file not found (looked at {', '.join(str(t) for t in tried)}). Give a path to a .gguf "
        f"file, put the file in {folder or '$' + MODELS_DIR_ENV}, or fetch one with "
        "`python scripts/fetch_local_model.py --download` (see docs/local_models.md)."
    )


def import_llama_cpp(environ: Any = None) -> Any:
    """Import ``llama_cpp``, first setting ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it.

    ``environ`` is ``os.environ`` (tests pass a dict). Raises :class:`ConfigurationError` when
    the extra is not installed.
    """
    env = os.environ if environ is None else environ
    if "llama_cpp" not in sys.modules:
        if _OMP_ENV not in env:
            env[_OMP_ENV] = "PASSIVE"
            logger.info("set %s=PASSIVE before loading llama.cpp (idle OpenMP threads must not spin "
                        "while the browser needs the CPU); set it yourself to choose another value", _OMP_ENV)
    elif _OMP_ENV not in env:
        logger.warning(
            "llama_cpp was imported before stagehand_py could set %s=PASSIVE; generation can be 20-60x "
            "slower while the browser is busy. Set %s=PASSIVE in the environment before starting Python.",
            _OMP_ENV, _OMP_ENV,
        )
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigurationError(f"local models need llama-cpp-python, which is not installed: {_INSTALL_HINT}.") from exc
    return llama_cpp


def amx_in_library(system_info: str) -> bool:
    """True when llama.cpp's system-info line says it was built with an AMX path."""
    return re.search(r"\bAMX(?:_INT8)?\s*=\s*1\b", system_info) is not None


@contextlib.contextmanager
def _without_extra_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load-time params with ``use_extra_bufts=False`` for the Llama() built inside."""
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params

    def params() -> Any:
        value = original()
        value.use_extra_bufts = False
        return value

    with _PARAMS_SWAP:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = original


class _Cancelled(Exception):
    """Raised inside generation when the awaiting task was cancelled."""


class LocalModel:
    """A GGUF model run in-process by llama.cpp; ``LLMClient("local/<file>.gguf")`` makes one.

    Make it directly for more control::

        LLMClient(LocalModel("~/models/qwen.gguf", n_ctx=8192, n_threads=2))

    ``n_ctx`` bounds prompt plus answer (keep ``Stagehand(token_budget=...)`` below it);
    ``n_threads`` defaults to llama-cpp-python's choice; ``extra_buffers`` None decides from
    the library (off when it has AMX, see the module docstring). The file is checked here; the
    model is loaded (``import llama_cpp`` included) on the first request.
    """

    provider = "local"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        extra_buffers: bool | None = None,
        seed: int = 0,
        profile: Profile | None = None,
        chat_format: str | None = None,
        verbose: bool = False,
    ) -> None:
        if n_ctx < 512:
            raise InvalidArgumentError(f"n_ctx must be at least 512 tokens, not {n_ctx}.")
        if n_threads is not None and n_threads < 1:
            raise InvalidArgumentError(f"n_threads must be 1 or more, not {n_threads}.")
        self.path = resolve_model_path(os.fspath(path))
        self.model_name = self.path.name
        self.profile = profile or default_profile("local", self.model_name, base_url=None)
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._extra_buffers = extra_buffers
        self._seed = seed
        self._chat_format = chat_format
        self._verbose = verbose
        self._llama: Any = None
        self._cancelled = threading.Event()  # the running request's; set when its caller gives up
        self._lock = threading.Lock()  # one generation (or load) at a time; llama.cpp contexts are not thread-safe

    def __repr__(self) -> str:
        return f"LocalModel({str(self.path)!r}, n_ctx={self._n_ctx})"

    async def aclose(self) -> None:
        """Free the model's memory (it is loaded again on the next request)."""
        llama, self._llama = self._llama, None
        if llama is not None:
            await asyncio.to_thread(self._close, llama)

    def _close(self, llama: Any) -> None:
        with self._lock:
            close = getattr(llama, "close", None)
            if callable(close):
                close()

    def _load(self) -> Any:
        """The Llama object, loaded on first use (call with the lock held)."""
        if self._llama is not None:
            return self._llama
        llama_cpp = import_llama_cpp()
        info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
        extra = self._extra_buffers if self._extra_buffers is not None else not amx_in_library(info)
        started = time.perf_counter()
        kwargs: dict[str, Any] = {"model_path": str(self.path), "n_ctx": self._n_ctx, "seed": self._seed,
                                  "verbose": self._verbose, "chat_format": self._chat_format}
        if self._n_threads is not None:
            kwargs["n_threads"] = self._n_threads
            kwargs["n_threads_batch"] = self._n_threads
        try:
            if extra:
                llama = llama_cpp.Llama(**kwargs)
            else:
                logger.info("loading %s with use_extra_bufts=False (llama.cpp built with AMX)", self.model_name)
                with _without_extra_buffers(llama_cpp):
                    llama = llama_cpp.Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(
                f"local model {self.model_name!r} could not be loaded from {self.path}: {exc}. Check that the "
                "file is a complete GGUF model (the fetch script verifies a SHA-256).",
                provider=self.provider, model=self.model_name,
            ) from exc
        logger.info("loaded local model %s in %.1f s (n_ctx=%d, threads=%s)", self.model_name,
                    time.perf_counter() - started, self._n_ctx, getattr(llama, "n_threads", "?"))
        self._stop_on_cancel(llama)
        self._llama = llama
        return llama

    def _stop_on_cancel(self, llama: Any) -> None:
        """Make this Llama stop before its next token once the current request is cancelled.

        Generation calls ``eval`` once per token from Python, so an exception there unwinds it
        cleanly (the token is not evaluated; the cache stays consistent). A logits processor
        cannot do this: it runs as a ctypes callback, where exceptions are swallowed.
        """
        evaluate = llama.eval

        def eval_unless_cancelled(tokens: Any) -> Any:
            if self._cancelled.is_set():
                raise _Cancelled
            return evaluate(tokens)

        llama.eval = eval_unless_cancelled

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments for ``Llama.create_chat_completion`` (public for tests and logs)."""
        from ._openai import to_openai_messages

        schema = request.output_schema
        mode = self.profile.output_mode
        extra_system = prompted_json_instructions(schema) if schema is not None and mode == "prompted" else None
        params: dict[str, Any] = {
            "messages": to_openai_messages(request, extra_system),
            "max_tokens": request.max_output_tokens or self.profile.max_output_tokens,
            "temperature": 0.0 if request.temperature is None else request.temperature,
            "seed": self._seed,
        }
        if schema is not None:
            # Every mode is grammar-constrained here: the grammar is free and the answer exact.
            params["response_format"] = {"type": "json_object", "schema": schema}
        return params

    async def request(self, request: LLMRequest) -> ModelResponse:
        if any(isinstance(p, ImagePart) for m in request.messages for p in m.content):
            raise InvalidArgumentError(
                f"local model {self.model_name!r} does not take images: call without vision "
                "(vision=False) or use a model that sees."
            )
        params = self.build_params(request)
        cancelled = threading.Event()
        started = time.perf_counter()
        try:
            completion = await asyncio.shield(asyncio.to_thread(self._generate, params, cancelled))
        except asyncio.CancelledError:
            cancelled.set()  # the worker stops at its next token
            raise
        return self._parse(completion, wall_ms=(time.perf_counter() - started) * 1000)

    def _generate(self, params: dict[str, Any], cancelled: threading.Event) -> Any:
        with self._lock:
            llama = self._load()
            self._cancelled = cancelled
            try:
                return llama.create_chat_completion(**params)
            except _Cancelled:
                return None
            except ValueError as exc:
                message = str(exc)
                if "exceed context window" in message or "exceed batch size" in message:
                    raise BadRequestError(
                        f"local model {self.model_name!r}: {message}. Lower Stagehand(token_budget=...) or raise "
                        f"LocalModel(n_ctx=...) (now {self._n_ctx}).",
                        provider=self.provider, model=self.model_name, status=None, body=message,
                    ) from exc
                raise ProviderError(f"local model {self.model_name!r} failed: {message}",
                                    provider=self.provider, model=self.model_name) from exc

    def _parse(self, completion: Any, *, wall_ms: float) -> ModelResponse:
        if not isinstance(completion, dict) or not completion.get("choices"):
            raise ProviderError(f"local model {self.model_name!r} returned no choices: {completion!r:.300}",
                                provider=self.provider, model=self.model_name)
        choice = completion["choices"][0]
        raw_usage = completion.get("usage") or {}
        usage = Usage(requests=1, input_tokens=raw_usage.get("prompt_tokens", 0) or 0,
                      output_tokens=raw_usage.get("completion_tokens", 0) or 0, wall_ms=wall_ms)
        return ModelResponse(text=(choice.get("message") or {}).get("content"), usage=usage,
                             model=self.model_name, finish_reason=choice.get("finish_reason"))
