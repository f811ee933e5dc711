"""Live data in the page: a point a producer moves glides to its new place (the same marker, updated,
never removed and re-added), and a new point fades in, while the page stays responsive."""

import time

import pytest

from browser_support import ARTIFACTS, open_map, post

LAT, LON = 48.2, 16.4


def glider_position(page):
    """The glider's marker: [id, lat, lng drawn now] or None."""
    return page.evaluate("""() => {
        for (const e of pinwheel.state.markers.values()) {
            if (e.feature.key === 'glider') { const p = e.layer.getLatLng(); return [e.feature.id, p.lat, p.lng]; }
        }
        return null;
    }""")


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_a_moved_point_glides_to_its_new_place(page, live, encoding):
    post(live, {"op": "upsert", "id": "glider", "lat": LAT, "lon": LON})
    open_map(page, live, LAT, LON + 0.01, 14, encoding=encoding)
    page.wait_for_function("() => Array.from(pinwheel.state.markers.values()).some(e => e.feature.key === 'glider')")
    start = glider_position(page)
    page.evaluate("() => { window.gliderEntry = Array.from(pinwheel.state.markers.values()).find(e => e.feature.key === 'glider'); }")

    post(live, {"op": "upsert", "id": "glider", "lat": LAT, "lon": LON + 0.02},
         {"op": "upsert", "id": "newcomer", "lat": LAT + 0.005, "lon": LON + 0.01})
    seen = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        p = glider_position(page)
        seen.append(p)
        if p and abs(p[2] - (LON + 0.02)) < 1e-9:
            break
        time.sleep(0.02)
    end = seen[-1]
    assert end[0] == start[0], "the moved point kept its id"
    assert abs(end[2] - (LON + 0.02)) < 1e-9, f"the glider never arrived: {seen[-3:]}"
    between = [p for p in seen if p and LON + 1e-6 < p[2] < LON + 0.02 - 1e-6]
    assert between, "the glider jumped instead of gliding"
    assert page.evaluate("() => Array.from(pinwheel.state.markers.values()).find(e => e.feature.key === 'glider') === window.gliderEntry"), \
        "the marker was removed and added again instead of updated"
    page.wait_for_function("() => Array.from(pinwheel.state.markers.values()).some(e => e.feature.key === 'newcomer')")
    page.screenshot(path=str(ARTIFACTS / f"live-glide-{encoding}.png"))
    assert not page.console_log.errors
