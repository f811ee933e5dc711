"""Fault drills under a history checker (Tests/support/history.py): a node frozen with SIGSTOP while
it holds a request, the producer's retry through HAProxy and its next moves, then SIGCONT; and a NATS
server frozen while producers post. After each, and after the whole cluster restarts, every node holds
every acknowledged value and none older.

CI runs a couple of sequences; `scripts/faults-cluster` runs the long drill with a seed and counts
(PINWHEEL_FAULTS_SEED, PINWHEEL_FAULTS_FROZEN, PINWHEEL_FAULTS_NATS)."""

import json
import os
import random
import signal
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import http_get, metric, wait_for_version  # noqa: E402
from history import History  # noqa: E402
from live_patch import TOKEN  # noqa: E402

SEED = int(os.environ.get("PINWHEEL_FAULTS_SEED", "1"))
FROZEN = int(os.environ.get("PINWHEEL_FAULTS_FROZEN", "2"))
HUNG_NATS = int(os.environ.get("PINWHEEL_FAULTS_NATS", "1"))
# The producer gives an answer up after this long; the node stays frozen well past it.
PRODUCER_TIMEOUT_S = 3
POINTS = 20


def held_request(port, history, n, key):
    """Sends value n to `port` on a raw socket and leaves it open: the request a frozen node holds."""
    body = "".join(json.dumps(c) + "\n" for c in history.batch(n)).encode()
    head = (f"POST /v1/changes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body)}\r\n"
            + (f"Idempotency-Key: {key}\r\n" if key else "") + "\r\n")
    held = socket.create_connection(("127.0.0.1", port), timeout=10)
    held.sendall(head.encode() + body)
    return held


def answer_of(sock, timeout_s=20):
    """(status, body) of the HTTP answer that comes on `sock`."""
    sock.settimeout(timeout_s)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed without an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split()[1]), body.decode()


def stop_and_wait(process):
    """SIGSTOP, then until every thread of the process has stopped: the signal takes a moment on a busy
    machine, and a request sent meanwhile may still be published (and answered once it resumes)."""
    process.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 10
    tasks = Path(f"/proc/{process.pid}/task")
    while not all((t / "stat").read_text().rsplit(")", 1)[1].split()[0] in "tT" for t in tasks.iterdir()):
        assert time.monotonic() < deadline, "the process did not stop"
        time.sleep(0.01)


def node_urls(cluster):
    return {f"node-{i}": n.ws_url for i, n in enumerate(cluster.nodes)}


def assert_history_holds(cluster, history):
    wait_for_version([n.port for n in cluster.nodes], history.version, timeout_s=60)
    problems = history.check(node_urls(cluster))
    assert not problems, "\n".join(problems[:20])


def restart_whole_cluster(cluster):
    """Every node and every NATS server stopped, then started again on the same folders and ports."""
    for node in cluster.nodes:
        node.process.send_signal(signal.SIGTERM)
    for node in cluster.nodes:
        node.stop()
    for p in cluster.nats.processes:
        p.send_signal(signal.SIGTERM)
        p.wait(20)
    cluster.nats.start()
    cluster.nats.wait_healthy()
    for node in cluster.nodes:
        node.restart()


def test_a_node_frozen_while_it_holds_a_request_never_reverts_the_producers_later_moves(cluster):
    rng = random.Random(SEED)
    history = History(POINTS)
    value = 1
    history.post_until_acknowledged(cluster.proxy.port, value, key=f"s{SEED}-v{value}")
    for sequence in range(FROZEN):
        victim = cluster.nodes[rng.randrange(len(cluster.nodes))]
        # Half the sequences carry no key: then only the node's refusal to publish late protects them.
        keyed = sequence % 2 == 0
        dropped_before = metric(victim.port, "pinwheel_ingest_expired_total")
        stop_and_wait(victim.process)
        frozen_at = time.monotonic()
        try:
            value += 1
            key = f"s{SEED}-q{sequence}-v{value}" if keyed else None
            for attempt in range(3):
                held = held_request(victim.port, history, value, key)
                held.settimeout(PRODUCER_TIMEOUT_S)
                try:
                    assert not held.recv(1), "a frozen node answered"
                    raise AssertionError("a frozen node closed the connection")
                except (socket.timeout, TimeoutError):
                    break
                except ConnectionResetError:
                    # Seen once in a long run, seconds after the cluster started (cause not found):
                    # the connection was reset before the node held the request. Send it again.
                    print(f"sequence {sequence}: the held request's connection was reset; sending it again")
                    held.close()
                    assert attempt < 2, "the frozen node's connections are reset every time"
            # The producer gives up waiting and retries through HAProxy (with the same key, if any),
            # until a live node acknowledges; then it moves the same points again.
            attempts, _ = history.post_until_acknowledged(cluster.proxy.port, value, key=key,
                                                          timeout_s=PRODUCER_TIMEOUT_S)
            value += 1
            history.post_until_acknowledged(cluster.proxy.port, value, key=f"s{SEED}-q{sequence}-v{value}",
                                            timeout_s=PRODUCER_TIMEOUT_S)
            time.sleep(max(0.0, frozen_at + PRODUCER_TIMEOUT_S + 3 + rng.random() * 4 - time.monotonic()))
        finally:
            victim.process.send_signal(signal.SIGCONT)
        frozen_for = time.monotonic() - frozen_at
        # The request it held is answered with an error, not published.
        status, body = answer_of(held)
        held.close()
        assert status == 503 and "stopped running" in body, (status, body)
        # (A retry HAProxy sent to the node before its check failed is held and dropped too.)
        assert metric(victim.port, "pinwheel_ingest_expired_total") >= dropped_before + 1
        assert_history_holds(cluster, history)
        print(f"sequence {sequence}: node {cluster.nodes.index(victim)} frozen {frozen_for:.1f} s, "
              f"{'with' if keyed else 'without'} a key, retry acknowledged at attempt {attempts}, "
              f"held request answered {status}")
    restart_whole_cluster(cluster)
    assert_history_holds(cluster, history)


def nats_server_of(node):
    """The client port of the NATS server a node's change log is connected to, from its /metrics."""
    status, text = http_get(node.port, "/metrics")
    assert status == 200
    line = next(line for line in text.splitlines() if line.startswith("pinwheel_nats_server{"))
    return int(line.split('url="')[1].split('"')[0].rsplit(":", 1)[1])


def test_a_hung_nats_server_is_noticed_reported_and_left_and_ingest_resumes(cluster):
    history = History(POINTS)
    value = 0
    for round_ in range(HUNG_NATS):
        # Freeze the NATS server a node's change log is connected to.
        node = cluster.nodes[round_ % len(cluster.nodes)]
        k = cluster.nats.client_ports.index(nats_server_of(node))
        value += 1
        history.post_until_acknowledged(node.port, value, key=f"n{round_}-v{value}")
        disconnects = metric(node.port, "pinwheel_nats_unanswered_total")
        seen = []
        stop = threading.Event()

        def watch_health():
            while not stop.is_set():
                try:
                    seen.append((*http_get(node.port, "/healthz", timeout_s=2), time.monotonic()))
                except OSError:
                    pass
                time.sleep(0.05)

        watcher = threading.Thread(target=watch_health, daemon=True)
        watcher.start()
        process = cluster.nats.processes[k]
        stop_and_wait(process)
        frozen = time.monotonic()
        try:
            # The node's producer keeps posting to it straight (no proxy): it must be taken again within
            # seconds, through another NATS server.
            value += 1
            history.post_until_acknowledged(node.port, value, key=f"n{round_}-v{value}", timeout_s=10)
            resumed = time.monotonic() - frozen
            print(f"ingest resumed {resumed:.1f} s after NATS server {k} was frozen")
            assert resumed < 30, f"ingest resumed only after {resumed:.1f} s"
            for _ in range(3):
                value += 1
                history.post_until_acknowledged(node.port, value, key=f"n{round_}-v{value}")
        finally:
            process.send_signal(signal.SIGCONT)
            stop.set()
            watcher.join(5)
        degraded = [(body, at) for status, body, at in seen if status == 503 and body.startswith("degraded: nats server")]
        assert degraded and "not answering" in degraded[0][0], f"/healthz never said degraded: {seen[:5]} ... {seen[-3:]}"
        ok_again = next((at for status, _, at in seen if status == 200 and at > degraded[0][1]), None)
        print(f"/healthz degraded {degraded[0][1] - frozen:.1f} s after the freeze, ok again after "
              f"{(ok_again or float('nan')) - frozen:.1f} s: {degraded[0][0].strip()}")
        assert metric(node.port, "pinwheel_nats_unanswered_total") > disconnects
        assert http_get(node.port, "/healthz") == (200, "ok\n")
        # The resumed server answers again. (Its /healthz may stay 503 for a while: the ordered
        # consumers nodes had on it linger, not current, until NATS removes them as inactive.)
        deadline = time.monotonic() + 30
        while True:
            try:
                if http_get(cluster.nats.monitor_ports[k], "/varz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"NATS server {k} does not answer after SIGCONT"
            time.sleep(0.2)
        assert_history_holds(cluster, history)
