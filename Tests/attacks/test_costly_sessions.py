"""Sessions that only cost: a client pinging 1,000 times a second (lws answers pings without telling
the application, so the server counts them from the socket's byte count), a presence watcher that
never reads what it asked for, and sessions that send nothing but pings. Each is closed with a code
and a reason while a well-behaved viewer keeps its latency."""

import re
import socket
import threading
import time
import urllib.request

import pytest
from viewer import Viewer, assert_not_starved, percentile
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

LONDON = [-0.5, 51.3, 0.3, 51.7]
PROTOCOL = "pinwheel.v1"


def viewer_latencies(url, stop, out):
    """A well-behaved viewer's viewport -> done latencies until `stop` is set."""
    with Viewer(url) as viewer:
        while not stop.is_set():
            out.append(viewer.viewport_done_seconds(LONDON, 9 + len(out) % 2))


def closes(server, code):
    text = urllib.request.urlopen(f"{server.url}/metrics", timeout=5).read().decode()
    found = re.search(rf'pinwheel_closes_total\{{code="{code}"\}} (\d+)', text)
    return int(found.group(1)) if found else 0


def test_a_ping_flood_is_closed_with_1008(server):
    stop, latencies = threading.Event(), []
    watcher = threading.Thread(target=viewer_latencies, args=(server.ws_url, stop, latencies))
    watcher.start()
    closed, sent = None, 0
    with connect(server.ws_url, subprotocols=[PROTOCOL], open_timeout=10) as ws:
        started = time.monotonic()
        try:
            while time.monotonic() - started < 8:
                ws.ping()
                sent += 1
                time.sleep(0.001)
        except ConnectionClosed as error:
            closed = error.rcvd
        if closed is None:
            try:
                ws.recv(timeout=2)
            except ConnectionClosed as error:
                closed = error.rcvd
        took = time.monotonic() - started
    stop.set()
    watcher.join(30)
    print(f"{sent} pings in {took:.1f} s ({sent / took:.0f}/s), closed with {closed}; "
          f"viewer p99 {percentile(latencies, 99) * 1000:.1f} ms over {len(latencies)}")
    assert sent / took > 500, "the flood was not a flood"
    assert closed is not None and closed.code == 1008, closed
    assert "pings included" in closed.reason
    assert took < 9
    assert_not_starved(latencies)


@pytest.mark.server_args("--bots", "60")
def test_a_presence_watcher_that_never_reads_is_closed_with_1008(server):
    stop, latencies = threading.Event(), []
    watcher = threading.Thread(target=viewer_latencies, args=(server.ws_url, stop, latencies))
    watcher.start()
    before = closes(server, 1008)
    # A small receive buffer, so the kernel holds little of what the server sends; the client's
    # queue of one message stops it reading from the socket at all.
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    with connect(server.ws_url, sock=sock, subprotocols=[PROTOCOL], compression=None, max_queue=1,
                 ping_interval=None, open_timeout=10) as ws:
        ws.send('{"type":"settings","presence":true}')
        started = time.monotonic()
        deadline = started + 60
        while closes(server, 1008) == before and time.monotonic() < deadline:
            time.sleep(0.5)
        took = time.monotonic() - started
        stop.set()
        watcher.join(30)
        metrics = urllib.request.urlopen(f"{server.url}/metrics", timeout=5).read().decode()
        print("\n".join(line for line in metrics.splitlines() if "closes" in line or "queued" in line))
    print(f"non-reading presence watcher closed after {took:.1f} s; "
          f"viewer p99 {percentile(latencies, 99) * 1000:.1f} ms over {len(latencies)}")
    assert closes(server, 1008) == before + 1, "the watcher that never reads was not closed"
    # The stall timeout (20 s) after its buffers filled.
    assert took < 45
    assert_not_starved(latencies)


@pytest.mark.server_args("--idle-timeout", "3")
def test_sessions_sending_only_pings_are_closed_as_idle_and_active_ones_stay(server):
    closed = None
    with connect(server.ws_url, subprotocols=[PROTOCOL], open_timeout=10) as pinging, Viewer(server.ws_url) as active:
        started = time.monotonic()
        try:
            while time.monotonic() - started < 8:
                pinging.ping()
                # A viewport a second: application messages keep a session alive.
                active.viewport_done_seconds(LONDON, 9)
                time.sleep(0.5)
            pinging.recv(timeout=1)
        except ConnectionClosed as error:
            closed = error.rcvd
        took = time.monotonic() - started
        # The active viewer, past the idle timeout twice over, is still served.
        while time.monotonic() - started < 7:
            active.viewport_done_seconds(LONDON, 10)
        assert active.viewport_done_seconds(LONDON, 9) < 1
    print(f"ping-only session closed after {took:.1f} s with {closed}")
    assert closed is not None and closed.code == 1000, closed
    assert "no message for 3 s" in closed.reason
    assert 3 <= took < 6
