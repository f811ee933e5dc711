"""The MapLibre GL layer (web/pinwheel/maplibre.js) in headless Chromium (WebGL in software): the
example page draws what the server computed, follows pans with keyed diffs, and a click on a
cluster zooms to where it splits and on a point opens its popup; a live point glides to its new
place."""

from pathlib import Path

import pytest

from browser_support import post, screenshot, server_features
from test_browser_page import dubai_mall

MAPLIBRE = Path("/usr/local/share/javascript/maplibre-gl/maplibre-gl-worker.js")
LAYERS = "['pinwheel-clusters', 'pinwheel-points']"


@pytest.fixture(autouse=True)
def maplibre_installed():
    assert MAPLIBRE.exists(), "MapLibre GL JS is not installed: run scripts/setup (scripts/vendor-maplibre)"


def wait_settled(page, timeout_ms=30000):
    page.wait_for_function("() => window.markers && window.markers.settled() && window.markers.client.features.size > 0",
                           timeout=timeout_ms)


def open_example(page, server, hash_view=None):
    page.goto(f"{server.url}/examples/maplibre.html")
    wait_settled(page)
    if hash_view:
        lon, lat, zoom = hash_view
        move(page, f"() => map.jumpTo({{center: [{lon}, {lat}], zoom: {zoom}}})")


def move(page, script):
    seq = page.evaluate("() => markers.client.state.seq")
    page.evaluate(script)
    page.wait_for_function(f"() => markers.client.state.seq > {seq}")
    wait_settled(page)


def drawn(page):
    """{pinwheelId: count} of what MapLibre renders now."""
    pairs = page.evaluate(f"""() => map.queryRenderedFeatures({{layers: {LAYERS}}})
                                       .map(f => [f.properties.pinwheelId, f.properties.count])""")
    return {int(i): c for i, c in pairs}


def in_view(page):
    """{id: count} of the client's features whose centre is on screen."""
    pairs = page.evaluate("""() => { const c = map.getContainer(), out = [];
        for (const f of markers.client.features.values()) {
            const p = map.project([f.lon, f.lat]);
            if (p.x >= 2 && p.y >= 2 && p.x <= c.clientWidth - 2 && p.y <= c.clientHeight - 2) out.push([f.id, f.count]);
        }
        return out; }""")
    return {int(i): c for i, c in pairs}


def assert_matches_server(page, server):
    viewport = page.evaluate("() => markers.client.state.lastViewport")
    held = {int(i): c for i, c in page.evaluate("() => Array.from(markers.client.features.values(), f => [f.id, f.count])")}
    assert held == server_features(server, viewport)
    shown = in_view(page)
    assert shown, "features on screen"
    rendered = drawn(page)
    assert shown.items() <= rendered.items(), "every feature on screen is drawn by MapLibre"
    assert rendered.items() <= held.items(), "MapLibre draws nothing the stream does not hold"


def test_the_maplibre_example_draws_exactly_what_the_server_computed(page, server):
    open_example(page, server)
    assert "tileSize" not in page.evaluate("() => markers.client.state.lastViewport"), "512-px tiles, the server's own"
    assert_matches_server(page, server)
    screenshot(page, "maplibre-europe.png")
    assert page.console_log.errors == []


def test_a_pan_and_a_zoom_apply_as_keyed_diffs(page, server):
    open_example(page, server)
    page.evaluate("""() => { window.diffs = []; const s = map.getSource('pinwheel'), u = s.updateData.bind(s);
                             s.updateData = (d) => { window.diffs.push({remove: d.remove.length, add: d.add.length}); return u(d); }; }""")
    before = page.evaluate("() => markers.client.features.size")
    move(page, "() => map.panBy([300, 120], {duration: 0})")
    assert_matches_server(page, server)
    diffs = page.evaluate("() => window.diffs")
    assert diffs, "the pan reached the source as diffs"
    assert sum(d["add"] for d in diffs) < before, "a pan sends what changed, not the whole view again"
    move(page, "() => map.jumpTo({zoom: map.getZoom() + 1.5})")
    assert_matches_server(page, server)
    assert page.console_log.errors == []


def test_a_click_on_a_cluster_zooms_to_where_it_splits_and_a_point_opens_its_popup(page, server):
    open_example(page, server)
    cluster = page.evaluate(f"""() => {{ const c = map.getContainer(), mid = [c.clientWidth / 2, c.clientHeight / 2];
        let best = null, d = Infinity;
        for (const f of map.queryRenderedFeatures({{layers: ['pinwheel-clusters']}})) {{
            const p = map.project(f.geometry.coordinates), e = Math.hypot(p.x - mid[0], p.y - mid[1]);
            if (e < d) {{ d = e; best = {{id: f.properties.pinwheelId, x: p.x, y: p.y}}; }}
        }}
        return best; }}""")
    page.evaluate("() => { window.clicks = []; markers.on('clusterclick', e => window.clicks.push(e.feature.id)); }")
    zoom = page.evaluate("() => map.getZoom()")
    page.mouse.click(cluster["x"], cluster["y"])
    page.wait_for_function(f"() => window.clicks.includes({cluster['id']})")
    page.wait_for_function(f"() => map.getZoom() > {zoom} && !map.isMoving()")
    wait_settled(page)
    expansion = page.evaluate("() => markers.client.state.lastExpansion")
    assert expansion["id"] == cluster["id"] and abs(page.evaluate("() => map.getZoom()") - expansion["zoom"]) < 1e-6
    assert cluster["id"] not in drawn(page)
    screenshot(page, "maplibre-expanded.png")

    move(page, "() => map.jumpTo({center: [2.35, 48.85], zoom: 11})")
    point = page.evaluate("""() => { const f = map.queryRenderedFeatures({layers: ['pinwheel-points']})
                                         .find(f => f.properties.name);
                                     const p = map.project(f.geometry.coordinates);
                                     return {x: p.x, y: p.y, name: f.properties.name}; }""")
    page.mouse.click(point["x"], point["y"])
    page.wait_for_selector(".maplibregl-popup .pw-popup h3")
    assert page.inner_text(".maplibregl-popup .pw-popup h3") == point["name"]
    assert page.console_log.errors == []


LAT, LON = 48.2, 16.4


def test_a_live_point_glides_to_its_new_place_through_keyed_updates(page, live):
    post(live, {"op": "upsert", "id": "glider", "lat": LAT, "lon": LON})
    page.goto(f"{live.url}/examples/maplibre.html")
    wait_settled(page)
    move(page, f"() => map.jumpTo({{center: [{LON + 0.01}, {LAT}], zoom: 13}})")
    page.wait_for_function("() => map.queryRenderedFeatures({layers: ['pinwheel-points']}).some(f => f.properties.key === 'glider')")
    glider = page.evaluate("() => Array.from(markers.client.features.values()).find(f => f.key === 'glider').id")
    # Every position of the glider handed to the source, and any removal of it.
    page.evaluate(f"""() => {{ window.glides = []; window.gliderRemoved = false;
        const s = map.getSource('pinwheel'), u = s.updateData.bind(s);
        s.updateData = (d) => {{
            for (const f of d.add) if (f.id === {glider}) window.glides.push(f.geometry.coordinates[0]);
            if (d.remove.includes({glider})) window.gliderRemoved = true;
            return u(d);
        }}; }}""")
    post(live, {"op": "upsert", "id": "glider", "lat": LAT, "lon": LON + 0.02},
         {"op": "upsert", "id": "newcomer", "lat": LAT + 0.005, "lon": LON + 0.01})
    page.wait_for_function(f"() => window.glides.length && Math.abs(window.glides[window.glides.length - 1] - {LON + 0.02}) < 1e-9")
    glides = page.evaluate("() => window.glides")
    assert any(LON + 1e-6 < x < LON + 0.02 - 1e-6 for x in glides), f"the glider jumped instead of gliding: {glides}"
    assert glides == sorted(glides), "it moved one way"
    assert not page.evaluate("() => window.gliderRemoved"), "the point was updated, not removed and added again"
    page.wait_for_function(f"""() => map.queryRenderedFeatures({{layers: ['pinwheel-points']}})
        .some(f => f.properties.key === 'glider' && Math.abs(f.geometry.coordinates[0] - {LON + 0.02}) < 1e-4)""")
    page.wait_for_function("() => map.queryRenderedFeatures({layers: ['pinwheel-points']}).some(f => f.properties.key === 'newcomer')")
    screenshot(page, "maplibre-live.png")
    assert page.console_log.errors == []


def test_markers_in_view_are_named_buttons_and_enter_opens_a_cluster(page, server):
    open_example(page, server)
    page.wait_for_function("() => document.querySelectorAll('.pw-keyboard button').length > 10")
    snapshot = page.locator(".pw-keyboard").aria_snapshot()
    assert snapshot.startswith('- list "Markers in view"') and '- button "Cluster of ' in snapshot, snapshot[:300]
    names = page.evaluate("() => Array.from(document.querySelectorAll('.pw-keyboard button'), b => b.textContent)")
    top = page.evaluate("""() => { const c = map.getContainer(); let top = 0;
        for (const f of markers.client.features.values()) {
            const p = map.project([f.lon, f.lat]);
            if (p.x >= -4 && p.y >= -4 && p.x <= c.clientWidth + 4 && p.y <= c.clientHeight + 4) top = Math.max(top, f.count); }
        return top; }""")
    assert names[0] == f"Cluster of {top:,} points"
    page.evaluate("() => { window.clicks = []; markers.on('clusterclick', e => window.clicks.push(e.feature.id)); }")
    zoom = page.evaluate("() => map.getZoom()")
    page.locator(".pw-keyboard button").first.focus()
    assert page.evaluate("() => getComputedStyle(document.querySelector('.pw-focus-ring')).display") == "block"
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.clicks.length === 1")
    page.wait_for_function(f"() => map.getZoom() > {zoom} && !map.isMoving()")
    wait_settled(page)
    page.wait_for_function("() => document.activeElement && document.activeElement.closest('.pw-keyboard') !== null")
    assert page.console_log.errors == []


def test_a_same_coordinate_group_opens_as_a_spread_drawn_only_while_open(page, server):
    # The PCA tree keeps the Dubai Mall's shops (one coordinate) as one cluster; `expand` answers
    # with their spread.
    lat, lon, shops = dubai_mall()
    page.goto(f"{server.url}/examples/maplibre.html")
    wait_settled(page)
    page.evaluate(f"""async () => {{ markers.remove(); map.jumpTo({{center: [{lon}, {lat}], zoom: 13}});
        const {{ pinwheelMapLibre }} = await import('/pinwheel/maplibre.js');
        window.markers = pinwheelMapLibre(`ws://${{location.host}}/`, {{algorithm: 'pca-tree'}}).addTo(map); }}""")
    wait_settled(page)
    spread_layers = "() => ['pinwheel-spread-legs', 'pinwheel-spread-pins'].map(id => map.getLayoutProperty(id, 'visibility'))"
    assert page.evaluate(spread_layers) == ["none", "none"], "no spread open: its layers are not drawn"
    mall = page.evaluate(f"""() => Array.from(markers.client.features.values()).find(f => f.count === {shops}).id""")
    spread = page.evaluate(f"() => markers.zoomToExpansion(markers.client.features.get({mall})).then(m => m.spread.length)")
    assert spread == shops
    assert page.evaluate(spread_layers) == ["visible", "visible"]
    page.wait_for_function(f"() => map.queryRenderedFeatures({{layers: ['pinwheel-spread-pins']}}).length === {shops}")
    screenshot(page, "maplibre-spread.png")
    page.evaluate("() => map.zoomTo(map.getZoom() - 1, {duration: 0})")
    assert page.evaluate(spread_layers) == ["none", "none"], "a zoom closes the spread and hides its layers"
    assert page.console_log.errors == []
