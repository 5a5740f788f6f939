"""A pytest flow on a real local page, recorded once with the embedded model and replayed in CI.

    pytest examples/pytest_flow --stagehand-record once   # record (the embedded model; no key)
    pytest examples/pytest_flow                            # replay: no model needed at all

Sign in with placeholders (observe, check the plan, act it), go to the products page, and extract
the catalogue into a pydantic model. The password never reaches the model or the cassette.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel

from stagehand_py import Stagehand, Variables, placeholders_in


class Product(BaseModel):
    name: str
    price: str


class Catalogue(BaseModel):
    products: list[Product]


VARIABLES: Variables = {
    "username": "ada",
    "password": {"value": "correct horse", "description": "the account password"},
}


@pytest.mark.stagehand(variables=VARIABLES)
async def test_sign_in_then_read_the_catalogue(stagehand: Stagehand, shop_url: Callable[[str], str]) -> None:
    page = stagehand.page
    await page.goto(shop_url("login.html"))

    plan = await stagehand.observe("fill in the sign-in form with the username and the password",
                                   variables=VARIABLES)
    assert {"username", "password"} <= {name for action in plan for name in placeholders_in(action.arguments)}
    assert all(action.method in ("fill", "type", "click") for action in plan), plan
    for action in plan:
        await stagehand.act(action, variables=VARIABLES)
    await stagehand.act("click the Sign in button")
    assert await page.inner_text("#status") == "Signed in as ada."

    await stagehand.act("click the Products link")
    assert page.url.endswith("/products.html")
    catalogue = await stagehand.extract("every product with its price", schema=Catalogue)
    assert ("Canvas Backpack", "$54.50") in {(p.name, p.price) for p in catalogue.products}
