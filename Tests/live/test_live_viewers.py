"""Viewers see changes as they happen: a producer moves, adds and deletes points in a watched view,
and the viewer gets exactly those updates, adds and removes, ending with what a fresh session sees."""

import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import SOUTH, TOKEN, WEST, grid_point, patch_box  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402
from cluster import metric  # noqa: E402
from ingest import post_all_accepted  # noqa: E402
from viewer import Watcher  # noqa: E402

BOX = patch_box(0.01)
ZOOM = 17


def at(k):
    """Position k of a 10 x 10 grid 0.0008 degrees apart inside BOX."""
    return grid_point(k, columns=10, spacing=0.0008, margin=0.001)


def post(server, changes):
    return post_all_accepted(server.port, TOKEN, changes)


def test_moves_adds_and_deletes_reach_a_watching_viewer(live_server):
    for k in range(5):
        lat, lon = at(k)
        post(live_server, [{"op": "upsert", "id": f"bus-{k}", "lat": lat, "lon": lon}])
    with Watcher(live_server.ws_url) as viewer:
        viewer.watch(BOX, ZOOM)
        # Acknowledged means durable; the index shows the changes a rebuild later.
        viewer.wait_for(lambda w: set(w.keyed()) == {f"bus-{k}" for k in range(5)})
        ids = {key: f["id"] for key, f in viewer.keyed().items()}
        viewer.batches.clear()

        lat, lon = at(50)
        version = post(live_server, [
            {"op": "upsert", "id": "bus-0", "lat": lat, "lon": lon},
            {"op": "delete", "id": "bus-1"},
            {"op": "upsert", "id": "tram-9", "lat": at(77)[0], "lon": at(77)[1], "properties": {"line": "9"}},
        ])
        viewer.wait_for(lambda w: set(w.keyed()) == {"bus-0", "bus-2", "bus-3", "bus-4", "tram-9"}
                        and abs(w.keyed()["bus-0"]["lat"] - lat) <= 0.5e-7)  # written to 7 decimals
        updates = [f["id"] for b in viewer.batches for f in b["update"]]
        removes = [i for b in viewer.batches for i in b["remove"]]
        adds = [f.get("key") for b in viewer.batches for f in b["add"]]
        assert updates == [ids["bus-0"]], "a move is an update of the same id"
        assert removes == [ids["bus-1"]]
        assert adds == ["tram-9"]
        assert viewer.keyed()["tram-9"]["properties"]["line"] == "9"
        assert all(b["version"] >= version for b in viewer.batches[-1:])
        shown = viewer.features

    with Watcher(live_server.ws_url) as fresh:
        fresh.watch(BOX, ZOOM)
        assert fresh.features == shown

    # With live data every turn runs on a worker: the service thread keeps its time for producers.
    metrics = urllib.request.urlopen(f"{live_server.url}/metrics", timeout=10).read().decode()
    assert 'pinwheel_turns_total{thread="service"} 0' in metrics.splitlines()
    assert metric(live_server.port, "pinwheel_view_refreshes_total") >= 1, "the watched view was refreshed"
    assert int(next(line.split()[1] for line in metrics.splitlines()
                    if line.startswith('pinwheel_turns_total{thread="worker"}'))) > 0


def test_a_viewer_that_pans_sees_changes_made_outside_its_view(live_args):
    # No compaction during the test: the change reaches viewers through the live index alone.
    server = PinwheelServer(pinwheel_binary(), live_args + ["--compaction-interval", "3600"]).start()
    try:
        far = [WEST + 10, SOUTH + 10, WEST + 10.01, SOUTH + 10.01]
        with Watcher(server.ws_url) as viewer:
            viewer.watch(BOX, ZOOM)
            assert viewer.keyed() == {}
            # A change far from the view: no refresh of this viewer is needed.
            version = post(server, [{"op": "upsert", "id": "ferry-1", "lat": SOUTH + 10.005, "lon": WEST + 10.005}])
            deadline = time.monotonic() + 10
            while metric(server.port, "pinwheel_data_version") < version:
                assert time.monotonic() < deadline, "the index never took the change"
                time.sleep(0.02)
            viewer.watch(far, ZOOM)
            viewer.wait_for(lambda w: set(w.keyed()) == {"ferry-1"}, timeout_s=1.5)
    finally:
        server.stop()
        server.log.close()
