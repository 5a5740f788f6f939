"""Downloads, uploads and tabs, on a wrapped page and on a launched browser.

- a click that downloads saves the file in the downloads folder and reports path, suggested
  name, size and SHA-256 in the ActResult;
- an upload takes its path from a ``%file%`` variable, which no prompt, error or log shows;
- tabs the page opens (``target=_blank``, ``window.open``) are tracked and followed; switching
  and closing pick the tab driven next.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import threading
from pathlib import Path

import pytest
import pytest_asyncio
from _server import Request, Response
from operations._ops import element, find_id

from stagehand_py import Action, InvalidArgumentError, PageClosedError, Stagehand
from stagehand_py.testing import FunctionLLM, capture_requests

REPORT = b"id,total\n1,42.00\n2,17.50\n"

DOWNLOAD_PAGE = """<h1>Reports</h1>
<a id=export href="/files/report">Export CSV</a>
<a id=named href="/files/plain" download="named by link.txt">Plain text</a>
<a id=long href="/files/long">Annual summary</a>"""

#: A name as long as some sites propose (304 characters made a save fail with "File name too long").
LONG_NAME = ("Annual revenue summary by region, product line and quarter " * 6)[:300] + ".pdf"
SUMMARY = b"%PDF-1.4 a summary\n"

TABS_PAGE = """<h1>Start</h1>
<a id=blank href="/tabs/second" target="_blank">Open help</a>
<button id=popup onclick="window.open('/tabs/third', 'w', 'popup')">Open popup</button>"""

UPLOAD_PAGE = """<h1>Upload</h1>
<label>Attachment <input type=file id=file></label>
<pre id=out></pre>
<script>
document.getElementById('file').addEventListener('change', async e => {
  const f = e.target.files[0];
  document.getElementById('out').textContent = f.name + ':' + (await f.text());
});
</script>"""


def _routes(server):
    def report(request: Request) -> Response:
        return Response(200, REPORT, "text/csv", {"Content-Disposition": 'attachment; filename="../../q3 report.csv"'})

    return [
        server.route("/downloads", lambda r: Response.html(DOWNLOAD_PAGE)),
        server.route("/files/report", report),
        server.route("/files/plain", lambda r: Response(200, b"plain", "application/octet-stream")),
        server.route("/files/long", lambda r: Response(200, SUMMARY, "application/pdf",
                                                       {"Content-Disposition": f'attachment; filename="{LONG_NAME}"'})),
        server.route("/tabs/start", lambda r: Response.html(TABS_PAGE)),
        server.route("/tabs/second", lambda r: Response.html("<h1>Help centre</h1>")),
        server.route("/tabs/third", lambda r: Response.html("<h1>Popup window</h1>")),
        server.route("/upload", lambda r: Response.html(UPLOAD_PAGE)),
    ]


@pytest.fixture
def routes(server):
    installed = _routes(server)
    yield server
    for route in installed:
        route.remove()


@pytest_asyncio.fixture(params=["wrapped", "launched"])
async def make(request, context, pw):
    """Builds the Stagehand under test: on the test's own page, or on a browser it launches (with
    the session's Playwright driver: not a Node process per test)."""
    made: list[Stagehand] = []

    async def build(**options) -> Stagehand:
        if request.param == "wrapped":
            sh = Stagehand(await context.new_page(), **options)
        else:
            sh = await Stagehand.launch(args=["--disable-quic"], _playwright=pw, **options)
        made.append(sh)
        return sh

    yield build
    for sh in made:
        await sh.close()


def _click(selector: str) -> Action:
    return Action(selector=selector, method="click")


# --- downloads -------------------------------------------------------------------------------


async def test_a_download_is_saved_and_reported(make, routes, tmp_path) -> None:
    folder = tmp_path / "downloads"
    sh = await make(downloads_dir=folder)
    await sh.page.goto(routes.url("downloads"))
    result = await sh.act(_click("#export"))
    assert result.success and len(result.downloads) == 1
    saved = result.downloads[0]
    # The site's name (the browser already defused its "../"), inside the folder.
    assert saved.suggested_filename.endswith("q3 report.csv") and "/" not in saved.suggested_filename
    assert saved.path == str(folder / saved.suggested_filename)
    assert (folder / saved.suggested_filename).read_bytes() == REPORT
    assert saved.size == len(REPORT) and saved.sha256 == hashlib.sha256(REPORT).hexdigest()
    assert saved.url == routes.url("files/report")
    # The same file again gets its own name; an act with no download reports none.
    again = await sh.act(_click("#export"))
    assert again.downloads[0].path == str(folder / saved.suggested_filename.replace(".csv", " (1).csv"))
    named = await sh.act(_click("#named"))
    assert named.downloads[0].suggested_filename == "named by link.txt" and named.downloads[0].size == 5
    quiet = await sh.act(Action(selector="h1", method="hover"))
    assert quiet.downloads == []
    assert [d.path for d in sh.downloads] == [saved.path, again.downloads[0].path, named.downloads[0].path]


async def test_a_long_name_is_shortened_keeping_its_extension(make, routes, tmp_path) -> None:
    folder = tmp_path / "downloads"
    sh = await make(downloads_dir=folder)
    await sh.page.goto(routes.url("downloads"))
    first = await sh.act(_click("#long"))
    second = await sh.act(_click("#long"))
    (saved,), (again,) = first.downloads, second.downloads
    assert saved.suggested_filename == LONG_NAME and sh.failed_downloads == []
    name = Path(saved.path).name
    assert name.endswith(".pdf") and len(name.encode()) <= 200 and LONG_NAME.startswith(name[:-4])
    assert Path(again.path).name == name[:-4] + " (1).pdf"  # the same long name twice: two files
    for download in (saved, again):
        assert Path(download.path).read_bytes() == SUMMARY and download.sha256 == hashlib.sha256(SUMMARY).hexdigest()
    assert sorted(p.name for p in folder.iterdir()) == sorted([name, Path(again.path).name])


async def test_a_download_that_cannot_be_saved_is_reported_not_only_logged(make, routes, tmp_path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the downloads folder should be")
    sh = await make(downloads_dir=blocked)
    await sh.page.goto(routes.url("downloads"))
    result = await sh.act(_click("#export"))
    assert result.success and result.downloads == [] and sh.downloads == []
    (failure,) = sh.failed_downloads
    assert failure.url == routes.url("files/report") and failure.suggested_filename.endswith("q3 report.csv")
    assert failure.error.startswith("FileExistsError:")
    assert await sh.finish_downloads(5) == []  # nothing left saving; nothing more to report
    assert len(sh.failed_downloads) == 1


class StalledDownload:
    """A 127.0.0.1 server whose one file sends its headers and a first part, then waits until
    released: a download that is certainly still running (no clock decides it)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/stalled.bin"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n"
                               b'Content-Disposition: attachment; filename="stalled.bin"\r\n\r\n' + b"x" * 1000)
            self.release.wait(120)

    def close(self) -> None:
        self.release.set()
        self.thread.join(10)
        self.listener.close()


async def test_a_download_still_running_when_the_work_ends_is_stopped_and_reported(make, routes, tmp_path) -> None:
    stalled = StalledDownload()
    try:
        folder = tmp_path / "downloads"
        sh = await make(downloads_dir=folder)
        await sh.page.goto(routes.url("downloads"))
        await sh.page.evaluate("url => { const a = document.createElement('a'); a.href = url; a.id = 'stalled';"
                               " a.textContent = 'Big file'; document.body.append(a); }", stalled.url)
        async with sh.page.expect_download():  # the click's download has begun, and will not finish
            await sh.page.click("#stalled")
        assert await sh.finish_downloads(2) == []
        (failure,) = sh.failed_downloads
        assert (failure.suggested_filename, failure.url) == ("stalled.bin", stalled.url)
        assert failure.error == "still downloading after 2 s; stopped"
        assert not folder.exists() or list(folder.iterdir()) == []  # no half file left under its name
    finally:
        stalled.close()


async def test_downloads_go_to_a_temporary_folder_by_default(make, routes) -> None:
    sh = await make()
    await sh.page.goto(routes.url("downloads"))
    saved = (await sh.act(_click("#export"))).downloads[0]
    with open(saved.path, "rb") as handle:
        assert handle.read() == REPORT
    assert "stagehand-downloads-" in saved.path


# --- uploads ---------------------------------------------------------------------------------


async def test_upload_through_a_file_variable_never_shows_the_path(make, routes, tmp_path, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="stagehand_py")
    secret_dir = tmp_path / "private-folder-5b1e"
    secret_dir.mkdir()
    upload = secret_dir / "invoice-7731.txt"
    upload.write_text("invoice body")

    def model(request):
        return {"elements": [element(find_id(request, "button: Attachment"), "set_input_files", ["%file%"])],
                "opens_options": False}

    sh = await make(model=FunctionLLM(model))
    await sh.page.goto(routes.url("upload"))
    variables = {"file": {"value": str(upload), "description": "the invoice to attach"}}
    with capture_requests() as calls:
        result = await sh.act("attach the invoice", variables=variables)
    assert result.success, result.message
    assert await sh.page.inner_text("#out") == "invoice-7731.txt:invoice body"
    assert result.actions[0].arguments == ["%file%"]
    sent = json.dumps([m.model_dump(mode="json") for c in calls for m in c.request.messages])
    assert "%file%" in sent and "the invoice to attach" in sent
    assert str(secret_dir) not in sent and "private-folder-5b1e" not in sent
    assert "private-folder-5b1e" not in caplog.text and "private-folder-5b1e" not in repr(result)
    # A path that does not exist is a typed error naming the placeholder, not the path.
    missing = {"file": str(secret_dir / "gone.txt")}
    with pytest.raises(InvalidArgumentError) as caught:
        await sh.act(result.actions[0], variables=missing)
    assert "%file%" in str(caught.value) and "private-folder-5b1e" not in str(caught.value)


# --- tabs ------------------------------------------------------------------------------------


async def test_new_tabs_are_tracked_and_followed(make, routes) -> None:
    sh = await make()
    first = sh.page
    await first.goto(routes.url("tabs/start"))
    await sh.act(_click("#blank"))
    await sh.page.wait_for_load_state()
    # target=_blank: the new tab is driven now, as it would be for a person clicking.
    assert len(sh.pages) == 2 and sh.page is not first
    assert "heading: Help centre" in (await sh.snapshot()).tree
    await sh.switch_to_page(0)
    assert sh.page is first and "heading: Start" in (await sh.snapshot()).tree
    await sh.act(_click("#popup"))
    await sh.page.wait_for_load_state()
    assert len(sh.pages) == 3 and "heading: Popup window" in (await sh.snapshot()).tree
    # Closing the driven tab hands back to the tab driven before it.
    await sh.close_page()
    assert sh.page is first and len(sh.pages) == 2
    await sh.switch_to_page(sh.pages[1])
    assert "heading: Help centre" in (await sh.snapshot()).tree
    # A tab the page closes itself hands back too.
    await sh.page.close()
    assert sh.page is first and (await sh.snapshot()).tree.count("heading: Start") == 1
    with pytest.raises(InvalidArgumentError, match="there is no tab 5"):
        await sh.switch_to_page(5)
    with pytest.raises(InvalidArgumentError, match="last tab"):
        await sh.close_page()


async def test_follow_new_tabs_off_keeps_the_driven_tab(make, routes) -> None:
    sh = await make(follow_new_tabs=False)
    first = sh.page
    await first.goto(routes.url("tabs/start"))
    await sh.act(_click("#blank"))
    await sh.pages[-1].wait_for_load_state()
    assert len(sh.pages) == 2 and sh.page is first  # tracked, not followed
    opened = await sh.new_page(routes.url("tabs/third"))
    assert sh.page is opened and "heading: Popup window" in (await sh.snapshot()).tree


async def test_a_closed_last_tab_is_a_typed_error(make, routes) -> None:
    sh = await make()
    await sh.page.goto(routes.url("tabs/start"))
    await sh.page.close()
    with pytest.raises(PageClosedError):
        await sh.snapshot()


async def test_a_closed_stagehand_leaves_the_users_page_alone(routes, context, tmp_path) -> None:
    page = await context.new_page()
    sh = Stagehand(page, downloads_dir=tmp_path / "downloads")
    await page.goto(routes.url("downloads"))
    await sh.close()
    async with page.expect_download() as info:
        await page.click("#export")
    await (await info.value).path()  # the user's own download finishes
    await asyncio.sleep(0.2)
    assert sh.downloads == [] and not (tmp_path / "downloads").exists()
    assert not page.is_closed()
