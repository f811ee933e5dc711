"""Point icons in the page: the demo draws live vehicles (`kind` vehicle) as arrows and cities as dots; an
arrow turns the way its point last moved, or to its `heading` property when it has one; and an SVG icon
chosen by a property is drawn turned to its heading."""

import pytest

from browser_support import ARTIFACTS, open_map, post, wait_settled
from pinwheel_process import PinwheelServer, pinwheel_binary

LAT, LON = 47.5, 8.5
# Screen pixels of the page's Leaflet map.
ARROW = """(key) => {
    for (const e of pinwheel.state.markers.values()) {
        if (e.feature.key !== key) continue;
        const s = e.layer.options.sprite, p = pinwheel.map.latLngToContainerPoint(e.layer.getLatLng());
        return {heading: s.heading === undefined ? null : s.heading, radius: e.layer.getRadius(), x: p.x, y: p.y,
                lng: e.layer.getLatLng().lng};
    }
    return null;
}"""

# Where the sprite's painted pixels lie, relative to its centre: the mean offset of its opaque pixels
# (an arrow's mass lies towards its tail, so the tip is opposite this offset).
MASS = """(key) => {
    const e = Array.from(pinwheel.state.markers.values()).find((m) => m.feature.key === key);
    const c = e.layer.options.sprite.canvas, d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let sx = 0, sy = 0, n = 0;
    for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) {
        if (d[4 * (y * c.width + x) + 3] > 128) { sx += x + 0.5 - c.width / 2; sy += y + 0.5 - c.height / 2; n++; }
    }
    return {x: sx / n, y: sy / n, n};
}"""


def wait_for_key(page, key, lng=None):
    condition = f"e.feature.key === '{key}'" + (f" && Math.abs(e.layer.getLatLng().lng - {lng}) < 1e-9" if lng else "")
    page.wait_for_function(f"() => Array.from(pinwheel.state.markers.values()).some(e => {condition})")


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_a_moving_vehicle_is_an_arrow_that_turns_the_way_it_moves(page, live, encoding):
    post(live, {"op": "upsert", "id": f"car-{encoding}", "lat": LAT, "lon": LON, "properties": {"kind": "vehicle"}},
         {"op": "upsert", "id": f"town-{encoding}", "lat": LAT + 0.004, "lon": LON + 0.004, "properties": {"name": "Town"}})
    open_map(page, live, LAT, LON + 0.005, 15, encoding=encoding)
    car, town = f"car-{encoding}", f"town-{encoding}"
    wait_for_key(page, car)
    wait_for_key(page, town)
    still = page.evaluate(ARROW, car)
    assert still["heading"] == 0, "an arrow that never moved points north"
    assert page.evaluate(ARROW, town)["heading"] is None, "a city is a dot, not an arrow"

    # Due east, then due south: the arrow follows each move.
    post(live, {"op": "upsert", "id": car, "lat": LAT, "lon": LON + 0.006, "properties": {"kind": "vehicle"}})
    wait_for_key(page, car, LON + 0.006)
    assert page.evaluate(ARROW, car)["heading"] == 90
    east = page.evaluate(MASS, car)
    page.wait_for_function("() => !pinwheel.animating()")
    page.screenshot(path=str(ARTIFACTS / f"heading-east-{encoding}.png"))
    post(live, {"op": "upsert", "id": car, "lat": LAT - 0.003, "lon": LON + 0.006, "properties": {"kind": "vehicle"}})
    page.wait_for_function(f"() => ({ARROW})('{car}').heading === 180")
    south = page.evaluate(MASS, car)
    # Drawn turned: the arrow's tail (its mass) lies west of its centre heading east, north heading south.
    assert east["x"] < -1 and abs(east["y"]) < 0.75, east
    assert south["y"] < -1 and abs(south["x"]) < 0.75, south

    # A heading property wins over the moves.
    post(live, {"op": "upsert", "id": car, "lat": LAT - 0.003, "lon": LON + 0.007,
                "properties": {"kind": "vehicle", "heading": "315"}})
    page.wait_for_function(f"() => ({ARROW})('{car}').heading === 315")
    wait_settled(page)
    page.wait_for_function("() => !pinwheel.animating()")
    page.screenshot(path=str(ARTIFACTS / f"heading-arrows-{encoding}.png"))
    assert not page.console_log.errors


def test_an_svg_icon_chosen_by_a_property_is_drawn_turned_to_its_heading(page, live):
    post(live, {"op": "upsert", "id": "ferry-1", "lat": LAT + 0.01, "lon": LON, "properties": {"type": "ferry", "heading": "90"}},
         {"op": "upsert", "id": "ferry-2", "lat": LAT + 0.01, "lon": LON + 0.003, "properties": {"type": "bike"}})
    open_map(page, live, LAT + 0.01, LON + 0.002, 15)
    # A layer of the page's own with an SVG icon for ferries (a red bar across its top half).
    page.evaluate("""async () => {
        const { pinwheelLayer } = await import('/pinwheel/leaflet.js');
        const map = pinwheel.map;
        map.removeLayer(pinwheel.layer);
        const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><rect x="0" y="0" width="20" height="8" fill="#ff0000"/></svg>';
        pinwheel.layer = pinwheelLayer(`ws://${location.host}/`, {
            pointIcon: { property: 'type', icons: { ferry: { svg: svg, size: 20 } }, fallback: 'square' },
        }).addTo(map);
        pinwheel.state.markers = pinwheel.layer.markers;
        pinwheel.state.spread = pinwheel.layer.spread;
    }""")
    page.wait_for_function("() => pinwheel.layer.settled()")
    wait_for_key(page, "ferry-1")
    page.wait_for_function("() => Array.from(pinwheel.layer.markers.values()).find(e => e.feature.key === 'ferry-1').layer.options.sprite.heading === 90")
    ferry = page.evaluate(MASS, "ferry-1")
    # The bar drawn on top, turned 90° clockwise, is on the right.
    assert ferry["x"] > 3 and abs(ferry["y"]) < 1, ferry
    bike = page.evaluate(ARROW, "ferry-2")
    assert bike["heading"] == 0 and bike["radius"] == 8, "the fallback icon, 16 px, for other types"
    page.screenshot(path=str(ARTIFACTS / "svg-icon.png"))
    assert not page.console_log.errors


@pytest.fixture(scope="module")
def movers():
    """The real server on 300 synthetic points with 200 simulated vehicles driving between cities (`--movers`)."""
    server = PinwheelServer(pinwheel_binary(), ["--synthetic", "300", "--movers", "200", "--movers-rate", "400"]).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


VEHICLES = """() => {
    const out = {arrows: 0, turned: 0, vehicleDots: 0, cityArrows: 0, cities: 0};
    for (const e of pinwheel.state.markers.values()) {
        if (e.feature.count !== 1) continue;
        const vehicle = (e.feature.properties || {}).kind === 'vehicle', heading = e.layer.options.sprite.heading;
        if (vehicle && heading === undefined) out.vehicleDots++;
        if (vehicle && heading !== undefined) { out.arrows++; if (heading !== 0) out.turned++; }
        if (!vehicle) { out.cities++; if (heading !== undefined) out.cityArrows++; }
    }
    return out;
}"""


def test_the_demo_draws_its_simulated_vehicles_as_arrows_turned_the_way_they_drive(page, movers):
    # The vehicles never stop, so neither do the glides: the page is not waited on to settle. The
    # world first, where the synthetic points that are no vehicles stand alone as dots.
    page.goto(f"{movers.url}/?lat=30&lon=10&zoom=3")
    page.wait_for_function(f"() => window.pinwheel && ({VEHICLES})().cities >= 5", timeout=30000)
    assert page.evaluate(VEHICLES)["cityArrows"] == 0
    # Paris, where some of the vehicles drive.
    page.evaluate("() => { pinwheel.map.setView([48.857, 2.352], 9, {animate: false}); }")
    page.wait_for_function(f"() => ({VEHICLES})().turned >= 2", timeout=30000)
    seen = page.evaluate(VEHICLES)
    assert seen["vehicleDots"] == 0 and seen["cityArrows"] == 0, seen
    page.wait_for_timeout(400)
    page.screenshot(path=str(ARTIFACTS / "demo-vehicles.png"))
    assert not page.console_log.errors
