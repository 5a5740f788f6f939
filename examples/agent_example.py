"""An agent task on the local example site: collect the products and their prices.

    python examples/agent_example.py

It serves examples/site/, launches a headless Chromium and runs
``sh.agent(...).execute(...)`` with:

- ``allowed_domains`` so the agent cannot leave the local site;
- an ``output`` model that ``done`` must satisfy (otherwise it is bounced back);
- a checkpoint file, written atomically on every ``save_progress`` and at the end;
- progress printed from the agent's events as they arrive.

With no model configured (see examples/_model_config.py) it says how to configure one and
exits 0. The test suite runs it with a scripted model.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model
from pydantic import BaseModel

from stagehand_py import AgentEvent, Stagehand


class Product(BaseModel):
    name: str
    price: str


class Catalog(BaseModel):
    products: list[Product]


def show(event: AgentEvent) -> None:
    """Print a line per step and per tool call: a progress display built on events."""
    if event.type == "tool_call":
        print(f"step {event.step}: {event.data['tool']} {event.data['args']}")
    elif event.type == "tool_result" and not event.data["ok"]:
        print(f"   failed: {event.data['result'][:120]}")
    elif event.type == "warning":
        print(f"   warning: {event.data}")


async def main(model: Any = None, *, headless: bool = True, checkpoint_dir: str | None = None) -> int:
    picked = pick_model(model)
    if picked is None:
        print(HOW_TO_CONFIGURE)
        return 0
    options, label = picked
    print(f"model: {label}")
    folder = Path(checkpoint_dir or tempfile.mkdtemp(prefix="agent-example-"))
    with serve_site() as site:
        async with await Stagehand.launch(headless=headless, **options) as stagehand:
            await stagehand.page.goto(site.url("index.html"))
            agent = stagehand.agent(allowed_domains=["127.0.0.1"], checkpoint_path=folder / "checkpoint.json")
            result = await agent.execute(
                "Open the products page and list every product with its price.",
                max_steps=6,  # a two-step task; a small local model otherwise wanders to the cap
                output=Catalog,
                callbacks=show,
            )
            print(f"status: {result.status} ({result.message})")
            if isinstance(result.output, Catalog):
                for product in result.output.products:
                    print(f"  {product.name}: {product.price}")
            elif result.output is not None:
                print(f"  partial data: {result.output}")
            print(f"steps: {len(result.steps)}, model calls: {result.usage.requests}, "
                  f"checkpoints: {len(result.evidence.checkpoints)} (last: {folder / 'checkpoint.json'})")
            return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
