"""Slow request bodies: hundreds of `POST /v1/changes` announcing 16 MB and trickling one byte every
2 s, with and without the ingest token. Those without the token are refused with 401 from their
headers alone; those with it are answered 408 and closed once they fall behind the minimum body rate,
and in any case by the request deadline. A viewer keeps its latency meanwhile."""

import multiprocessing
import select
import socket
import time

import pytest

from pinwheel_process import running_server
from viewer import Viewer, assert_not_starved, percentile

TOKEN = "slow-bodies-test-token-0123456789"
WITH_TOKEN = 150
WITHOUT_TOKEN = 150
DEADLINE_S = 30  # --http-deadline's default
LONDON = [-0.5, 51.3, 0.3, 51.7]


@pytest.fixture
def ingest_server(tmp_path, request):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    extra = getattr(request, "param", ())
    args = ["--synthetic", "2000", "--data-dir", str(tmp_path / "data"), "--ingest-token-file", str(token_file), *extra]
    with running_server(args) as server:
        yield server


def head(token, length=16_000_000, method="POST", path="/v1/changes"):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Length: {length}\r\n\r\n".encode()


def trickle(port, sockets_spec, every_s, chunk, opened, outcome, give_up_s):
    """Opens one socket per (name, header bytes), then sends `chunk` on each every `every_s` seconds;
    records for each when the server closed it and the status line it answered."""
    sockets = []
    for name, header in sockets_spec:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(header)
        sockets.append((name, s))
    start = time.monotonic()
    opened.set()
    closed, status, received = {}, {}, {}
    last = 0.0
    while time.monotonic() - start < give_up_s and len(closed) < len(sockets):
        if time.monotonic() - last >= every_s:
            last = time.monotonic()
            for name, s in sockets:
                if name not in closed:
                    try:
                        s.sendall(chunk)
                    except OSError:
                        closed[name] = time.monotonic() - start
        live = [s for name, s in sockets if name not in closed]
        ready, _, _ = select.select(live, [], [], 0.1)
        for s in ready:
            name = next(n for n, t in sockets if t is s)
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            received[name] = received.get(name, b"") + data
            if not data:
                closed[name] = time.monotonic() - start
    for name, s in sockets:
        first = received.get(name, b"").split(b"\r\n", 1)[0]
        status[name] = first.decode(errors="replace")
        s.close()
    outcome["closed"] = dict(closed)
    outcome["status"] = status


def run_attack(port, spec, every_s, chunk, give_up_s):
    opened, outcome = multiprocessing.Event(), multiprocessing.Manager().dict()
    attack = multiprocessing.Process(target=trickle, args=(port, spec, every_s, chunk, opened, outcome, give_up_s))
    attack.start()
    assert opened.wait(30)
    return attack, outcome


def test_trickled_bodies_are_refused_or_cut_and_a_viewer_keeps_its_latency(ingest_server):
    spec = [(f"token-{k}", head(TOKEN)) for k in range(WITH_TOKEN)]
    spec += [(f"anonymous-{k}", head(None)) for k in range(WITHOUT_TOKEN)]
    attack, outcome = run_attack(ingest_server.port, spec, every_s=2, chunk=b"x", give_up_s=DEADLINE_S + 10)
    with Viewer(ingest_server.ws_url) as viewer:
        latencies = [viewer.viewport_done_seconds(LONDON, 9 + k % 2) for k in range(50)]
    attack.join(DEADLINE_S + 30)
    closed, status = outcome["closed"], outcome["status"]
    token_times = [closed[n] for n in closed if n.startswith("token-")]
    anonymous_times = [closed[n] for n in closed if n.startswith("anonymous-")]
    print(f"viewer p99 {percentile(latencies, 99) * 1000:.1f} ms; anonymous closed {len(anonymous_times)}, "
          f"the last after {max(anonymous_times, default=0):.2f} s; with token closed {len(token_times)}, "
          f"the last after {max(token_times, default=0):.2f} s")
    assert_not_starved(latencies, at_least=50)
    assert len(closed) == WITH_TOKEN + WITHOUT_TOKEN, f"{len(spec) - len(closed)} sockets still open"
    assert all(status[f"anonymous-{k}"] == "HTTP/1.1 401 Unauthorized" for k in range(WITHOUT_TOKEN)), status
    assert all(status[f"token-{k}"] == "HTTP/1.1 408 Request Timeout" for k in range(WITH_TOKEN)), status
    # Refused from the headers: no body byte needed, so well before the first trickle would matter.
    assert max(anonymous_times) < 5
    # The rate floor (1024 B/s after 2 s) cuts them long before the deadline; the deadline is the promise.
    assert max(token_times) < DEADLINE_S
    assert ingest_server.process.poll() is None


@pytest.mark.parametrize("ingest_server", [("--http-deadline", "8", "--http-min-body-rate", "0")], indirect=True)
def test_bodies_that_keep_coming_are_cut_at_the_request_deadline(ingest_server):
    # 2 KiB every 0.5 s never ends a 16 MB body; with the rate floor off only the deadline can stop it.
    count = 300
    spec = [(f"token-{k}", head(TOKEN)) for k in range(count)]
    attack, outcome = run_attack(ingest_server.port, spec, every_s=0.5, chunk=b"x" * 2048, give_up_s=20)
    with Viewer(ingest_server.ws_url) as viewer:
        latencies = [viewer.viewport_done_seconds(LONDON, 9 + k % 2) for k in range(50)]
    attack.join(40)
    closed, status = outcome["closed"], outcome["status"]
    print(f"viewer p99 {percentile(latencies, 99) * 1000:.1f} ms; closed {len(closed)} of {count}, "
          f"after {min(closed.values(), default=0):.2f}..{max(closed.values(), default=0):.2f} s")
    assert_not_starved(latencies, at_least=50)
    assert len(closed) == count
    assert all(s == "HTTP/1.1 408 Request Timeout" for s in status.values()), status
    # --http-deadline 8: headers get 4 s of it and the body the other 4 (checked every 0.25 s), counted
    # from each socket's headers, all sent before the clock here starts.
    assert 3.0 < min(closed.values()) and max(closed.values()) < 8


def test_a_request_that_takes_no_body_is_refused_when_it_announces_one(ingest_server):
    spec = [("get", head(None, method="GET", path="/")), ("healthz", head(None, method="GET", path="/healthz"))]
    attack, outcome = run_attack(ingest_server.port, spec, every_s=2, chunk=b"x", give_up_s=10)
    attack.join(30)
    assert outcome["status"] == {"get": "HTTP/1.1 400 Bad Request", "healthz": "HTTP/1.1 400 Bad Request"}
    assert max(outcome["closed"].values()) < 5
