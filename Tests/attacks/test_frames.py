"""RFC 6455 at the frame level against the real server: raw frames a normal client library would
never send, and for each the close code the server answers with, that no data frame follows its
Close (§5.5.1), and that it closes TCP promptly after the closing handshake (§7.1.1), or within a
second when the peer never answers."""

import json
import time

import pytest
from pinwheel_process import running_server
from rawws import BINARY, CLOSE, CONTINUATION, PING, PONG, TEXT, RawClient, close_payload, frame
from viewer import Viewer

VIEWPORT = json.dumps({"type": "viewport", "seq": 1, "bbox": [-0.5, 51.3, 0.3, 51.7], "zoom": 10,
                       "width": 1280, "height": 800}).encode()
DROPPED = "dropped"  # lws fails these without a Close frame (docs/libwebsockets.md)
# A viewport whose text ends between the two bytes of "é" (C3 A9).
CUT_AT_END = VIEWPORT[:-1] + b', "note": "caf\xc3'

# name -> (frames, expected close code, or DROPPED)
CASES = {
    "RSV1 without permessage-deflate": ([frame(TEXT, b'{"type":"ack"}', rsv=4)], 1002),
    "RSV2": ([frame(TEXT, b"x", rsv=2)], 1002),
    "RSV3": ([frame(TEXT, b"x", rsv=1)], 1002),
    "reserved data opcode 3": ([frame(3)], 1002),
    "reserved data opcode 7": ([frame(7)], 1002),
    "reserved control opcode 0xB": ([frame(0xB)], 1002),
    "reserved control opcode 0xF": ([frame(0xF)], 1002),
    "fragmented ping": ([frame(PING, b"x", fin=False)], 1002),
    "ping over 125 bytes": ([frame(PING, b"x" * 126)], DROPPED),
    "continuation without a start": ([frame(CONTINUATION, b"x")], 1002),
    "new text frame inside a fragmented message": ([frame(TEXT, b'{"ty', fin=False), frame(TEXT, b"x")], 1002),
    "invalid UTF-8 in one frame": ([frame(TEXT, b"\xff\xfe")], 1007),
    "invalid UTF-8 across fragments": ([frame(TEXT, b"\xce", fin=False), frame(CONTINUATION, b"\x41")], 1007),
    "UTF-8 cut at the end of the message": ([frame(TEXT, CUT_AT_END)], 1007),
    "binary frame": ([frame(BINARY, b"\x00")], 1003),
    "close without payload": ([frame(CLOSE)], 1005),
    "close with a 1-byte payload": ([frame(CLOSE, b"\x03")], DROPPED),
    "close 1000 with a reason": ([frame(CLOSE, close_payload(1000, b"bye"))], 1000),
    "close 4000 (private use)": ([frame(CLOSE, close_payload(4000))], 4000),
    "close with a 123-byte reason": ([frame(CLOSE, close_payload(1000, b"r" * 123))], 1000),
    "close with invalid UTF-8 in its reason": ([frame(CLOSE, close_payload(1000, b"\xff"))], DROPPED),
    "a viewport, then a close": ([frame(TEXT, VIEWPORT), frame(CLOSE, close_payload(1000))], 1000),
    "a viewport, then a reserved opcode": ([frame(TEXT, VIEWPORT), frame(3)], 1002),
}
INVALID_CLOSE_CODES = [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000]


@pytest.fixture(scope="module")
def server():
    with running_server() as s:
        yield s
        # The server outlived every case and still serves a viewer.
        with Viewer(s.ws_url) as viewer:
            assert viewer.viewport_done_seconds([-0.5, 51.3, 0.3, 51.7], 10) < 1


def run(server, frames, answer_close=True, deflate=False):
    client = RawClient("127.0.0.1", server.port, deflate=deflate)
    try:
        for f in frames:
            client.send(f)
        return client.outcome(deadline_s=5, answer_close=answer_close)
    finally:
        client.close()


def check(outcome, expected):
    assert outcome.eof_at is not None, "the server did not close the TCP connection within 5 s"
    assert outcome.data_after_close == [], "data frames followed the server's Close"
    if expected == DROPPED:
        assert outcome.close is None
    else:
        assert outcome.close_code == expected, (outcome.close_code, outcome.close_reason)


@pytest.mark.parametrize("name", CASES)
def test_close_code_nothing_after_close_and_prompt_tcp_close(server, name):
    frames, expected = CASES[name]
    outcome = run(server, frames)
    check(outcome, expected)
    if outcome.close is not None:
        # We answered the server's Close (or it answered ours) at once: TCP follows within a second.
        assert outcome.eof_at - outcome.close.at < 1.0


@pytest.mark.parametrize("name", [n for n, (_, code) in CASES.items() if code not in (DROPPED, 1000, 1005, 4000)])
def test_a_peer_that_never_answers_the_close_is_dropped_within_a_second(server, name):
    frames, expected = CASES[name]
    outcome = run(server, frames, answer_close=False)
    check(outcome, expected)
    assert outcome.eof_at - outcome.close.at < 1.0


@pytest.mark.parametrize("code", INVALID_CLOSE_CODES)
def test_an_invalid_close_code_is_answered_with_1002(server, code):
    check(run(server, [frame(CLOSE, close_payload(code))]), 1002)


def test_utf8_split_validly_across_fragments_is_a_message(server):
    # A JSON string whose two-byte character is split between the fragments: not JSON the server
    # wants, but valid text, so an `error` comes back and the session stays open.
    client = RawClient("127.0.0.1", server.port)
    try:
        client.send(frame(TEXT, b'"\xce', fin=False) + frame(CONTINUATION, b'\xbb"'))
        messages = []
        deadline = time.monotonic() + 5
        while len(messages) < 2 and time.monotonic() < deadline:
            f = client.read_frame()
            assert f is not None and f.opcode == TEXT
            messages.append(json.loads(f.payload))
        assert [m["type"] for m in messages] == ["hello", "error"]
        assert messages[1]["code"] == "bad-json"
    finally:
        client.close()


@pytest.mark.parametrize("payload", [CUT_AT_END, b"\xce"], ids=["viewport", "one byte"])
def test_with_permessage_deflate_text_cut_inside_a_utf8_character_is_refused_with_1007(server, payload):
    # lws checks the end of a message for a cut character only without deflate (or for some inflate
    # outcomes); the transport's own check of the whole message answers here.
    client = RawClient("127.0.0.1", server.port, deflate=True)
    assert client.deflate
    try:
        client.send(frame(TEXT, payload))
        check(client.outcome(deadline_s=5), 1007)
    finally:
        client.close()


def test_a_ping_is_answered_with_its_payload_and_an_unsolicited_pong_is_ignored(server):
    client = RawClient("127.0.0.1", server.port)
    try:
        client.send(frame(PONG, b"unasked") + frame(PING, b"are you there"))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            f = client.read_frame()
            assert f is not None and f.opcode != CLOSE
            if f.opcode == PONG:
                assert f.payload == b"are you there"
                break
        else:
            pytest.fail("no pong")
    finally:
        client.close()


def test_with_permessage_deflate_a_compressed_viewport_then_a_reserved_opcode_ends_cleanly(server):
    import zlib

    compressor = zlib.compressobj(wbits=-15)
    payload = compressor.compress(VIEWPORT) + compressor.flush(zlib.Z_SYNC_FLUSH)
    client = RawClient("127.0.0.1", server.port, deflate=True)
    assert client.deflate
    try:
        client.send(frame(TEXT, payload[:-4], rsv=4) + frame(3))
        check(client.outcome(deadline_s=5), 1002)
    finally:
        client.close()
