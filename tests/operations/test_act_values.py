"""Text an instruction gives is typed as it gives it.

On the Python docs' json.html the embedded 1.5B model, asked to "type dumps into the Quick
search box", chose the right box but answered ``type ['.dumps']`` (the page is full of
``json.dumps``): the act reported success and the box held ".dumps"
(benchmarks/local_big_page_acts.py). A value that is the instruction's text with punctuation
around it or another case is now typed as the instruction writes it; a value the instruction
does not hold (from the page, a placeholder) is typed as the model gave it.
"""

from __future__ import annotations

import pytest
from _server import Response

from stagehand_py.llm import LLMClient, LLMRequest
from stagehand_py.testing import FunctionLLM

from .test_choice_mode import enum_of

DOCS = """<!DOCTYPE html><html><body>
<div role="navigation"><form action="/search.html"><input aria-label="Quick search" name="q">
<input type="submit" value="Go"></form></div>
<h1>json — JSON encoder and decoder</h1>
<p><code>json.dumps(obj)</code> serialises <code>obj</code>; see also <a href="#json.dumps">json.dumps()</a>.</p>
</body></html>"""


def typing(value: str, method: str):
    def model(request: LLMRequest) -> dict[str, object]:
        (line,) = [c for c in enum_of(request) if c.startswith("textbox: Quick search")]
        return {"elements": [{"element": line, "method": method, "arguments": [value]}], "opens_options": False}

    return model


@pytest.mark.parametrize(("answered", "method", "typed"), [
    (".dumps", "type", "dumps"),      # what the embedded model answered
    ("'Dumps'", "fill", "dumps"),
    ("json.dumps", "fill", "json.dumps"),  # not the instruction's text altered: typed as given
])
async def test_a_value_the_instruction_gives_is_typed_as_it_gives_it(make_stagehand, server, answered, method, typed):
    sh = await make_stagehand(model=LLMClient(FunctionLLM(typing(answered, method)), choice_mode=True))
    with server.route("/json.html", lambda req: Response.html(DOCS)):
        await sh.page.goto(server.url("json.html"))
        result = await sh.act("type dumps into the Quick search box", vision=False)
    assert result.success, result.message
    assert await sh.page.input_value("input[name=q]") == typed
    assert result.actions[0].arguments == [typed]
