"""What is checked before a local model loads: its file (found, GGUF), the memory it needs, the
cores to run on, and the engine's import (with OpenMP's wait policy set first).

Each failure is a :class:`ConfigurationError` that says what to do. See :mod:`._local`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..._errors import ConfigurationError
from .._model_files import FETCH_COMMAND, MODELS_DIR_ENV, models_dir

__all__ = ["check_gguf", "check_memory", "import_engine", "physical_cores", "resolve_model_path"]

logger = logging.getLogger("stagehand_py")

_OMP_ENV = "OMP_WAIT_POLICY"
_INSTALL_HINT = "install the extra with `pip install 'stagehand_py[local]'` (a prebuilt wheel; see docs/local_models.md)"
_GGUF_MAGIC = b"GGUF"
#: Bytes of key/value cache per context token, generously (Qwen2.5-1.5B needs ~28 KiB in f16).
_KV_BYTES_PER_TOKEN = 64 * 1024

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
        f"file, put the file in {folder or '$' + MODELS_DIR_ENV}, or fetch the default one with "
        f"`{FETCH_COMMAND}` (see docs/local_models.md)."
    )


def check_gguf(path: Path) -> None:
    """Raise :class:`ConfigurationError` unless ``path`` starts like a GGUF file."""
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != _GGUF_MAGIC:
        raise ConfigurationError(
            f"{path} is not a GGUF model file (it starts with {magic!r}, not {_GGUF_MAGIC!r}): it is corrupt or "
            "of another format. Fetch it again (`stagehand-py model fetch` checks its SHA-256)."
        )


def _available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is no such file)."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(path: Path, n_ctx: int, *, available: Callable[[], int | None] = _available_memory) -> None:
    """Raise :class:`ConfigurationError` when the model clearly will not fit in free memory.

    The estimate is the file's size plus a key/value cache for ``n_ctx`` tokens; an unknown amount
    of free memory (no /proc) lets the load go ahead.
    """
    free = available()
    if free is None:
        return
    needed = path.stat().st_size + n_ctx * _KV_BYTES_PER_TOKEN
    if needed > free:
        raise ConfigurationError(
            f"too little memory for local model {path.name}: it needs about {needed / 2**30:.1f} GiB "
            f"(the file plus a {n_ctx}-token context) and {free / 2**30:.1f} GiB is free. Close other programs, "
            "lower LocalModel(n_ctx=...), or use a smaller model."
        )


def physical_cores(cpus: Any = None, topology: Path = Path("/sys/devices/system/cpu")) -> int:
    """Physical cores this process may run on: the CPUs of its affinity mask, hyper-threads of
    one core counted once (llama.cpp computes no faster with two threads on one core, and a
    thread per logical CPU leaves none for the browser). Falls back to the CPU count."""
    if cpus is None:
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        try:
            package = (topology / f"cpu{cpu}" / "topology" / "physical_package_id").read_text().strip()
            core = (topology / f"cpu{cpu}" / "topology" / "core_id").read_text().strip()
        except OSError:
            return max(1, len(cpus))
        cores.add((package, core))
    return max(1, len(cores))


def import_engine(environ: Any = None, importer: Callable[[], Any] | None = None) -> Any:
    """Import ``xllamacpp``, first setting ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it.

    ``environ`` is ``os.environ`` (tests pass a dict); ``importer`` is the import itself (tests
    pass one that fails). Raises :class:`ConfigurationError` when the extra or libgomp is missing.
    """
    import sys

    env = os.environ if environ is None else environ
    if "xllamacpp" not in sys.modules:
        if _OMP_ENV not in env:
            env[_OMP_ENV] = "PASSIVE"
            logger.info("set %s=PASSIVE before loading llama.cpp (idle OpenMP threads must not spin "
                        "while the browser needs the CPU); set it yourself to choose another value", _OMP_ENV)
    elif _OMP_ENV not in env:
        logger.warning("xllamacpp was imported before stagehand_py could set %s=PASSIVE; generation can be much "
                       "slower while the browser is busy. Set %s=PASSIVE before starting Python.", _OMP_ENV, _OMP_ENV)

    def default_importer() -> Any:
        import xllamacpp

        return xllamacpp

    try:
        return (importer or default_importer)()
    except ImportError as exc:
        if "libgomp" in str(exc):
            raise ConfigurationError(
                f"local models need the GNU OpenMP runtime, which is missing ({exc}): install it with "
                "`apt-get install libgomp1` (Debian, Ubuntu)."
            ) from exc
        raise ConfigurationError(f"local models need xllamacpp, which is not installed: {_INSTALL_HINT}.") from exc
