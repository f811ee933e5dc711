"""Fixtures and helpers for the browser tests: the real `pinwheel serve` binary on a free port, headless Chromium
(Debian's, driven by Playwright, never downloaded), and a reference WebSocket client.
"""

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from ingest import post_changes  # noqa: E402
from pinwheel_process import ARTIFACTS, ROOT, WEB, PinwheelServer, pinwheel_binary, running_server  # noqa: E402,F401

CHROMIUM = "/usr/bin/chromium"
PROTOCOL = "pinwheel.v1"
BINARY_PROTOCOL = "pinwheel.v1+bin"
VIEWPORT_SIZE = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def server():
    """The real server on the embedded demo dataset, one per test module."""
    with running_server() as s:
        yield s


# A small live server (100 synthetic points, a data folder, producers with INGEST_TOKEN), one per module.
INGEST_TOKEN = "browser-token-0123456789abcdef"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    folder = tmp_path_factory.mktemp("live")
    (folder / "token").write_text(INGEST_TOKEN)
    server = PinwheelServer(pinwheel_binary(), ["--synthetic", "100", "--data-dir", str(folder / "data"),
                                                "--ingest-token-file", str(folder / "token")]).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def post(server, *changes):
    """Posts changes to the live server, which must accept them all."""
    status, answer, _ = post_changes(server.port, INGEST_TOKEN, list(changes))
    assert status == 200 and answer["accepted"] == len(changes), answer


@pytest.fixture(scope="session")
def browser():
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class ConsoleLog:
    """Console errors and uncaught exceptions seen by one page."""

    def __init__(self, page):
        self.errors = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT_SIZE)
    p = context.new_page()
    p.console_log = ConsoleLog(p)
    yield p
    context.close()


# ---- page helpers --------------------------------------------------------------------------------


def open_map(page, server, lat, lon, zoom, algorithm=None, encoding=None):
    """Loads the page at a view (with `algorithm`, that clustering algorithm; with `encoding`, 'binary'
    or 'json', that encoding of the stream) and waits until settled."""
    page.goto(f"{server.url}/?lat={lat}&lon={lon}&zoom={zoom}" + (f"&algorithm={algorithm}" if algorithm else "")
              + (f"&encoding={encoding}" if encoding else ""))
    wait_settled(page)
    if algorithm:
        assert page.evaluate("() => pinwheel.state.hello.algorithm") == algorithm
    if encoding:
        assert page.evaluate("() => pinwheel.state.encoding") == encoding


def wait_settled(page, timeout_ms=20000):
    """Waits until the last viewport the page sent has been served and applied, and animations ended."""
    # Function strings, not expressions: the server's CSP (script-src 'self') forbids eval.
    page.wait_for_function("() => window.pinwheel && window.pinwheel.settled() && !window.pinwheel.animating()",
                           timeout=timeout_ms)


def markers(page):
    """The page's markers as {id: count} (ids as Python ints)."""
    pairs = page.evaluate("() => Array.from(pinwheel.state.markers.values(), e => [e.feature.id, e.feature.count])")
    return {int(i): c for i, c in pairs}


def set_view(page, lat, lon, zoom):
    """Moves the map without animation and waits until the stream has settled on the new view."""
    seq = page.evaluate("() => pinwheel.state.seq")
    page.evaluate(f"() => {{ pinwheel.map.setView([{lat}, {lon}], {zoom}, {{animate: false}}); }}")
    page.wait_for_function(f"() => pinwheel.state.seq > {seq}")
    wait_settled(page)


def screenshot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    return path


# ---- reference client ----------------------------------------------------------------------------


class ReferenceClient:
    """A plain WebSocket client that speaks pinwheel.v1 as the page does, to learn what the server
    computes for a viewport independently of the page."""

    def __init__(self, ws, timeout_s):
        self.ws = ws
        self.timeout_s = timeout_s
        self.hello = self.receive("hello")
        self.features = {}

    def receive(self, wanted=None):
        while True:
            msg = json.loads(self.ws.recv(timeout=self.timeout_s))
            if wanted is None or msg["type"] == wanted:
                return msg
            if msg["type"] == "error":
                raise AssertionError(f"server error: {msg}")

    def send(self, msg):
        self.ws.send(json.dumps(msg))

    def viewport(self, viewport):
        """Sends a viewport and applies batches until its `done`; returns {id: feature}."""
        self.send({"type": "viewport", **viewport})
        while True:
            b = self.receive("batch")
            for i in b.get("remove", []):
                self.features.pop(i, None)
            for f in b.get("update", []) + b.get("add", []):
                self.features[f["id"]] = f
            self.send({"type": "ack", "batch": b["batch"], "applied": 0, "ms": 0.1})
            if b["done"] and b["seq"] == viewport["seq"]:
                return dict(self.features)


@contextmanager
def reference_client(server, timeout_s=20):
    with connect(server.ws_url, subprotocols=[PROTOCOL], max_size=None, open_timeout=timeout_s) as ws:
        yield ReferenceClient(ws, timeout_s)


def server_features(server, viewport, algorithm=None):
    """What the server computes for exactly this viewport, from a fresh session: {id: count}."""
    with reference_client(server) as client:
        if algorithm and algorithm != client.hello["algorithm"]:
            client.send({"type": "settings", "algorithm": algorithm})
            assert client.receive("hello")["algorithm"] == algorithm
        return {i: f["count"] for i, f in client.viewport(viewport).items()}


def batch_header(frame, previous):
    """(seq, batch, done) of a `batch` frame: JSON text, or pinwheel.v1+bin bytes (type 1 and flags,
    `done` bit 2, then zigzag varints of seq and batch after `previous`, the connection's last binary
    batch's (seq, batch))."""
    if isinstance(frame, str):
        msg = json.loads(frame)
        return msg["seq"], msg["batch"], msg["done"]
    assert frame[0] & 3 == 1, f"not a binary batch: {frame[:8].hex()}"
    pos, deltas = 1, []
    for _ in range(2):
        value = shift = 0
        while True:
            b = frame[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        deltas.append(value // 2 if value % 2 == 0 else -(value + 1) // 2)
    return previous[0] + deltas[0], previous[1] + 1 + deltas[1], bool(frame[0] & 4)


def batch_frames(server, subprotocol, viewports, algorithm=None, pace=None, timeout_s=20):
    """The `batch` frames, as received (text or bytes), that a fresh session over `subprotocol` gets for
    each of `viewports` in turn, served to its `done`. With `pace` (markers per millisecond) every ack
    reports a cost that steers the server's pace there, so its batches grow to about `pace × 50 ms`
    markers."""
    with connect(server.ws_url, subprotocols=[subprotocol], max_size=None, open_timeout=timeout_s) as ws:
        assert ws.subprotocol == subprotocol
        hello = json.loads(ws.recv(timeout=timeout_s))
        assert hello["type"] == "hello" and hello["protocol"] == subprotocol, hello
        if algorithm and algorithm != hello["algorithm"]:
            ws.send(json.dumps({"type": "settings", "algorithm": algorithm}))
            assert json.loads(ws.recv(timeout=timeout_s))["algorithm"] == algorithm
        frames, header = [], (0, 0, False)
        for seq, viewport in enumerate(viewports, 1):
            ws.send(json.dumps({"type": "viewport", "seq": seq, **viewport}))
            while True:
                frame = ws.recv(timeout=timeout_s)
                if isinstance(frame, str) and json.loads(frame)["type"] != "batch":
                    raise AssertionError(f"unexpected message: {frame}")
                frames.append(frame)
                header = batch_header(frame, header)
                served, number, done = header
                # The server moves its pace towards 0.5 × applied / ms.
                ack = {"applied": 100, "ms": 50 / pace} if pace else {"applied": 0, "ms": 0.1}
                ws.send(json.dumps({"type": "ack", "batch": number, **ack}))
                if done and served == seq:
                    break
        return frames


def held_after_each_view(messages):
    """What a client holds after each `done` of these batch messages: a list of {id: feature}."""
    held, views = {}, []
    for m in messages:
        for i in m["remove"]:
            held.pop(i, None)
        for f in m["update"] + m["add"]:
            held[f["id"]] = f
        if m["done"]:
            views.append(dict(held))
    return views


def served_in_both_encodings(page, server, viewports, algorithm=None):
    """The batches a fresh session gets for `viewports` over pinwheel.v1+bin, decoded in `page` by
    web/pinwheel/binary.js, and over pinwheel.v1: (binary frames, their messages, JSON texts)."""
    frames = batch_frames(server, BINARY_PROTOCOL, viewports, algorithm)
    texts = batch_frames(server, PROTOCOL, viewports, algorithm)
    assert all(isinstance(f, bytes) for f in frames) and all(isinstance(t, str) for t in texts)
    decoded = page.evaluate("""async (frames) => {
        const { BinaryDecoder } = await import('/pinwheel/binary.js');
        const decoder = new BinaryDecoder();
        return frames.map((f) => decoder.decode(Uint8Array.from(f).buffer));
    }""", [list(f) for f in frames])
    return frames, decoded, texts


def random_drag(page, rng, shortest, longest):
    """A mouse drag from the middle of the page, `shortest` to `longest` pixels in a random direction,
    at mouse-move speed, as a person pans."""
    x, y = VIEWPORT_SIZE["width"] / 2, VIEWPORT_SIZE["height"] / 2
    dist = rng.uniform(shortest, longest)
    dx, dy = rng.uniform(-1, 1), rng.uniform(-1, 1)
    norm = max(1e-6, (dx * dx + dy * dy) ** 0.5)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / norm * dist, y + dy / norm * dist, steps=int(dist / 12))
    page.mouse.up()
