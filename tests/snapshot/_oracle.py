"""An independent check of the snapshot's XPath contract, over raw CDP.

For each id, the XPath must lead to exactly the node the snapshot gave that id. Steps are
walked in the page, hops are crossed with CDP (shadow roots via DOM.describeNode, including
closed ones; iframes via their content document or their own out-of-process target). Paths
without hops are also evaluated with the browser's own ``document.evaluate``, which must
return exactly one node: the canonical form is standard XPath, not a private dialect.
"""

from __future__ import annotations

import re

from stagehand_py.browser._cdp import CDPSession, PageTargets

_GROUP = "test-oracle"
_WALK_JS = """function (steps) {
  let cur = this;
  for (const step of steps) {
    let m, found = null, k = 0;
    if ((m = /^text\\(\\)\\[normalize-space\\(\\)\\]\\[(\\d+)\\]$/.exec(step))) {
      for (let c = cur.firstChild; c; c = c.nextSibling)
        if (c.nodeType === 3 && /[^ \\t\\r\\n]/.test(c.nodeValue) && ++k === +m[1]) { found = c; break; }
    } else if ((m = /^\\*\\[local-name\\(\\)='([^']+)'\\]\\[(\\d+)\\]$/.exec(step)) ||
               (m = /^\\*\\[local-name\\(\\)="([^"]+)"\\]\\[(\\d+)\\]$/.exec(step)) ||
               (m = /^([^\\[\\]/*]+)\\[(\\d+)\\]$/.exec(step))) {
      for (let c = cur.firstElementChild; c; c = c.nextElementSibling)
        if (c.localName === m[1] && ++k === +m[2]) { found = c; break; }
    } else { throw new Error('not a canonical step: ' + step); }
    if (!found) return null;
    cur = found;
  }
  return cur;
}"""
_COUNT_JS = """(xp) => document.evaluate(xp, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null)"""


def split_hops(xpath: str) -> list[tuple[str, list[str]]]:
    """``/a[1]/b[1]//c[1]/iframe[1]/html[1]`` -> [("doc", [a,b]), ("shadow", [c, iframe]), ("frame", [html])]."""
    assert xpath.startswith("/"), xpath
    segments: list[tuple[str, list[str]]] = [("doc", [])]
    for token in xpath[1:].split("/"):
        if token == "":
            segments.append(("shadow", []))
            continue
        _kind, steps = segments[-1]
        if steps and re.fullmatch(r"i?frame\[\d+\]", steps[-1]):
            segments.append(("frame", [token]))
            continue
        steps.append(token)
    return segments


async def _object(session: CDPSession, backend_id: int) -> str:
    return (await session.send("DOM.resolveNode", {"backendNodeId": backend_id, "objectGroup": _GROUP}))["object"]["objectId"]


async def resolve_backend_id(targets: PageTargets, xpath: str) -> tuple[int | None, str]:
    """The backend id the XPath leads to (None when it leads nowhere), and a note on the way."""
    session = targets.main
    root = (await session.send("DOM.getDocument", {"depth": 0}))["root"]
    container = await _object(session, root["backendNodeId"])
    for kind, steps in split_hops(xpath):
        if kind == "shadow":
            host = (await session.send("DOM.describeNode", {"objectId": container, "depth": 1, "pierce": True}))["node"]
            shadows = [s for s in host.get("shadowRoots", ()) if s.get("shadowRootType") != "user-agent"]
            if not shadows:
                return None, "no shadow root on host"
            container = await _object(session, shadows[0]["backendNodeId"])
        elif kind == "frame":
            owner = (await session.send("DOM.describeNode", {"objectId": container, "depth": 1, "pierce": True}))["node"]
            if "contentDocument" in owner:
                container = await _object(session, owner["contentDocument"]["backendNodeId"])
            else:
                session = (await targets.oopif_sessions())[owner["frameId"]]
                doc = (await session.send("DOM.getDocument", {"depth": 0}))["root"]
                container = await _object(session, doc["backendNodeId"])
        reply = await session.send(
            "Runtime.callFunctionOn",
            {"functionDeclaration": _WALK_JS, "objectId": container, "arguments": [{"value": steps}], "objectGroup": _GROUP},
        )
        if "exceptionDetails" in reply:
            return None, str(reply["exceptionDetails"])
        if reply["result"].get("subtype") == "null":
            return None, f"steps {steps} matched nothing"
        container = reply["result"]["objectId"]
    node = (await session.send("DOM.describeNode", {"objectId": container}))["node"]
    return node["backendNodeId"], ""


async def standard_xpath_matches(targets: PageTargets, xpath: str) -> list[int]:
    """Backend ids ``document.evaluate`` finds for a hop-free XPath in the main frame."""
    session = targets.main
    import json

    reply = await session.send("Runtime.evaluate", {"expression": f"({_COUNT_JS})({json.dumps(xpath)})", "objectGroup": _GROUP})
    result = reply["result"]
    length = (await session.send("Runtime.callFunctionOn", {"functionDeclaration": "function(){return this.snapshotLength}", "objectId": result["objectId"], "returnByValue": True}))["result"]["value"]
    ids = []
    for i in range(length):
        item = await session.send("Runtime.callFunctionOn", {"functionDeclaration": f"function(){{return this.snapshotItem({i})}}", "objectId": result["objectId"], "objectGroup": _GROUP})
        ids.append((await session.send("DOM.describeNode", {"objectId": item["result"]["objectId"]}))["node"]["backendNodeId"])
    return ids


async def check_xpath_map(targets: PageTargets, xpath_map: dict[str, str], backend_ids: dict[str, int | None]) -> list[str]:
    """Every violation of the contract, as readable lines (empty when all hold).

    ``backend_ids`` gives Chrome's backend node id of each element id (from the snapshot's own
    store, :func:`element_backend_id`); the XPath is walked independently and must reach it."""
    failures: list[str] = []
    for element_id, xpath in xpath_map.items():
        expected = backend_ids.get(element_id)
        if expected is None:
            failures.append(f"{element_id}: the snapshot's store does not know this id")
            continue
        found, note = await resolve_backend_id(targets, xpath)
        if found != expected:
            failures.append(f"{element_id}: {xpath} -> {found} ({note})")
            continue
        if len(split_hops(xpath)) == 1:
            matches = await standard_xpath_matches(targets, xpath)
            if matches != [expected]:
                failures.append(f"{element_id}: document.evaluate({xpath!r}) found {matches}")
    await targets.main.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})
    return failures
