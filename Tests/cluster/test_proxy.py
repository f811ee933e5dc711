"""HAProxy in front of three nodes: sessions spread by leastconn, and a node draining on SIGTERM
leaves the proxy's rotation (its /healthz answers 503), then closes its sessions with 1001; their
pages reconnect through the proxy to another node and see exactly what a fresh session sees."""

import signal
import sys
import time
from pathlib import Path

from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import http_get, metric, proxy_server_states  # noqa: E402
from viewer import Watcher  # noqa: E402

WORLD = [-180, -85, 180, 85]


def wait_until(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not within {timeout_s} s"
        time.sleep(0.05)


def test_leastconn_spreads_sessions_over_the_three_nodes(shared_cluster):
    proxy = shared_cluster.proxy
    wait_until(lambda: set(proxy_server_states(proxy.stats_port).values()) == {"UP"}, 10, "every node UP")
    viewers = [Watcher(proxy.ws_url) for _ in range(6)]
    try:
        counts = [metric(n.port, "pinwheel_sessions") for n in shared_cluster.nodes]
        assert counts == [2, 2, 2], counts
    finally:
        for v in viewers:
            v.__exit__(None, None, None)


def test_a_draining_node_leaves_the_proxy_then_its_pages_reconnect_to_another_node(cluster):
    proxy = cluster.proxy
    wait_until(lambda: set(proxy_server_states(proxy.stats_port).values()) == {"UP"}, 10, "every node UP")
    viewers = [Watcher(proxy.ws_url) for _ in range(3)]
    for v in viewers:
        v.watch(WORLD, 2)
    node = cluster.nodes[0]
    assert metric(node.port, "pinwheel_sessions") == 1
    on_node = None
    before = time.monotonic()
    node.process.send_signal(signal.SIGTERM)
    # Draining: /healthz says so at once and the proxy takes the node out; open sessions stay.
    wait_until(lambda: http_get(node.port, "/healthz")[0] == 503, 2, "/healthz 503")
    wait_until(lambda: proxy_server_states(proxy.stats_port)["node1"].startswith("DOWN"), 3, "node1 DOWN")
    assert node.process.poll() is None
    # Then the node closes its sessions with 1001 ("going away").
    for v in viewers:
        try:
            v.ws.recv(timeout=0.2)
        except TimeoutError:
            continue
        except ConnectionClosed as closed:
            on_node = v
            assert closed.rcvd is not None and closed.rcvd.code == 1001, closed
    if on_node is None:
        for v in viewers:
            try:
                v.ws.recv(timeout=5)
            except TimeoutError:
                continue
            except ConnectionClosed as closed:
                on_node = v
                assert closed.rcvd is not None and closed.rcvd.code == 1001, closed
                break
    assert on_node is not None, "no session was closed by the draining node"
    assert time.monotonic() - before >= 1.5, "sessions closed before the proxy could take the node out"
    node.process.wait(10)
    # The page reconnects through the proxy, lands on a live node and ends as a fresh session does.
    with Watcher(proxy.ws_url) as again, Watcher(proxy.ws_url) as fresh:
        again.watch(WORLD, 2)
        fresh.watch(WORLD, 2)
        assert again.features == on_node.features == fresh.features
    for v in viewers:
        v.__exit__(None, None, None)
