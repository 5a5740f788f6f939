"""expect(): a claim about the page in words, a verdict with the outline line it read as evidence."""

from __future__ import annotations

import json

import pytest
from _server import Response
from test_sync_api import in_thread

from stagehand_py import Expectation, ExpectationError, InvalidArgumentError, OutputValidationError, sync_api
from stagehand_py._prompts.expect import NO_LINE
from stagehand_py.llm import LLMClient
from stagehand_py.testing import FunctionLLM

CART = "<title>Cart</title><h1>Your cart</h1><p>Cart: 2 items</p><p>Total: $18.00</p><button>Checkout</button>"


def _outline(request) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content if hasattr(p, "text"))


def _line(request, text: str) -> str:
    return next(line.strip() for line in _outline(request).splitlines() if text in line)


async def _cart(make_stagehand, server, model, **options):
    route = server.route("/expect/cart", lambda r: Response.html(CART))
    sh = await make_stagehand(model=model, **options)
    await sh.page.goto(server.url("expect/cart"))
    return sh, route


async def test_a_true_claim_returns_its_evidence_line(make_stagehand, server):
    asked = []

    def model(request):
        asked.append(request.purpose)
        assert "Claim: the cart shows 2 items" in _outline(request)
        assert request.output_schema["properties"]["verdict"]["enum"] == ["yes", "no"]
        return {"verdict": "yes", "evidence": _line(request, "Cart: 2 items")}

    sh, route = await _cart(make_stagehand, server, FunctionLLM(model))
    try:
        verdict = await sh.expect("the cart shows 2 items")
    finally:
        route.remove()
    assert isinstance(verdict, Expectation) and verdict and verdict.verdict == "yes"
    assert "Cart: 2 items" in verdict.evidence and asked == ["expect"] and verdict.usage.requests == 1


async def test_a_false_claim_raises_with_the_evidence_inside_pytest(make_stagehand, server):
    def model(request):
        return {"verdict": "no", "evidence": _line(request, "Cart: 2 items")}

    sh, route = await _cart(make_stagehand, server, FunctionLLM(model))
    try:
        with pytest.raises(ExpectationError, match="Cart: 2 items") as raised:
            await sh.expect("the cart shows 3 items")
        assert isinstance(raised.value, AssertionError) and raised.value.expectation.verdict == "no"
        # Outside a test's assertion style: the verdict is returned, falsy.
        verdict = await sh.expect("the cart shows 3 items", raise_on_failure=False)
        assert not verdict and "Cart: 2 items" in verdict.evidence
        with pytest.raises(InvalidArgumentError):
            await sh.expect("  ")
    finally:
        route.remove()


async def test_an_invented_evidence_line_is_asked_again_then_refused(make_stagehand, server):
    answers = iter([{"verdict": "yes", "evidence": "Cart: 3 items"}, {"verdict": "yes", "evidence": "Cart: 3 items"},
                    {"verdict": "yes", "evidence": "Cart: 3 items"}, {"verdict": "yes", "evidence": "Cart: 3 items"}])
    seen = []

    def model(request):
        seen.append(request)
        return next(answers)

    sh, route = await _cart(make_stagehand, server, LLMClient(FunctionLLM(model), max_reasks=1))
    try:
        with pytest.raises(OutputValidationError, match="not a line of the page"):
            await sh.expect("the cart shows 3 items")
    finally:
        route.remove()
    assert len(seen) == 2  # the first answer and one re-ask, both refused: an invented line never passes


def _is_verdict_question(request) -> bool:
    """Choice mode's second request: the verdict on the chosen line alone."""
    return "evidence" not in request.output_schema["properties"]


async def test_choice_mode_offers_the_page_lines_as_the_evidence_choices(make_stagehand, server):
    def model(request):
        if _is_verdict_question(request):
            return {"verdict": "yes"}
        choices = request.output_schema["properties"]["evidence"]["enum"]
        assert any("Cart: 2 items" in c for c in choices) and any("Checkout" in c for c in choices)
        return {"verdict": "yes", "evidence": next(c for c in choices if "Cart: 2 items" in c)}

    sh, route = await _cart(make_stagehand, server, LLMClient(FunctionLLM(model), choice_mode=True))
    try:
        verdict = await sh.expect("the cart shows 2 items")
    finally:
        route.remove()
    assert verdict.passed and "Cart: 2 items" in verdict.evidence
    assert json.loads(verdict.model_dump_json())["verdict"] == "yes"


def test_the_sync_mirror_returns_the_same_verdict(server):
    route = server.route("/expect/cart-sync", lambda r: Response.html(CART))

    def run() -> Expectation:
        model = FunctionLLM(lambda request: {"verdict": "yes", "evidence": _line(request, "Total: $18.00")})
        with sync_api.Stagehand.launch(model=model) as stagehand:
            stagehand.page.goto(server.url("expect/cart-sync"))
            return stagehand.expect("the total is 18 dollars")

    try:
        verdict = in_thread(run)
    finally:
        route.remove()
    assert verdict.passed and "Total: $18.00" in verdict.evidence


#: The cart line after a heading and a button that also say "cart", and a field whose value holds quotes.
SHOP = ('<title>Shop</title><h1>Your cart</h1><button>Add to cart</button><p>Delivery: Tuesday</p>'
        '<label>Note <input value=\'say "hi"\'></label><p>Cart: 2 items</p><p>Total: $18.00</p>')


def _first_choice(seen: list[list[str]], verdict: str = "yes"):
    """A small model's habit: the first evidence choice offered."""
    def model(request):
        if _is_verdict_question(request):
            return {"verdict": verdict}
        choices = request.output_schema["properties"]["evidence"]["enum"]
        seen.append(choices)
        return {"evidence": choices[0], "verdict": verdict}
    return model


async def test_choice_mode_offers_the_lines_that_bear_on_the_claim_first(make_stagehand, server):
    route = server.route("/expect/shop", lambda r: Response.html(SHOP))
    seen: list[list[str]] = []
    sh = await make_stagehand(model=LLMClient(FunctionLLM(_first_choice(seen)), choice_mode=True))
    try:
        await sh.page.goto(server.url("expect/shop"))
        cart = await sh.expect("the cart shows 2 items")
        total = await sh.expect("the total is $18.00")
    finally:
        route.remove()
    # Numbered, most relevant first: the line with the claim's number and words, not the heading or the button.
    assert seen[0][0] == "1. StaticText: Cart: 2 items" and seen[1][0] == "1. StaticText: Total: $18.00", seen
    assert cart.passed and cart.evidence.endswith("] StaticText: Cart: 2 items"), cart  # the outline line, with its id
    assert total.evidence.endswith("] StaticText: Total: $18.00"), total
    # Every line that says something is offered once; lines with no name or value are not; no quote in an enum
    # string (llama.cpp's grammar mishandles them), the evidence mapped back to the line as the page shows it.
    offered = [c.split(". ", 1)[1] for c in seen[0][:-1]]
    assert len(offered) == len(set(offered)) and seen[0][-1] == NO_LINE
    assert "heading: Your cart" in offered and "button: Add to cart" in offered
    assert not any(c in ("paragraph", "label") for c in offered) and not any('"' in c for c in seen[0]), seen[0]
    assert offered.index("heading: Your cart") < offered.index("button: Add to cart")  # text before controls on a tie


async def test_choice_mode_evidence_with_quotes_maps_back_to_the_page_line(make_stagehand, server):
    route = server.route("/expect/shop-note", lambda r: Response.html(SHOP))

    def model(request):
        if _is_verdict_question(request):
            return {"verdict": "yes"}
        choices = request.output_schema["properties"]["evidence"]["enum"]
        return {"evidence": next(c for c in choices if "say 'hi'" in c), "verdict": "yes"}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True))
    try:
        await sh.page.goto(server.url("expect/shop-note"))
        verdict = await sh.expect("the note says hi")
    finally:
        route.remove()
    assert verdict.passed and verdict.evidence.endswith('textbox: Note value="say \\"hi\\""'), verdict


@pytest.mark.parametrize("line_says", ["no", "yes"])
async def test_choice_mode_the_chosen_line_alone_decides_the_verdict(make_stagehand, server, line_says):
    # A small model picks the right line, then says 'yes' to a claim that line contradicts when it reads the
    # whole page ("the cart is empty" / "Cart: 2 items"): the verdict comes from a second short request
    # with that line alone, fenced. Control ("yes"): the second answer is what the verdict follows.
    route = server.route("/expect/shop-verdict", lambda r: Response.html(SHOP))
    asked: list[str] = []

    def model(request):
        if _is_verdict_question(request):
            asked.append(request.messages[-1].content[0].text)
            return {"verdict": line_says}
        return {"evidence": next(c for c in request.output_schema["properties"]["evidence"]["enum"] if "Cart:" in c),
                "verdict": "yes"}

    sh = await make_stagehand(model=LLMClient(FunctionLLM(model), choice_mode=True))
    try:
        await sh.page.goto(server.url("expect/shop-verdict"))
        verdict = await sh.expect("the cart is empty", raise_on_failure=False)
    finally:
        route.remove()
    assert verdict.passed is (line_says == "yes") and verdict.evidence.endswith("StaticText: Cart: 2 items"), verdict
    assert len(asked) == 1 and "Claim: the cart is empty" in asked[0] and "StaticText: Cart: 2 items" in asked[0]
    assert "Total" not in asked[0] and "Add to cart" not in asked[0]  # the line alone, not the page
