"""HTTP parsing by the RFCs, with raw sockets against the real server: requests lws 4.1.6 would read
one way and a proxy in front another way are refused with 400 and a reason, and WebSocket upgrades
from a refused Origin get 403 with the reason and one log line, rate-limited."""

import socket
import time

import pytest

from pinwheel_process import ARTIFACTS

KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def exchange(port, raw, wait_s=5):
    """Sends `raw`, reads until the server closes or `wait_s` passes; returns (status line, body, closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as s:
        s.sendall(raw)
        data, closed = b"", False
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            data += chunk
            if b"\r\n\r\n" in data and b"101 Switching" in data:
                break
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0].decode(errors="replace"), body.decode(errors="replace"), closed


def request(lines, body=b""):
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def upgrade(port, origin_line):
    lines = ["GET / HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {KEY}", "Sec-WebSocket-Version: 13"]
    if origin_line is not None:
        lines.append(origin_line)
    return request(lines)


POST = ["POST /v1/changes HTTP/1.1", "Host: 127.0.0.1"]


@pytest.mark.parametrize(
    "name, raw, reason",
    [
        ("chunked with a length", request(POST + ["Transfer-Encoding: chunked", "Content-Length: 5"], b"0\r\n\r\n"),
         "Transfer-Encoding and Content-Length together"),
        ("a signed length", request(POST + ["Content-Length: +5"], b"hello"), "Content-Length must be digits"),
        ("a list of lengths", request(POST + ["Content-Length: 5,6"], b"hello"), "Content-Length must be digits"),
        ("the same length listed twice", request(POST + ["Content-Length: 5,5"], b"hello"),
         "Content-Length must be digits"),
        ("two length headers", request(POST + ["Content-Length: 5", "Content-Length: 6"], b"hello"),
         "more than one Content-Length"),
        ("a length that is not a number", request(POST + ["Content-Length: five"], b"hello"),
         "Content-Length must be digits"),
        ("a length past 64 bits", request(POST + ["Content-Length: 99999999999999999999999"], b"hello"),
         "Content-Length must be digits"),
        ("a NUL in a header value", request(["GET /healthz HTTP/1.1", "Host: 127.0.0.1", "User-Agent: a\x00b"]),
         "header user-agent holds a control byte"),
        ("a control byte in a header value", request(["GET /healthz HTTP/1.1", "Host: 127.0.0.1", "Accept: a\x1bb"]),
         "header accept holds a control byte"),
        ("a body on a GET", request(["GET / HTTP/1.1", "Host: 127.0.0.1", "Content-Length: 5"], b"hello"),
         "this request takes no body"),
    ],
)
def test_malformed_requests_get_400_with_the_reason_and_are_closed(server, name, raw, reason):
    status, body, closed = exchange(server.port, raw)
    assert status == "HTTP/1.1 400 Bad Request", (name, status, body)
    assert reason in body, (name, body)
    assert closed, name


def test_a_chunked_body_gets_411_and_is_never_read_as_the_next_request(server):
    smuggled = b"0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    raw = request(POST + ["Transfer-Encoding: chunked"], smuggled)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 411 "), data
    assert b"a chunked body is not read" in data
    assert data.count(b"HTTP/1.1 ") == 1, data


def test_a_tab_in_a_header_value_is_allowed(server):
    status, body, _ = exchange(server.port, request(["GET /healthz HTTP/1.1", "Host: 127.0.0.1",
                                                     "Connection: close", "User-Agent: a\tb"]))
    assert status == "HTTP/1.1 200 OK", body


def test_an_upgrade_with_a_control_byte_gets_400(server):
    raw = upgrade(server.port, "Origin: http://127.0.0.1\x01")
    status, body, closed = exchange(server.port, raw)
    assert "400" in status and "header origin holds a control byte" in body and closed, (status, body)


def log_lines(containing, since):
    text = (ARTIFACTS / "pinwheel-serve.log").read_text(errors="replace")[since:]
    return [line for line in text.splitlines() if containing in line]


def test_origin_rules_answer_403_with_a_reason_and_log_one_line_a_second(server):
    port = server.port
    own = exchange(server.port, upgrade(port, f"Origin: http://127.0.0.1:{port}"))
    assert own[0] == "HTTP/1.1 101 Switching Protocols", own
    missing = exchange(server.port, upgrade(port, None))
    assert missing[0] == "HTTP/1.1 101 Switching Protocols", missing

    log_start = (ARTIFACTS / "pinwheel-serve.log").stat().st_size
    empty = exchange(server.port, upgrade(port, "Origin:"))
    assert "403" in empty[0] and "an empty Origin header names no origin" in empty[1] and empty[2], empty
    foreign = [exchange(server.port, upgrade(port, "Origin: http://evil.example")) for _ in range(20)]
    for status, body, closed in foreign:
        assert "403" in status and closed, (status, body)
        assert f"origin http://evil.example is not allowed: this server accepts http://127.0.0.1:{port}" in body, body
    time.sleep(1.1)  # the next refusal after a quiet second is logged with the count left out
    exchange(server.port, upgrade(port, "Origin: http://evil.example"))
    time.sleep(0.5)
    lines = log_lines("refused origin:", log_start)
    # 22 refusals in about 1.5 s: at most one line a second, the later one counting those left out.
    assert 2 <= len(lines) <= 3, lines
    assert any("more refused since the last line" in line for line in lines), lines


@pytest.mark.server_args("--allowed-origin", "https://maps.example.org")
def test_allowed_origin_adds_to_the_servers_own(server):
    port = server.port
    assert exchange(port, upgrade(port, "Origin: https://maps.example.org"))[0] == "HTTP/1.1 101 Switching Protocols"
    assert exchange(port, upgrade(port, f"Origin: http://127.0.0.1:{port}"))[0] == "HTTP/1.1 101 Switching Protocols"
    refused = exchange(port, upgrade(port, "Origin: https://other.example.org"))
    assert "403" in refused[0] and "and https://maps.example.org" in refused[1], refused
