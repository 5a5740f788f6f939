"""An extract's near misses checked against the page (issue 37), in the plain schema mode:

- a string for an optional field that appears nowhere in the page's text (normalised: case,
  spacing, punctuation, thousands separators) is left out, and the result says which and why;
- a required one is re-asked once, then kept as answered;
- each repair is in ``extract(..., report=True)`` and, as a note, in the inference log.

(A link's name for a URL field: test_absent_answers.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _server import Response
from pydantic import BaseModel

from stagehand_py import InvalidArgumentError
from stagehand_py._operations._extract_repairs import PageWords
from stagehand_py.testing import FunctionLLM, ScriptedLLM, capture_requests

from ._ops import prompt_text

PAGE = """<!DOCTYPE html><html><body><h1>Dune</h1><p>by Frank Herbert</p>
<p>Price: $9.99 · 1,204 ratings</p></body></html>"""


class Book(BaseModel):
    title: str
    subtitle: str | None = None
    author: str | None = None


def test_the_page_words_rule() -> None:
    words = PageWords("[0-1] heading: Dune\n[0-2] StaticText: by Frank Herbert\n"
                      "[0-3] StaticText: Price: $9.99 · 1,204 ratings\n[0-4] textbox: Note value=\"Kept  copy\"")
    # Case, spacing, punctuation and thousands separators aside; a run of the page's words; values too.
    for found in ("dune", "FRANK   herbert", "Herbert, Price", "9.99", "$9.99", "1204 ratings", "1\u202f204", "kept copy", ""):
        assert found in words, found
    for missing in ("No subtitle is present on this page.", "Frank Herbet", "1.204", "Dune Messiah", "ratings 1204"):
        assert missing not in words, missing
    # The outline shows a variable's value as its name; the string asked about is compared the same way.
    typed = "[0-5] textbox: User value=\"%username%\""
    assert "ada-lovelace" not in PageWords(typed)
    assert "ada-lovelace" in PageWords(typed, redact=lambda text: text.replace("ada-lovelace", "%username%"))


async def _open(make_stagehand, server, model, name: str, **options):
    sh = await make_stagehand(model=model, **options)
    with server.route(f"/{name}", lambda req: Response.html(PAGE)):
        await sh.page.goto(server.url(name))
    return sh


async def test_an_optional_string_found_nowhere_on_the_page_is_left_out_and_said(make_stagehand_beside, server, tmp_path: Path):
    # A real small model answered an absent subtitle with a sentence of its own. The control is
    # the author, on the page in other case and spacing: kept.
    answer = {"data": {"title": "Dune", "subtitle": "No subtitle is present on this page.", "author": "frank  HERBERT"},
              "instruction_satisfied": True}
    sh = await _open(make_stagehand_beside, server, FunctionLLM(lambda r: answer), "optional.html",
                     llm_options={"inference_log_dir": str(tmp_path)})
    with capture_requests() as calls:
        result = await sh.extract("the book's title, subtitle and author", schema=Book, report=True)
    assert len(calls) == 1 and result.data == Book(title="Dune", author="frank  HERBERT")
    assert "subtitle" not in result.data.model_fields_set and result.dropped == ["$.subtitle"]
    (dropped,) = result.repairs
    assert (dropped.kind, dropped.outcome) == ("value_not_on_page", "dropped")
    assert dropped.answered == "$.subtitle: 'No subtitle is present on this page.'" and "optional" in dropped.done
    # The inference log has it too, beside the call.
    (note,) = tmp_path.glob("*-extract-note.json")
    assert json.loads(note.read_text())["note"]["repairs"] == [dropped.model_dump()]
    assert len(list(tmp_path.glob("*-extract-a1.json"))) == 1
    with pytest.raises(InvalidArgumentError, match=r"extract\(report=\.\.\.\) takes True or False, not 'yes'"):
        await sh.extract("the title", schema=Book, report="yes")  # type: ignore[call-overload]


async def test_a_required_string_found_nowhere_is_re_asked_once_then_kept(make_stagehand_beside, server):
    invented = {"data": {"title": "The Spice Saga"}, "instruction_satisfied": True}
    right = {"data": {"title": "Dune"}, "instruction_satisfied": True}
    sh = await _open(make_stagehand_beside, server, ScriptedLLM([invented, right]), "required.html")
    with capture_requests() as calls:
        result = await sh.extract("the book's title", schema=Book, report=True)
    assert len(calls) == 2 and result.data.title == "Dune" and result.dropped == []
    assert "data.title: 'The Spice Saga' appears nowhere on the page" in prompt_text(calls[1].request)
    assert [(r.kind, r.outcome, r.done) for r in result.repairs] == [
        ("value_not_on_page", "re-asked", "re-asked once (the field is required)")]
    # Control: a model that insists gets one re-ask, not two; its value is kept, and said.
    sh = await _open(make_stagehand_beside, server, ScriptedLLM([invented, invented]), "insists.html")
    with capture_requests() as calls:
        result = await sh.extract("the book's title", schema=Book, report=True)
    assert len(calls) == 2 and result.data.title == "The Spice Saga"
    assert [r.outcome for r in result.repairs] == ["re-asked", "re-asked"] and "kept" in result.repairs[1].done
