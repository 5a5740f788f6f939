"""Near misses of observe/act answers (issue 37, the act/observe rows), each on a wrapped and a
launched page with a scripted model, counting the model requests:

- ``fill``/``type``/``press`` of a character on an element that takes no text: re-asked once with
  the elements that take text (choice mode offers only those for fill/type in the first place);
- ``select_option`` of a label that is no option: re-asked once with the select's labels;
- an ``<option>`` picked for ``select_option``: its own ``<select>``, with that option, recorded;
- an instruction that only finds ("Find the Company Email input") answered with a value method
  and no value: a click on that element, never a placeholder nobody will fill.

Each has its control: where the page leaves more than one reading, the model is asked again
with the valid choices and nothing is guessed; a second miss is left out, never acted on.
"""

from __future__ import annotations

import json
import re

import pytest
from _server import Response

from stagehand_py import ActionFailedError, Repair, UnknownVariableError
from stagehand_py._prompts.choice import NO_CHOICE, choice_enum
from stagehand_py.llm import LLMClient
from stagehand_py.testing import FunctionLLM, capture_requests

from ._ops import element, find_id, last_user

TABLE = """<!DOCTYPE html><html><head><title>packages</title></head><body>
<form><label>Search <input id="q" type="search"></label>
<label>Column <select id="col"><option value="">- column -</option><option>name</option><option>version</option></select></label>
<label>Operator <select id="op"><option value="exact">=</option><option value="not">!=</option>
<option value="contains">contains</option></select></label>
<label>Filter value <input id="val"></label></form>
<table><tr><th>id</th><th>name</th></tr>
<tr><td><a id="r1" href="#row-1">json5</a></td><td>0.9</td></tr>
<tr><td><a id="r2" href="#row-2">orjson</a></td><td>3.9</td></tr></table></body></html>"""

CONTACT = """<!DOCTYPE html><html><head><title>Contact sales</title></head><body><form>
<label>Full name <input id="name"></label>
<label>Company Email <input id="email" type="email"></label>
<button type="button" id="demo">Request a demo</button></form></body></html>"""


async def _open(make_stagehand, server, script, html: str, path: str, *, choice: bool = False, **options):
    model = LLMClient(FunctionLLM(script), choice_mode=True, **options.pop("llm", {})) if choice else (
        LLMClient(FunctionLLM(script), **options.pop("llm", {})))
    sh = await make_stagehand(model=model, **options)
    with server.route(f"/{path}", lambda req: Response.html(html)):
        await sh.page.goto(server.url(path))
    return sh


class Script:
    """A scripted model: answers in order, each ``(method, line, arguments)`` where ``line`` is a
    regex for the outline line's text after its id (or the start of a choice line in choice
    mode); it keeps every re-ask message it was sent."""

    def __init__(self, *answers: tuple[str, str, list[str]]) -> None:
        self.answers = iter(answers)
        self.reasks: list[str] = []

    def __call__(self, request) -> dict:
        method, line, arguments = next(self.answers)
        if request.attempt > 1:
            self.reasks.append(last_user(request))
        if "element_id" in json.dumps(request.output_schema):
            found = element(find_id(request, line), method, arguments)
        else:
            found = {"method": method, "element": next(c for c in choice_enum(request.output_schema) if re.match(line, c)),
                     "arguments": arguments}
        return {"elements": [found], "opens_options": False} if request.purpose == "act" else {"elements": [found]}


# --- fill/type/press on an element that takes no text ------------------------------------------


async def test_typing_into_a_link_is_re_asked_with_the_fields(make_stagehand, server):
    """The embedded model typed into a table row's link where the search box was meant: the act
    failed at the browser ('Element is not an <input>'). Now the model is asked once more, shown
    only the elements that take text, and its second answer is what runs. Control: a second
    answer on the link again is left out (not typed, not clicked, no third request)."""
    script = Script(("type", "link: json5", ["orjson"]), ("type", "searchbox: Search", ["orjson"]),
                    ("type", "link: json5", ["ujson"]), ("type", "link: json5", ["ujson"]))
    sh = await _open(make_stagehand, server, script, TABLE, "table-type.html")
    with capture_requests() as calls:
        result = await sh.act("search the table for orjson")
    assert len(calls) == 2 and result.success and await sh.page.input_value("#q") == "orjson"
    reask = script.reasks[0]
    assert "takes no text" in reask and "searchbox: Search" in reask and "textbox: Filter value" in reask
    assert "link: orjson" not in reask and "combobox" not in reask  # only the elements that take text
    (repair,) = result.repairs
    assert (repair.kind, repair.outcome, repair.done) == (
        "not_editable", "re-asked", "re-asked with the 2 element(s) that take text")
    assert re.fullmatch(r"type \['orjson'\] on \[\d+-\d+\] link: json5", repair.answered)
    assert result.actions[0].repairs == [repair]

    with capture_requests() as calls:
        # vision=False: with nothing found, "auto" would ask once more with a screenshot
        result = await sh.act("search the table for ujson", vision=False)
    assert len(calls) == 2 and not result.success and result.dispatched == [] and "left out" in result.message
    assert [(r.kind, r.outcome) for r in result.repairs] == [("not_editable", "re-asked"), ("not_editable", "dropped")]
    assert sh.page.url.endswith("table-type.html") and await sh.page.input_value("#q") == "orjson"


async def test_press_enter_on_a_link_is_no_near_miss_but_a_typed_key_is(make_stagehand, server):
    """``press Enter`` on a link is a fine action (1 request); ``press j`` there types nothing: it
    is re-asked like a type (2 requests)."""
    script = Script(("press", "link: json5", ["Enter"]), ("press", "link: json5", ["j"]),
                    ("press", "textbox: Filter value", ["j"]))
    sh = await _open(make_stagehand, server, script, TABLE, "table-press.html")
    with capture_requests() as calls:
        result = await sh.act("press Enter on the first row's link")
    assert len(calls) == 1 and result.success and result.repairs == [] and sh.page.url.endswith("#row-1")
    with capture_requests() as calls:
        result = await sh.act("press j in the filter value")
    assert len(calls) == 2 and result.success and [r.kind for r in result.repairs] == ["not_editable"]
    assert await sh.page.input_value("#val") == "j"


async def test_choice_mode_offers_only_the_fields_for_fill_and_type(make_stagehand, server):
    """In choice mode the method comes first and fill/type may only name a choice that takes
    text: a grammar cannot type into a link, and a model that still answers so is refused by the
    schema, which lists the fields. A key pressed on a link is re-asked with the fields exactly
    as the choices wrote them, so a constrained model can copy one."""
    script = Script(("type", "link: json5", ["orjson"]), ("type", "searchbox: Search", ["orjson"]),
                    ("press", "link: json5", ["j"]), ("press", "textbox: Filter value", ["j"]))
    sh = await _open(make_stagehand, server, script, TABLE, "table-choice.html", choice=True)
    with capture_requests() as calls:
        result = await sh.act("search the table for orjson")
    assert len(calls) == 2 and result.success and await sh.page.input_value("#q") == "orjson"
    typing, other = calls[0].request.output_schema["properties"]["elements"]["items"]["anyOf"]
    assert list(typing["properties"]) == ["method", "element", "arguments"]  # the method is decided first
    assert typing["properties"]["method"]["enum"] == ["fill", "type"]
    fields = typing["properties"]["element"]["enum"]
    assert [c.split(" [")[0] for c in fields] == ["searchbox: Search", "textbox: Filter value", NO_CHOICE]
    assert not {"fill", "type"} & set(other["properties"]["method"]["enum"])
    assert ".element: 'link: json5 [" in script.reasks[0] and f"is not one of {fields!r}" in script.reasks[0]

    with capture_requests() as calls:
        result = await sh.act("press j in the filter value")
    assert len(calls) == 2 and result.success and await sh.page.input_value("#val") == "j"
    typing, _ = calls[0].request.output_schema["properties"]["elements"]["items"]["anyOf"]
    offered = typing["properties"]["element"]["enum"][:-1]  # now with the search box's value="orjson"
    assert len(offered) == 2 and all(line in script.reasks[1] for line in offered)
    assert f"'{NO_CHOICE}' when none of them fits" in script.reasks[1]


# --- select_option of a label that is no option; an <option> picked -----------------------------


async def test_a_label_that_is_no_option_is_re_asked_with_the_labels(make_stagehand, server):
    """'includes' is none of the operator's options: the model is asked again, shown that select's
    labels, and nothing is guessed for it. Control: a second label that is no option either goes
    to the browser as answered (it could be a value the outline does not show) and fails typed
    there, after exactly one re-ask."""
    script = Script(("select_option", "combobox: Operator", ["includes"]), ("select_option", "combobox: Operator", ["contains"]),
                    ("select_option", "combobox: Operator", ["includes"]), ("select_option", "combobox: Operator", ["like"]))
    sh = await _open(make_stagehand, server, script, TABLE, "table-op.html", self_heal=False)
    with capture_requests() as calls:
        result = await sh.act("set the operator to contains")
    assert len(calls) == 2 and result.success and await sh.page.input_value("#op") == "contains"
    assert "has no option 'includes'" in script.reasks[0]
    assert all(f"\n{label}\n" in script.reasks[0] for label in ("=", "!=", "contains"))
    assert "version" not in script.reasks[0]  # the other select's options are not this one's
    assert [(r.kind, r.outcome, r.done) for r in result.repairs] == [
        ("unknown_option", "re-asked", "re-asked with the select's 3 option label(s)")]

    await sh.page.select_option("#op", "exact")
    with capture_requests() as calls, pytest.raises(ActionFailedError, match="no option has the requested label"):
        await sh.act("set the operator to contains")
    assert len(calls) == 2 and await sh.page.input_value("#op") == "exact"


async def test_an_option_picked_is_its_own_select_and_the_result_says_so(make_stagehand, server):
    """The option line 'contains' picked for select_option: the act is on the option's own select
    (the control it belongs to), with that option, in one request; observe's Action and act's
    result both say so. Control: the option '=' picked with 'version' (the other select's
    option) leaves the page no single reading: re-asked with that select's labels, and nothing
    is selected on either select before the second answer."""
    script = Script(("select_option", "option: contains", ["contains"]), ("select_option", "option: contains", ["contains"]),
                    ("select_option", "option: =", ["version"]), ("select_option", "combobox: Column", ["version"]))
    sh = await _open(make_stagehand, server, script, TABLE, "table-option.html")
    with capture_requests() as calls:
        (action,) = await sh.observe("set the operator to contains")
        result = await sh.act("set the operator to contains")
    assert len(calls) == 2  # one each: corrected, not re-asked
    assert action.selector.endswith("/select[1]") and (action.method, action.arguments) == ("select_option", ["contains"])
    (repair,) = action.repairs
    assert (repair.kind, repair.outcome) == ("option_to_select", "corrected")
    assert re.fullmatch(r"select_option \['contains'\] on \[\d+-\d+\] option: contains", repair.answered)
    assert re.fullmatch(r"select_option \['contains'\] on \[\d+-\d+\] combobox: Operator", repair.done)
    assert result.success and result.repairs == [repair] and await sh.page.input_value("#op") == "contains"
    assert result.dispatched == [f"select_option on {action.selector}"]

    await sh.page.select_option("#op", "exact")
    with capture_requests() as calls:
        result = await sh.act("filter on the version column")
    assert len(calls) == 2 and "has no option 'version'" in script.reasks[0]
    assert result.success and await sh.page.input_value("#col") == "version" and await sh.page.input_value("#op") == "exact"
    assert [r.kind for r in result.repairs] == ["unknown_option"]


# --- an instruction that only finds --------------------------------------------------------------


async def test_find_the_input_is_a_click_on_it_not_an_unfillable_placeholder(make_stagehand, server, tmp_path):
    """observe("Find the Company Email input") answered fill with no value (or a made-up
    placeholder, no variables given): act(observed[0]) raised UnknownVariableError. The action keeps
    the element and does what the instruction asked: a click on it (the field gets the focus). Each
    observe writes its repairs beside its call in the inference log."""
    script = Script(("fill", "textbox: Company Email", []), ("fill", "textbox: Company Email", ["%company_email%"]))
    sh = await _open(make_stagehand, server, script, CONTACT, "contact-find.html", llm={"inference_log_dir": tmp_path})
    for n, arguments in enumerate(([], ["%company_email%"])):
        with capture_requests() as calls:
            (action,) = await sh.observe("Find the Company Email input")
        assert len(calls) == 1
        assert (action.method, action.arguments, action.missing_arguments) == ("click", [], [])
        assert [(r.kind, r.outcome) for r in action.repairs] == [("no_value_asked", "corrected")]
        assert action.repairs[0].answered.startswith(f"fill {arguments!r} on [")
        notes = sorted(tmp_path.glob("*-observe-note.json"))
        assert len(notes) == n + 1 and json.loads(notes[n].read_text())["note"]["repairs"] == [
            r.model_dump(mode="json") for r in action.repairs]
    result = await sh.act(action)
    assert result.success and await sh.page.evaluate("document.activeElement.id") == "email"


async def test_an_instruction_that_asks_to_fill_keeps_the_missing_value(make_stagehand, server):
    """Control: "fill in the Company Email" does ask for a value it does not give. The action stays
    a fill whose value the caller must give (missing_arguments, UnknownVariableError until then);
    a made-up placeholder (no variables given) becomes that same missing value, without a re-ask."""
    script = Script(("fill", "textbox: Company Email", []), ("fill", "textbox: Company Email", ["%email%"]))
    sh = await _open(make_stagehand, server, script, CONTACT, "contact-fill.html")
    for arguments in ([], ["%email%"]):
        with capture_requests() as calls:
            (action,) = await sh.observe("fill in the Company Email")
        assert len(calls) == 1
        assert (action.method, action.arguments, action.missing_arguments) == ("fill", ["%company_email%"], ["company_email"])
        assert [r.kind for r in action.repairs] == (["invented_placeholder"] if arguments else [])
    with pytest.raises(UnknownVariableError, match="company_email"):
        await sh.act(action)
    await sh.act(action, variables={"company_email": "ada@example.test"})
    assert await sh.page.input_value("#email") == "ada@example.test"


# --- the record: inference log, no variable value, the cache ------------------------------------


async def test_repairs_in_the_inference_log_without_values_and_not_in_the_cache(make_stagehand, server, tmp_path):
    """The re-ask is a request of its own in the inference log, and the repairs are written beside
    it; a variable's value the page echoes (here in the link's name) is a placeholder there, in
    the re-ask and in the result. A replay from the cache makes no model answer, so it reports
    no repair; what it runs is the repaired action."""
    secret = "Hunter2-token"
    script = Script(("type", "link: %token%", ["%token%"]), ("type", "searchbox: Search", ["%token%"]))
    logs = tmp_path / "log"
    sh = await _open(make_stagehand, server, script, TABLE.replace(">json5</a>", f">{secret}</a>"), "table-log.html",
                     llm={"inference_log_dir": logs}, cache_dir=tmp_path / "cache")
    result = await sh.act("search the table for the token", variables={"token": secret})
    assert result.success and await sh.page.input_value("#q") == secret
    files = sorted(p.name for p in logs.iterdir())
    assert [f.rsplit("-", 1)[-1] for f in files] == ["a1.json", "a2.json", "note.json"]
    reask = json.loads((logs / files[1]).read_text())["request"]["messages"][-1]["content"][0]["text"]
    assert "takes no text" in reask and "link: %token%" in reask
    note = json.loads((logs / files[2]).read_text())["note"]
    assert [Repair(**r) for r in note["repairs"]] == result.repairs and "link: %token%" in result.repairs[0].answered
    assert secret not in "".join(p.read_text() for p in logs.iterdir()) + result.model_dump_json()

    await sh.page.fill("#q", "")
    with capture_requests() as calls:
        again = await sh.act("search the table for the token", variables={"token": secret})
    assert calls == [] and again.cache_hit and again.repairs == [] and again.actions[0].repairs == []
    assert again.actions[0].selector == result.actions[0].selector and await sh.page.input_value("#q") == secret
