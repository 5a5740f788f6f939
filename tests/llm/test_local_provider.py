"""Local models without llama.cpp: the llama_cpp.server profile against the fake server, and the
in-process provider against a stand-in ``llama_cpp`` module (OMP policy, AMX trap, grammar,
errors, cancellation). The real llama.cpp runs in tests/llm/test_llama_cpp_server.py."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from stagehand_py import BadRequestError, ConfigurationError, InvalidArgumentError, ServerError
from stagehand_py.llm import LLMClient, LocalModel, Profile, RetryPolicy, llama_cpp_server_profile
from stagehand_py.llm._providers._local import amx_in_library, import_llama_cpp, models_dir, resolve_model_path
from stagehand_py.testing import FunctionLLM

from ._fake_provider import FakeProvider, chat_completion, error_body

FAST = RetryPolicy(max_retries=1, initial_backoff=0.001, max_backoff=0.002, jitter=0)


class Book(BaseModel):
    title: str
    year: int


# --- llama_cpp.server profile over the wire -------------------------------------------------


async def test_llama_cpp_server_profile_sends_json_object_with_the_schema(fake: FakeProvider) -> None:
    fake.reply(chat_completion('{"title": "Dune", "year": 1965}'))
    c = LLMClient("openai/qwen", base_url=f"{fake.url}/v1", profile=llama_cpp_server_profile(), retry_policy=FAST)
    result = await c.generate("Dune (1965)", output=Book)
    assert result.output == Book(title="Dune", year=1965)
    body = fake.seen[0].body
    assert body["response_format"] == {"type": "json_object", "schema": Book.model_json_schema()}
    assert "tools" not in body and c.choice_mode is True


async def test_plain_json_schema_form_is_what_llama_cpp_server_rejects(fake: FakeProvider) -> None:
    """The default OpenAI form on a server that 500s on it: a ServerError, retried, then raised."""
    for _ in range(2):
        fake.reply(error_body("'json_schema' is not supported", "server_error"), status=500)
    c = LLMClient("openai/qwen", base_url=f"{fake.url}/v1", profile=Profile(output_mode="json_schema"), retry_policy=FAST)
    with pytest.raises(ServerError, match="HTTP 500"):
        await c.generate("x", output=Book)
    assert fake.seen[0].body["response_format"]["type"] == "json_schema" and len(fake.seen) == 2


def test_choice_mode_is_chosen_by_profile_or_option(tmp_path: Path) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    assert LLMClient(f"local/{gguf}").choice_mode is True
    assert LLMClient(f"local/{gguf}", choice_mode=False).choice_mode is False
    assert LLMClient("openai/gpt-4.1-mini", api_key="k").choice_mode is False
    assert LLMClient("openai/gpt-4.1-mini", api_key="k", choice_mode=True).choice_mode is True
    assert LLMClient(FunctionLLM(lambda r: {}), choice_mode=True).choice_mode is True
    assert LLMClient(FunctionLLM(lambda r: {})).choice_mode is False
    with pytest.raises(ConfigurationError, match="runs in this process"):
        LLMClient(f"local/{gguf}", base_url="http://127.0.0.1:1/v1")


# --- model files ----------------------------------------------------------------------------


def test_model_names_resolve_to_paths_or_the_models_folder(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    env = {"STAGEHAND_MODELS_DIR": str(tmp_path)}
    assert resolve_model_path("m.gguf", environ=env) == tmp_path / "m.gguf"
    assert resolve_model_path(str(tmp_path / "m.gguf"), environ={}) == tmp_path / "m.gguf"
    assert models_dir({"HOME": "/h"}) == Path("/h/.cache/stagehand_py/models")
    assert models_dir({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/stagehand_py/models")
    assert models_dir({}) is None
    with pytest.raises(ConfigurationError, match=r"not found.*fetch_local_model.py --download"):
        resolve_model_path("other.gguf", environ=env)
    with pytest.raises(ConfigurationError, match="not a .gguf file"):
        resolve_model_path("m.bin", environ=env)


# --- the OMP and AMX traps --------------------------------------------------------------------


def _fake_llama_cpp(system_info: bytes = b"CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 0 |", **behaviour: Any) -> types.ModuleType:
    """A stand-in llama_cpp: records what Llama() was given and answers create_chat_completion."""
    mod = types.ModuleType("llama_cpp")
    low = types.ModuleType("llama_cpp.llama_cpp")
    low.llama_model_default_params = lambda: types.SimpleNamespace(use_extra_bufts=True)
    mod.llama_cpp = low
    mod.llama_print_system_info = lambda: system_info
    mod.made = []

    class Llama:
        def __init__(self, **kwargs: Any) -> None:
            # llama-cpp-python reads the module function inside the constructor, as here.
            self.params = low.llama_model_default_params()
            self.kwargs = kwargs
            self.calls: list[dict[str, Any]] = []
            mod.made.append(self)

        def eval(self, tokens: list[int]) -> None:
            pass

        def create_chat_completion(self, **params: Any) -> Any:
            self.calls.append(params)
            if "error" in behaviour:
                raise behaviour["error"]
            if "tokens" in behaviour:  # generate token by token: one eval() per token, as llama-cpp-python does
                for _ in range(behaviour["tokens"]):
                    self.eval([1])
                    behaviour["step"].wait(0.01)
            return {"choices": [{"message": {"role": "assistant", "content": behaviour.get("content", "{}")},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 12, "completion_tokens": 5}}

    mod.Llama = Llama
    return mod


def test_omp_wait_policy_is_set_before_the_first_import_only_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_llama_cpp()
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    env: dict[str, str] = {}
    seen_at_import: list[str | None] = []

    class Finder:  # imports the stand-in, recording the environment at import time
        @staticmethod
        def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
            if name != "llama_cpp":
                return None
            import importlib.machinery

            class Loader:
                @staticmethod
                def create_module(spec: Any) -> Any:
                    seen_at_import.append(env.get("OMP_WAIT_POLICY"))
                    return fake

                @staticmethod
                def exec_module(module: Any) -> None:
                    pass

            return importlib.machinery.ModuleSpec(name, Loader)

    monkeypatch.setattr(sys, "meta_path", [Finder, *sys.meta_path])
    assert import_llama_cpp(env) is fake
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and seen_at_import == ["PASSIVE"]

    monkeypatch.delitem(sys.modules, "llama_cpp")
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    import_llama_cpp(env)
    assert env["OMP_WAIT_POLICY"] == "ACTIVE"  # the user's choice is kept


def test_already_imported_llama_cpp_without_the_policy_warns(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", _fake_llama_cpp())
    env: dict[str, str] = {}
    with caplog.at_level(logging.WARNING, logger="stagehand_py"):
        import_llama_cpp(env)
    assert "OMP_WAIT_POLICY" not in env  # too late to matter: not set, but said
    assert "imported before stagehand_py could set OMP_WAIT_POLICY=PASSIVE" in caplog.text


def test_missing_extra_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails
    with pytest.raises(ConfigurationError, match=r"stagehand_py\[local\].*16-21 minutes") as info:
        import_llama_cpp({})
    assert isinstance(info.value.__cause__, ImportError)


def test_amx_detection() -> None:
    assert amx_in_library("CPU : SSE3 = 1 | AVX512 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 |")
    assert not amx_in_library("CPU : SSE3 = 1 | AVX512 = 1 | AMX_INT8 = 0 |")
    assert not amx_in_library("CPU : SSE3 = 1 | AVX2 = 1 |")


@pytest.mark.parametrize(("info", "option", "extra"), [
    (b"CPU : AMX_INT8 = 1 |", None, False),   # built with AMX: loaded without extra buffer types
    (b"CPU : AVX2 = 1 |", None, True),        # no AMX: repacking buffers stay on
    (b"CPU : AMX_INT8 = 1 |", True, True),    # the user's explicit choice wins
    (b"CPU : AVX2 = 1 |", False, False),
])
async def test_amx_library_loads_without_extra_buffers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       info: bytes, option: bool | None, extra: bool) -> None:
    fake = _fake_llama_cpp(info, content='{"title": "Dune", "year": 1965}')
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    original = fake.llama_cpp.llama_model_default_params
    model = LocalModel(gguf, extra_buffers=option, n_threads=2)
    await LLMClient(model).generate("x", output=Book)
    (llama,) = fake.made
    assert llama.params.use_extra_bufts is extra
    assert fake.llama_cpp.llama_model_default_params is original  # put back after the load
    assert llama.kwargs["n_threads"] == 2 and llama.kwargs["model_path"] == str(gguf)


# --- requests ---------------------------------------------------------------------------------


async def test_schema_becomes_a_grammar_and_the_answer_is_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_llama_cpp(content='{"title": "Dune", "year": 1965}')
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    client = LLMClient(f"local/{gguf}")
    result = await client.generate("Dune (1965)", output=Book, purpose="extract")
    assert result.output == Book(title="Dune", year=1965)
    (call,) = fake.made[0].calls
    assert call["response_format"] == {"type": "json_object", "schema": Book.model_json_schema()}
    assert call["temperature"] == 0.0 and call["messages"] == [{"role": "user", "content": "Dune (1965)"}]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 5)
    await client.generate("again", output=Book)
    assert len(fake.made) == 1  # loaded once


async def test_context_overflow_is_a_bad_request_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_llama_cpp(error=ValueError("Requested tokens (9000) exceed context window of 8192"))
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(BadRequestError, match=r"exceed context window.*token_budget.*n_ctx") as info:
        await LLMClient(LocalModel(gguf)).generate("x", output=Book)
    assert isinstance(info.value.__cause__, ValueError)


async def test_images_are_refused_before_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stagehand_py.llm import ImagePart, TextPart, UserMessage

    fake = _fake_llama_cpp()
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    message = UserMessage([TextPart(text="look"), ImagePart(data=b"\x89PNG0000", media_type="image/png")])
    with pytest.raises(InvalidArgumentError, match="does not take images"):
        await LLMClient(LocalModel(gguf)).generate([message])
    assert fake.made == []


async def test_a_cancelled_request_stops_generating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step = threading.Event()
    fake = _fake_llama_cpp(tokens=10_000, step=step)
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    model = LocalModel(gguf)
    client = LLMClient(model)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(client.generate("x", output=Book), timeout=0.3)
    # The worker noticed at its next token and let go of the model: another request gets it.
    acquired = await asyncio.to_thread(model._lock.acquire, True, 5)
    assert acquired
    model._lock.release()
