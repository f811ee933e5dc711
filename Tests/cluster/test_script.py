"""scripts/cluster, as a user runs it before deploying: the whole topology on the ports given, a change
posted through the proxy reaching every node, and everything gone after SIGTERM."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import free_port, http_get, wait_for_version  # noqa: E402
from ingest import post_changes  # noqa: E402
from pinwheel_process import ROOT, pinwheel_binary  # noqa: E402


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_scripts_cluster_starts_nats_three_nodes_and_haproxy_on_the_given_ports_and_stops_them(tmp_path):
    ports = {name: [free_port() for _ in range(3)] for name in ("node", "nats", "route", "monitor")}
    proxy, stats = free_port(), free_port()
    args = [str(ROOT / "scripts" / "cluster"), "--no-build", "--dir", str(tmp_path),
            "--proxy-port", str(proxy), "--stats-port", str(stats),
            *[a for name in ports for a in (f"--{name}-ports", ",".join(map(str, ports[name])))],
            "--", "--synthetic", "1000"]
    script = subprocess.Popen(args, env=dict(os.environ, PINWHEEL_BIN=pinwheel_binary()), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        for line in script.stdout:
            if line.startswith("open http://"):
                break
            assert time.monotonic() < deadline, "scripts/cluster did not come up in 60 s"
        assert script.poll() is None
        assert http_get(proxy, "/healthz") == (200, "ok\n")
        assert http_get(stats, "/")[0] == 200
        token = (tmp_path / "token").read_text().strip()
        status, answer, _ = post_changes(proxy, token, [{"op": "upsert", "id": "bus-1", "lat": 52.37, "lon": 4.89}])
        assert status == 200 and answer["accepted"] == 1, answer
        assert wait_for_version(ports["node"], answer["version"]) == [answer["version"]] * 3
    finally:
        script.send_signal(signal.SIGTERM)
        script.wait(30)
    every = [proxy, stats, *ports["node"], *ports["nats"], *ports["monitor"]]
    assert not [p for p in every if listening(p)], "a process of the cluster is still listening"
