"""`POST /v1/changes`: producers' changes are checked line by line, answered once durable, and
refused with a clear status and message when the token, the body or the rate is wrong."""

import gzip
import json
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN  # noqa: E402
from ingest import post_changes  # noqa: E402
from pinwheel_process import running_server  # noqa: E402
from websockets.sync.client import connect  # noqa: E402


def upsert(key, lat=10.0, lon=20.0, **properties):
    change = {"op": "upsert", "id": key, "lat": lat, "lon": lon}
    if properties:
        change["properties"] = properties
    return change


def version_now(server):
    """The log version, read by posting nothing."""
    status, answer, _ = post_changes(server.port, TOKEN, [])
    assert status == 200, answer
    return answer["version"]


def test_accepted_changes_are_answered_with_the_version_that_holds_them(live_server):
    before = version_now(live_server)
    status, answer, _ = post_changes(live_server.port, TOKEN, [upsert("bus-12", line="12"), upsert(7, 1, 2),
                                                               {"op": "delete", "id": "bus-12"}])
    assert status == 200
    # The producer's accepted changes a second, while the server shares the CPU with viewers.
    assert answer.pop("acceptedPerSecond") > 0
    assert answer == {"accepted": 3, "rejected": [], "version": before + 3}


def test_bad_lines_are_listed_and_the_valid_ones_applied(live_server):
    before = version_now(live_server)
    body = b"\n".join([
        json.dumps(upsert("ok-1")).encode(),
        b"{not json",
        json.dumps(upsert("far", lat=95)).encode(),
        json.dumps({"op": "teleport", "id": "x"}).encode(),
        json.dumps(upsert("ok-2")).encode(),
    ]) + b"\n"
    status, answer, _ = post_changes(live_server.port, TOKEN, None, raw_body=body)
    assert status == 200
    assert answer["accepted"] == 2 and answer["version"] == before + 2
    errors = {r["line"]: r["error"] for r in answer["rejected"]}
    assert set(errors) == {2, 3, 4}
    assert errors[2].startswith("not JSON")
    assert errors[3] == "lat must be between -90 and 90, got 95"
    assert "unknown op \"teleport\"" in errors[4]


def test_an_atomic_request_with_a_bad_line_applies_nothing(live_server):
    before = version_now(live_server)
    status, answer, _ = post_changes(live_server.port, TOKEN, [upsert("a"), upsert("b", lon=200)], atomic=True)
    assert status == 400
    assert answer["accepted"] == 0 and answer["rejected"][0]["line"] == 2
    assert "lon must be between -180 and 180, got 200" in answer["rejected"][0]["error"]
    assert version_now(live_server) == before


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abcdef", TOKEN[:-1], TOKEN + "x"])
def test_without_the_token_nothing_is_applied(live_server, token):
    before = version_now(live_server)
    status, answer, headers = post_changes(live_server.port, token, [upsert("intruder")])
    assert status == 401
    assert "token" in str(answer)
    assert headers.get("www-authenticate", "").startswith("Bearer")
    assert version_now(live_server) == before


def test_an_oversized_body_gets_413_and_nothing_applied(live_server):
    before = version_now(live_server)
    line = json.dumps(upsert("big", note="x" * 1000)).encode() + b"\n"
    status, answer, _ = post_changes(live_server.port, TOKEN, None, raw_body=line * 20_000)
    assert status == 413
    assert "bytes" in str(answer)
    assert version_now(live_server) == before


def test_a_compressed_body_gets_415_and_nothing_applied(live_server):
    before = version_now(live_server)
    body = gzip.compress(json.dumps(upsert("zipped")).encode() + b"\n")
    status, answer, _ = post_changes(live_server.port, TOKEN, None, raw_body=body, headers={"Content-Encoding": "gzip"})
    assert status == 415
    assert "Content-Encoding gzip" in answer
    assert version_now(live_server) == before


def test_a_chunked_body_gets_411_naming_it_and_nothing_applied(live_server):
    before = version_now(live_server)
    chunk = json.dumps(upsert("chunked")).encode() + b"\n"
    request = (b"POST /v1/changes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
               + b"\r\nTransfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(chunk) + chunk + b"\r\n0\r\n\r\n")
    # One write, then read: the server answers from the headers and closes, which a client still
    # sending its chunks would meet as a broken pipe.
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as s:
        s.sendall(request)
        answer = b""
        while chunk_read := s.recv(65536):
            answer += chunk_read
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == b"411", answer
    assert b"chunked" in body
    assert version_now(live_server) == before


def test_a_viewer_socket_cannot_change_data(live_server):
    before = version_now(live_server)
    with connect(live_server.ws_url, subprotocols=["pinwheel.v1"]) as ws:
        json.loads(ws.recv(timeout=10))  # hello
        ws.send(json.dumps(upsert("from-a-viewer") | {"type": "upsert"}))
        error = json.loads(ws.recv(timeout=10))
        assert error["type"] == "error" and error["code"] == "unknown-type"
    assert version_now(live_server) == before


def test_ingest_is_off_without_a_token():
    with running_server(["--synthetic", "100"]) as server:
        status, answer, _ = post_changes(server.port, TOKEN, [upsert("x")])
        assert status == 404
        assert "ingest" in str(answer)


def test_over_the_rate_a_producer_gets_429_with_retry_after(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    args = ["--synthetic", "100", "--data-dir", str(tmp_path / "d"), "--ingest-token-file", str(token_file),
            "--ingest-rate", "100"]
    with running_server(args) as server:
        changes = [upsert(f"p{k}") for k in range(150)]
        first = post_changes(server.port, TOKEN, changes)
        assert first[0] == 200
        status, answer, headers = post_changes(server.port, TOKEN, changes)
        assert status == 429
        assert int(headers["retry-after"]) >= 1
        assert "changes per second" in str(answer)
