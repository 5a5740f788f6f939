"""Every kind of real model runs live, records a cassette and replays it through the plugin.

- a model string and an ``LLMClient`` (hosted, over HTTP: a fake OpenAI server on 127.0.0.1);
- a user's own model object (recorded at the model boundary);
- the embedded ``local/`` model (a real engine on this CPU; skipped with the reason when absent),
  recorded by running it live once (its real-model call is the costly part, so it is not made a
  second time for ``--stagehand-record live``, whose rule the other kinds already show).

Each replay runs where the model cannot answer (no key, the server answering 599, the model object
raising, the model file gone), so a pass proves the answer came from the cassette. Also: model
options from the command line and the marker, and what a blocked request says per model kind.
"""

from __future__ import annotations

import json
import sys

import pytest

from .test_plugin import FAKE_PROVIDER, run

sys.path.insert(0, str(FAKE_PROVIDER.parent))
try:
    from _fake_provider import FakeProvider, chat_completion
    from _local_model import MODEL_PATH  # read at collection, before conftest hides the models folder
finally:
    sys.path.pop(0)

PAGE_TEST = '''
import os
import pytest
from pydantic import BaseModel
from stagehand_py.llm import LLMClient, ModelResponse

class Title(BaseModel):
    title: str

class MyModel:
    """A user's own model object (not a test double): answers from a file, or refuses."""
    model_name = "my-model"
    async def request(self, request):
        if os.environ.get("MY_MODEL_DOWN"):
            raise RuntimeError("my model is down")
        return ModelResponse(output={"data": {"title": "Shop"}, "instruction_satisfied": True})

MODELS = {
    "string": "openai/gpt-4.1-mini",
    "client": LLMClient("openai/fake", api_key="k", base_url=os.environ.get("FAKE_URL", "http://127.0.0.1:9") + "/v1"),
    "object": MyModel(),
}

@pytest.mark.stagehand(model=MODELS[os.environ["KIND"]], base_url=os.environ.get("BASE_URL") or None)
async def test_title(stagehand, stagehand_config):
    await stagehand.page.set_content("<h1>Shop</h1><p>Welcome</p>")
    got = await stagehand.extract("the page title", schema=Title)
    assert got.title == "Shop"
'''

EXTRACT_ANSWER = json.dumps({"data": {"title": "Shop"}, "instruction_satisfied": True})


@pytest.mark.parametrize("kind", ["string", "client"])
def test_hosted_models_run_live_record_and_replay(kind: str, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_flow=PAGE_TEST)
    cassette = pytester.path / "cassettes" / "test_flow" / "test_title.json"
    with FakeProvider() as fake:
        env = {"KIND": kind, "FAKE_URL": fake.url, "OPENAI_API_KEY": "sk-live-KEY"}
        if kind == "string":
            env["BASE_URL"] = f"{fake.url}/v1"  # --stagehand-base-url's marker twin
        fake.reply(chat_completion(EXTRACT_ANSWER))
        run(pytester, "--stagehand-record", "live", **env).assert_outcomes(passed=1)
        assert len(fake.seen) == 1 and not cassette.exists()  # live: the model answered, nothing written
        fake.reply(chat_completion(EXTRACT_ANSWER))
        run(pytester, "--stagehand-record", "once", **env).assert_outcomes(passed=1)
        assert len(fake.seen) == 2 and cassette.exists() and "sk-live-KEY" not in cassette.read_text()
        fake.reply(chat_completion("nope"), status=599)
        del env["OPENAI_API_KEY"]
        run(pytester, **env).assert_outcomes(passed=1)  # replay: no key, no request
        assert len(fake.seen) == 2


def test_a_model_object_records_at_the_model_boundary_and_replays(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_flow=PAGE_TEST)
    cassette = pytester.path / "cassettes" / "test_flow" / "test_title.json"
    run(pytester, "--stagehand-record", "live", KIND="object").assert_outcomes(passed=1)
    assert not cassette.exists()
    # Without a cassette, the default mode blocks the model object and says how to record.
    blocked = run(pytester, KIND="object")
    blocked.assert_outcomes(failed=1)
    blocked.stdout.fnmatch_lines(["*Record it once with your model object*--stagehand-record once*"])
    run(pytester, "--stagehand-record", "once", KIND="object").assert_outcomes(passed=1)
    recorded = json.loads(cassette.read_text())["interactions"]
    assert [i["request"]["model_request"]["purpose"] for i in recorded] == ["extract"]
    run(pytester, KIND="object", MY_MODEL_DOWN="1").assert_outcomes(passed=1)  # replayed, never called


def test_model_options_from_the_command_line_and_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_opts='''
import pytest
from stagehand_py.llm import LLMClient

def test_cli(stagehand_config):
    assert stagehand_config.model == "openai/qwen"
    assert stagehand_config.base_url == "http://127.0.0.1:9/v1" and stagehand_config.choice_mode is True
    assert stagehand_config.model_kind == "hosted" and stagehand_config.uses_real_model

@pytest.mark.stagehand(model="openai/other", base_url="http://127.0.0.1:8/v1", choice_mode=False)
def test_marker_wins(stagehand_config):
    assert (stagehand_config.model, stagehand_config.base_url, stagehand_config.choice_mode) == (
        "openai/other", "http://127.0.0.1:8/v1", False)

@pytest.mark.stagehand(model="local/some.gguf")
def test_kinds(stagehand_config):
    assert stagehand_config.model_kind == "embedded"

async def test_the_client_gets_them(stagehand):
    client = stagehand._get_client()
    assert isinstance(client, LLMClient) and client.choice_mode is True
''')
    run(pytester, "--stagehand-model", "openai/qwen", "--stagehand-base-url", "http://127.0.0.1:9/v1",
        "--stagehand-choice-mode", OPENAI_API_KEY="k").assert_outcomes(passed=4)


def test_blocked_requests_explain_recording_for_each_kind(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_blocked='''
import pytest
from pydantic import BaseModel

class T(BaseModel):
    title: str

@pytest.mark.stagehand(model="openai/gpt-4.1-mini")
async def test_hosted(stagehand):
    await stagehand.page.set_content("<h1>x</h1>")
    await stagehand.extract("the title", schema=T)

@pytest.mark.stagehand(model="local/absent-model.gguf")
async def test_embedded(stagehand):
    await stagehand.page.set_content("<h1>x</h1>")
    await stagehand.extract("the title", schema=T)
''')
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random([
        "*OPENAI_API_KEY=... pytest test_blocked.py::test_hosted --stagehand-record once*",
        "*Record it once with the embedded model, no key needed*test_blocked.py::test_embedded*",
    ])


LOCAL_TEST = '''
import pytest
from pydantic import BaseModel

class Title(BaseModel):
    title: str

async def test_local_title(stagehand, stagehand_config):
    assert stagehand_config.model_kind == "embedded"
    await stagehand.page.set_content("<h1>Shop</h1>")
    got = await stagehand.extract("the main heading", schema=Title)
    assert got.title == "Shop"
'''


@pytest.mark.real_model
def test_the_embedded_model_records_and_replays_without_the_model(pytester: pytest.Pytester) -> None:
    if MODEL_PATH is None or not MODEL_PATH.is_file():
        pytest.skip(f"no embedded model at {MODEL_PATH}: run `bash scripts/setup.sh`")
    pytester.makepyfile(test_local=LOCAL_TEST)
    cassette = pytester.path / "cassettes" / "test_local" / "test_local_title.json"
    models = str(MODEL_PATH.parent)
    # No --stagehand-model and no key: the default is the embedded model, run live to record. (A
    # `--stagehand-record live` run here would make the same model call again; that live mode
    # writes no cassette is one rule for every kind, shown by the hosted and model-object tests.)
    run(pytester, "--stagehand-record", "once", STAGEHAND_MODELS_DIR=models).assert_outcomes(passed=1)
    assert cassette.exists()
    # Replay where the model is not installed: the cassette answers at the model boundary.
    empty = pytester.path / "no-models"
    empty.mkdir()
    run(pytester, "--stagehand-model", f"local/{MODEL_PATH.name}", STAGEHAND_MODELS_DIR=str(empty),
        STAGEHAND_BLOCK_MODEL_REQUESTS="1").assert_outcomes(passed=1)
