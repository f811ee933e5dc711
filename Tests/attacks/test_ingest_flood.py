"""An ingest flood: one producer on `pinwheel.ingest.v1` sending batches of 1,000 moves as fast as the
server answers them (up to 60 frames unanswered). While a viewer is connected, taking changes in gets
at most `--ingest-share` of a core (0.3 by default): the producer's frames wait for its share instead
of the viewer's turns, its answers say how many changes a second it gets, and memory stays bounded."""

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from flood import Flood  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402
from viewer import Viewer, assert_not_starved, percentile  # noqa: E402

POINTS = 200_000
FLOOD_S = 12
# Below the default --ingest-rate (100,000 a second), so the per-producer limit never refuses a frame.
# Views a tourist passes through: cities at street, city and country zoom, and the world.
TOUR = [([-0.2, 51.45, 0.0, 51.55], 12), ([2.2, 48.8, 2.5, 48.9], 11), ([-10.0, 35.0, 20.0, 60.0], 5),
        ([-180, -85, 180, 85], 2), ([13.3, 52.45, 13.5, 52.55], 13), ([-80.0, 20.0, -60.0, 45.0], 6)]
# RSS may grow by the live index's newer versions and a compaction's build beside the served one,
# not by queued frames: 60 unanswered frames of 1,000 moves are 4 MB.
RSS_GROWTH_MB = 400


@pytest.fixture
def live_server(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server = PinwheelServer(pinwheel_binary(), [
        "--synthetic", str(POINTS), "--data-dir", str(tmp_path / "data"),
        "--ingest-token-file", str(token_file)]).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def test_a_flood_producer_gets_its_share_and_a_touring_viewer_keeps_its_latency(live_server):
    port = live_server.port
    with Viewer(live_server.ws_url) as viewer:
        viewer.viewport_done_seconds(*TOUR[0])
        rss_before = metric(port, "process_resident_memory_bytes")
        flood = Flood(live_server.ws_url, TOKEN, POINTS, rate=80_000, lines=1000, window=60).start()
        try:
            time.sleep(2)
            first_batches = []
            rss_peak = rss_before
            end = time.monotonic() + FLOOD_S - 2
            k = 0
            while time.monotonic() < end:
                k += 1
                viewer.viewport_done_seconds(*TOUR[k % len(TOUR)])
                first_batches.append(viewer.first_batch_s)
                if k % 10 == 0:
                    rss_peak = max(rss_peak, metric(port, "process_resident_memory_bytes"))
            held_s = metric(port, "pinwheel_ingest_held_seconds_total")
            gauge = metric(port, "pinwheel_ingest_accepted_per_second")
        finally:
            flood.stop()
    ms = [s * 1000 for s in first_batches]
    print(f"\nflood: {flood.accepted} changes accepted, {flood.accepted_rate():.0f}/s, held {held_s:.1f} s; "
          f"viewer first batch p50 {percentile(ms, 50):.1f} ms, p95 {percentile(ms, 95):.1f} ms, "
          f"max {max(ms):.1f} ms over {len(ms)} viewports; RSS {rss_before / 1e6:.0f} -> {rss_peak / 1e6:.0f} MB")
    assert flood.closed is None and flood.errors == [], (flood.closed, flood.errors[:3])
    assert flood.accepted > 10_000, "the producer keeps being served"
    # The producer was held to its share, and is told what it gets.
    assert held_s > 1
    rates = [a["acceptedPerSecond"] for a in flood.answers[-20:]]
    assert all(r > 0 for r in rates), rates
    assert gauge > 0
    assert flood.accepted_rate() < 100_000
    assert_not_starved(first_batches)
    assert rss_peak - rss_before < RSS_GROWTH_MB * 1e6, (rss_before, rss_peak)


def test_without_viewers_a_producer_is_not_held(live_server):
    flood = Flood(live_server.ws_url, TOKEN, POINTS, rate=80_000, lines=1000, window=60).start()
    time.sleep(3)
    flood.stop()
    assert flood.closed is None and flood.errors == [], (flood.closed, flood.errors[:3])
    assert flood.accepted > 10_000
    assert metric(live_server.port, "pinwheel_ingest_held_seconds_total") == 0
    assert json.loads(json.dumps(flood.answers[-1]))["acceptedPerSecond"] > 0
