"""A user's own file, written against the README and docs: it must type-check under mypy --strict."""

from __future__ import annotations

import asyncio

from playwright.async_api import async_playwright
from pydantic import BaseModel

from stagehand_py import Action, ActResult, AgentResult, ExtractResult, Snapshot, Stagehand, StagehandError
from stagehand_py.agent import AgentConfig, Driver
from stagehand_py.llm import AssistantMessage, LLMClient, SystemMessage, TextPart, UserMessage
from stagehand_py.testing import FunctionLLM


class Book(BaseModel):
    title: str
    year: int


def fake_model(request: object) -> dict[str, object]:
    return {"elements": []}


async def main() -> None:
    messages = [
        SystemMessage("You extract data."),
        UserMessage("Title: Dune, 1965"),
        AssistantMessage("ok"),
        UserMessage([TextPart(text="and another")]),
    ]
    client = LLMClient(FunctionLLM(fake_model))
    async with await Stagehand.launch(model=client) as sh:
        snapshot: Snapshot = await sh.snapshot()
        print(snapshot.tree, len(messages))
        actions: list[Action] = await sh.observe("the sign in button", variables={"user": "ada"})
        for action in actions:
            result: ActResult = await sh.act(action, variables={"user": "ada"})
            print(result.success)
        book: Book = await sh.extract("the book", schema=Book)
        print(book.title)
        report: ExtractResult[Book] = await sh.extract("the book", schema=Book, report=True)
        print(report.data.year, report.generated, [(v.path, v.line) for v in report.values])
        driver: Driver = sh  # what the agent needs from the browser; a Stagehand is one
        print(driver.page.url)
        agent = sh.agent(mode="dom", allowed_domains=["example.com"], expected_items=3)
        config = AgentConfig(self_check=True, memory_notes=["the list has 3 pages"])
        strict = sh.agent(config, max_outline_tokens=4000)
        outcome: AgentResult = await agent.execute("Find the cheapest plan", max_steps=10, output=Book)
        print(outcome.status, strict.config.max_outline_tokens)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch()
        page = await browser.new_page()
        try:
            wrapped = Stagehand(page=page, model="openai/gpt-4.1-mini")
            await wrapped.page.goto("http://127.0.0.1:8000/")
        except StagehandError as exc:
            print(exc)


asyncio.run(main())
