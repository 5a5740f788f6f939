"""The outline rules and token budgeting, on hand-made CDP trees: no browser needed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagehand_py import InvalidArgumentError
from stagehand_py.snapshot import Snapshot, estimate_tokens, split_outline
from stagehand_py.snapshot._outline import CHECKED, DISABLED, SCROLLABLE, VISIBLE, build_outline

_ids = iter(range(100, 10**6))


def el(tag: str, *children: dict, attrs: tuple[str, ...] = (), **extra) -> dict:
    node = {"nodeType": 1, "nodeName": tag.upper(), "localName": tag, "backendNodeId": next(_ids),
            "attributes": list(attrs), "children": list(children)}
    node.update(extra)
    return node


def text(value: str) -> dict:
    return {"nodeType": 3, "nodeName": "#text", "nodeValue": value, "backendNodeId": next(_ids)}


def doc(*children: dict, url: str = "http://site.test/dir/page.html") -> dict:
    return {"nodeType": 9, "nodeName": "#document", "backendNodeId": next(_ids), "children": list(children),
            "documentURL": url, "baseURL": url}


def outline(root: dict, info: dict, **kw):
    ordinals: dict[str, int] = {}
    return build_outline(root, info=info, frame_ordinal=lambda f: ordinals.setdefault(f, len(ordinals) + 1), **kw)


def test_structural_wrappers_collapse_and_text_in_a_name_is_not_repeated() -> None:
    label = text("Log in")
    button = el("button", el("span", label))
    wrapper = el("div", el("div", button))
    body = el("body", wrapper)
    root = doc(el("html", el("head", el("title", text("T"))), body))
    info = {button["backendNodeId"]: (VISIBLE, "button", "Log in", None)}
    result = outline(root, info)
    # html, body and both divs have one child each: they all collapse into the button, and
    # the button's own text is already its name.
    assert result.tree == f"[0-{button['backendNodeId']}] button: Log in"
    assert result.xpath_map == {f"0-{button['backendNodeId']}": "/html[1]/body[1]/div[1]/div[1]/button[1]"}


def test_a_wrapper_with_several_children_stays_and_shows_its_tag() -> None:
    a, b = el("button"), el("button")
    div = el("div", a, b)
    root = doc(el("html", el("body", div)))
    info = {a["backendNodeId"]: (VISIBLE, "button", "A", None), b["backendNodeId"]: (VISIBLE, "button", "B", None),
            div["backendNodeId"]: (VISIBLE, "generic", "", None)}
    lines = outline(root, info).tree.split("\n")
    assert lines == [f"[0-{div['backendNodeId']}] div", f"  [0-{a['backendNodeId']}] button: A", f"  [0-{b['backendNodeId']}] button: B"]


def test_hidden_elements_drop_but_their_visible_descendants_stay() -> None:
    shown = el("button")
    hidden_text = text("secret note")
    hidden = el("div", hidden_text, shown)
    root = doc(el("html", el("body", hidden)))
    info = {hidden["backendNodeId"]: (0, None, None, None), shown["backendNodeId"]: (VISIBLE, "button", "Shown", None)}
    tree = outline(root, info).tree
    assert "Shown" in tree and "secret note" not in tree


def test_flags_values_and_xpath_steps() -> None:
    box = el("input")
    field = el("input")
    svg_circle = el("circle", nodeName="circle")
    svg = el("svg", svg_circle, nodeName="svg")
    p = el("p", text("   "), text("first"), el("b", text("bold")), text("second"))
    scroller = el("div", p, svg)
    root = doc(el("html", el("body", box, field, scroller)))
    info = {
        box["backendNodeId"]: (VISIBLE | CHECKED | DISABLED, "checkbox", "Agree", None),
        field["backendNodeId"]: (VISIBLE, "textbox", "Name", 'Ada "the first"'),
        scroller["backendNodeId"]: (VISIBLE | SCROLLABLE, "generic", "", None),
        svg["backendNodeId"]: (VISIBLE, "image", "Chart", None),
        svg_circle["backendNodeId"]: (VISIBLE, "graphics-symbol", "Dot", None),
        p["backendNodeId"]: (VISIBLE, "paragraph", "", None),
    }
    result = outline(root, info)
    assert f"[0-{box['backendNodeId']}] checkbox: Agree [checked] [disabled]" in result.tree
    assert f'[0-{field["backendNodeId"]}] textbox: Name value="Ada \\"the first\\""' in result.tree
    assert f"[0-{scroller['backendNodeId']}] div [scrollable]" in result.tree
    second = p["children"][3]
    assert result.xpath_map[f"0-{second['backendNodeId']}"] == "/html[1]/body[1]/div[1]/p[1]/text()[normalize-space()][2]"
    assert result.xpath_map[f"0-{svg_circle['backendNodeId']}"] == (
        "/html[1]/body[1]/div[1]/*[local-name()='svg'][1]/*[local-name()='circle'][1]"
    )


def test_iframes_shadow_roots_and_urls() -> None:
    inner_button = el("button")
    frame_doc = doc(el("html", el("body", inner_button)), url="http://other.test/child.html")
    frame = el("iframe", frameId="F1", contentDocument=frame_doc)
    shadow_button = el("button")
    host = el("my-card", shadowRoots=[{"nodeType": 11, "shadowRootType": "closed", "backendNodeId": next(_ids), "children": [shadow_button]}])
    link = el("a", text("Next"), attrs=("href", "../next.html"))
    js_link = el("a", text("Run"), attrs=("href", "javascript:void(0)"))
    root = doc(el("html", el("body", frame, host, link, js_link)))
    info = {
        frame["backendNodeId"]: (VISIBLE, "Iframe", "Child", None),
        inner_button["backendNodeId"]: (VISIBLE, "button", "Inside", None),
        shadow_button["backendNodeId"]: (VISIBLE, "button", "Shadowed", None),
        link["backendNodeId"]: (VISIBLE, "link", "Next", None),
        js_link["backendNodeId"]: (VISIBLE, "link", "Run", None),
    }
    result = outline(root, info)
    inner_id = f"1-{inner_button['backendNodeId']}"
    assert result.xpath_map[inner_id] == "/html[1]/body[1]/iframe[1]/html[1]/body[1]/button[1]"
    assert result.xpath_map[f"0-{shadow_button['backendNodeId']}"] == "/html[1]/body[1]/my-card[1]//button[1]"
    assert result.url_map == {f"0-{link['backendNodeId']}": "http://site.test/next.html"}
    lines = result.tree.split("\n")
    assert any(line.startswith(f"    [{inner_id}]") or line.startswith(f"  [{inner_id}]") for line in lines)


def test_deep_trees_need_no_recursion() -> None:
    leaf = el("button")
    node = leaf
    for _ in range(5000):
        node = el("div", node)
    result = outline(doc(el("html", el("body", node))), {leaf["backendNodeId"]: (VISIBLE, "button", "Deep", None)})
    assert result.tree == f"[0-{leaf['backendNodeId']}] button: Deep"


# --- token budgeting ---------------------------------------------------------------------


def test_estimate_tokens_is_chars_over_four_rounded_up() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]


def test_split_rejects_a_budget_too_small_for_any_line() -> None:
    with pytest.raises(InvalidArgumentError, match="at least 8"):
        split_outline("[0-1] button: A", 3)


outline_lines = st.lists(
    st.tuples(st.integers(0, 6), st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=120)),
    min_size=1, max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(lines=outline_lines, budget=st.integers(8, 200))
def test_chunks_stay_under_budget_and_cover_every_line_in_order(lines, budget) -> None:
    depth = 0
    rendered = []
    for i, (want, label) in enumerate(lines):
        depth = min(want, depth + 1)  # an outline only ever goes one level deeper at a time
        rendered.append("  " * depth + f"[0-{i}] x: " + label.replace("\n", " "))
    tree = "\n".join(rendered)
    chunks = split_outline(tree, budget)
    assert all(c.tokens <= budget for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered = []
    for chunk in chunks:
        body = chunk.text.split("\n")[chunk.context_lines:]
        if chunk.first_line == chunk.last_line and len(rendered[chunk.first_line]) > budget * 4 - 3:
            if not covered or covered[-1] != chunk.first_line:
                covered.append(chunk.first_line)  # one long line cut into pieces
            continue
        assert body == rendered[chunk.first_line : chunk.last_line + 1]
        covered.extend(range(chunk.first_line, chunk.last_line + 1))
    assert covered == list(range(len(rendered)))


def test_chunks_repeat_ancestor_lines_as_context() -> None:
    tree = "\n".join(["[0-1] main"] + [f"  [0-{i}] button: Item {i}" for i in range(2, 60)])
    snapshot = Snapshot(tree)
    chunks = snapshot.chunks(60)
    assert len(chunks) > 2
    for chunk in chunks[1:]:
        assert chunk.context_lines == 1 and chunk.text.startswith("[0-1] main\n")
