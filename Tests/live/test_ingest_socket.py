"""`pinwheel.ingest.v1`: a continuous producer's WebSocket. Each frame of change lines is answered
in order with the version that holds it, once durable; without the token the socket is closed."""

import json
import sys
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN  # noqa: E402
from viewer import Watcher  # noqa: E402

PROTOCOL = "pinwheel.ingest.v1"


def producer(server, token=TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(server.ws_url, subprotocols=[PROTOCOL], additional_headers=headers, open_timeout=10)


def frame(*changes):
    return "\n".join(json.dumps(c) for c in changes)


def test_frames_are_acknowledged_in_order_with_their_versions(live_server):
    with producer(live_server) as ws:
        assert ws.subprotocol == PROTOCOL
        ws.send(frame({"op": "upsert", "id": "car-1", "lat": -40.001, "lon": -119.999},
                      {"op": "upsert", "id": "car-2", "lat": -40.002, "lon": -119.998}))
        ws.send(frame({"op": "upsert", "id": "car-1", "lat": 95, "lon": 0}, {"op": "delete", "id": "car-2"}))
        first = json.loads(ws.recv(timeout=10))
        second = json.loads(ws.recv(timeout=10))
    assert first["type"] == "ack" and first["frame"] == 1 and first["accepted"] == 2 and first["rejected"] == []
    assert second["frame"] == 2 and second["accepted"] == 1
    assert second["rejected"] == [{"line": 1, "error": "lat must be between -90 and 90, got 95"}]
    assert second["version"] == first["version"] + 1
    # A viewer sees what the socket changed.
    with Watcher(live_server.ws_url) as viewer:
        viewer.watch([-120.0, -40.01, -119.99, -40.0], 17)
        viewer.wait_for(lambda w: set(w.keyed()) == {"car-1"})


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abcdef"])
def test_without_the_token_the_socket_is_closed_with_1008(live_server, token):
    with producer(live_server, token) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert closed.value.rcvd.code == 1008
    assert "token" in closed.value.rcvd.reason
