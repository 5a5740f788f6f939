"""The fixed prompt's saved cache without the engine: what is kept, what is reused, what is refused.

A stand-in for the engine's HTTP side answers as llama.cpp does and writes a file that starts like
its sequence states (the magic, then the rest); tests/llm/test_local_engine.py runs the same with the
real engine (and shows the saved file holds no page text).
"""

from __future__ import annotations

import json
import logging
import struct
import threading
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from stagehand_py.llm._providers import _local_prefix
from stagehand_py.llm._providers._local_prefix import cache_folder, prepare_prefix

PREFIX_IDS = list(range(600))


class FakeEngine:
    """The routes prepare_prefix uses, answering like llama.cpp; ``slot`` is what the slot holds."""

    listening_address = "http://127.0.0.1:1"

    def __init__(self, folder: Path, *, saved_extra: int = 0) -> None:
        self.folder, self.saved_extra = folder, saved_extra
        self.slot: list[int] = []
        self.computed: list[int] = []
        self.restores = 0
        self.refuse_restore = False

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path == "/apply-template":
            system, user = (m["content"] for m in body["messages"])
            return {"prompt": f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"}
        if path == "/tokenize":
            return {"tokens": PREFIX_IDS}
        if path.endswith("action=save"):
            tokens = self.slot + list(range(9000, 9000 + self.saved_extra))
            (self.folder / body["filename"]).write_bytes(
                struct.pack(f"<III{len(tokens)}i", 0x67677371, 2, len(tokens), *tokens) + b"kv-state" * 50)
            return {"n_saved": len(tokens)}
        if path.endswith("action=restore"):
            self.restores += 1
            if self.refuse_restore:  # as llama.cpp answers a state whose sizes do not fit this context
                raise urllib.error.HTTPError(path, 400, "invalid slot save file", None, None)  # type: ignore[arg-type]
            self.slot = list(PREFIX_IDS)
            return {"n_restored": len(self.slot)}
        if path.endswith("action=erase"):
            self.slot = []
            return {"n_erased": 0}
        raise AssertionError(path)

    def handle_completions(self, raw: str, callback: Any) -> dict[str, Any]:
        request = json.loads(raw)
        assert request["n_predict"] == 0
        self.computed.append(len(request["prompt"]))
        self.slot = request["prompt"]
        return {"content": ""}


def _engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> FakeEngine:
    fake = FakeEngine(cache_folder(tmp_path / "m.gguf"), **options)
    monkeypatch.setattr(_local_prefix._Http, "post", lambda self, path, body, timeout=120.0: fake.post(path, body))
    if not (tmp_path / "m.gguf").exists():
        (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(100))
    return fake


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    return _engine(tmp_path, monkeypatch)


def _prepare(engine: FakeEngine, tmp_path: Path, stop: threading.Event | None = None, *, system: str = "Fixed rules.",
             n_ctx: int = 1024) -> Any:
    engine.slot, engine.computed, engine.restores = [], [], 0  # as a new process's engine
    return prepare_prefix(engine, "key", model=tmp_path / "m.gguf", folder=engine.folder, system=system,
                          settings={"n_ctx": n_ctx}, stop=stop or threading.Event())


def _saved(engine: FakeEngine) -> Path:
    (file,) = engine.folder.glob("prefix-*.bin")
    return file


def test_computed_in_pieces_saved_then_restored(engine: FakeEngine, tmp_path: Path) -> None:
    first = _prepare(engine, tmp_path)
    assert (first.outcome, first.tokens) == ("saved", 600)
    assert engine.computed == [256, 512, 600]  # pieces: a process exiting waits for one at most
    file = _saved(engine)
    assert sorted(p.name for p in engine.folder.iterdir()) == [file.name, file.with_suffix(".json").name]
    again = _prepare(engine, tmp_path)
    assert (again.outcome, again.tokens, engine.computed, engine.restores) == ("restored", 600, [], 1)


def test_a_changed_key_is_not_reused(engine: FakeEngine, tmp_path: Path) -> None:
    """Each part of the key (the prompt, a setting, the model file) gives a computation of its own;
    the control: the same key again is restored."""
    _prepare(engine, tmp_path)
    for changed in ({"system": "Other rules."}, {"n_ctx": 2048}):
        prefix = _prepare(engine, tmp_path, **changed)
        assert (prefix.outcome, engine.restores, engine.computed[-1]) == ("saved", 0, 600), changed
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(99) + b"\x01")  # another model file, same size
    assert (_prepare(engine, tmp_path).outcome, engine.restores) == ("saved", 0)
    assert len(list(engine.folder.glob("prefix-*.bin"))) == 4
    assert (_prepare(engine, tmp_path).outcome, engine.restores) == ("restored", 1)  # control


@pytest.mark.parametrize("spoil", ["corrupt", "truncated", "other tokens", "no record", "not llama.cpp's"])
def test_a_wrong_or_corrupt_file_is_never_restored_but_logged_and_replaced(
        engine: FakeEngine, tmp_path: Path, caplog: pytest.LogCaptureFixture, spoil: str) -> None:
    _prepare(engine, tmp_path)
    file = _saved(engine)
    data = bytearray(file.read_bytes())
    if spoil == "corrupt":
        data[-3] ^= 0xFF  # one bit pattern in the state: only the recorded hash tells
    elif spoil == "truncated":
        del data[len(data) // 2:]
    elif spoil == "not llama.cpp's":
        data[:4] = b"GGUF"
    if spoil == "other tokens":  # a file saved for another prompt, copied here with its own record
        data[12:16] = struct.pack("<i", 7)
        file.write_bytes(bytes(data))
        file.with_suffix(".json").write_text(json.dumps({"sha256": _local_prefix._sha256(file), "tokens": 600,
                                                         "ids": _local_prefix._ids_digest([7, *PREFIX_IDS[1:]])}))
    elif spoil == "no record":
        file.with_suffix(".json").unlink()
    else:
        file.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="stagehand_py"):
        prefix = _prepare(engine, tmp_path)
    assert (prefix.outcome, engine.restores, engine.computed[-1]) == ("saved", 0, 600)  # never handed to llama.cpp
    assert f"ignoring the saved prompt cache {file}" in caplog.text and "computing it again" in caplog.text
    assert (_prepare(engine, tmp_path).outcome, engine.restores) == ("restored", 1)  # replaced by a good one


def test_a_file_llama_cpp_refuses_is_recomputed(engine: FakeEngine, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    _prepare(engine, tmp_path)
    engine.refuse_restore = True
    with caplog.at_level(logging.WARNING, logger="stagehand_py"):
        prefix = _prepare(engine, tmp_path)
    assert (prefix.outcome, engine.restores, engine.computed[-1]) == ("saved", 1, 600)
    assert "llama.cpp refused it: HTTP 400" in caplog.text


def test_a_slot_holding_more_than_the_prefix_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _engine(tmp_path, monkeypatch, saved_extra=40)  # as if a page followed the prefix
    assert _prepare(fake, tmp_path).outcome == "computed"
    assert list(fake.folder.iterdir()) == []  # neither the file nor its temporary names


def test_a_stop_ends_the_warm_up_between_pieces(engine: FakeEngine, tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    assert _prepare(engine, tmp_path, stop).outcome == "computed" and engine.computed == []
    assert not engine.folder.exists()


def test_a_folder_that_cannot_be_made_turns_saving_off(engine: FakeEngine, tmp_path: Path) -> None:
    engine.folder.write_text("a file where the folder would go")
    assert _prepare(engine, tmp_path).outcome == "computed" and engine.computed[-1] == 600
