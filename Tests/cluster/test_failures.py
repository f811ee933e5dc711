"""Parts of the cluster fail while producers post: a Pinwheel node killed with -9, one NATS server
of three killed, a node down while 100,000 changes were made. Nothing acknowledged is lost, viewers
end with what a fresh session sees, and what was down catches up."""

import sys
import threading
import time
from pathlib import Path

from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster, http_get, wait_for_version  # noqa: E402
from ingest import post_changes  # noqa: E402
from live_patch import TOKEN, grid_point, patch_box  # noqa: E402
from viewer import Watcher  # noqa: E402

BOX = patch_box(0.012)
ZOOM = 17


def position(k):
    """Point k's place: a grid 0.0001 degrees (11 m) apart in BOX."""
    return grid_point(k, columns=100, spacing=0.0001, margin=0.0005)


class Producer(threading.Thread):
    """Posts batches of 20 new points p-<k> to `port` until stopped; keeps the keys of every batch
    answered 200 and counts the others (a dead node, a NATS election)."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.acked = set()
        self.acked_at = []
        self.failed = 0
        self.stop = threading.Event()
        self.version = 0

    def run(self):
        k = 0
        while not self.stop.is_set() and k < 9000:
            batch = [{"op": "upsert", "id": f"p-{j}", "lat": position(j)[0], "lon": position(j)[1]}
                     for j in range(k, k + 20)]
            k += 20
            try:
                status, answer, _ = post_changes(self.port, TOKEN, batch, timeout_s=10)
            except OSError:
                self.failed += 1
                time.sleep(0.05)
                continue
            if status != 200:
                self.failed += 1
                time.sleep(0.05)
                continue
            self.acked.update(c["id"] for c in batch)
            self.acked_at.append(time.monotonic())
            self.version = max(self.version, answer["version"])
            time.sleep(0.01)

    def finish(self):
        self.stop.set()
        self.join(30)
        assert not self.is_alive()


def keys_seen(ws_url):
    with Watcher(ws_url, timeout_s=30) as viewer:
        viewer.watch(BOX, ZOOM, width=4096, height=4096)
        shown = [f["key"] for f in viewer.features.values() if "key" in f]
        assert len(shown) == len(set(shown)), "a point appears twice"
        return set(shown), viewer.features


def test_kill_9_of_a_node_during_ingest_loses_nothing_acknowledged_and_the_node_catches_up(cluster):
    proxy = cluster.proxy
    victim = cluster.nodes[1]
    viewers = [Watcher(proxy.ws_url, timeout_s=20) for _ in range(3)]
    for v in viewers:
        v.watch(BOX, ZOOM, width=4096, height=4096)
    producer = Producer(proxy.port)
    producer.start()
    time.sleep(1.0)
    victim.kill()
    killed = time.monotonic()
    time.sleep(1.5)
    producer.finish()
    assert len(producer.acked) >= 100, "too few answers for the test to mean anything"
    assert any(t > killed for t in producer.acked_at), "no change was acknowledged after the kill"
    # Every page reconnects through the proxy (the one on the dead node finds its socket gone) and
    # ends with exactly what a fresh session sees.
    reconnected = 0
    for v in viewers:
        try:
            v.wait_for(lambda w: False, timeout_s=0.5)
        except ConnectionClosed:
            reconnected += 1
        except AssertionError:
            pass
        v.__exit__(None, None, None)
    assert reconnected >= 1, "no viewer was on the killed node"
    live = [n for n in cluster.nodes if n is not victim]
    wait_for_version([n.port for n in live], producer.version)
    fresh_keys, fresh = keys_seen(proxy.ws_url)
    missing = producer.acked - fresh_keys
    assert not missing, f"{len(missing)} acknowledged points lost, e.g. {sorted(missing)[:5]}"
    for _ in range(3):
        _, again = keys_seen(proxy.ws_url)
        assert again == fresh
    # The node restarts on its port and data folder and catches up with the others.
    victim.restart()
    wait_for_version([victim.port], producer.version, timeout_s=30)
    assert keys_seen(victim.ws_url)[1] == fresh


def test_killing_one_nats_server_of_three_keeps_ingest_and_streaming_going_and_it_rejoins(cluster):
    node = cluster.nodes[0]
    with Watcher(cluster.nodes[2].ws_url, timeout_s=20) as viewer:
        viewer.watch(BOX, ZOOM, width=4096, height=4096)
        producer = Producer(node.port)
        producer.start()
        time.sleep(1.0)
        cluster.nats.kill(0)
        killed = time.monotonic()
        # Ingest goes on: changes keep being acknowledged after the kill (once JetStream has moved
        # the stream's leader if it was on the dead server).
        deadline = time.monotonic() + 20
        while sum(t > killed + 0.5 for t in producer.acked_at) < 20:
            assert time.monotonic() < deadline, f"ingest stalled after a NATS server died ({producer.failed} failed)"
            time.sleep(0.1)
        producer.finish()
        # Streaming goes on: the viewer on another node gets everything acknowledged.
        viewer.wait_for(lambda w: producer.acked <= set(w.keyed()), timeout_s=20)
    # The server restarts, rejoins the cluster and catches up (its /healthz says JetStream is current).
    cluster.nats.start(0)
    cluster.nats.wait_healthy(timeout_s=60)
    status, _ = http_get(cluster.nats.monitor_ports[0], "/healthz")
    assert status == 200
    after = post_changes(node.port, TOKEN, [{"op": "upsert", "id": "after-rejoin", "lat": BOX[1] + 0.001,
                                             "lon": BOX[0] + 0.001}])
    assert after[0] == 200, after
    wait_for_version([n.port for n in cluster.nodes], after[1]["version"])


def test_a_node_down_while_100000_changes_were_made_catches_up_and_serves_the_same_state(tmp_path):
    cluster = Cluster(tmp_path, extra_args=["--snapshot-every", "30000"]).start()
    try:
        a, b, c = cluster.nodes
        c.stop()
        version = 0
        for r in range(100):
            batch = [{"op": "upsert", "id": f"m-{(r * 1000 + j) % 40000}", "lat": position(j)[0],
                      "lon": position(j)[1] + r * 0.00001, "properties": {"round": str(r)}}
                     for j in range(1000)]
            status, answer, _ = post_changes((a if r % 2 == 0 else b).port, TOKEN, batch, timeout_s=30)
            assert status == 200 and answer["accepted"] == 1000, answer
            version = answer["version"]
        assert version == 100_000
        started = time.monotonic()
        c.start()
        wait_for_version([c.port], version, timeout_s=120)
        caught_up = time.monotonic() - started
        print(f"caught up 100,000 changes in {caught_up:.1f} s")
        wait_for_version([a.port, b.port], version)
        reference = keys_seen(a.ws_url)[1]
        assert len(reference) > 0
        assert keys_seen(c.ws_url)[1] == reference
        assert keys_seen(b.ws_url)[1] == reference
        world = [[-180, -85, 180, 85], 2]
        with Watcher(a.ws_url) as wa, Watcher(c.ws_url) as wc:
            wa.watch(*world)
            wc.watch(*world)
            assert wa.features == wc.features
    finally:
        cluster.stop()
