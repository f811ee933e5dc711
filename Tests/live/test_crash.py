"""kill -9 during ingest, several times, at random moments: after each restart every acknowledged
change is there, none twice, and the server starts."""

import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN, grid_point, patch_box  # noqa: E402
from ingest import post_changes  # noqa: E402
from viewer import Watcher  # noqa: E402

BOX = patch_box(0.012)
ZOOM = 17


def position(k):
    """Point k's place: a grid 0.0001 degrees (11 m) apart in BOX."""
    return grid_point(k, columns=100, spacing=0.0001, margin=0.0005)


def produce(server, acked, stop, start):
    """Posts batches of new points p-<k> until the server dies or `stop` is set; `acked` gets the
    keys of every answered request."""
    k = start
    while not stop.is_set() and k < start + 1000:
        batch = [{"op": "upsert", "id": f"p-{j}", "lat": position(j)[0], "lon": position(j)[1]}
                 for j in range(k, k + 20)]
        try:
            status, answer, _ = post_changes(server.port, TOKEN, batch, timeout_s=5)
        except OSError:
            return k
        if status != 200:
            return k
        assert answer["accepted"] == 20
        acked.update(c["id"] for c in batch)
        k += 20
    return k


def test_kill_9_during_ingest_loses_no_acknowledged_change(live_server):
    rng = random.Random(7)
    acked = set()
    next_key = 0
    for _round in range(4):
        stop = threading.Event()
        result = {}
        producer = threading.Thread(target=lambda: result.setdefault("k", produce(live_server, acked, stop, next_key)))
        producer.start()
        time.sleep(rng.uniform(0.3, 1.2))
        live_server.kill()
        stop.set()
        producer.join(10)
        next_key = result.get("k", next_key) + 20
        live_server.restart()
        with Watcher(live_server.ws_url, timeout_s=20) as viewer:
            viewer.watch(BOX, ZOOM, width=4096, height=4096)
            shown = [f["key"] for f in viewer.features.values() if "key" in f]
            assert len(shown) == len(set(shown)), "a point appears twice"
            missing = acked - set(shown)
            assert not missing, f"{len(missing)} acknowledged points lost after kill -9, e.g. {sorted(missing)[:5]}"
    assert len(acked) >= 100, "the producer got too few answers for the test to mean anything"
