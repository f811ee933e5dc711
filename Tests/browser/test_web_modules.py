"""The shape of the browser modules: no function of web/pinwheel/ is longer than 150 lines (measured by
function_lengths.py, itself checked on sources whose lengths are known), the Leaflet layer touches
Leaflet's internals in one module that names the Leaflet version served, and no module reaches into
the client's private members."""

import re

from browser_support import ROOT
from function_lengths import functions_in, members_read
from test_browser_client import open_embed

MODULES = sorted((ROOT / "web" / "pinwheel").glob("*.js"))
LEAFLET_PARTS = [m for m in MODULES if m.name.startswith("leaflet")]
INTERNALS = ROOT / "web" / "pinwheel" / "leaflet-internals.js"
SERVED_LEAFLET = "/usr/share/javascript/leaflet/leaflet.js"
LONGEST_FUNCTION = 150
# Leaflet's own member every plugin reads (its plugin guide's layers use `this._map`).
LEAFLET_PLUGIN_MEMBERS = {"_map"}


def test_the_measure_finds_functions_of_every_form_and_their_lengths():
    body = "\n".join(f"    total += {i};" for i in range(149))
    source = f"""const re = /[{{}}]\\/{{2}}/g;  // braces in a regex
function long(a) {{
    let total = `${{a}} {{ in a template ${{ {{ nested: 1 }} }}`;
{body}
}}
const o = {{
    method(x) {{ if (x) {{ return '}}'; }} }},
    keyed: function () {{
        return [1, 2].map((v) => {{
            return v / 2;
        }});
    }},
}};
class C {{
    get connected() {{
        return true;
    }}
}}
"""
    found = {f.name: f.lines for f in functions_in(source)}
    assert found["long"] == 152
    assert found["method"] == 1 and found["keyed"] == 5 and found["connected"] == 3
    assert found["arrow at line 157"] == 3
    assert len(found) == 5, found


def test_no_function_in_the_browser_modules_is_longer_than_150_lines():
    longest = []
    for module in MODULES:
        for f in functions_in(module.read_text()):
            longest.append((f.lines, f"{module.name}:{f.first_line} {f.name}"))
    longest.sort(reverse=True)
    print("longest functions", longest[:5])
    assert len(longest) > 100, "the measure finds the modules' functions"
    assert longest[0][0] <= LONGEST_FUNCTION, longest[:3]


def test_the_leaflet_layer_touches_leaflet_internals_only_in_one_module_naming_the_version():
    # Every underscore member the layer's own modules define (mixin keys, `this._x =`) or its client has.
    ours = set(LEAFLET_PLUGIN_MEMBERS)
    for module in LEAFLET_PARTS + [ROOT / "web" / "pinwheel" / "client.js"]:
        text = module.read_text()
        ours |= set(re.findall(r"^\s+(_\w+)(?::\s*function|\s*\()", text, re.M))
        ours |= set(re.findall(r"this\.(_\w+)\s*=[^=]", text))
    outside = {}
    for module in LEAFLET_PARTS:
        if module == INTERNALS:
            continue
        members = members_read(module.read_text())
        used = {m for m in members if m.startswith("_")} - ours
        if used or "panBy" in members:
            outside[module.name] = sorted(used) + (["panBy"] if "panBy" in members else [])
    assert outside == {}, f"Leaflet internals outside leaflet-internals.js: {outside}"
    internals = INTERNALS.read_text()
    assert re.search(r"\._panAnim\b", internals) and re.search(r"_updatePath", internals)
    served = re.search(r'var version = "([\d.]+)"', open(SERVED_LEAFLET, encoding="utf-8").read()).group(1)
    assert f"Leaflet {served}" in internals
    assert f"LEAFLET_VERSION_WRITTEN_FOR = '{served}'" in internals


def test_no_module_reads_the_clients_private_members():
    for module in MODULES:
        if module.name == "client.js":
            continue
        assert not re.search(r"client\._\w+", module.read_text()), module.name


# What web/pinwheel/leaflet.js exported before its concerns moved to modules of their own.
LEAFLET_EXPORTS = {"DEFAULT_POINT_STYLE", "clusterColor", "defaultClusterIcon", "defaultPopup", "followHash",
                   "pinwheelLayer", "redrawWhileDragging", "shortCount", "viewFromHash"}


def test_the_leaflet_module_still_exports_what_it_did_and_the_layer_keeps_its_options(page, server):
    open_embed(page, server)
    found = page.evaluate("""async () => {
        const m = await import('/pinwheel/leaflet.js');
        const options = []; for (const k in window.markers.options) options.push(k);
        return {exports: Object.keys(m), options: options,
                methods: ['settled', 'animating', 'zoomToExpansion', 'leaves', 'children'].filter((k) => typeof window.markers[k] === 'function'),
                connected: window.markers.client.connected};
    }""")
    assert LEAFLET_EXPORTS <= set(found["exports"]), sorted(LEAFLET_EXPORTS - set(found["exports"]))
    assert {"clusterIcon", "pointStyle", "popup", "clusterPopup", "zoomOnClusterClick", "animate", "rate", "pace",
            "algorithm", "encoding", "presence", "pane"} <= set(found["options"])
    assert found["methods"] == ["settled", "animating", "zoomToExpansion", "leaves", "children"]
    assert found["connected"] is True
    page.evaluate("() => { window.markers.remove(); }")
    assert page.evaluate("() => window.markers.client.connected") is False
    assert page.console_log.errors == []
