"""Descriptor exhaustion: the server runs with Debian's default descriptor limit (1,024, soft and hard,
so it cannot raise it) and 1,000 clients that ask for leaflet.js and never read it (each holds the
file's descriptor in the server too), 5,000 idle TCP connections, 500 that send half a request
header and 500 producers that announce a 16 MB body and send one byte of it arrive at once. The server caps its connections below the limit (896 descriptors' worth here,
an HTTP connection counting twice), refuses the rest at once instead of letting `accept` fail, keeps
serving a viewer connected before the flood, accepts a new viewer within a second once the flood is
gone, and its log stays small (lws 4.1.6 alone logged `accept: errno 24` 100,000 times a second,
then the process died)."""

import multiprocessing
import resource
import selectors
import socket
import time
import urllib.request

import pytest
from pinwheel_process import ARTIFACTS, PinwheelServer, pinwheel_binary
from viewer import Viewer, assert_not_starved, percentile

LIMIT = 1024
# DescriptorBudget: the limit less 64 + limit / 16.
CAP = LIMIT - (64 + LIMIT // 16)
SLOW_READERS = 1_000
IDLE = 5_000
HALF_HEADERS = 500
TRICKLED = 500
TOKEN = "descriptor-flood-token"
HOLD_S = 8
LONDON = [-0.5, 51.3, 0.3, 51.7]
# A second of rate-limited lines at most, plus the start-up lines: kilobytes, where the hot loop
# wrote 88 MiB.
MAX_LOG_BYTES = 64 * 1024


@pytest.fixture(params=[0, 600], ids=["budget", "reserve-used-up"])
def limited_server(request, tmp_path):
    """`pinwheel serve` under `prlimit --nofile=1024:1024`, through a wrapper the fixture passes as
    the binary; with `reserve-used-up` the process inherits 600 open descriptors its budget does
    not know of, so `accept` fails for want of descriptors before the cap is reached."""
    wrapper = tmp_path / "pinwheel-limited"
    wrapper.write_text(
        "#!/bin/bash\n"
        f"for _ in $(seq {request.param}); do exec {{fd}}</dev/null; done\n"
        f'exec prlimit --nofile={LIMIT}:{LIMIT} -- "{pinwheel_binary()}" "$@"\n')
    wrapper.chmod(0o755)
    (tmp_path / "token").write_text(TOKEN)
    live = ["--data-dir", str(tmp_path / "data"), "--ingest-token-file", str(tmp_path / "token")]
    server = PinwheelServer(str(wrapper), live).start()
    server.inherited = request.param
    try:
        yield server
    finally:
        server.stop()
        server.log.close()


def flood(port, opened, release, outcome):
    """Opens the connections, then watches which the server closes until `release` is set."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    readers, sockets, failed = [], [], 0
    for _ in range(SLOW_READERS):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /vendor/leaflet/leaflet.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        except OSError:
            failed += 1
            s.close()
            continue
        readers.append(s)
    trickle = (b"POST /v1/changes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
               + b"\r\nContent-Length: 16000000\r\n\r\n{")
    for k in range(IDLE + HALF_HEADERS + TRICKLED):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            failed += 1
            continue
        try:
            if k >= IDLE + HALF_HEADERS:
                s.sendall(trickle)
            elif k >= IDLE:
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass
        sockets.append(s)
    opened.set()
    started = time.monotonic()
    selector = selectors.DefaultSelector()
    for s in sockets:
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ)
    closed, busy, first_closes = set(), 0, []
    while not release.is_set():
        for key, _ in selector.select(0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                busy += 1
            # A trickled body inside the cap is answered 408 once it falls behind the body rate.
            if not data or data.startswith((b"HTTP/1.1 503", b"HTTP/1.1 408")):
                closed.add(s)
                selector.unregister(s)
                first_closes.append(time.monotonic() - started)
    outcome["readers"] = len(readers)
    outcome["opened"] = len(sockets)
    outcome["connect_failures"] = failed
    outcome["closed_by_server"] = len(closed)
    outcome["busy_503"] = busy
    for s in sockets + readers:
        s.close()


def test_a_descriptor_flood_is_refused_at_the_cap_and_the_viewer_keeps_being_served(limited_server):
    server = limited_server
    log_path = ARTIFACTS / "pinwheel-serve.log"
    with Viewer(server.ws_url) as viewer:
        log_before = log_path.stat().st_size
        opened, release = multiprocessing.Event(), multiprocessing.Event()
        outcome = multiprocessing.Manager().dict()
        attack = multiprocessing.Process(target=flood, args=(server.port, opened, release, outcome))
        attack.start()
        assert opened.wait(60), "the flood could not open its connections"
        first_batches, done = [], []
        held_until = time.monotonic() + HOLD_S
        while time.monotonic() < held_until:
            done.append(viewer.viewport_done_seconds(LONDON, 9 + len(done) % 2))
            first_batches.append(viewer.first_batch_s)
        release.set()
        attack.join(60)
    assert server.process.poll() is None, "the server died under the flood"
    # The flood is gone: lws sees each socket close, and a new viewer is admitted and served.
    started = time.monotonic()
    with Viewer(server.ws_url) as late:
        connect_s = time.monotonic() - started
        late_done = late.viewport_done_seconds(LONDON, 10)
    log_bytes = log_path.stat().st_size - log_before
    metrics = urllib.request.urlopen(f"{server.url}/metrics", timeout=5).read().decode()
    def metric(name):
        return int(next(line.split()[1] for line in metrics.splitlines() if line.startswith(name + " ")))
    refused, failed_accepts = metric("pinwheel_connections_refused_total"), metric("pinwheel_accept_failures_total")
    with open(log_path, errors="replace") as log:
        log.seek(max(0, log_path.stat().st_size - 200_000))
        tail = log.read()
    print(f"flood: {dict(outcome)}; viewer first batch p50 {percentile(first_batches, 50) * 1000:.1f} ms, "
          f"p99 {percentile(first_batches, 99) * 1000:.1f} ms, done p99 {percentile(done, 99) * 1000:.1f} ms "
          f"over {len(done)}; new viewer connected in {connect_s * 1000:.0f} ms; log +{log_bytes} bytes; "
          f"refused {refused}, failed accepts {failed_accepts}")
    total = SLOW_READERS + IDLE + HALF_HEADERS + TRICKLED
    assert outcome["readers"] + outcome["opened"] + outcome["connect_failures"] == total
    # Everything past the cap was closed by the server at once.
    assert outcome["closed_by_server"] >= outcome["opened"] - CAP // 2, dict(outcome)
    assert outcome["busy_503"] > 0, "refused connections get a 503 where the socket takes it"
    if server.inherited:
        # accept failed (EMFILE) before the cap: counted, logged once a second, each waiting
        # connection refused after the spare descriptor was given up.
        assert failed_accepts > 0
        assert "accept failed" in tail
    else:
        assert failed_accepts == 0
    assert_not_starved(done)
    assert percentile(first_batches, 99) < 0.25
    assert connect_s < 1 and late_done < 1
    assert log_bytes < MAX_LOG_BYTES
    assert f"pinwheel_connection_cap {CAP}" in metrics
    assert refused >= outcome["closed_by_server"]
    assert f"at most {CAP} connections" in tail
    assert "--max-sessions 10000 is more than the descriptor budget allows" in tail
