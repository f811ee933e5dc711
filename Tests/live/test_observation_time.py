"""Last writer by observation time against the real process: a change whose `t` is older than the
point's newest is accepted but changes nothing, and the answer counts it as `stale`; a delete's
tombstone keeps an older upsert from bringing the point back; both hold across a restart, from the
log's replay and from a snapshot."""

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from ingest import post_changes  # noqa: E402
from live_patch import TOKEN, patch_box  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402
from viewer import Watcher  # noqa: E402

BOX = patch_box(0.01)
ZOOM = 17
NEWER = (-39.996, -119.996)
OLDER = (-39.992, -119.992)
T0 = 1_765_000_000_000


def upsert(key, place, t):
    return {"op": "upsert", "id": key, "lat": place[0], "lon": place[1], "t": t}


def post(server, changes):
    status, answer, _ = post_changes(server.port, TOKEN, changes)
    assert status == 200, answer
    return answer


def shown(server, version):
    """The producers' points a viewer is shown once its view holds `version`: key -> (lat, lon)."""
    with Watcher(server.ws_url, timeout_s=20) as viewer:
        viewer.watch(BOX, ZOOM, width=2048, height=2048)
        viewer.wait_for(lambda w: any(b.get("version", 0) >= version for b in w.batches))
        return {k: (round(f["lat"], 6), round(f["lon"], 6)) for k, f in viewer.keyed().items()}


def test_an_older_observation_is_dropped_and_counted_stale(live_server):
    first = post(live_server, [upsert("bus-1", NEWER, T0 + 2000)])
    assert first["accepted"] == 1 and "stale" not in first, first
    older = post(live_server, [upsert("bus-1", OLDER, T0 + 1000), upsert("bus-2", OLDER, T0)])
    assert older["accepted"] == 2 and older["stale"] == 1, older
    assert older["version"] == first["version"] + 2
    assert shown(live_server, older["version"]) == {"bus-1": NEWER, "bus-2": OLDER}
    # A delete observed later leaves a tombstone: an upsert observed between them stays out.
    gone = post(live_server, [{"op": "delete", "id": "bus-1", "t": T0 + 3000}, upsert("bus-1", OLDER, T0 + 2500)])
    assert gone["stale"] == 1, gone
    assert shown(live_server, gone["version"]) == {"bus-2": OLDER}
    # Without t a change is applied in log order, as it comes.
    plain = post(live_server, [{"op": "upsert", "id": "bus-2", "lat": NEWER[0], "lon": NEWER[1]}])
    assert "stale" not in plain, plain
    assert shown(live_server, plain["version"]) == {"bus-2": NEWER}
    assert metric(live_server.port, "pinwheel_changes_stale_total") == 2


def test_a_bad_t_is_refused_with_its_reason(live_server):
    status, answer, _ = post_changes(
        live_server.port, TOKEN, [dict(upsert("bus-3", NEWER, 0), t="2026-12-06T16:00:00Z")])
    assert status == 400
    assert answer["rejected"] == [
        {"line": 1, "error": "t must be the observation time in milliseconds since 1970-01-01 UTC, got a string"}]


@pytest.mark.parametrize("snapshot_every", [None, 1])
def test_observation_times_and_tombstones_survive_a_restart(live_args, snapshot_every):
    # Without --snapshot-every the start replays the changes from the log; with 1 the newest
    # snapshot holds them (and its format carries the times).
    extra = [] if snapshot_every is None else ["--snapshot-every", str(snapshot_every)]
    server = PinwheelServer(pinwheel_binary(), live_args + extra).start()
    try:
        post(server, [upsert("bus-1", NEWER, T0 + 2000), upsert("bus-2", NEWER, T0 + 2000)])
        post(server, [{"op": "delete", "id": "bus-2", "t": T0 + 3000}])
        before = post(server, [])["version"]
        if snapshot_every is not None:
            # The index thread takes a snapshot within a refresh or two of the last change.
            data = Path(live_args[live_args.index("--data-dir") + 1])
            wait_for_snapshot(data, before)
        server.restart()
        after = post(server, [upsert("bus-1", OLDER, T0 + 1000), upsert("bus-2", OLDER, T0 + 2999)])
        assert after["stale"] == 2, after
        # Changes that all were stale change no view (its version stays), so this view is the
        # restarted server's; the next one, past them, proves they were not applied.
        assert shown(server, before) == {"bus-1": NEWER}
        newer = post(server, [upsert("bus-2", OLDER, T0 + 3001)])
        assert "stale" not in newer, newer
        assert shown(server, newer["version"]) == {"bus-1": NEWER, "bus-2": OLDER}
    finally:
        server.stop()
        server.log.close()


def wait_for_snapshot(data, version, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    name = f"snapshot-{version:020d}.bin"
    while not (data / name).exists():
        assert time.monotonic() < deadline, f"no {name} in {timeout_s} s: {sorted(p.name for p in data.iterdir())}"
        time.sleep(0.05)
