"""Filtered views against the real `pinwheel serve`: a session's `settings.filter` narrows its view to
the matching points (hello counts them), a bad filter is an error naming its position and changes
nothing, and a live change that makes a point start or stop matching brings it in or takes it out."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN, grid_point, patch_box  # noqa: E402
from cluster import metric  # noqa: E402
from ingest import post_all_accepted  # noqa: E402
from viewer import Watcher  # noqa: E402

BOX = patch_box(0.01)
ZOOM = 17


def at(k):
    return grid_point(k, columns=10, spacing=0.0008, margin=0.001)


def post(server, changes):
    return post_all_accepted(server.port, TOKEN, changes)


def vehicle(k, kind, speed):
    lat, lon = at(k)
    return {"op": "upsert", "id": f"v-{k}", "lat": lat, "lon": lon, "properties": {"kind": kind, "speed": speed}}


def test_a_filter_narrows_the_view_follows_live_changes_and_refuses_bad_expressions(live_server):
    post(live_server, [vehicle(k, "bus" if k % 2 == 0 else "tram", 10 * k) for k in range(6)])
    with Watcher(live_server.ws_url) as viewer:
        viewer.watch(BOX, ZOOM)
        viewer.wait_for(lambda w: set(w.keyed()) == {f"v-{k}" for k in range(6)})

        # Buses faster than 15: v-2 and v-4. Typed: "speed" is a number, so 20 > 15.
        fast_buses = ["all", ["==", ["get", "kind"], "bus"], [">", ["get", "speed"], 15]]
        viewer.ws.send(json.dumps({"type": "settings", "filter": fast_buses}))
        hello = viewer.next_message("hello")
        assert hello["dataset"]["points"] == 2, "hello counts the matching points"
        viewer.wait_for(lambda w: set(w.keyed()) == {"v-2", "v-4"})
        assert all(f["properties"]["kind"] == "bus" and f["properties"]["speed"] > 15
                   for f in viewer.keyed().values())

        # A bad filter: one error naming the position, and the view stays as it was.
        viewer.ws.send(json.dumps({"type": "settings", "filter": ["all", [">", ["get", "speed"], {}]]}))
        error = viewer.next_message("error")
        assert error["code"] == "invalid-field" and error["field"] == "filter"
        assert error["message"].startswith("filter[1][2]: expected [\"get\", name]"), error
        viewer.ws.send(json.dumps({"type": "ping", "id": 7}))
        assert viewer.next_message("pong")["id"] == 7
        assert set(viewer.keyed()) == {"v-2", "v-4"}

        # v-1 becomes a fast bus (enters), v-2 a tram (leaves).
        post(live_server, [vehicle(1, "bus", 99), vehicle(2, "tram", 20)])
        viewer.wait_for(lambda w: set(w.keyed()) == {"v-1", "v-4"})

        # null clears it: every vehicle again.
        viewer.ws.send(json.dumps({"type": "settings", "filter": None}))
        viewer.wait_for(lambda w: set(w.keyed()) == {f"v-{k}" for k in range(6)})


def test_one_filter_written_three_ways_shares_one_index(live_server):
    post(live_server, [vehicle(k, "bus" if k < 3 else "tram", k) for k in range(6)])
    written = [["==", ["get", "kind"], "bus"], ["==", "bus", ["get", "kind"]],
               ["match", ["get", "kind"], "bus", True, False]]
    viewers = [Watcher(live_server.ws_url) for _ in written]
    try:
        for viewer, expression in zip(viewers, written):
            viewer.ws.send(json.dumps({"type": "settings", "filter": expression}))
            assert viewer.next_message("hello")["dataset"]["points"] == 3
            viewer.watch(BOX, ZOOM)
            viewer.wait_for(lambda w: set(w.keyed()) == {"v-0", "v-1", "v-2"})
        assert metric(live_server.port, "pinwheel_filter_indexes") == 1
        assert metric(live_server.port, "pinwheel_filter_index_bytes") > 0
        # A fourth, different filter: a second index.
        viewers.append(Watcher(live_server.ws_url))
        viewers[-1].ws.send(json.dumps({"type": "settings", "filter": ["==", ["get", "kind"], "tram"]}))
        assert viewers[-1].next_message("hello")["dataset"]["points"] == 3
        assert metric(live_server.port, "pinwheel_filter_indexes") == 2
    finally:
        for viewer in viewers:
            viewer.__exit__(None, None, None)
