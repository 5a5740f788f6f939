"""Local models without loading one: the llama.cpp-server profile against the fake server, and the
in-process provider's checks before it loads anything (file, format, memory, libgomp, the extra,
the OpenMP policy). The real engine runs in tests/llm/test_local_engine.py."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from stagehand_py import ConfigurationError, InvalidArgumentError, ServerError
from stagehand_py.llm import LLMClient, LocalModel, Profile, RetryPolicy, llama_cpp_server_profile
from stagehand_py.llm._providers._local import (
    check_gguf,
    check_memory,
    import_engine,
    models_dir,
    resolve_model_path,
)
from stagehand_py.llm._request import LLMRequest
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
    with pytest.raises(ConfigurationError, match=r"not found.*stagehand-py model fetch"):
        resolve_model_path("other.gguf", environ=env)
    with pytest.raises(ConfigurationError, match="not a .gguf file"):
        resolve_model_path("m.bin", environ=env)


# --- before loading: the file, its format, memory, the engine ------------------------------


def test_a_file_that_is_not_gguf_is_refused_before_loading(tmp_path: Path) -> None:
    good = tmp_path / "good.gguf"
    good.write_bytes(b"GGUF" + bytes(60))
    check_gguf(good)  # the control: a GGUF header passes
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ConfigurationError, match=r"not a GGUF model file.*stagehand-py model fetch"):
        check_gguf(bad)


def test_too_little_memory_is_a_configuration_error_naming_the_numbers(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(1_000_000))
    check_memory(model, 2048, available=lambda: 10 * 2**30)  # the control: plenty free
    check_memory(model, 2048, available=lambda: None)  # unknown: let it try
    with pytest.raises(ConfigurationError, match=r"too little memory.*GiB is free.*n_ctx"):
        check_memory(model, 2048, available=lambda: 1_000_000)


def test_omp_wait_policy_is_set_before_the_first_import_only_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "xllamacpp", raising=False)
    env: dict[str, str] = {}
    assert import_engine(env, importer=lambda: "engine") == "engine"
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}
    mine = {"OMP_WAIT_POLICY": "ACTIVE"}
    import_engine(mine, importer=lambda: "engine")
    assert mine == {"OMP_WAIT_POLICY": "ACTIVE"}  # a value the user chose is kept


def test_already_imported_engine_without_the_policy_warns(monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", object())
    with caplog.at_level(logging.WARNING, logger="stagehand_py"):
        import_engine({}, importer=lambda: "engine")
    assert "OMP_WAIT_POLICY=PASSIVE" in caplog.text


def test_missing_extra_and_missing_libgomp_are_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "xllamacpp", raising=False)

    def no_extra() -> None:
        raise ModuleNotFoundError("No module named 'xllamacpp'")

    def no_libgomp() -> None:
        raise ImportError("libgomp.so.1: cannot open shared object file: No such file or directory")

    with pytest.raises(ConfigurationError, match=r"xllamacpp, which is not installed.*stagehand_py\[local\]"):
        import_engine({}, importer=no_extra)
    with pytest.raises(ConfigurationError, match=r"GNU OpenMP runtime.*apt-get install libgomp1"):
        import_engine({}, importer=no_libgomp)


def test_the_request_sent_to_the_engine_is_schema_constrained_and_streamed(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    model = LocalModel(gguf)
    from stagehand_py.llm import UserMessage

    params = model.build_params(LLMRequest(messages=[UserMessage("Dune (1965)")], output_schema=Book.model_json_schema(),
                                           output_name="book", purpose="extract"))
    assert params["response_format"] == {"type": "json_schema",
                                         "json_schema": {"name": "book", "schema": Book.model_json_schema()}}
    assert params["stream"] is True and params["cache_prompt"] is True and params["temperature"] == 0.0
    with pytest.raises(InvalidArgumentError, match="n_ctx"):
        LocalModel(gguf, n_ctx=10)


@pytest.mark.parametrize(("n_batch", "n_ubatch"), [(256, 512), (512, 0)])
def test_batch_sizes_that_llama_cpp_cannot_use_are_refused_before_loading(tmp_path: Path, n_batch: int,
                                                                          n_ubatch: int) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(InvalidArgumentError, match=rf"n_batch={n_batch} and n_ubatch={n_ubatch}.*defaults are"):
        LocalModel(gguf, n_batch=n_batch, n_ubatch=n_ubatch)
    LocalModel(gguf, n_batch=512, n_ubatch=512)  # equal sizes are allowed


def test_cached_prompt_tokens_are_read_from_the_engines_timings_or_usage(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    model = LocalModel(gguf)
    answer = {"choices": [{"delta": {"content": "{}"}, "finish_reason": "stop"}]}
    streamed = model._parse([answer, {"timings": {"prompt_n": 40, "cache_n": 900, "predicted_n": 5}}], wall_ms=1.0)
    assert (streamed.usage.input_tokens, streamed.usage.cached_tokens, streamed.usage.output_tokens) == (940, 900, 5)
    first = model._parse([answer, {"timings": {"prompt_n": 940, "cache_n": 0, "predicted_n": 5}}], wall_ms=1.0)
    assert first.usage.cached_tokens == 0
    reported = model._parse([answer, {"usage": {"prompt_tokens": 940, "completion_tokens": 5,
                                                "prompt_tokens_details": {"cached_tokens": 512}}}], wall_ms=1.0)
    assert (reported.usage.input_tokens, reported.usage.cached_tokens) == (940, 512)


def test_threads_are_the_physical_cores_of_the_affinity_mask(tmp_path: Path) -> None:
    from stagehand_py.llm._providers._local import physical_cores

    # Four logical CPUs: two cores with two hyper-threads each; the process may use CPUs 0, 1 and 2.
    for cpu, core in enumerate([0, 0, 1, 1]):
        folder = tmp_path / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "physical_package_id").write_text("0\n")
        (folder / "core_id").write_text(f"{core}\n")
    assert physical_cores({0, 1, 2, 3}, tmp_path) == 2
    assert physical_cores({0, 1}, tmp_path) == 1
    assert physical_cores({0, 2}, tmp_path) == 2
    assert physical_cores({0, 7}, tmp_path) == 2  # no topology for a CPU: count the CPUs
    assert physical_cores() >= 1
