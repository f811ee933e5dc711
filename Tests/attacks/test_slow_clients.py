"""Slowloris on the HTTP side: hundreds of sockets that send a request header a line every few
seconds, and hundreds that send nothing. A viewer must still connect and be served, /healthz must
answer, and the server must drop the slow sockets within a bounded time (lws's header timeout)."""

import multiprocessing
import select
import socket
import time
import urllib.request

from viewer import Viewer, assert_not_starved, percentile

SLOW = 200
SILENT = 100
# lws drops a connection that has not completed its request headers after `timeout_secs_ah_idle`
# (10 s by default), however it trickles them.
DROPPED_WITHIN_S = 13
LONDON = [-0.5, 51.3, 0.3, 51.7]


def slowloris(port, opened, outcome):
    """Opens the sockets, trickles headers every 2 s, and records when the server closes each."""
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(SLOW)]
    for s in slow:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(SILENT)]
    opened.set()
    start = time.monotonic()
    closed = {}
    last_drip = 0.0
    everything = slow + silent
    while time.monotonic() - start < DROPPED_WITHIN_S + 5 and len(closed) < len(everything):
        if time.monotonic() - last_drip > 2:
            last_drip = time.monotonic()
            for s in slow:
                if s not in closed:
                    try:
                        s.sendall(b"X-Slow: yes\r\n")
                    except OSError:
                        closed[s] = time.monotonic() - start
        ready, _, _ = select.select([s for s in everything if s not in closed], [], [], 0.2)
        for s in ready:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed[s] = time.monotonic() - start
    outcome["closed"] = len(closed)
    outcome["latest_close_s"] = max(closed.values(), default=None)




def test_slow_and_silent_sockets_neither_block_viewers_nor_stay_forever(server):
    opened, outcome = multiprocessing.Event(), multiprocessing.Manager().dict()
    attack = multiprocessing.Process(target=slowloris, args=(server.port, opened, outcome))
    attack.start()
    assert opened.wait(20)
    started = time.monotonic()
    with Viewer(server.ws_url) as viewer:
        connect_s = time.monotonic() - started
        latencies = [viewer.viewport_done_seconds(LONDON, 9 + k % 2) for k in range(50)]
    health = urllib.request.urlopen(f"{server.url}/healthz", timeout=5).read().strip()
    attack.join(60)
    print(f"viewer connected in {connect_s * 1000:.0f} ms, p99 {percentile(latencies, 99) * 1000:.1f} ms; "
          f"slow sockets closed: {outcome['closed']} of {SLOW + SILENT}, the last after {outcome['latest_close_s']} s")
    assert connect_s < 1
    assert_not_starved(latencies, at_least=50)
    assert health == b"ok"
    assert outcome["closed"] == SLOW + SILENT
    assert outcome["latest_close_s"] < DROPPED_WITHIN_S
    assert server.process.poll() is None
