"""Extract a product list with links into a pydantic model.

    OPENAI_API_KEY=... python examples/extract_links.py

``HttpUrl`` fields come back as the real absolute URLs of the links on the page: the model
points at link elements, and stagehand_py fills in each link's ``href`` (resolved), so a URL
cannot be made up.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model
from pydantic import BaseModel, Field, HttpUrl

from stagehand_py import Stagehand


class Product(BaseModel):
    name: str
    price: str = Field(description="The price as shown, e.g. $19.99")
    url: HttpUrl = Field(description="The link to the product's page")


class Catalog(BaseModel):
    products: list[Product]


async def main(model: Any = None, *, headless: bool = True) -> int:
    picked = pick_model(model)
    if picked is None:
        print(HOW_TO_CONFIGURE)
        return 0
    options, label = picked
    print(f"model: {label}")
    with serve_site() as site:
        async with await Stagehand.launch(headless=headless, **options) as stagehand:
            await stagehand.page.goto(site.url("products.html"))
            catalog = await stagehand.extract("every product with its price and link", schema=Catalog)
            for product in catalog.products:
                print(f"{product.name:<20} {product.price:>8}  {product.url}")
            # The links are real: follow the first one.
            if catalog.products:
                await stagehand.page.goto(str(catalog.products[0].url))
                print(f"first product page: {await stagehand.page.title()}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
