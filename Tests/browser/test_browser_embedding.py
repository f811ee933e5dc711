"""The layer inside someone else's app: drawn above the app's overlays and taking the clicks on its
markers from the layers beneath."""

import base64
import re

import pytest

from browser_support import markers, open_map, screenshot, wait_settled

EUROPE = (48.0, 10.0, 5)
# The polygon's fill (#22c55e at 0.85) over the demo's dark basemap.
POLYGON_GREEN = (32, 171, 87)

PIXEL = """async ([png, x, y]) => {
    // Decoded here: the page's CSP allows no data: connections.
    const bytes = Uint8Array.from(atob(png), (ch) => ch.charCodeAt(0));
    const img = await createImageBitmap(new Blob([bytes], {type: 'image/png'}));
    const c = new OffscreenCanvas(img.width, img.height), ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    return Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3));
}"""


def pixel(page, png, x, y):
    return tuple(page.evaluate(PIXEL, [base64.b64encode(png).decode(), x, y]))


def near(rgb, wanted, tolerance=40):
    return sum(abs(a - b) for a, b in zip(rgb, wanted)) < tolerance


def cluster_near_center(page, min_count=2):
    """The cluster nearest the middle of the screen, as {id, count, x, y}."""
    return page.evaluate(
        """(minCount) => {
            const m = pinwheel.map, c = m.getSize().divideBy(2);
            let best = null, bestD = Infinity;
            for (const [id, e] of pinwheel.state.markers) {
                if (e.feature.count < minCount) continue;
                const p = m.latLngToContainerPoint(e.layer.getLatLng()), d = p.distanceTo(c);
                if (d < bestD) { bestD = d; best = {id: id, count: e.feature.count, x: p.x, y: p.y}; }
            }
            return best;
        }""",
        min_count,
    )


def add_polygon_layer(page, renderer):
    """An interactive GeoJSON polygon over all of Europe, added after the Pinwheel layer (with Leaflet's
    default overlay pane and its canvas or SVG renderer), counting the clicks it gets."""
    page.evaluate(
        """(renderer) => {
            window.polygonClicks = 0;
            const land = {type: 'Feature', properties: {}, geometry: {type: 'Polygon',
                coordinates: [[[-30, 25], [60, 25], [60, 72], [-30, 72], [-30, 25]]]}};
            window.polygons = L.geoJSON(land, {
                renderer: renderer === 'svg' ? L.svg() : L.canvas(),
                style: {color: '#166534', weight: 2, fillColor: '#22c55e', fillOpacity: 0.85},
            }).on('click', () => { window.polygonClicks++; }).addTo(pinwheel.map);
            window.clusterClicks = [];
            pinwheel.layer.on('clusterclick', (e) => window.clusterClicks.push(e.feature.id));
        }""",
        renderer,
    )


@pytest.mark.parametrize("renderer", ["canvas", "svg"])
def test_markers_draw_above_a_polygon_layer_added_later_and_take_their_clicks(page, server, renderer):
    open_map(page, server, *EUROPE)
    add_polygon_layer(page, renderer)
    pane = page.evaluate("() => { const c = pinwheel.layer._renderer._container; "
                         "return {pane: c.parentElement.className, z: getComputedStyle(c.parentElement).zIndex}; }")
    assert "leaflet-pinwheel-pane" in pane["pane"] and int(pane["z"]) > 400, pane
    cluster = cluster_near_center(page)
    assert cluster is not None
    # On screen, the cluster covers the polygon; with the layer's pane hidden, the polygon shows there.
    png = screenshot(page, f"embedding-polygon-{renderer}.png").read_bytes()
    page.evaluate("() => { pinwheel.layer._renderer._container.parentElement.style.display = 'none'; }")
    hidden = page.screenshot()
    page.evaluate("() => { pinwheel.layer._renderer._container.parentElement.style.display = ''; }")
    at = (round(cluster["x"]), round(cluster["y"]))
    assert not near(pixel(page, png, *at), POLYGON_GREEN), f"the cluster is drawn over the polygon: {pixel(page, png, *at)}"
    assert near(pixel(page, hidden, *at), POLYGON_GREEN), "without the layer the polygon shows at the cluster's place"

    # Over a marker the pointer is a hand.
    page.mouse.move(cluster["x"], cluster["y"])
    page.wait_for_function("() => pinwheel.map.getContainer().style.cursor === 'pointer'")
    zoom = page.evaluate("() => pinwheel.map.getZoom()")
    page.mouse.click(cluster["x"], cluster["y"])
    page.wait_for_function(f"() => window.clusterClicks.includes({cluster['id']})")
    page.wait_for_function(f"() => pinwheel.map.getZoom() > {zoom}")
    wait_settled(page)
    assert page.evaluate("() => window.polygonClicks") == 0, "the polygon beneath did not get the marker's click"
    assert cluster["id"] not in markers(page)

    # Away from every marker, the polygon still gets its clicks.
    empty = page.evaluate(
        """() => {
            const m = pinwheel.map, size = m.getSize();
            for (let y = 40; y < size.y - 40; y += 23) {
                for (let x = 40; x < size.x - 40; x += 23) {
                    const ll = m.containerPointToLatLng([x, y]);
                    if (ll.lat < 27 || ll.lat > 70 || ll.lng < -28 || ll.lng > 58) continue;
                    const p = m.containerPointToLayerPoint([x, y]);
                    let near = false;
                    for (const e of pinwheel.state.markers.values()) {
                        if (e.layer._point && e.layer._point.distanceTo(p) < e.layer._radius + 12) { near = true; break; }
                    }
                    if (!near) return {x: x, y: y};
                }
            }
            return null;
        }"""
    )
    assert empty is not None
    page.mouse.click(empty["x"], empty["y"])
    page.wait_for_function("() => window.polygonClicks === 1")
    assert page.console_log.errors == []


def test_the_pane_option_puts_the_markers_in_another_pane(page, server):
    open_map(page, server, *EUROPE)
    page.evaluate(
        """() => {
            const old = pinwheel.layer;
            pinwheel.map.removeLayer(old);
            const Layer = Object.getPrototypeOf(old).constructor;
            window.other = new Layer(old.client.url, {pane: 'shadowPane'}).addTo(pinwheel.map);
        }"""
    )
    page.wait_for_function("() => window.other.settled() && window.other.markers.size > 0")
    assert page.evaluate("() => window.other._renderer._container.parentElement.className").find("leaflet-shadow-pane") >= 0
    assert page.console_log.errors == []


def test_only_the_connection_status_is_a_live_region(page, server):
    open_map(page, server, *EUROPE)
    live = page.evaluate(
        """() => Array.from(document.querySelectorAll('[aria-live], [role=status], [role=alert], [role=log]'), e => e.id)""")
    assert live == ["hud-conn", "hud-refusal"]
    for figure in ("hud-points", "hud-adds", "hud-bytes", "hud-settled"):
        assert page.evaluate(f"() => document.getElementById('{figure}').closest('[aria-live], [role=status], [role=alert]')") is None
    assert page.evaluate("() => pinwheel.layer._renderer._container.getAttribute('aria-hidden')") == "true"


def keyboard_buttons(page):
    """The accessibility tree of the map's list of markers: [(role, name)] from Playwright's aria snapshot."""
    snapshot = page.locator(".pw-keyboard").aria_snapshot()
    return snapshot, re.findall(r'- button "([^"]*)"', snapshot)


def test_markers_in_view_are_named_buttons_and_enter_opens_a_cluster(page, server):
    open_map(page, server, *EUROPE)
    page.wait_for_function("() => document.querySelectorAll('.pw-keyboard button').length > 10")
    snapshot, names = keyboard_buttons(page)
    assert snapshot.startswith('- list "Markers in view"'), snapshot[:200]
    clusters = [n for n in names if n.startswith("Cluster of ")]
    assert clusters, names[:10]
    counts = [int(n.split()[2].replace(",", "")) for n in clusters]
    assert counts == sorted(counts, reverse=True), "the largest clusters first"
    in_view = page.evaluate(
        """() => { const m = pinwheel.map, s = m.getSize(); let n = 0, top = 0;
                   for (const e of pinwheel.state.markers.values()) {
                       const p = m.latLngToContainerPoint(e.layer.getLatLng());
                       if (p.x >= -4 && p.y >= -4 && p.x <= s.x + 4 && p.y <= s.y + 4 && e.feature.count > 1) {
                           n++; top = Math.max(top, e.feature.count); } }
                   return {clusters: n, top: top}; }""")
    assert counts[0] == in_view["top"]
    assert len(clusters) == min(in_view["clusters"], 150)

    # Tab from the map reaches the first marker; Enter opens it as a click does.
    page.evaluate("() => { window.clusterClicks = []; pinwheel.layer.on('clusterclick', e => window.clusterClicks.push(e.feature.id)); }")
    page.focus("#map")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.textContent")
    assert focused == names[0]
    ring = page.evaluate("() => getComputedStyle(document.querySelector('.pw-focus-ring')).display")
    assert ring == "block", "the focused marker is ringed on the map"
    screenshot(page, "keyboard-focus.png")
    zoom = page.evaluate("() => pinwheel.map.getZoom()")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.clusterClicks.length === 1")
    page.wait_for_function(f"() => pinwheel.map.getZoom() > {zoom}")
    wait_settled(page)
    # The list follows the new view, and focus stays in it.
    page.wait_for_function("() => document.activeElement && document.activeElement.closest('.pw-keyboard') !== null")
    assert page.console_log.errors == []


def test_enter_on_a_point_opens_its_popup(page, server):
    open_map(page, server, 48.85, 2.35, 12, algorithm="hierarchical")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.pw-keyboard button')).some(b => !b.textContent.startsWith('Cluster of'))")
    _, names = keyboard_buttons(page)
    point = next(n for n in names if not n.startswith("Cluster of"))
    page.get_by_role("button", name=point, exact=True).first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".pw-popup h3")
    assert page.inner_text(".pw-popup h3") == point
    assert page.console_log.errors == []
