"""Cluster labels fit their icons: in the default views of the demo data and of 1M synthetic points, and
over a zoom sweep, no cluster's label is wider than the room its icon leaves it (the font shrinks, the
icon grows when even the smallest font is too wide), while at most 2 % of cluster icons overlap another
(the measure of test_browser_client.py)."""

import pytest

from browser_support import screenshot, wait_settled
from pinwheel_process import PinwheelServer, pinwheel_binary
from test_browser_client import OVERLAP

# Every cluster drawn in view: its label's width and room (from its sprite), and its radius.
LABELS = """() => {
    const m = pinwheel.map, size = m.getSize(), out = [];
    for (const e of pinwheel.state.markers.values()) {
        if (e.feature.count < 2) continue;
        const p = m.latLngToContainerPoint(e.layer.getLatLng());
        if (p.x < 0 || p.y < 0 || p.x > size.x || p.y > size.y) continue;
        const l = e.layer.options.sprite.label;
        out.push({count: e.feature.count, text: l.text, width: l.width, room: l.room, font: l.fontPx, radius: e.layer.getRadius()});
    }
    return out;
}"""

VIEWS = {"world-z2": (20.0, 10.0, 2), "usa-z4": (39.0, -98.0, 4), "india-z5": (22.0, 79.0, 5),
         "europe-z6": (48.0, 10.0, 6)}
SWEEP = [(48.0, 10.0, z) for z in (1, 3, 4, 5, 7, 8, 9, 10)]


@pytest.fixture(scope="module")
def million():
    """The real server on 1,000,000 synthetic points."""
    server = PinwheelServer(pinwheel_binary(), ["--synthetic", "1000000"]).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def measure(page, server, lat, lon, zoom):
    # From a blank page: a new hash alone would move the page's map only after its hashchange event.
    page.goto("about:blank")
    page.goto(f"{server.url}/#{lat},{lon},{zoom}")
    wait_settled(page)
    page.wait_for_timeout(100)  # icons are fitted to their neighbours a frame after the view completes
    return page.evaluate(LABELS), page.evaluate(OVERLAP)


def assert_labels_fit(labels, where):
    too_wide = [label for label in labels if label["width"] > label["room"] or label["width"] > 2 * label["radius"]]
    assert too_wide == [], f"{where}: labels wider than their icons: {too_wide[:5]}"


@pytest.mark.parametrize("data", ["demo", "million"])
def test_in_the_default_views_labels_fit_their_icons_and_at_most_2_percent_overlap(page, request, data):
    server = request.getfixturevalue("server" if data == "demo" else "million")
    figures = {}
    for name, (lat, lon, zoom) in VIEWS.items():
        labels, overlap = measure(page, server, lat, lon, zoom)
        assert len(labels) >= 30, f"{name}: {len(labels)} clusters"
        assert_labels_fit(labels, f"{data} {name}")
        assert overlap["overlapping"] <= 0.02 * overlap["clusters"], f"{data} {name}: {overlap}"
        figures[name] = {"clusters": overlap["clusters"], "overlapping": overlap["overlapping"],
                         "smallest font": min(label["font"] for label in labels),
                         "radius": [overlap["minRadius"], overlap["maxRadius"]]}
        screenshot(page, f"labels-{data}-{name}.png")
    print(data, figures)
    assert page.console_log.errors == []


def test_over_a_zoom_sweep_of_1m_points_labels_fit_their_icons(page, million):
    for lat, lon, zoom in SWEEP:
        labels, _ = measure(page, million, lat, lon, zoom)
        assert labels, f"zoom {zoom}: no clusters"
        assert_labels_fit(labels, f"zoom {zoom}")
    assert page.console_log.errors == []
