"""Between two full rebuilds the index shows the changes laid over the last build; once the changes
stop, a compaction leaves exactly what a fresh build of the same points shows (a restart of the same
data folder builds one)."""

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from ingest import post_changes  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402
from viewer import Watcher  # noqa: E402

# Each within what a 1600 x 1600-px map shows at its zoom.
VIEWS = [([-180, -85, 180, 85], 1), ([-30, 20, 40, 65], 4), ([0, 45, 10, 51], 7), ([2, 48, 3, 48.6], 10)]


def random_changes(count, seed):
    """Moves of the synthetic points (ids 0...1999), new named points and deletes, 90/5/5."""
    rng = random.Random(seed)
    changes = []
    for k in range(count):
        roll = rng.random()
        lat, lon = rng.uniform(30, 60), rng.uniform(-20, 30)
        if roll < 0.05:
            changes.append({"op": "delete", "id": rng.randrange(2000)})
        elif roll < 0.10:
            changes.append({"op": "upsert", "id": f"new-{k}", "lat": lat, "lon": lon})
        else:
            changes.append({"op": "upsert", "id": rng.randrange(2000), "lat": lat, "lon": lon})
    return changes


def views(server):
    """What a fresh session is shown in each view: id -> (count, lat, lon), centroids to 1e-7 degrees
    (a different summation order may change their last bits)."""
    shown = []
    for bbox, zoom in VIEWS:
        with Watcher(server.ws_url) as viewer:
            viewer.watch(bbox, zoom, width=1600, height=1600)
            shown.append({i: (f["count"], round(f["lat"], 7), round(f["lon"], 7)) for i, f in viewer.features.items()})
    return shown


def changed_then_restarted(live_args, compaction_interval):
    """The views of a server after 3,000 changes and a wait, and of the same data folder restarted."""
    server = PinwheelServer(pinwheel_binary(), [*live_args, "--compaction-interval", str(compaction_interval)])
    server.start()
    try:
        changes = random_changes(3000, seed=11)
        for start in range(0, len(changes), 500):
            status, answer, _ = post_changes(server.port, TOKEN, changes[start:start + 500])
            assert status == 200 and answer["accepted"] == 500, answer
        version = answer["version"]
        # Served once a refresh took the last change; compactions then run until the delta is empty.
        deadline = time.monotonic() + 30
        while metric(server.port, "pinwheel_data_version") < version:
            assert time.monotonic() < deadline, "the index never reached the last change's version"
            time.sleep(0.05)
        stable_since, rebuilds = time.monotonic(), metric(server.port, "pinwheel_index_rebuild_seconds_count")
        while time.monotonic() - stable_since < 2:
            time.sleep(0.2)
            now = metric(server.port, "pinwheel_index_rebuild_seconds_count")
            if now != rebuilds:
                stable_since, rebuilds = time.monotonic(), now
        live = views(server)
        server.restart()
        return live, views(server), rebuilds
    finally:
        server.stop()
        server.log.close()


def test_after_the_changes_stop_a_compaction_leaves_a_fresh_build(live_args):
    live, fresh, rebuilds = changed_then_restarted(live_args, compaction_interval=0.2)
    assert rebuilds >= 1
    for (bbox, zoom), a, b in zip(VIEWS, live, fresh):
        assert a == b, f"view {bbox} at zoom {zoom} differs from a fresh build"


def test_without_a_compaction_the_changes_are_laid_over_the_last_build(live_args):
    # The same changes, no compaction: every point is where it is now, but clusters are the old
    # build's with counts and centroids adjusted, which a fresh build does not reproduce.
    live, fresh, rebuilds = changed_then_restarted(live_args, compaction_interval=3600)
    assert rebuilds == 0
    for a, b in zip(live, fresh):
        assert sum(c for c, _, _ in a.values()) == sum(c for c, _, _ in b.values()), "every point shown once"
    assert live != fresh
