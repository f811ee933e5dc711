"""Retries with an idempotency key on one node (the file log): a request repeated with its key is
answered with the first one's version and applied once, over HTTP and over `pinwheel.ingest.v1`; a
malformed key is refused and nothing applied."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from ingest import post_changes  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from test_ingest_socket import frame, producer  # noqa: E402

MOVE = {"op": "upsert", "id": "van-1", "lat": -40.001, "lon": -119.999}


def test_a_retry_with_the_same_key_is_answered_with_the_first_version_and_applied_once(live_server):
    port = live_server.port
    status, first, _ = post_changes(port, TOKEN, [MOVE], headers={"Idempotency-Key": "feed/1"})
    assert status == 200 and first["accepted"] == 1 and "duplicate" not in first, first
    status, other, _ = post_changes(port, TOKEN, [dict(MOVE, lat=-40.002)])
    assert status == 200 and other["version"] == first["version"] + 1
    status, retry, _ = post_changes(port, TOKEN, [MOVE], headers={"Idempotency-Key": "feed/1"})
    assert status == 200, retry
    assert retry == {"accepted": 1, "rejected": [], "version": first["version"], "duplicate": True}
    # Nothing was appended by the retry: the next change comes right after the other one.
    status, after, _ = post_changes(port, TOKEN, [dict(MOVE, lat=-40.003)], headers={"Idempotency-Key": "feed/2"})
    assert after["version"] == other["version"] + 1
    assert metric(port, "pinwheel_ingest_duplicates_total") == 1


def test_a_malformed_key_is_refused_and_nothing_applied(live_server):
    port = live_server.port
    status, before, _ = post_changes(port, TOKEN, [])
    status, answer, _ = post_changes(port, TOKEN, [MOVE], headers={"Idempotency-Key": "has a space"})
    assert status == 400
    assert "idempotency key must be 1 to 128 visible ASCII characters" in answer["error"]
    assert post_changes(port, TOKEN, [])[1]["version"] == before["version"]


def test_a_frame_s_key_line_makes_its_retry_a_duplicate(live_server):
    key = json.dumps({"idempotency-key": "socket/9"})
    with producer(live_server) as ws:
        ws.send(key + "\n" + frame(MOVE))
        ws.send(key + "\n" + frame(MOVE))
        ws.send('{"idempotency-key":7}\n' + frame(MOVE))
        first, second, bad = (json.loads(ws.recv(timeout=10)) for _ in range(3))
    assert first["type"] == "ack" and first["accepted"] == 1 and "duplicate" not in first, first
    # A duplicate is not accepted again, so it carries no accepted rate.
    first.pop("acceptedPerSecond", None)
    assert second == dict(first, frame=2, duplicate=True)
    assert bad["type"] == "error" and bad["code"] == "invalid-key" and bad["frame"] == 3
