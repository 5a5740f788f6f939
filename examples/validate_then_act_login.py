"""Validate, then act: let the model plan a login, check the plan, then run it with real values.

    OPENAI_API_KEY=... python examples/validate_then_act_login.py

``observe()`` is given the *names* of the variables (and a description), never their values:
the actions it returns carry ``%username%`` / ``%password%`` placeholders. We print and check
them (right fields, right methods, nothing outside the form), and only then ``act()`` on each
with the real values, which are filled in at the browser call. The password is never printed
and never reaches the model.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from _local_site import serve_site
from _model_config import HOW_TO_CONFIGURE, pick_model

from stagehand_py import Action, Stagehand, Variables, placeholders_in

FORM_XPATH = "xpath=/html[1]/body[1]/main[1]/form[1]/"


def check_plan(actions: list[Action]) -> list[str]:
    """What is wrong with the planned actions (empty when they are fine to run)."""
    problems = []
    fills = {placeholder for a in actions if a.method in ("fill", "type") for placeholder in placeholders_in(a.arguments)}
    if fills != {"username", "password"}:
        problems.append(f"expected to fill %username% and %password%, the plan fills {sorted(fills) or 'nothing'}")
    for action in actions:
        if action.method in ("fill", "type") and not placeholders_in(action.arguments):
            problems.append(f"{action.description!r} would type literal text {action.arguments}, not a variable")
        if not action.selector.startswith(FORM_XPATH):
            problems.append(f"{action.description!r} targets {action.selector}, outside the sign-in form")
    if not any(a.method == "click" for a in actions):
        problems.append("nothing submits the form")
    return problems


async def main(model: Any = None, *, username: str = "ada", password: str | None = None, headless: bool = True) -> int:
    picked = pick_model(model)
    if picked is None:
        print(HOW_TO_CONFIGURE)
        return 0
    options, label = picked
    secret = password if password is not None else os.environ.get("EXAMPLE_PASSWORD", "correct horse battery staple")
    variables: Variables = {
        "username": username,
        "password": {"value": secret, "description": "the account password"},
    }
    print(f"model: {label}")
    with serve_site() as site:
        async with await Stagehand.launch(headless=headless, **options) as stagehand:
            page = stagehand.page
            await page.goto(site.url("login.html"))

            # 1. Plan: the model sees the variable names and description, not the values.
            actions = await stagehand.observe("fill in the sign-in form and submit it", variables=variables)
            print("planned actions:")
            for action in actions:
                print(f"  {action.method:<6} {action.arguments!s:<16} {action.description}")

            # 2. Validate before anything happens in the page.
            problems = check_plan(actions)
            if problems:
                print("not running the plan:", *problems, sep="\n  ")
                return 1

            # 3. Act, in order, with the real values (substituted at the browser call).
            for action in actions:
                result = await stagehand.act(action, variables=variables)
                print(f"  done: {action.description} (success={result.success})")
            print(f"page says: {await page.inner_text('#status')}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
