"""What clusters hold, against the real `pinwheel serve`: `--group-by` and `--flag` counts in every
cluster, exact before and after producers change points (kinds included, and a kind first seen after
load); `children` and `leaves` answers, leaves paged by cursor partitioning a cluster's points; the
requests' limits (over-cap `limit`, bad cursor, unknown id, rate) refused by field; bad options
refused at start naming the option."""

import json
import math
import random
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from websockets.sync.client import connect  # noqa: E402

from ingest import post_changes  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402

KINDS = ["bus", "tram", "ferry", "taxi"]
WORLD = [-180, -85, 180, 85]
# The points lie in 40–55°N, 5°W–20°E; views are centred on them.
CENTRE = (47.5, 7.5)


def box(zoom, width=1280, height=800):
    """The bbox a width × height map on 512-px tiles shows around CENTRE at `zoom`."""
    world = 512 * 2 ** zoom
    cx = (CENTRE[1] + 180) / 360 * world
    cy = (1 - math.log(math.tan(math.pi / 4 + math.radians(CENTRE[0]) / 2)) / math.pi) / 2 * world

    def lat(y):
        return math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * y / world))))

    return [(cx - width / 2) / world * 360 - 180, lat(cy + height / 2), (cx + width / 2) / world * 360 - 180,
            lat(cy - height / 2)]
FLAG = 'late=["==",["get","status"],"late"]'


def write_points(path, n=3000, seed=7):
    """n points over Europe: kind by weight, status late for every fifth; returns {id: (kind, status)}."""
    rng = random.Random(seed)
    rows, truth = ["id,lat,lon,kind,status"], {}
    for i in range(n):
        kind = rng.choices(KINDS, weights=[8, 4, 2, 1])[0]
        status = "late" if i % 5 == 0 else "ok"
        rows.append(f"{i},{rng.uniform(40, 55):.5f},{rng.uniform(-5, 20):.5f},{kind},{status}")
        truth[i] = (kind, status)
    path.write_text("\n".join(rows) + "\n")
    return truth


class Session:
    """A JSON session that acknowledges batches and keeps what it was sent, by id."""

    def __init__(self, ws_url):
        self._stack = ExitStack()
        self.ws = self._stack.enter_context(connect(ws_url, subprotocols=["pinwheel.v1"], max_size=None))
        self.hello = json.loads(self.ws.recv(timeout=10))
        self.features = {}
        self.seq = 0

    def close(self):
        self._stack.close()

    def view(self, zoom, whole_world=False):
        """Sends a viewport (around CENTRE, or the whole world at zoom 0) and applies its batches until
        done; returns the features shown."""
        self.seq += 1
        bbox, width, height = (WORLD, 512, 512) if whole_world else (box(zoom), 1280, 800)
        self.ws.send(json.dumps({"type": "viewport", "seq": self.seq, "bbox": bbox, "zoom": zoom,
                                 "width": width, "height": height}))
        while True:
            m = json.loads(self.ws.recv(timeout=10))
            assert m["type"] != "error", m
            if m["type"] != "batch":
                continue
            for i in m["remove"]:
                self.features.pop(i, None)
            for f in m["update"] + m["add"]:
                self.features[f["id"]] = f
            self.ws.send(json.dumps({"type": "ack", "batch": m["batch"], "applied": 1, "ms": 0.1}))
            if m["done"] and m["seq"] == self.seq:
                return dict(self.features)

    def ask(self, request):
        """Sends a children or leaves request; returns its answer or error, waiting out rate limits."""
        while True:
            self.ws.send(json.dumps(request))
            while True:
                m = json.loads(self.ws.recv(timeout=10))
                if m["type"] in ("children", "leaves") and m["req"] == request["req"]:
                    return m
                if m["type"] == "error":
                    break
            if m["code"] != "rate-limited":
                return m
            assert 0 < m["retryMs"] <= 1000, m
            time.sleep(m["retryMs"] / 1000)

    def all_leaves(self, cluster_id, limit):
        """Every page of a cluster's points; returns (points, totals, pages)."""
        points, totals, cursor, pages = [], set(), None, 0
        while True:
            pages += 1
            m = self.ask({"type": "leaves", "id": cluster_id, "req": pages, "limit": limit, "cursor": cursor})
            assert m["type"] == "leaves", m
            assert len(m["points"]) <= limit
            points += m["points"]
            totals.add(m["total"])
            cursor = m["next"]
            if cursor is None:
                return points, totals, pages


def expected_contents(hello, kinds_by_id, ids):
    """The groups and flags a cluster holding `ids` must carry, by hello's values."""
    values = hello["groups"]["values"]
    groups = {}
    late = 0
    for i in ids:
        kind, status = kinds_by_id[i]
        index = values.index(kind) if kind in values else len(values)
        groups[index] = groups.get(index, 0) + 1
        late += status == "late"
    return sorted([k, v] for k, v in groups.items()), [late]


def check_every_cluster(session, truth, zoom, limit=50):
    """Each cluster in the world view: its groups sum to its count, its flags count its late
    points, and both equal what its paged leaves hold; the pages partition its points."""
    shown = session.view(zoom)
    clusters = [f for f in shown.values() if f["count"] > 1]
    assert clusters, f"no clusters at zoom {zoom}"
    for c in sorted(clusters, key=lambda c: -c["count"])[:6]:
        assert sum(n for _, n in c["groups"]) == c["count"], c
        points, totals, pages = session.all_leaves(c["id"], limit)
        ids = [p["id"] for p in points]
        assert totals == {c["count"]}, (c, totals)
        assert len(ids) == len(set(ids)) == c["count"], "pages partition the cluster's points"
        assert ids == sorted(ids)
        assert pages == max(1, -(-c["count"] // limit))
        assert all(p["properties"]["kind"] == truth[p["id"]][0] for p in points)
        groups, flags = expected_contents(session.hello, truth, ids)
        assert c["groups"] == groups, (c, groups)
        assert c["flags"] == flags, (c, flags)


def test_contents_children_and_leaves_stay_exact_under_changes(tmp_path):
    truth = write_points(tmp_path / "points.csv")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    args = ["--data", str(tmp_path / "points.csv"), "--group-by", "kind", "--flag", FLAG,
            "--data-dir", str(tmp_path / "data"), "--ingest-token-file", str(token), "--max-zoom", "14",
            # No compaction while the test reads: the changes stay laid over the first build, which
            # is what must count exactly (and the cluster ids it reads stay the ones it was shown).
            "--compaction-interval", "3600"]
    server = PinwheelServer(pinwheel_binary(), args).start()
    try:
        session = Session(server.ws_url)
        hello = session.hello
        assert hello["groups"] == {"column": "kind", "values": KINDS}
        assert hello["flags"] == ["late"]
        assert hello["options"]["maxZoom"] == 14 and "nodeSize" not in hello["options"]
        for zoom in (2, 5):
            check_every_cluster(session, truth, zoom)

        # Children one zoom down: their counts and breakdowns add up to the cluster's.
        top = max(session.view(3).values(), key=lambda f: f["count"])
        answer = session.ask({"type": "children", "id": top["id"], "req": 900})
        assert answer["type"] == "children" and answer["id"] == top["id"]
        assert sum(f["count"] for f in answer["features"]) == top["count"]
        assert all(f["parent"] == top["id"] for f in answer["features"])
        summed = {}
        for f in answer["features"]:
            for k, n in f.get("groups", []) if f["count"] > 1 else [[KINDS.index(f["properties"]["kind"]), 1]]:
                summed[k] = summed.get(k, 0) + n
        assert sorted([k, n] for k, n in summed.items()) == top["groups"]

        # Producers move points, change kinds (one to a kind first seen now: "other") and statuses.
        rng = random.Random(3)
        changes = []
        for i in rng.sample(sorted(truth), 400):
            kind = rng.choice(KINDS + ["hovercraft"])
            status = rng.choice(["late", "ok"])
            changes.append({"op": "upsert", "id": i, "lat": rng.uniform(40, 55), "lon": rng.uniform(-5, 20),
                            "properties": {"kind": kind, "status": status}})
            truth[i] = (kind, status)
        for i in rng.sample(sorted(truth), 100):
            changes.append({"op": "delete", "id": i})
            truth.pop(i)
        status, reply, _ = post_changes(server.port, TOKEN, changes)
        assert status == 200 and reply["accepted"] == len(changes), reply
        # Acknowledged means durable; the index shows changes at its next refresh.
        deadline = time.monotonic() + 10
        while sum(f["count"] for f in session.view(0, whole_world=True).values()) != len(truth):
            assert time.monotonic() < deadline, "the changes never reached the index"
            time.sleep(0.2)
        for zoom in (2, 5, 8):
            check_every_cluster(session, truth, zoom, limit=37)
        session.close()
    finally:
        server.stop()
        server.log.close()


def test_requests_past_their_limits_are_refused_by_field(tmp_path):
    write_points(tmp_path / "points.csv", n=500)
    server = PinwheelServer(pinwheel_binary(), ["--data", str(tmp_path / "points.csv"), "--group-by", "kind"]).start()
    try:
        session = Session(server.ws_url)
        cluster = max(session.view(3).values(), key=lambda f: f["count"])
        # Each refusal names the request's req, so a client settles exactly that request.
        over = session.ask({"type": "leaves", "id": cluster["id"], "req": 1, "limit": 501})
        assert over["code"] == "invalid-field" and over["field"] == "limit" and over["req"] == 1, over
        bad = session.ask({"type": "leaves", "id": cluster["id"], "req": 2, "cursor": "nonsense"})
        assert bad["code"] == "invalid-field" and bad["field"] == "cursor" and bad["req"] == 2, bad
        unknown = session.ask({"type": "children", "id": 5 * 2**32 + 4_000_000, "req": 3})
        assert unknown["code"] == "unknown-feature" and unknown["field"] == "id" and unknown["req"] == 3, unknown
        # A req that cannot be read is named by field, with no req.
        no_req = session.ask({"type": "leaves", "id": cluster["id"], "req": -1})
        assert no_req["code"] == "invalid-field" and no_req["field"] == "req" and "req" not in no_req, no_req
        # Default page: 100 points.
        page = session.ask({"type": "leaves", "id": cluster["id"], "req": 4})
        assert len(page["points"]) == min(100, cluster["count"])
        # A burst past 4 at once: the rest are refused with when to retry.
        for req in range(10, 20):
            session.ws.send(json.dumps({"type": "children", "id": cluster["id"], "req": req}))
        answers = [json.loads(session.ws.recv(timeout=10)) for _ in range(10)]
        limited = [a for a in answers if a["type"] == "error"]
        assert all(a["code"] == "rate-limited" and a["retryMs"] > 0 for a in limited), answers
        assert 1 <= len(limited) <= 9
        # Answered and refused, every req comes back exactly once.
        assert sorted(a["req"] for a in answers) == list(range(10, 20)), answers
        session.close()
    finally:
        server.stop()
        server.log.close()


def test_bad_options_are_refused_at_start_naming_the_option(tmp_path):
    write_points(tmp_path / "points.csv", n=50)
    data = ["--data", str(tmp_path / "points.csv"), "--port", "0"]
    cases = [
        (["--group-by", "colour"], 'cannot group by column "colour"'),
        (["--flag", 'x=["~",["get","kind"],1]'], "--flag"),
        (["--flag", 'x=["==",["get","speed"],1]'], 'flag x reads column "speed"'),
        (["--max-zoom", "30"], "--max-zoom must be"),
        (["--min-zoom", "5", "--max-zoom", "3"], "--max-zoom must be"),
        (["--extent", "20"], "--extent must be at least --radius"),
    ]
    for extra, needle in cases:
        done = subprocess.run([pinwheel_binary(), "serve", *data, *extra], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode != 0, extra
        assert needle in done.stderr + done.stdout, (extra, done.stderr)


def test_the_load_tool_times_member_pages_beside_the_tour(tmp_path):
    write_points(tmp_path / "points.csv", n=20000)
    report_file = tmp_path / "load.json"
    server = PinwheelServer(pinwheel_binary(), ["--data", str(tmp_path / "points.csv"), "--group-by", "kind"]).start()
    try:
        done = subprocess.run(
            [pinwheel_binary(), "load", "--url", server.ws_url, "--clients", "10", "--duration", "5s", "--ramp",
             "1s", "--quiet", "--leaves-probe", "--json", str(report_file)],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr + done.stdout
        leaves = json.loads(report_file.read_text())["leaves"]
        assert "error" not in leaves, leaves
        assert leaves["pageMs"]["count"] >= 5 and 0 < leaves["pageMs"]["p99"] < 10_000, leaves
        assert "leaves page (ms)" in done.stdout, done.stdout
    finally:
        server.stop()
        server.log.close()
