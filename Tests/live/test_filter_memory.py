"""`--filter-memory` bounds the filtered indexes in use, against the real `pinwheel serve`: a filter
whose index would not fit beside those sessions use is refused with a `filter-memory` error, the
session goes on with the view it had, and the same filter is taken once the other index is unused.

16,000 synthetic points with `speed` uniform in 0 … 99.9: `speed < 40` and `speed >= 40` split them
(about 40 % and 60 %). A 6 MB budget holds either index (about 3 and 4.3 MB estimated), not
both."""

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402
from viewer import Watcher  # noqa: E402

POINTS = 16000
SLOW = ["<", ["get", "speed"], 40]
FAST = [">=", ["get", "speed"], 40]
WORLD = [-180, -85, 180, 85]


@pytest.fixture
def server():
    server = PinwheelServer(pinwheel_binary(), [
        "--synthetic", str(POINTS), "--synthetic-tenants", "4", "--filter-memory", "6"]).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def points_held(viewer):
    return sum(f["count"] for f in viewer.features.values())


def wait_for_metric(port, name, value, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while metric(port, name) != value:
        assert time.monotonic() < deadline, f"{name} not {value} within {timeout_s} s: {metric(port, name)}"
        time.sleep(0.05)


def test_a_filter_past_the_budget_is_refused_the_view_goes_on_and_it_is_taken_once_room_is_free(server):
    a = Watcher(server.ws_url)
    b = Watcher(server.ws_url)
    try:
        a.ws.send(json.dumps({"type": "settings", "filter": SLOW}))
        slow = a.next_message("hello", "error")
        assert slow["type"] == "hello", slow
        assert 0.3 * POINTS < slow["dataset"]["points"] < 0.5 * POINTS
        a.watch(WORLD, 1)
        assert points_held(a) == slow["dataset"]["points"], "A's view holds its filter's points"

        b.watch(WORLD, 1)
        assert points_held(b) == POINTS
        b.ws.send(json.dumps({"type": "settings", "filter": FAST}))
        refused = b.next_message("hello", "error")
        assert refused["type"] == "error" and refused["code"] == "filter-memory", refused
        assert "of --filter-memory 6.0 MB" in refused["message"], refused
        assert f"this one ({POINTS - slow['dataset']['points']} points)" in refused["message"], refused
        assert metric(server.port, "pinwheel_filter_refusals_total") == 1
        assert metric(server.port, "pinwheel_filter_indexes") == 1

        # B goes on unfiltered: its next viewport is served over every point.
        b.watch(WORLD, 2)
        assert b.batches[-1]["seq"] == b.seq and b.batches[-1]["done"]
        assert points_held(b) == POINTS
        # A was not touched.
        a.watch(WORLD, 2)
        assert points_held(a) == slow["dataset"]["points"]

        # A leaves: its index is unused, and goes to make room for B's.
        a.__exit__(None, None, None)
        wait_for_metric(server.port, "pinwheel_filter_indexes_in_use", 0)
        b.ws.send(json.dumps({"type": "settings", "filter": FAST}))
        fast = b.next_message("hello", "error")
        assert fast["type"] == "hello", fast
        assert fast["dataset"]["points"] == POINTS - slow["dataset"]["points"]
        b.wait_for(lambda w: points_held(w) == fast["dataset"]["points"])
        assert metric(server.port, "pinwheel_filter_indexes") == 1
        assert metric(server.port, "pinwheel_filter_indexes_in_use") == 1
        assert 0 < metric(server.port, "pinwheel_filter_index_bytes") <= 6 << 20
        assert metric(server.port, "pinwheel_filter_refusals_total") == 1
    finally:
        a.__exit__(None, None, None)
        b.__exit__(None, None, None)
