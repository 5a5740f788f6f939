"""One redaction at every exit: the LLM layer's inference log and its error messages, the
action errors and the prompts all use stagehand_py._secrets, so a value echoed transformed
(upper-cased, URL-encoded, base64, split by zero-width characters) is hidden there too, and they
all write the same placeholder style (``%name%``; ``%secret%`` for a value with no name). The
controls run the same calls without the secret and find every transformation written down."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from pathlib import Path

import pytest
from pydantic import BaseModel

import stagehand_py
from stagehand_py import StagehandError
from stagehand_py.llm import LLMClient
from stagehand_py.testing import ScriptedLLM

SECRET = "Hunter2-sekret"
ECHOES = [SECRET.upper(), urllib.parse.quote(SECRET + " x", safe="")[:-3], base64.b64encode(SECRET.encode()).decode(),
          "\u200b".join(SECRET)]


class Note(BaseModel):
    text: str
    count: int


@pytest.mark.parametrize("with_secret", [True, False], ids=["redacted", "control-no-secret"])
async def test_the_inference_log_and_errors_hide_transformed_echoes(tmp_path: Path, with_secret: bool) -> None:
    answer = json.dumps({"text": " | ".join(ECHOES), "count": "not a number"}, ensure_ascii=False)
    client = LLMClient(ScriptedLLM([answer] * 3), inference_log_dir=tmp_path, secrets=[SECRET] if with_secret else [])
    with pytest.raises(StagehandError) as info:
        await client.generate("write the note", output=Note, max_reasks=1)
    written = "".join(json.loads(f.read_text())["response"]["text"] for f in sorted(tmp_path.iterdir()))
    error = str(info.value) + json.dumps(getattr(info.value, "last_output", None), ensure_ascii=False)
    found = [e for e in ECHOES if e in written]
    if with_secret:
        assert found == [] and "%secret%" in written
        assert [e for e in ECHOES if e in error] == []
    else:
        assert found == ECHOES  # the model's answer does carry every transformation to the log


PLACEHOLDERS = re.compile(r"\[(?:REDACTED|redacted)\]")


def test_no_second_placeholder_style_is_left_in_the_package() -> None:
    package = Path(stagehand_py.__file__).parent
    strays = [f"{p.relative_to(package)}:{n}" for p in package.rglob("*.py")
              for n, line in enumerate(p.read_text().splitlines(), 1) if PLACEHOLDERS.search(line)]
    assert strays == []
    assert PLACEHOLDERS.search('x = "[REDACTED]"')  # control: the check does see one


def test_the_llm_layers_placeholder_is_the_variables_style() -> None:
    from stagehand_py._secrets import redact_text
    from stagehand_py.llm import REDACTED, Redactor

    assert Redactor([SECRET]).text(f"pw {SECRET.lower()}") == f"pw {REDACTED}" == "pw %secret%"
    assert redact_text(f"pw {SECRET}", {"pw": SECRET}) == "pw %pw%"
