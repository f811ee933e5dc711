"""An app on another origin than the Pinwheel server's: it imports the client modules from the server
(CORS for the origins `--allowed-origin` names) or hosts them itself, connects, hears why a server
refuses it, and notices a server that stopped answering (SIGSTOP) and reconnects once it answers."""

import functools
import http.server
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from browser_support import WEB, running_server, screenshot

PAGE = Path(__file__).resolve().parent / "other_origin"
LEAFLET = Path("/usr/share/javascript/leaflet")
# Chromium logs failed connections itself (the refused or frozen server's WebSocket, the 403 of
# /v1/admission): the network, not a JavaScript error.
NETWORK = re.compile(r"WebSocket connection to '.*' failed|Failed to load resource: .* status of 403")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def other_origin():
    """A plain Python HTTP server on 127.0.0.1 and a free port serving the app's page (app.html), and
    a copy of web/ with Debian's Leaflet: the demo page and the modules, self-hosted; yields its
    origin."""
    folder = Path(tempfile.mkdtemp(prefix="pinwheel-other-origin-")) / "site"
    try:
        shutil.copytree(WEB, folder)
        shutil.copytree(LEAFLET, folder / "vendor" / "leaflet")
        for name in ("app.html", "page.js"):
            shutil.copy(PAGE / name, folder / name)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()
            httpd.server_close()
    finally:
        shutil.rmtree(folder.parent)


@pytest.fixture(scope="module")
def origins():
    """(allowed, refused): two app origins; the Pinwheel server allows the first."""
    with other_origin() as allowed, other_origin() as refused:
        yield allowed, refused


def refusal(server, origins):
    """The reason the server gives for the refused origin: it names what it accepts."""
    allowed, refused = origins
    return f"origin {refused} is not allowed: this server accepts {server.url} and {allowed}"


@pytest.fixture(scope="module")
def server(origins):
    with running_server(["--allowed-origin", origins[0]]) as s:
        yield s


def open_app(page, origin, server, modules=None):
    page.goto(f"{origin}/app.html?server={server.url}" + (f"&modules={modules}" if modules else ""))
    page.wait_for_function("() => window.embedded && (window.embedded.ready || window.embedded.importError)")
    assert page.evaluate("() => window.embedded.importError") is None


def headers(url, origin):
    request = urllib.request.Request(url, headers={"Origin": origin})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return {k.lower(): v for k, v in answer.headers.items()}


def test_the_modules_carry_cors_headers_for_allowed_origins_only(server, origins):
    allowed, refused = origins
    for name in ("client.js", "leaflet.js", "binary.js"):
        h = headers(f"{server.url}/pinwheel/{name}", allowed)
        assert h.get("access-control-allow-origin") == allowed and h.get("vary") == "Origin", (name, h)
        h = headers(f"{server.url}/pinwheel/{name}", refused)
        assert "access-control-allow-origin" not in h and h.get("vary") == "Origin", (name, h)
    assert "access-control-allow-origin" not in headers(f"{server.url}/demo.js", allowed)


def test_a_page_of_an_allowed_origin_imports_the_modules_from_the_server_and_connects(page, server, origins):
    open_app(page, origins[0], server)
    page.wait_for_function("() => embedded.layer.settled() && embedded.layer.markers.size > 20", timeout=20000)
    assert page.evaluate("() => embedded.client.state.connection") == "open"
    assert page.console_log.errors == []


def test_the_server_answers_admission_for_any_origin(server, origins):
    allowed, refused = origins
    with urllib.request.urlopen(urllib.request.Request(f"{server.url}/v1/admission", headers={"Origin": allowed})) as a:
        assert a.status == 200 and a.read() == b'{"allowed":true}\n'
        assert a.headers["Access-Control-Allow-Origin"] == "*" and a.headers["Cache-Control"] == "no-store"
    try:
        urllib.request.urlopen(urllib.request.Request(f"{server.url}/v1/admission", headers={"Origin": refused}))
        raise AssertionError("a refused origin got 200")
    except urllib.error.HTTPError as e:
        assert e.code == 403
        assert e.headers["Access-Control-Allow-Origin"] == "*"
        assert json.loads(e.read()) == {"allowed": False, "reason": refusal(server, origins)}


def test_a_page_of_a_refused_origin_hears_why_and_stops_retrying(page, server, origins):
    refused = origins[1]
    # The modules self-hosted by the app: a refused origin cannot import them from the server.
    open_app(page, refused, server, modules=refused)
    page.wait_for_function("() => embedded.events.some(e => e[0] === 'refused')", timeout=20000)
    reason = page.evaluate("() => embedded.events.find(e => e[0] === 'refused')[1]")
    assert reason == refusal(server, origins)
    state = page.evaluate("() => ({connection: embedded.client.state.connection, connects: embedded.client.state.counters.connects})")
    assert state["connection"] == "refused"
    assert state["connects"] == 1, "no retry after the refusal"
    errors = [e for e in page.console_log.errors if not NETWORK.search(e)]
    assert errors == [f"console.error: pinwheel: the server refuses this page: {reason}"], errors


def test_a_server_that_stops_answering_is_noticed_and_the_page_reconnects_once_it_answers(page, origins):
    with running_server(["--allowed-origin", origins[0]]) as frozen:
        open_app(page, origins[0], frozen)
        page.wait_for_function("() => embedded.layer.settled() && embedded.layer.markers.size > 20", timeout=20000)
        # A still map keeps hearing from the server: its pings are answered.
        page.wait_for_function("() => embedded.client.state.counters.pongs >= 1", timeout=15000)
        connects = page.evaluate("() => embedded.client.state.counters.connects")
        os.kill(frozen.process.pid, signal.SIGSTOP)
        try:
            page.wait_for_function("() => embedded.events.some(e => e[0] === 'stale')", timeout=20000)
            assert page.evaluate("() => embedded.events.some(e => e[0] === 'status' && e[1] === 'reconnecting')")
        finally:
            os.kill(frozen.process.pid, signal.SIGCONT)
        page.wait_for_function(f"() => embedded.client.state.counters.connects > {connects} && "
                               "embedded.client.state.connection === 'open'", timeout=30000)
        page.wait_for_function("() => embedded.layer.settled()", timeout=20000)
        assert page.evaluate("() => embedded.layer.markers.size") > 20
        assert page.evaluate("() => embedded.client.state.counters.stale") >= 1
    assert [e for e in page.console_log.errors if not NETWORK.search(e)] == []


def test_the_demo_page_of_a_refused_origin_shows_the_reason_in_its_status(page, server, origins):
    refused = origins[1]
    page.goto(f"{refused}/?ws={server.ws_url}")
    page.wait_for_function("() => document.getElementById('hud-conn').textContent === 'refused'", timeout=20000)
    reason = refusal(server, origins)
    assert page.inner_text("#hud-refusal") == reason and page.is_visible("#hud-refusal")
    # Read by screen readers: the status and the alert are the page's live regions.
    snapshot = page.locator("#hud").aria_snapshot()
    # The snapshot quotes a text with a colon in it.
    assert '- status: refused' in snapshot and f'- alert: "{reason}"' in snapshot, snapshot
    screenshot(page, "demo-refused.png")
    errors = [e for e in page.console_log.errors if not NETWORK.search(e)]
    assert errors == [f"console.error: pinwheel: the server refuses this page: {reason}"], errors
