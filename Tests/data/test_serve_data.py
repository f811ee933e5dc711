"""Loading real-world data files with `pinwheel serve --data`: unlocated GeoJSON features, bad rows
under `--on-bad-row`, text ids, and cluster aggregates, checked against the real server."""

import json
import subprocess
import urllib.request

import pytest
from pinwheel_process import WEB, pinwheel_binary, running_server
from viewer import Viewer

WORLD = [-180, -85, 180, 85]


def feature(fid, geometry, **properties):
    return {"type": "Feature", "id": fid, "geometry": geometry, "properties": properties}


def point(lon, lat):
    return {"type": "Point", "coordinates": [lon, lat]}


@pytest.fixture
def export(tmp_path):
    """A GeoJSON export as real ones come: string ids, two unlocated features, a Polygon, altitude, bbox."""
    features = [
        feature("way/1", None, name="no place", pop=1),
        feature("node/2", point(2.35, 48.85), name="a", pop=10),
        feature("relation/3", {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}, name="p"),
        feature("node/4", {"type": "Point", "coordinates": [2.36, 48.86, 35.0]}, name="b", pop=20),
        feature("way/5", None, name="also no place"),
        feature("node/6", point(2.37, 48.84), name="c", pop=5),
    ]
    path = tmp_path / "export.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "bbox": [0, 0, 3, 49], "features": features}))
    return path


def metrics(server):
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:
        return response.read().decode()


def world_features(viewer):
    """The features a whole-world viewport at zoom 0 brings."""
    viewer.ws.send(json.dumps({"type": "viewport", "seq": 1, "bbox": WORLD, "zoom": 0, "width": 512, "height": 512}))
    features = []
    while True:
        batch = viewer.receive("batch")
        features += batch["add"]
        viewer.ws.send(json.dumps({"type": "ack", "batch": batch["batch"], "applied": len(batch["add"]), "ms": 1}))
        if batch["done"]:
            return features


def test_an_export_with_null_geometries_a_polygon_and_string_ids_loads_under_skip(export):
    with running_server(["--data", str(export), "--on-bad-row", "skip",
                         "--aggregate", "people=sum(pop)", "--aggregate", "largest=max(pop)"]) as server:
        with Viewer(server.ws_url) as viewer:
            dataset = viewer.hello["dataset"]
            assert (dataset["points"], dataset["unlocated"], dataset["skipped"]) == (3, 2, 1)
            assert dataset["aggregates"] == [{"name": "people", "op": "sum", "column": "pop"},
                                             {"name": "largest", "op": "max", "column": "pop"}]
            [cluster] = world_features(viewer)
            assert cluster["count"] == 3
            assert cluster["aggregates"] == {"people": 35, "largest": 20}
        text = metrics(server)
        assert 'pinwheel_dataset_rows_left_out{reason="bad"} 1' in text
        assert 'pinwheel_dataset_rows_left_out{reason="unlocated"} 2' in text
        assert "pinwheel_dataset_points 3" in text


def test_the_same_export_is_refused_under_fail_naming_the_feature(export):
    result = subprocess.run([pinwheel_binary(), "serve", "--port", "0", "--web", str(WEB), "--data", str(export)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "line 1, features[2].geometry.type: a Polygon geometry is not a point" in result.stderr
    assert "--on-bad-row skip" in result.stderr


def test_a_csv_with_three_bad_rows_among_100000_starts_under_skip_and_reports_three(tmp_path):
    path = tmp_path / "places.csv"
    bad = {10: "10,91,0,north of the pole", 50_000: "50000,1", 99_999: "99999,1,east,x"}
    lines = ["id,lat,lon,name"] + [bad.get(i, f"{i},{i % 170 - 85}.5,{i % 359 - 179}.25,p{i}") for i in range(100_000)]
    path.write_text("\n".join(lines) + "\n")
    with running_server(["--data", str(path), "--on-bad-row", "skip"]) as server:
        with Viewer(server.ws_url) as viewer:
            assert viewer.hello["dataset"]["skipped"] == 3
            assert viewer.hello["dataset"]["points"] == 99_997
        assert 'pinwheel_dataset_rows_left_out{reason="bad"} 3' in metrics(server)
