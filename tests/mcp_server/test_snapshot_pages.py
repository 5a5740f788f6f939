"""The MCP ``snapshot`` tool on a large real page, and a login that survives a server restart,
as the official SDK's client sees them: the real ``stagehand-py mcp`` process over stdio driving
a real Chromium on pages served over loopback. No model is involved."""

from __future__ import annotations

import glob
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _server import Response

ENTRY_POINT = str(Path(sys.executable).parent / "stagehand-py")
#: Python's own documentation (Debian's python3-doc, which scripts/setup.sh installs): a real
#: page nobody here wrote, ~30k DOM nodes.
STDTYPES = sorted(glob.glob("/usr/share/doc/python3*/html/library/stdtypes.html"))
PAGE = re.compile(r"^Page (\d+) of (\d+) \(about (\d+) tokens, max_tokens=(\d+); outline lines (\d+)-(-?\d+) of (\d+)\)\.$",
                  re.MULTILINE)
COOKIE_PAGE = """<!doctype html><title>Cookie</title>
<h1 id="c">reading</h1><script>document.getElementById("c").textContent = document.cookie || "no cookie";</script>"""


def params(tmp_path: Path, **config: Any) -> StdioServerParameters:
    path = tmp_path / f"server-{len(list(tmp_path.glob('server-*.json')))}.json"
    path.write_text(json.dumps({"model": None, **config}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["STAGEHAND_MODELS_DIR"] = str(tmp_path / "no-models")  # no embedded model either: none is needed
    return StdioServerParameters(command=ENTRY_POINT, args=["mcp", "--config", str(path)], env=env)


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), "\n".join(getattr(c, "text", "") or "" for c in result.content)


def body_of(page_text: str) -> str:
    return page_text.split("\n\n", 1)[1]


@pytest.mark.skipif(not STDTYPES, reason="python3-doc is not installed (bash scripts/setup.sh installs it)")
async def test_a_client_pages_through_a_large_real_page(tmp_path: Path, server: Any) -> None:
    html = Path(STDTYPES[0]).read_text(encoding="utf-8")
    with server.route("/stdtypes.html", lambda request: Response.html(html)):
        async with Client(params(tmp_path), read_timeout_seconds=300) as client:
            failed, text = await call(client, "navigate", url=server.url("stdtypes.html"))
            assert not failed, text

            # The whole outline in one page: what the pages must add up to.
            failed, whole = await call(client, "snapshot", max_tokens=10_000_000)
            assert not failed and "Page 1 of 1" in whole and "This is the last page." in whole
            outline = body_of(whole).split("\n")
            assert len(body_of(whole)) // 4 > 50_000  # control: far more than one client context holds

            failed, first = await call(client, "snapshot", max_tokens=8000)
            assert not failed, first
            (number, count, tokens, size, start, end, total) = map(int, PAGE.search(first).groups())  # type: ignore[union-attr]
            assert (number, size, start, total) == (1, 8000, 1, len(outline)) and count >= 5
            assert "Next: snapshot(page=2, max_tokens=8000)" in first

            pages = [first]
            for n in range(2, count + 1):
                failed, text = await call(client, "snapshot", max_tokens=8000, page=n)
                assert not failed, text
                pages.append(text)
            seen_lines: list[str] = []
            expected_start = 1
            for n, text in enumerate(pages, 1):
                match = PAGE.search(text)
                assert match is not None, text[:300]
                number, count_again, tokens, _, start, end, _ = map(int, match.groups())
                assert (number, count_again) == (n, count) and tokens <= 8000
                assert len(body_of(text)) // 4 <= 8000 + 1
                assert start == expected_start  # the pages follow each other with no gap or overlap
                expected_start = end + 1
                context = int(m.group(1)) if (m := re.search(r"Its first (\d+) line", text)) else 0
                seen_lines += body_of(text).split("\n")[context:]
            assert expected_start == len(outline) + 1
            assert seen_lines == outline  # nothing lost, nothing repeated
            assert "This is the last page." in pages[-1]

            failed, text = await call(client, "snapshot", max_tokens=8000, page=count + 1)
            assert failed and f"InvalidArgumentError: page {count + 1} does not exist" in text
            assert f"has {count} page(s)" in text

            # A relevance query puts the part that names it first; in page order it is further on. The
            # term: a dotted name only one page from the middle on has (e.g. a method of a later type).
            bodies = [body_of(text) for text in pages]
            term, where = next((name, n) for n in range(count // 2 + 1, count + 1)
                               for name in re.findall(r"\b[a-z]+\.[a-z_]{5,}\b", bodies[n - 1])
                               if sum(name in body for body in bodies) == 1)
            assert where > 1 and term not in bodies[0]  # control: without the query, page 1 does not have it
            failed, ranked = await call(client, "snapshot", max_tokens=8000, query=f'the "{term}" method')
            assert not failed and term in body_of(ranked), (term, where)
            assert f"this one is part {where} of {count} in page order" in ranked

            # An id from the last page acts (ids hold across pages).
            element = re.search(r"\[(\d+-\d+)\] link: ", body_of(pages[-1]))
            assert element is not None
            failed, text = await call(client, "act_on_element", element_id=element.group(1), method="scroll_into_view")
            assert not failed and json.loads(text)["success"], text


async def sign_in_then_restart(tmp_path: Path, server: Any, cookie: str, **config: Any) -> str:
    """One server run visits a page that sets ``cookie`` and stops; a second run with the same
    configuration reads the cookies a page sees: the second run's outline."""
    login = Response.html("<title>Signed in</title><h1>Welcome</h1>")
    login.headers["Set-Cookie"] = f"{cookie}; Max-Age=3600; Path=/"
    with server.route("/mcp_login.html", lambda request: login), \
         server.route("/mcp_cookie.html", lambda request: Response.html(COOKIE_PAGE)):
        async with Client(params(tmp_path, **config), read_timeout_seconds=120) as client:
            assert not (await call(client, "navigate", url=server.url("mcp_login.html")))[0]
        async with Client(params(tmp_path, **config), read_timeout_seconds=120) as client:
            await call(client, "navigate", url=server.url("mcp_cookie.html"))
            failed, outline = await call(client, "snapshot")
    assert not failed, outline
    return outline


async def test_a_login_cookie_survives_a_restart_through_the_storage_state(tmp_path: Path, server: Any) -> None:
    state = tmp_path / "state" / "login.json"
    outline = await sign_in_then_restart(tmp_path, server, "session=mcp-login-42", storage_state=str(state))
    assert "session=mcp-login-42" in outline
    # The server wrote the state when it stopped, readable by its owner only.
    assert "mcp-login-42" in state.read_text() and stat.S_IMODE(state.stat().st_mode) == 0o600
    # Control: without a storage state the second run starts with no cookie.
    assert "no cookie" in await sign_in_then_restart(tmp_path, server, "session=mcp-login-43")


async def test_a_profile_folder_keeps_the_login_and_is_owner_only(tmp_path: Path, server: Any) -> None:
    profile = tmp_path / "profile"
    outline = await sign_in_then_restart(tmp_path, server, "session=mcp-profile-7", user_data_dir=str(profile))
    assert "session=mcp-profile-7" in outline
    assert stat.S_IMODE(profile.stat().st_mode) == 0o700
