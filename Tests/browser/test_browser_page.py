"""The bundled page in headless Chromium against the real server: what it draws is what the server
computed, diffs apply as diffs, clusters split and merge, spread groups get legs, the HUD moves."""

import csv
import functools
import http.server
import re
import threading
import time
import urllib.parse

import pytest

from browser_support import (ROOT, markers, open_map, reference_client, screenshot, server_features, set_view,
                      wait_settled)

EUROPE = (48.0, 10.0, 5)


def cluster_near_center(page, min_count=3):
    """The cluster nearest the middle of the screen, as {id, count, lat, lon, x, y}."""
    return page.evaluate(
        """(minCount) => {
            const m = pinwheel.map, c = m.getSize().divideBy(2);
            let best = null, bestD = Infinity;
            for (const [id, e] of pinwheel.state.markers) {
                if (e.feature.count < minCount) continue;
                const ll = e.layer.getLatLng(), p = m.latLngToContainerPoint(ll), d = p.distanceTo(c);
                if (d < bestD) { bestD = d; best = {id: id, count: e.feature.count, lat: ll.lat, lon: ll.lng, x: p.x, y: p.y}; }
            }
            return best;
        }""",
        min_count,
    )


@pytest.mark.parametrize("algorithm, view", [("pca-tree", EUROPE), ("hierarchical", (51.8, 1.5, 7))])
@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_markers_are_exactly_what_the_server_computed_for_the_viewport(page, server, algorithm, view, encoding):
    open_map(page, server, *view, algorithm=algorithm, encoding=encoding)
    shown = markers(page)
    viewport = page.evaluate("() => pinwheel.state.lastViewport")
    assert len(shown) >= 10 and any(c > 1 for c in shown.values())
    assert shown == server_features(server, viewport, algorithm)
    counts = page.evaluate("() => [pinwheel.state.points, pinwheel.state.clusters]")
    assert counts == [sum(1 for c in shown.values() if c == 1), sum(1 for c in shown.values() if c > 1)]
    drawn = page.evaluate("() => Array.from(pinwheel.state.markers.values()).filter(e => pinwheel.map.hasLayer(e.layer)).length")
    assert drawn == len(shown)
    screenshot(page, f"page-{algorithm}-{encoding}.png")
    assert page.console_log.errors == []


def test_across_the_antimeridian_markers_match_the_server_and_are_drawn_on_screen(page, server):
    open_map(page, server, -17.0, 179.0, 5, algorithm="hierarchical")
    viewport = page.evaluate("() => pinwheel.state.lastViewport")
    west, _, east, _ = viewport["bbox"]
    assert west > east, "the bbox crosses the antimeridian (west > east)"
    shown = markers(page)
    assert len(shown) >= 5
    assert shown == server_features(server, viewport, "hierarchical")
    inside = page.evaluate(
        """() => { const b = pinwheel.map.getBounds();
                   return Array.from(pinwheel.state.markers.values()).every(e => b.contains(e.layer.getLatLng())); }""")
    assert inside, "markers on both sides of 180° are drawn in the copy of the world in view"
    assert page.console_log.errors == []


def test_while_dragging_the_page_sends_viewports_at_most_20_times_a_second(page, server):
    open_map(page, server, *EUROPE)
    before = page.evaluate("() => pinwheel.state.counters.viewports")
    page.mouse.move(640, 400)
    page.mouse.down()
    start = time.monotonic()
    for i in range(1, 61):
        page.mouse.move(640 - 5 * i, 400)
        page.wait_for_timeout(20)
    during = page.evaluate("() => pinwheel.state.counters.viewports") - before
    elapsed = time.monotonic() - start
    page.mouse.up()
    wait_settled(page)
    assert during >= 3, "viewports go out while the drag goes on, not only at its end"
    assert during <= 20 * elapsed + 1
    assert page.console_log.errors == []


def test_a_pan_applies_a_diff_and_features_that_stay_keep_their_layer(page, server):
    open_map(page, server, *EUROPE)
    before = markers(page)
    page.evaluate("() => { for (const [id, e] of pinwheel.state.markers) e.layer.pinwheelTag = id; }")
    counters = page.evaluate("() => ({...pinwheel.state.counters})")
    seq = page.evaluate("() => pinwheel.state.seq")
    page.evaluate("() => { pinwheel.map.panBy([400, 0], {animate: false}); }")
    page.wait_for_function(f"() => pinwheel.state.seq > {seq}")
    wait_settled(page)
    after = markers(page)
    kept = before.keys() & after.keys()
    added = after.keys() - before.keys()
    removed = before.keys() - after.keys()
    assert kept and added and removed, "a 400-pixel pan at zoom 5 keeps some features and changes others"
    tags = page.evaluate("() => Array.from(pinwheel.state.markers, ([id, e]) => [id, e.layer.pinwheelTag ?? null])")
    tags = {int(i): t for i, t in tags}
    assert all(tags[i] == i for i in kept), "a feature that stayed was drawn again with a new layer"
    assert all(tags[i] is None for i in added)
    now = page.evaluate("() => pinwheel.state.counters")
    assert now["adds"] - counters["adds"] == len(added)
    assert now["removes"] - counters["removes"] == len(removed)
    assert after == server_features(server, page.evaluate("() => pinwheel.state.lastViewport"))
    assert page.console_log.errors == []


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_zooming_into_a_cluster_replaces_it_with_its_children_and_zooming_out_merges_them_back(page, server, encoding):
    # The hierarchical index: one zoom level in, a cluster is exactly its children (supercluster's rule).
    open_map(page, server, *EUROPE, algorithm="hierarchical", encoding=encoding)
    cluster = cluster_near_center(page, min_count=5)
    assert cluster is not None
    zoom = page.evaluate("() => pinwheel.map.getZoom()")
    set_view(page, cluster["lat"], cluster["lon"], zoom + 1)
    children = page.evaluate(
        """(parent) => Array.from(pinwheel.state.markers.values())
            .filter(e => e.feature.parent === parent)
            .map(e => ({id: e.feature.id, count: e.feature.count, anchor: !!e.feature.anchor,
                        origin: e.origin && [e.origin.lat, e.origin.lng]}))""",
        cluster["id"],
    )
    shown = markers(page)
    assert cluster["id"] not in shown
    assert len(children) >= 2
    assert sum(c["count"] for c in children) == cluster["count"]
    for c in children:
        if not c["anchor"]:
            assert c["origin"] is not None, f"child {c['id']} did not start from its parent"
            assert abs(c["origin"][0] - cluster["lat"]) < 1e-6 and abs(c["origin"][1] - cluster["lon"]) < 1e-6
    assert shown == server_features(server, page.evaluate("() => pinwheel.state.lastViewport"), "hierarchical")

    merges = page.evaluate("() => pinwheel.state.counters.merges")
    set_view(page, cluster["lat"], cluster["lon"], zoom)
    assert markers(page).get(cluster["id"]) == cluster["count"], "zooming back out brings back the same cluster"
    assert page.evaluate("() => pinwheel.state.counters.merges") - merges >= len(children), \
        "the children moved into their cluster before vanishing"
    assert page.console_log.errors == []


def test_a_click_on_a_cluster_zooms_to_its_expansion_zoom(page, server):
    open_map(page, server, *EUROPE)
    cluster = cluster_near_center(page, min_count=2)
    zoom = page.evaluate("() => pinwheel.map.getZoom()")
    page.mouse.click(cluster["x"], cluster["y"])
    page.wait_for_function(f"() => pinwheel.state.lastExpansion && pinwheel.state.lastExpansion.id === {cluster['id']}")
    page.wait_for_function(f"() => pinwheel.map.getZoom() > {zoom}")
    wait_settled(page)
    expansion = page.evaluate("() => pinwheel.state.lastExpansion")
    assert page.evaluate("() => pinwheel.map.getZoom()") == expansion["zoom"]
    assert cluster["id"] not in markers(page)
    assert page.console_log.errors == []


def test_a_click_on_a_point_opens_a_popup_with_its_name(page, server):
    open_map(page, server, 48.85, 2.35, 9, algorithm="hierarchical")
    point = page.evaluate(
        """() => {
            const m = pinwheel.map, c = m.getSize().divideBy(2);
            let best = null, bestD = Infinity;
            for (const e of pinwheel.state.markers.values()) {
                if (e.feature.count !== 1 || e.feature.anchor) continue;
                const p = m.latLngToContainerPoint(e.layer.getLatLng()), d = p.distanceTo(c);
                if (d < bestD) { bestD = d; best = {x: p.x, y: p.y, name: e.feature.properties.name}; }
            }
            return best;
        }"""
    )
    assert point is not None and point["name"]
    page.mouse.click(point["x"], point["y"])
    page.wait_for_selector(".pw-popup h3")
    assert page.inner_text(".pw-popup h3") == point["name"]
    assert page.console_log.errors == []


def test_the_hud_figures_move_with_the_stream(page, server):
    open_map(page, server, *EUROPE)

    def hud():
        return {k: page.inner_text(f"#hud-{k}") for k in ("conn", "points", "clusters", "adds", "bytes", "settled")}

    first = hud()
    assert first["conn"] == "live"
    assert int(first["points"].replace(",", "")) + int(first["clusters"].replace(",", "")) == len(markers(page))
    assert re.fullmatch(r"\d+ ms", first["settled"])
    page.evaluate("() => { pinwheel.map.setView([40.4, -3.7], 7, {animate: false}); }")
    page.wait_for_function("() => pinwheel.state.rates.adds > 0 && document.getElementById('hud-adds').textContent !== '0'")
    wait_settled(page)
    page.wait_for_timeout(300)  # one HUD refresh
    second = hud()
    assert second["bytes"] != first["bytes"]
    assert [int(second[k].replace(",", "")) for k in ("points", "clusters")] == page.evaluate(
        "() => [pinwheel.state.points, pinwheel.state.clusters]")
    assert page.console_log.errors == []


def test_a_slow_pace_shows_batches_in_flight_and_still_ends_with_the_servers_markers(page, server):
    open_map(page, server, 51.8, 1.5, 7, algorithm="hierarchical")
    page.click(".settings summary")
    page.fill("#set-pace", "2")  # 0.05 markers per millisecond: about one marker per frame
    assert page.inner_text("#set-pace-out") == "0.05/ms"
    page.evaluate("() => { pinwheel.map.setView([48.0, 10.0], 7, {animate: false}); }")
    page.wait_for_function("() => document.getElementById('hud-inflight').textContent !== '0'")
    assert page.evaluate("() => pinwheel.state.inFlight") > 0
    page.fill("#set-pace", "8")  # back to max
    assert page.inner_text("#set-pace-out") == "max"
    wait_settled(page)
    assert markers(page) == server_features(server, page.evaluate("() => pinwheel.state.lastViewport"), "hierarchical")
    assert page.console_log.errors == []


def test_choosing_another_algorithm_redraws_what_the_server_computes_with_it(page, server):
    open_map(page, server, *EUROPE)
    hello = page.evaluate("() => pinwheel.state.hello")
    options = page.eval_on_selector_all("#set-algorithm option", "els => els.map(e => e.value)")
    assert options == hello["algorithms"] and len(options) >= 2
    assert page.input_value("#set-algorithm") == hello["algorithm"]
    other = next(a for a in options if a != hello["algorithm"])
    viewport = page.evaluate("() => pinwheel.state.lastViewport")
    with reference_client(server) as client:
        client.send({"type": "settings", "algorithm": other})
        assert client.receive("hello")["algorithm"] == other
        expected = {i: f["count"] for i, f in client.viewport(viewport).items()}
    assert expected != markers(page), "the two algorithms draw this view differently"

    page.click(".settings summary")
    page.select_option("#set-algorithm", other)
    page.wait_for_function(f"() => pinwheel.state.hello.algorithm === {other!r}")
    deadline = time.monotonic() + 15
    while markers(page) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert markers(page) == expected
    assert page.console_log.errors == []


def test_a_tour_raises_no_javascript_errors(page, server):
    open_map(page, server, 20.0, 0.0, 2)
    for lat, lon, zoom in [(35.0, 139.0, 6), (35.68, 139.7, 11), (-33.9, 151.2, 4), (0.0, 179.5, 4), (51.5, -0.1, 13)]:
        set_view(page, lat, lon, zoom)
    page.mouse.move(640, 400)
    page.mouse.down()
    page.mouse.move(300, 300, steps=20)
    page.mouse.up()
    wait_settled(page)
    assert page.console_log.errors == []


def dubai_mall():
    """The Dubai Mall from the embedded demo data: (lat, lon, shop count), all shops on one coordinate."""
    rows = list(csv.DictReader(open(ROOT / "data" / "malls.csv", newline="")))
    shops = [r for r in rows if r["name"].endswith("(The Dubai Mall)")]
    assert len({(r["lat"], r["lon"]) for r in shops}) == 1
    return float(shops[0]["lat"]), float(shops[0]["lon"]), len(shops)


def spread_pins(page, lat, lon, source):
    """Pins of `source` (markers or spread) whose anchor is (lat, lon), with their legs."""
    return page.evaluate(
        """([lat, lon, source]) => Array.from(pinwheel.state[source].values())
            .filter(e => e.feature.anchor && Math.abs(e.feature.anchor.lat - lat) < 1e-6 && Math.abs(e.feature.anchor.lon - lon) < 1e-6)
            .map(e => {
                const pin = e.layer.getLatLng();
                return {id: e.feature.id, pin: [pin.lat, pin.lng], at: [e.feature.lat, e.feature.lon],
                        legs: e.leg ? e.leg.getLatLngs().map(p => [p.lat, p.lng]) : null,
                        legShown: !!e.leg && pinwheel.map.hasLayer(e.leg),
                        name: e.feature.properties && e.feature.properties.name};
            })""",
        [lat, lon, source],
    )


def assert_spread_with_legs(pins, lat, lon, shops):
    assert len(pins) == shops
    assert all(p["name"].endswith("(The Dubai Mall)") for p in pins)
    assert len({(round(p["at"][0], 7), round(p["at"][1], 7)) for p in pins}) == shops, "every shop has its own spot"
    for p in pins:
        assert p["legShown"]
        assert p["legs"][0] == [lat, lon], "the leg starts at the true coordinate"
        assert p["legs"][1] == p["pin"], "the leg ends at the pin"
        assert abs(p["pin"][0] - p["at"][0]) < 1e-9 and abs(p["pin"][1] - p["at"][1]) < 1e-9, "pin drawn at its spread position"
        assert (p["at"][0], p["at"][1]) != (lat, lon)


def test_a_mall_group_appears_spread_around_its_coordinate_with_legs(page, server):
    lat, lon, shops = dubai_mall()
    open_map(page, server, lat, lon, 15, algorithm="hierarchical")
    assert_spread_with_legs(spread_pins(page, lat, lon, "markers"), lat, lon, shops)
    screenshot(page, "page-mall.png")
    assert page.console_log.errors == []


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_a_click_on_a_mall_cluster_shows_its_shops_spread_with_legs(page, server, encoding):
    # The PCA tree keeps a same-coordinate group as one cluster; `expand` answers with its spread.
    lat, lon, shops = dubai_mall()
    open_map(page, server, lat, lon, 14, algorithm="pca-tree", encoding=encoding)
    cluster = cluster_near_center(page, min_count=shops)
    assert cluster["count"] == shops
    page.mouse.click(cluster["x"], cluster["y"])
    page.wait_for_function(f"() => pinwheel.state.spread.size === {shops}")
    assert page.evaluate("() => pinwheel.state.lastExpansion.id") == cluster["id"]
    pins = spread_pins(page, lat, lon, "spread")
    assert_spread_with_legs(pins, lat, lon, shops)
    screenshot(page, f"page-mall-expanded-{encoding}.png")
    pin = page.evaluate(
        """(id) => { const e = pinwheel.state.spread.get(id), p = pinwheel.map.latLngToContainerPoint(e.layer.getLatLng());
                     return {x: p.x, y: p.y}; }""", pins[0]["id"])
    page.mouse.click(pin["x"], pin["y"])
    page.wait_for_selector(".pw-popup h3")
    assert page.inner_text(".pw-popup h3") == pins[0]["name"]
    assert page.console_log.errors == []


def test_a_tiles_parameter_replaces_the_offline_basemap_with_a_raster_tile_server(page, server):
    # A second HTTP server on another port is another origin, as a real tile server is: every tile
    # is Leaflet's layers.png. Our page's CSP must let its images through.
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/usr/share/javascript/leaflet/images")
    handler.log_message = lambda *args: None
    tiles = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=tiles.serve_forever, daemon=True).start()
    try:
        tile_url = f"http://127.0.0.1:{tiles.server_address[1]}/layers.png?z={{z}}&x={{x}}&y={{y}}"
        loaded = []
        page.on("requestfinished", lambda r: loaded.append(r.url))
        page.goto(f"{server.url}/?lat=48&lon=10&zoom=5&tiles={urllib.parse.quote(tile_url)}"
                  "&attribution=Tiles%20%3Cb%3Etest%3C%2Fb%3E")
        wait_settled(page)
        page.wait_for_function("() => [...document.querySelectorAll('img.leaflet-tile')].some(i => i.complete && i.naturalWidth > 0)")
        assert any(re.search(r":\d+/layers\.png\?z=5&x=\d+&y=\d+$", u) for u in loaded)
        assert not any(u.endswith("world-110m.json") for u in loaded)
        assert "Tiles <b>test</b>" in page.inner_text(".leaflet-control-attribution"), "attribution is shown as text"
        assert page.console_log.errors == []
    finally:
        tiles.shutdown()


def test_by_default_the_offline_natural_earth_basemap_is_drawn(page, server):
    requested = []
    page.on("response", lambda r: requested.append((r.url, r.status)))
    open_map(page, server, *EUROPE)
    assert (f"{server.url}/world-110m.json", 200) in requested
    assert "Natural Earth" in page.inner_text(".leaflet-control-attribution")
    assert page.locator("img.leaflet-tile").count() == 0
    page.wait_for_function("() => Object.values(pinwheel.map._layers).some(l => l.feature && l.feature.properties && l.feature.properties.iso_a3 === 'FRA')")
    assert page.locator(".leaflet-basemap-pane canvas").count() == 1
