"""extract(): schemas, URL fields as ids, one call per part, early stop on long pages."""

from __future__ import annotations

import re
from typing import ClassVar

import pytest
from _server import Response
from pydantic import BaseModel, HttpUrl, field_validator

from stagehand_py import InvalidSchemaError, OutputValidationError, Stagehand
from stagehand_py.testing import FunctionLLM, ScriptedLLM, capture_requests

from ._ops import find_id, first_user, prompt_text, request_tokens


class Product(BaseModel):
    name: str
    price: str
    url: HttpUrl


class Catalogue(BaseModel):
    products: list[Product]
    next_page: HttpUrl | None = None


async def test_pydantic_schema_with_url_fields(page, server):
    await page.goto(server.url("products.html"))

    def model(request):
        assert request.purpose == "extract"
        schema = request.output_schema
        assert set(schema["properties"]) == {"data", "instruction_satisfied"}
        product = schema["$defs"]["Product"]["properties"]["url"]
        assert "format" not in product and "id of the link" in product["description"]
        return {
            "data": {
                "products": [
                    {"name": "Trail Runner Shoes", "price": "$89.99", "url": find_id(request, "link: Trail Runner Shoes")},
                    {"name": "Canvas Backpack", "price": "$54.00", "url": f"[{find_id(request, 'link: Canvas Backpack')}]"},
                ],
                "next_page": find_id(request, "link: Next page"),
            },
            "instruction_satisfied": True,
        }

    sh = Stagehand(page, model=FunctionLLM(model))
    result = await sh.extract("the first two products", schema=Catalogue)
    assert isinstance(result, Catalogue)
    assert str(result.products[0].url) == server.url("products/1.html")
    assert str(result.products[1].url) == server.url("products/2.html")
    assert str(result.next_page).startswith(server.prefix) and result.products[1].price == "$54.00"
    assert sh.metrics.by_purpose["extract"].requests == 1  # data and "done?" in one call


async def test_json_schema_and_unknown_link_id_is_reasked(page, server):
    await page.goto(server.url("products.html"))
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "link": {"type": "string", "format": "uri"}},
              "required": ["title", "link"]}
    scripted = ScriptedLLM([
        {"data": {"title": "Products", "link": "0-999999"}, "instruction_satisfied": True},
        {"data": {"title": "Products", "link": "PLACEHOLDER"}, "instruction_satisfied": True},
    ])
    sh = Stagehand(page, model=scripted)
    # The second answer needs the real id: patch it in once the first request shows the outline.
    original = scripted.request

    async def request(req):
        if len(scripted.requests) == 1:
            scripted._queue[0]["data"]["link"] = find_id(req, "link: Camp Mug")
        return await original(req)

    scripted.request = request
    with capture_requests() as calls:
        data = await sh.extract("the heading and the camp mug link", schema)
    assert data == {"title": "Products", "link": server.url("products/6.html")}
    assert len(calls) == 2
    assert calls[1].request.attempt == 2  # the page's re-ask is the client's own second attempt: one loop
    reask = first_user(calls[1].request) != calls[1].request.messages[-1].content[0].text
    assert reask and "'0-999999' is not the id of a link" in calls[1].request.messages[-1].content[0].text


async def test_non_object_schema_is_wrapped_and_unwrapped(page, server):
    await page.goto(server.url("products.html"))

    def model(request):
        assert request.output_schema["properties"]["data"]["type"] == "array"
        return {"data": ["$89.99", "$54.00"], "instruction_satisfied": True}

    sh = Stagehand(page, model=FunctionLLM(model))
    prices = await sh.extract("the first two prices", {"type": "array", "items": {"type": "string"}})
    assert prices == ["$89.99", "$54.00"]


async def test_instruction_only_and_no_arguments(page, server):
    await page.goto(server.url("products.html"))
    sh = Stagehand(page, model=FunctionLLM(lambda r: {"data": {"extraction": "18 products"}, "instruction_satisfied": True}))
    assert await sh.extract("how many products are there") == {"extraction": "18 products"}
    with capture_requests() as calls:
        text = await sh.extract()
    assert calls == [] and "link: Trail Runner Shoes" in text["page_text"]


async def test_invalid_schema(page, server):
    await page.goto(server.url("products.html"))
    sh = Stagehand(page, model=ScriptedLLM([]))
    with pytest.raises(InvalidSchemaError, match="not a valid JSON Schema"):
        await sh.extract("x", {"type": "no-such-type"})
    with pytest.raises(InvalidSchemaError, match="pydantic model class or a JSON Schema dict"):
        await sh.extract("x", str)


def _big_page(rows: int) -> str:
    body = "".join(f"<li>Entry {i}: {'lorem ipsum dolor sit amet ' * 4}</li>" for i in range(rows))
    return f"<!DOCTYPE html><html><head><title>Big</title></head><body><h1>Big</h1><ul>{body}</ul><p>The answer is 42.</p></body></html>"


async def test_chunked_extract_stops_early_and_stays_in_budget(page, server):
    budget = 2_220
    with server.route("/big.html", lambda req: Response.html(_big_page(600))):
        await page.goto(server.url("big.html"))
        seen: list[str] = []

        def model(request):
            text = first_user(request)
            seen.append(text)
            part = re.search(r"Page outline \(part (\d+) of (\d+)", text)
            assert part, "a long page is sent in parts"
            done = int(part.group(1)) == 3
            return {"data": {"entries": [f"part {part.group(1)}"]}, "instruction_satisfied": done}

        sh = Stagehand(page, model=FunctionLLM(model), token_budget=budget)
        schema = {"type": "object", "properties": {"entries": {"type": "array", "items": {"type": "string"}}}, "required": ["entries"]}
        with capture_requests() as calls:
            data = await sh.extract("list the entries", schema)
    total_parts = int(re.search(r"part \d+ of (\d+)", seen[0]).group(1))
    assert total_parts > 5
    assert len(calls) == 3 and data == {"entries": ["part 1", "part 2", "part 3"]}
    assert "Data already extracted from earlier parts" in seen[2] and "part 2" in seen[2]
    assert max(request_tokens(c.request) for c in calls) <= budget


async def test_merged_result_must_fit_the_schema(page, server):
    with server.route("/big2.html", lambda req: Response.html(_big_page(300))):
        await page.goto(server.url("big2.html"))
        sh = Stagehand(page, model=FunctionLLM(lambda r: {"data": {}, "instruction_satisfied": False}), token_budget=2_220)
        with pytest.raises(OutputValidationError, match="does not fit the schema"):
            await sh.extract("the answer", {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})


class Priced(BaseModel):
    name: str
    price: float

    @field_validator("price")
    @classmethod
    def positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("a price is positive")
        return value


async def test_schema_problems_speak_the_clients_path_language(page, server):
    """Problems only the caller's schema catches (pydantic validators) are phrased by the one
    owner of schema checks, llm/_structured.py: the same ``$.``-paths as the client's re-asks."""
    await page.goto(server.url("products.html"))
    answers = iter([{"data": {"name": "Trail Runner Shoes", "price": -1}, "instruction_satisfied": True},
                    {"data": {"name": "Trail Runner Shoes", "price": 89.99}, "instruction_satisfied": True}])
    sh = Stagehand(page, model=FunctionLLM(lambda r: next(answers)))
    with capture_requests() as calls:
        assert await sh.extract("the first product", Priced) == Priced(name="Trail Runner Shoes", price=89.99)
    reask = prompt_text(calls[1].request)
    assert "$.data.price: Value error, a price is positive" in reask

    # The merged result of a long page is judged the same way.
    with server.route("/big3.html", lambda req: Response.html(_big_page(300))):
        await page.goto(server.url("big3.html"))
        sh = Stagehand(page, model=FunctionLLM(lambda r: {"data": {}, "instruction_satisfied": False}), token_budget=2_220)
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        with pytest.raises(OutputValidationError, match=r"\$\.data: 'answer' is a required property"):
            await sh.extract("the answer", schema)
    with pytest.raises(InvalidSchemaError, match=r"extract\(schema=\.\.\.\) is not a valid JSON Schema"):
        await sh.extract("x", {"type": "no-such-type"})


class Judged(BaseModel):
    """Counts how often the caller's schema judges an answer (its validator runs once a judgement)."""

    judged: ClassVar[list[str]] = []
    answer: str

    @field_validator("answer")
    @classmethod
    def count(cls, value: str) -> str:
        cls.judged.append(value)
        return value


async def test_the_answer_is_judged_by_the_schema_once(make_stagehand, server):
    """One model answer, one judgement by the caller's schema: on a page read whole (the check that
    could re-ask is the judgement kept for the result) and on a long page (the merge is judged once,
    the parts not at all)."""
    # Values the pages show: a string found nowhere on the page would be re-asked (test_extract_repairs.py).
    sh = await make_stagehand(model=FunctionLLM(lambda r: {"data": {"answer": "Products"}, "instruction_satisfied": True}))
    await sh.page.goto(server.url("products.html"))
    Judged.judged.clear()
    assert await sh.extract("the answer", Judged) == Judged.model_construct(answer="Products")
    assert Judged.judged == ["Products"]

    asked: list[str] = []

    def by_part(request):
        part = re.search(r"Page outline \(part (\d+) of \d+", first_user(request))
        assert part, "a long page is sent in parts"
        second = len(asked) == 1
        asked.append(part.group(1))
        return {"data": {"answer": f"Entry {part.group(1)}"} if second else {}, "instruction_satisfied": second}

    with server.route("/big4.html", lambda req: Response.html(_big_page(300))):
        sh = await make_stagehand(model=FunctionLLM(by_part), token_budget=2_220)
        await sh.page.goto(server.url("big4.html"))
        Judged.judged.clear()
        with capture_requests() as calls:
            result = await sh.extract("the answer", Judged)
    assert len(calls) == 2 and result.answer == f"Entry {asked[1]}" and Judged.judged == [result.answer]
