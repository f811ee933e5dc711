"""What clusters hold, in the page: clusters drawn as donuts of their group shares with a legend, a ring
on those holding a flagged point, what they hold handed to a custom icon; the member list popup paging
through a cluster's points; `leaves` and `children` for `clusterclick` handlers, settled by their `req`,
an error, or a timeout. The page and its modules come from the real server; the stream comes from
contents_standin.py, which sends the protocol's cluster contents until the server does."""

import pytest

from browser_support import ARTIFACTS, wait_settled
from contents_standin import A, B, CENTRE, SILENT_ID, ContentsStandIn
from pinwheel_process import PinwheelServer, pinwheel_binary


@pytest.fixture
def standin():
    with ContentsStandIn() as s:
        yield s


def open_page(page, server, standin, extra=""):
    page.goto(f"{server.url}/?ws={standin.ws_url}&lat={CENTRE[0]}&lon={CENTRE[1]}&zoom=7{extra}")
    wait_settled(page)
    page.wait_for_timeout(100)  # icons are fitted a frame after the view completes


# The colour (RGBA) of cluster `id`'s sprite at `rho` pixels from its centre (as a share of its radius
# plus `extra` pixels), `degrees` clockwise from north.
PIXEL = """([id, share, extra, degrees]) => {
    const e = pinwheel.layer.markers.get(id), s = e.layer.options.sprite, ratio = s.canvas.width / s.size;
    const rho = s.radius * share + extra, a = degrees * Math.PI / 180;
    const x = Math.round((s.half + rho * Math.sin(a)) * ratio), y = Math.round((s.half - rho * Math.cos(a)) * ratio);
    return Array.from(s.canvas.getContext('2d').getImageData(x, y, 1, 1).data);
}"""


def near(rgba, hex_colour):
    want = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
    return rgba[3] > 200 and all(abs(a - b) <= 8 for a, b in zip(rgba[:3], want))


def test_clusters_are_donuts_of_their_groups_with_a_legend_and_a_ring_when_flagged(page, server, standin):
    open_page(page, server, standin)
    # A: 30 buses (0°–240°), 10 trams (240°–320°), 5 of other kinds (320°–360°) in the ring.
    ring = 0.87
    assert near(page.evaluate(PIXEL, [A["id"], ring, 0, 120]), "#38bdf8")
    assert near(page.evaluate(PIXEL, [A["id"], ring, 0, 280]), "#f472b6")
    assert near(page.evaluate(PIXEL, [A["id"], ring, 0, 340]), "#94a3b8")
    # The hole, below the label, is dark whatever the count.
    assert near(page.evaluate(PIXEL, [A["id"], 0.45, 0, 180]), "#0f172a")
    # B: all ferries.
    for degrees in (10, 100, 200, 300):
        assert near(page.evaluate(PIXEL, [B["id"], ring, 0, degrees]), "#a3e635")
    # The ring outside A (2 alerts), none outside B.
    assert near(page.evaluate(PIXEL, [A["id"], 1, 2.75, 45]), "#ef4444")
    assert page.evaluate(PIXEL, [B["id"], 1, 2.75, 45])[3] == 0
    # Each label fits the donut's hole.
    fits = page.evaluate(f"() => [{A['id']}, {B['id']}].map(id => pinwheel.layer.markers.get(id).layer.options.sprite.label)")
    assert all(0 < f["width"] <= f["room"] for f in fits), fits
    legend = page.evaluate("() => Array.from(document.querySelectorAll('.pw-legend > div'), d => d.textContent)")
    assert legend == ["kind", "bus", "tram", "ferry", "other", "holds alert"]
    page.screenshot(path=str(ARTIFACTS / "donuts-legend.png"))
    assert page.console_log.errors == []


def test_a_custom_cluster_icon_gets_what_the_cluster_holds(page, server, standin):
    open_page(page, server, standin)
    page.evaluate("""async (url) => {
        const { pinwheelLayer } = await import('/pinwheel/leaflet.js');
        pinwheel.map.removeLayer(pinwheel.layer);
        window.contents = {};
        pinwheel.layer = pinwheelLayer(url, {
            clusterIcon: (f, sizing, contents) => { window.contents[f.id] = contents; return { ring: null, segments: null, color: 'rgb(255, 0, 0)' }; },
        }).addTo(pinwheel.map);
    }""", standin.ws_url)
    page.wait_for_function(f"() => window.contents[{A['id']}] && window.contents[{B['id']}]")
    a = page.evaluate(f"() => window.contents[{A['id']}]")
    assert [(g["value"], g["index"], g["count"]) for g in a["groups"]] == [("bus", 0, 30), ("tram", 1, 10), (None, 3, 5)]
    assert a["flags"] == {"alert": 2} and a["flagged"] == 2
    assert page.evaluate(f"() => window.contents[{B['id']}].flagged") == 0
    # What the icon function returned wins: a plain red disc, no donut, no ring.
    assert near(page.evaluate(PIXEL, [A["id"], 0.87, 0, 120]), "#ff0000")
    assert page.console_log.errors == []


STATUS = "() => document.querySelector('.pw-members-status').textContent"
ITEMS = "() => Array.from(document.querySelectorAll('.pw-members-list .pw-member'), b => b.textContent)"


def test_the_member_list_pages_through_a_clusters_points(page, server, standin):
    open_page(page, server, standin, "&list=1")
    at = page.evaluate(f"() => {{ const p = pinwheel.map.latLngToContainerPoint([{A['lat']}, {A['lon']}]); return [p.x, p.y]; }}")
    page.mouse.click(*at)
    page.wait_for_function(f"() => document.querySelector('.pw-members-status') && ({STATUS})() === '1–20 of 45'")
    assert page.evaluate(ITEMS) == [f"Bus {i}" for i in range(20)]
    assert page.is_disabled(".pw-members-previous") and page.is_enabled(".pw-members-next")
    assert page.is_visible(".pw-members-next"), "the buttons stay in view below the scrolling list"
    page.wait_for_function("() => getComputedStyle(document.querySelector('.leaflet-popup')).opacity === '1'")
    page.screenshot(path=str(ARTIFACTS / "member-list.png"))
    page.click(".pw-members-next")
    page.wait_for_function(f"() => ({STATUS})() === '21–40 of 45'")
    assert page.evaluate(ITEMS) == [f"Bus {i}" for i in range(20, 30)] + [f"Tram {i}" for i in range(30, 40)]
    page.click(".pw-members-next")
    page.wait_for_function(f"() => ({STATUS})() === '41–45 of 45'")
    assert page.evaluate(ITEMS) == [f"Cable Car {i}" for i in range(40, 45)]
    assert page.is_disabled(".pw-members-next")
    page.click(".pw-members-previous")
    page.wait_for_function(f"() => ({STATUS})() === '21–40 of 45'")
    leaves = [(m["limit"], m["cursor"]) for m in standin.requests if m["type"] == "leaves"]
    assert leaves == [(20, None), (20, "20"), (20, "40"), (20, "20")]
    assert len({m["req"] for m in standin.requests if m["type"] == "leaves"}) == 4, "each request its own req"
    # A point chosen in the list opens its popup, as a click on it would.
    page.click(".pw-member >> text='Tram 35'")
    page.wait_for_function("() => document.querySelector('.pw-popup h3') && document.querySelector('.pw-popup h3').textContent === 'Tram 35'")
    assert page.console_log.errors == []


def test_clusterclick_handlers_fetch_leaves_and_children_and_requests_settle_by_error_or_timeout(page, server, standin):
    open_page(page, server, standin)
    page.evaluate("""() => {
        window.got = null;
        pinwheel.layer.options.zoomOnClusterClick = false;
        pinwheel.layer.on('clusterclick', async (e) => {
            const [all, kids] = [await e.leaves({limit: 50}), await e.children()];
            window.got = {total: all.total, points: all.points.length, next: all.next, children: kids.features.map((f) => f.id)};
        });
    }""")
    at = page.evaluate(f"() => {{ const p = pinwheel.map.latLngToContainerPoint([{A['lat']}, {A['lon']}]); return [p.x, p.y]; }}")
    page.mouse.click(*at)
    page.wait_for_function("() => window.got !== null")
    assert page.evaluate("() => window.got") == {"total": 45, "points": 45, "next": None, "children": [1000, 1001, 1002]}
    failures = page.evaluate(f"""async () => {{
        const settle = (p) => p.then(() => 'resolved', (e) => e.message);
        return [await settle(pinwheel.client.leaves(12345)),
                await settle(pinwheel.client.children({SILENT_ID}, {{timeoutMs: 300}}))];
    }}""")
    assert "unknown-feature" in failures[0] and "12345" in failures[0], failures
    assert "no answer to children" in failures[1], failures
    assert page.evaluate("() => pinwheel.client._requests.size") == 0
    # The server's error is still a console warning of the client's; nothing else went wrong.
    assert page.console_log.errors == []


# ---- With the real server: its `leaves` and `children` answers for the demo data's clusters -------------------


def test_the_member_list_of_a_real_cluster_pages_through_exactly_its_points(page, server):
    page.goto(f"{server.url}/?lat=48.85&lon=2.35&zoom=9&list=1")
    wait_settled(page)
    # The cluster nearest the centre holding 21 to 80 points: two to four pages of 20.
    cluster = page.evaluate("""() => {
        const m = pinwheel.map, c = m.getSize().divideBy(2);
        let best = null, bestD = Infinity;
        for (const e of pinwheel.layer.markers.values()) {
            if (e.feature.count <= 20 || e.feature.count > 80) continue;
            const p = m.latLngToContainerPoint(e.layer.getLatLng()), d = p.distanceTo(c);
            if (p.x > 60 && p.y > 260 && p.x < 900 && d < bestD) { bestD = d; best = {id: e.feature.id, count: e.feature.count, x: p.x, y: p.y}; }
        }
        return best;
    }""")
    assert cluster, "a cluster of 21 to 80 points in view"
    page.mouse.click(cluster["x"], cluster["y"])
    count = cluster["count"]
    page.wait_for_function(f"() => document.querySelector('.pw-members-status') && ({STATUS})() === '1–20 of {count}'")
    names = list(page.evaluate(ITEMS))
    pages = 1
    while page.is_enabled(".pw-members-next"):
        before = page.evaluate(STATUS)
        page.click(".pw-members-next")
        page.wait_for_function(f"() => ({STATUS})() !== {before!r} && !({STATUS})().startsWith('Loading')")
        names += page.evaluate(ITEMS)
        pages += 1
    assert len(names) == count and pages == (count + 19) // 20, (len(names), count, pages)
    assert page.evaluate(STATUS) == f"{20 * (pages - 1) + 1}–{count} of {count}"
    # The same cluster's children one zoom finer hold all its points.
    children = page.evaluate(f"() => pinwheel.layer.children(pinwheel.layer.markers.get({cluster['id']}).feature)")
    assert children["id"] == cluster["id"] and sum(f["count"] for f in children["features"]) == count
    assert all(f["parent"] == cluster["id"] for f in children["features"])
    # Every point once: the ids of all pages are distinct.
    ids = page.evaluate(f"""async () => {{
        const ids = []; let cursor = null;
        do {{ const a = await pinwheel.client.leaves({cluster['id']}, {{limit: 7, cursor}}); ids.push(...a.points.map(p => p.id)); cursor = a.next; }} while (cursor !== null);
        return ids;
    }}""")
    assert len(ids) == count == len(set(ids))
    page.screenshot(path=str(ARTIFACTS / "member-list-real.png"))
    assert page.console_log.errors == []


# ---- With the real server: `serve --group-by kind --flag …` on a CSV with a kind column -------------------

KINDS_CSV = ["bus"] * 6 + ["tram"] * 3 + ["ferry"]


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    """The real server on 400 points around (48, 10), a `kind` column of bus, tram and ferry, and a
    `status` column with some alarms."""
    folder = tmp_path_factory.mktemp("grouped")
    rows = ["lat,lon,kind,status"]
    for i in range(400):
        rows.append(f"{48 + (i % 20) * 0.05},{9 + (i // 20) * 0.1},{KINDS_CSV[i % 10]},{'alarm' if i % 37 == 0 else 'ok'}")
    (folder / "fleet.csv").write_text("\n".join(rows) + "\n")
    server = PinwheelServer(pinwheel_binary(), ["--data", str(folder / "fleet.csv"), "--group-by", "kind",
                                                "--flag", 'alert=["==",["get","status"],"alarm"]']).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def test_the_real_servers_clusters_are_donuts_of_their_kinds_with_a_legend(page, grouped):
    page.goto(f"{grouped.url}/?lat=48.5&lon=10&zoom=7")
    wait_settled(page)
    page.wait_for_timeout(100)
    hello = page.evaluate("() => pinwheel.state.hello")
    assert hello["groups"] == {"column": "kind", "values": ["bus", "tram", "ferry"]} and hello["flags"] == ["alert"]
    clusters = page.evaluate("() => Array.from(pinwheel.layer.markers.values()).filter(e => e.feature.count > 1).map(e => e.feature)")
    assert clusters and all(sum(c for _, c in f["groups"]) == f["count"] for f in clusters)
    big = max(clusters, key=lambda f: f["count"])
    # Its first group's colour at the middle of that group's share of the ring.
    first_index, first_count = big["groups"][0]
    colour = ["#38bdf8", "#f472b6", "#a3e635"][first_index]
    assert near(page.evaluate(PIXEL, [big["id"], 0.87, 0, 180 * first_count / big["count"]]), colour)
    ringed = [f for f in clusters if f["flags"][0] > 0]
    assert ringed and near(page.evaluate(PIXEL, [ringed[0]["id"], 1, 2.75, 45]), "#ef4444")
    legend = page.evaluate("() => Array.from(document.querySelectorAll('.pw-legend > div'), d => d.textContent)")
    assert legend == ["kind", "bus", "tram", "ferry", "other", "holds alert"]
    page.screenshot(path=str(ARTIFACTS / "donuts-real.png"))
    assert page.console_log.errors == []
