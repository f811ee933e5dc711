"""--producer-tokens: a producer whose token names a tenant changes only that tenant's points. A line
outside its tenant is refused with its reason and the other lines apply, over HTTP and over the
ingest socket; the all-powerful --ingest-token-file token still changes anything."""

import json
import time

from identity import TENANT_IDS, ScopedViewer
from ingest import post_changes
from live_patch import TOKEN
from websockets.sync.client import connect

ACME_TOKEN = "acme-producer-token-0001"
GLOBEX_TOKEN = "globex-producer-token-0002"


def serve_live(start_server, points_csv, tmp_path):
    tokens = tmp_path / "producers"
    tokens.write_text(f"# token tenant\n{ACME_TOKEN} acme\n{GLOBEX_TOKEN}\tglobex\n")
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    return start_server(["--data", str(points_csv), "--data-dir", str(tmp_path / "data"),
                         "--ingest-token-file", str(token_file), "--producer-tokens", str(tokens)])


def position(points_csv, point_id):
    """(lat, lon) of a point as the CSV gives it."""
    for line in points_csv.read_text().splitlines()[1:]:
        fields = line.split(",")
        if int(fields[0]) == point_id:
            return float(fields[1]), float(fields[2])
    raise KeyError(point_id)


def shown_at(server, point_id, lat, lon):
    """Whether an anonymous viewer sees point `point_id` alone at (lat, lon), looking closely there."""
    viewer = ScopedViewer(server.ws_url, None).greeted()
    try:
        seen = {}
        for batch in viewer.view((lon - 0.002, lat - 0.002, lon + 0.002, lat + 0.002), 17):
            for f in batch.get("update", []) + batch.get("add", []):
                seen[f["id"]] = f
        f = seen.get(point_id)
        return f is not None and abs(f["lat"] - lat) < 1e-6 and abs(f["lon"] - lon) < 1e-6
    finally:
        viewer.close()


def test_http_producer_outside_its_tenant_is_refused_per_line(start_server, points_csv, tmp_path):
    server = serve_live(start_server, points_csv, tmp_path)
    own, theirs = TENANT_IDS["acme"][0], TENANT_IDS["globex"][0]
    theirs_at = position(points_csv, theirs)
    assert shown_at(server, theirs, *theirs_at)
    changes = [
        {"op": "upsert", "id": own, "lat": 51.0, "lon": 5.0, "properties": {"tenant": "acme", "kind": "van"}},
        {"op": "upsert", "id": "acme-new", "lat": 51.1, "lon": 5.1, "properties": {"tenant": "globex"}},
        {"op": "upsert", "id": theirs, "lat": 51.2, "lon": 5.2, "properties": {"tenant": "acme"}},
        {"op": "delete", "id": theirs},
        {"op": "upsert", "id": "acme-bare", "lat": 51.3, "lon": 5.3},
        {"op": "upsert", "id": "acme-new-2", "lat": 51.4, "lon": 5.4, "properties": {"tenant": "acme"}},
    ]
    status, answer, _ = post_changes(server.port, ACME_TOKEN, changes)
    assert status == 200, answer
    assert answer["accepted"] == 2
    rejected = {r["line"]: r["error"] for r in answer["rejected"]}
    assert sorted(rejected) == [2, 3, 4, 5]
    assert 'must have tenant "acme", this one has "globex"' in rejected[2]
    assert rejected[3] == rejected[4] == "outside this producer's tenant: the point belongs to another tenant"
    assert "no tenant" in rejected[5]
    # The other tenant's point is where it was; the in-scope move applied.
    # Once the index shows the in-scope move, the other tenant's point is still where it was.
    deadline = time.monotonic() + 10
    while not shown_at(server, own, 51.0, 5.0):
        assert time.monotonic() < deadline, "the accepted move never reached the index"
        time.sleep(0.1)
    assert shown_at(server, theirs, *theirs_at)
    # The all-powerful token still changes any point.
    status, answer, _ = post_changes(server.port, TOKEN, [{"op": "delete", "id": theirs}])
    assert (status, answer["accepted"], answer["rejected"]) == (200, 1, [])


def test_socket_producer_is_limited_to_its_tenant(start_server, points_csv, tmp_path):
    server = serve_live(start_server, points_csv, tmp_path)
    own, theirs = TENANT_IDS["globex"][1], TENANT_IDS["acme"][1]
    lines = [
        {"op": "upsert", "id": theirs, "lat": 50.5, "lon": 6.5, "properties": {"tenant": "globex"}},
        {"op": "upsert", "id": own, "lat": 50.6, "lon": 6.6, "properties": {"tenant": "globex"}},
    ]
    with connect(server.ws_url, subprotocols=["pinwheel.ingest.v1"],
                 additional_headers={"Authorization": f"Bearer {GLOBEX_TOKEN}"}) as ws:
        ws.send("".join(json.dumps(c) + "\n" for c in lines))
        ack = json.loads(ws.recv(timeout=10))
    assert ack["type"] == "ack" and ack["accepted"] == 1
    assert [r["line"] for r in ack["rejected"]] == [1]
    assert "another tenant" in ack["rejected"][0]["error"]


def test_bad_producer_token_file_stops_the_server(points_csv, tmp_path):
    import subprocess

    from pinwheel_process import WEB, pinwheel_binary

    bad = tmp_path / "producers"
    bad.write_text(f"{ACME_TOKEN} acme\nshort acme\n")
    done = subprocess.run([pinwheel_binary(), "serve", "--port", "0", "--web", str(WEB), "--data", str(points_csv),
                           "--data-dir", str(tmp_path / "data"), "--producer-tokens", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"--producer-tokens {bad}:2: a token must be at least 16 characters" in done.stderr
