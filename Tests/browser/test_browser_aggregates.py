"""The page with `serve --aggregate`: a click on a cluster opens a popup with its aggregates, and its
button zooms in as a plain click on a cluster does; the binary encoding carries the aggregates the
JSON one does."""

import csv
import json

import pytest
from binary_frames import on_grid
from browser_support import ROOT, held_after_each_view, open_map, running_server, served_in_both_encodings, wait_settled


@pytest.fixture(scope="module")
def aggregating_server(tmp_path_factory):
    """The demo's cities with a `pop` column (row number mod 1000), served with two aggregates."""
    path = tmp_path_factory.mktemp("data") / "cities-pop.csv"
    with open(ROOT / "data" / "geonames_rg_cities1000_145k.csv", newline="", encoding="utf-8") as source, \
            open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        for i, row in enumerate(csv.reader(source)):
            writer.writerow(row + (["pop"] if i == 0 else [str(i % 1000)]))
    with running_server(["--data", str(path), "--aggregate", "people=sum(pop)", "--aggregate", "biggest=max(pop)"]) as s:
        yield s


@pytest.mark.parametrize("algorithm", ["hierarchical", "pca-tree"])
def test_a_click_on_a_cluster_shows_its_aggregates_and_its_button_zooms_in(page, aggregating_server, algorithm):
    open_map(page, aggregating_server, 48.0, 10.0, 5, algorithm=algorithm)
    cluster = page.evaluate(
        """() => {
            const m = pinwheel.map, c = m.getSize().divideBy(2);
            let best = null, bestD = Infinity;
            for (const [id, e] of pinwheel.state.markers) {
                if (e.feature.count < 2) continue;
                const p = m.latLngToContainerPoint(e.layer.getLatLng()), d = p.distanceTo(c);
                if (d < bestD) { bestD = d; best = {id: id, x: p.x, y: p.y, count: e.feature.count,
                                                    aggregates: e.feature.aggregates}; }
            }
            return best;
        }"""
    )
    assert cluster is not None and cluster["aggregates"]["people"] > 0
    assert 0 <= cluster["aggregates"]["biggest"] <= 999
    zoom = page.evaluate("() => pinwheel.map.getZoom()")
    page.mouse.click(cluster["x"], cluster["y"])
    page.wait_for_selector(".pw-popup h3")
    assert page.inner_text(".pw-popup h3") == f"{cluster['count']:,} points"
    rows = page.eval_on_selector_all(".pw-popup tr", "rows => rows.map(r => Array.from(r.cells, c => c.textContent))")
    assert rows == [["people (sum of pop)", f"{cluster['aggregates']['people']:,}"],
                    ["biggest (max of pop)", f"{cluster['aggregates']['biggest']:,}"]]
    page.click(".pw-popup button")
    page.wait_for_function(f"() => pinwheel.map.getZoom() > {zoom}")
    wait_settled(page)
    assert cluster["id"] not in page.evaluate("() => Array.from(pinwheel.state.markers.keys())")
    assert page.console_log.errors == []


def test_the_binary_encoding_carries_the_aggregates_the_json_one_does(page, aggregating_server):
    page.goto(f"{aggregating_server.url}/")
    views = [{"bbox": [-18.0, 35.0, 38.0, 60.0], "zoom": 5, "width": 1280, "height": 800, "tileSize": 256}]
    _, decoded, texts = served_in_both_encodings(page, aggregating_server, views)
    [got], [want] = held_after_each_view(decoded), held_after_each_view(map(json.loads, texts))
    assert got == {i: on_grid(f) for i, f in want.items()}
    clusters = [f for f in want.values() if f["count"] > 1]
    assert clusters and all(set(f["aggregates"]) == {"people", "biggest"} for f in clusters)
