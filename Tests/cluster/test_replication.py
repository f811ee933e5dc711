"""Any node takes changes and every node's viewers see them; after a burst of random changes posted
to all three nodes at once, the three serve identical features for the same viewports."""

import random
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import wait_for_version  # noqa: E402
from ingest import post_changes  # noqa: E402
from live_patch import TOKEN, patch_box  # noqa: E402
from pinwheel_process import pinwheel_binary  # noqa: E402
from viewer import Watcher  # noqa: E402

BOX = patch_box(0.05)
ZOOM = 15
# Viewports compared across nodes: the whole world, a country-sized view, and the patch changes land in.
VIEWPORTS = [([-180, -85, 180, 85], 1), ([-125, -45, -115, -35], 6), (BOX, 12), (BOX, ZOOM)]


def test_a_change_posted_to_node_a_reaches_a_viewer_on_node_c(shared_cluster):
    a, _, c = shared_cluster.nodes
    with Watcher(c.ws_url) as viewer:
        viewer.watch(BOX, ZOOM)
        posted = time.monotonic()
        status, answer, _ = post_changes(a.port, TOKEN, [
            {"op": "upsert", "id": "from-a", "lat": BOX[1] + 0.01, "lon": BOX[0] + 0.01, "properties": {"via": "a"}}])
        assert status == 200 and answer["accepted"] == 1, answer
        acknowledged = time.monotonic()
        viewer.wait_for(lambda w: "from-a" in w.keyed())
        arrived = time.monotonic()
        feature = viewer.keyed()["from-a"]
        assert feature["properties"]["via"] == "a"
        assert viewer.batches[-1]["version"] >= answer["version"]
        # Staleness: the producer's acknowledgement to arrival at a viewer on another node.
        assert arrived - acknowledged < 5, f"{arrived - acknowledged:.2f} s from node A's answer to node C's viewer"
        assert acknowledged - posted < 5


def random_changes(rng, count, keys):
    """Upserts (new and moved points, some with properties) and deletes, inside BOX and over the world."""
    changes = []
    for _ in range(count):
        key = f"r-{rng.randrange(keys)}"
        r = rng.random()
        if r < 0.15:
            changes.append({"op": "delete", "id": key})
        elif r < 0.2:
            # A synthetic point (numbered 0..1999) moved or deleted.
            n = rng.randrange(2000)
            changes.append({"op": "delete", "id": n} if r < 0.17 else
                           {"op": "upsert", "id": n, "lat": rng.uniform(-60, 60), "lon": rng.uniform(-170, 170)})
        else:
            inside = rng.random() < 0.8
            lat = rng.uniform(BOX[1], BOX[3]) if inside else rng.uniform(-80, 80)
            lon = rng.uniform(BOX[0], BOX[2]) if inside else rng.uniform(-179, 179)
            props = {"kind": rng.choice(["bus", "tram", "ferry"])} if rng.random() < 0.5 else {}
            changes.append({"op": "upsert", "id": key, "lat": lat, "lon": lon, "properties": props})
    return changes


def features_seen(node, bbox, zoom):
    with Watcher(node.ws_url, timeout_s=30) as viewer:
        viewer.watch(bbox, zoom)
        return viewer.features


def test_three_nodes_serve_identical_features_after_10000_random_changes_posted_to_all_of_them(shared_cluster):
    nodes = shared_cluster.nodes
    answers = [[] for _ in nodes]
    errors = []

    def produce(k):
        rng = random.Random(100 + k)
        try:
            for _ in range(34):
                batch = random_changes(rng, 100, keys=3000)
                status, answer, _ = post_changes(nodes[k].port, TOKEN, batch)
                assert status == 200 and answer["accepted"] == len(batch), answer
                answers[k].append(answer["version"])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    producers = [threading.Thread(target=produce, args=(k,)) for k in range(len(nodes))]
    for p in producers:
        p.start()
    for p in producers:
        p.join(120)
    assert not errors, errors
    total = sum(len(a) for a in answers) * 100
    assert total >= 10_000
    # Every node's answers grow, and all answers together are distinct records of one order.
    for a in answers:
        assert a == sorted(a) and len(set(a)) == len(a)
    final = max(max(a) for a in answers)
    assert len({v for a in answers for v in a}) == sum(len(a) for a in answers)
    assert final >= total
    versions = wait_for_version([n.port for n in nodes], final)
    assert len(set(versions)) == 1, versions
    for bbox, zoom in VIEWPORTS:
        seen = [features_seen(n, bbox, zoom) for n in nodes]
        assert seen[0], f"no features at {bbox} zoom {zoom}"
        for k in (1, 2):
            assert seen[k] == seen[0], f"node {k} differs from node 0 at {bbox} zoom {zoom}"


def test_a_late_retry_with_an_older_observation_time_reverts_nothing_on_any_node(shared_cluster):
    a, b, c = shared_cluster.nodes
    t0 = 1_765_000_000_000
    # A corner of its own, away from BOX, which the other tests fill: every point there a marker of its own.
    corner = [-121.0, -41.0, -120.97, -40.97]
    old = {"op": "upsert", "id": "obs-1", "lat": -40.99, "lon": -120.99, "t": t0}
    new = {"op": "upsert", "id": "obs-1", "lat": -40.98, "lon": -120.98, "t": t0 + 500}
    status, first, _ = post_changes(a.port, TOKEN, [old], headers={"Idempotency-Key": "obs/1"})
    assert status == 200 and "stale" not in first, first
    status, newer, _ = post_changes(b.port, TOKEN, [new], headers={"Idempotency-Key": "obs/2"})
    assert status == 200 and "stale" not in newer, newer
    # The first request again, late and under another key (its own has been forgotten, say), on a
    # third node: stored, and dropped by every node as older than what obs-1 holds.
    status, late, _ = post_changes(c.port, TOKEN, [old], headers={"Idempotency-Key": "obs/1-again"})
    assert status == 200 and late["stale"] == 1 and "duplicate" not in late, late
    # A change after it, so that every node's view is past the late one.
    status, after, _ = post_changes(a.port, TOKEN, [dict(new, id="obs-2", lat=-40.975, t=t0)])
    assert status == 200, after
    for node in shared_cluster.nodes:
        with Watcher(node.ws_url, timeout_s=30) as viewer:
            viewer.watch(corner, 16)
            viewer.wait_for(lambda w: "obs-2" in w.keyed(), timeout_s=30)
            shown = viewer.keyed()["obs-1"]
            assert abs(shown["lat"] - new["lat"]) < 1e-9 and abs(shown["lon"] - new["lon"]) < 1e-9, \
                f"node {node.port} reverted obs-1: {shown}"


def test_a_node_started_from_other_data_than_the_cluster_is_refused(shared_cluster, tmp_path):
    args = [pinwheel_binary(), "serve", "--port", "0", "--synthetic", "1999", "--data-dir", str(tmp_path / "odd"),
            "--log", "nats://" + shared_cluster.nats.urls]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "start every node from the same --data" in result.stderr, result.stderr
