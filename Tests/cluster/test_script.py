"""scripts/cluster, as a user runs it before deploying: the whole topology on the ports given, a change
posted through the proxy reaching every node, a process that dies reported while the others go on and
restarted on request, and everything gone after SIGTERM."""

import os
import signal
import socket
import subprocess
import sys
import threading
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


def cluster_command(tmp_path, *args):
    """Runs `scripts/cluster <args> --dir tmp_path` beside the running cluster; its stdout."""
    done = subprocess.run([str(ROOT / "scripts" / "cluster"), *args, "--dir", str(tmp_path)], capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout


def statuses(tmp_path):
    """name -> state, from `scripts/cluster status`."""
    return {line.split()[0]: line.split(None, 2)[2] for line in cluster_command(tmp_path, "status").splitlines()}


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
        output = []
        reader = threading.Thread(target=lambda: output.extend(script.stdout), daemon=True)
        reader.start()
        assert set(statuses(tmp_path).values()) == {"running"}

        # A node killed with -9 is reported; the script and the rest of the cluster go on.
        victim = int(cluster_command(tmp_path, "pid", "node-1"))
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not any(f"node-1 (pid {victim}) exited with status 137" in line for line in output):
            assert time.monotonic() < deadline, f"the exit was not reported: {output}"
            time.sleep(0.1)
        assert script.poll() is None
        assert statuses(tmp_path)["node-1"] == "exited (exited with status 137)"
        status, answer, _ = post_changes(proxy, token, [{"op": "upsert", "id": "bus-2", "lat": 52.0, "lon": 4.0}])
        assert status == 200, answer

        # A NATS server stopped by a drill shows as stopped, and goes on after SIGCONT.
        nats_pid = int(cluster_command(tmp_path, "pid", "nats-2"))
        os.kill(nats_pid, signal.SIGSTOP)
        assert statuses(tmp_path)["nats-2"] == "stopped"
        os.kill(nats_pid, signal.SIGCONT)
        assert statuses(tmp_path)["nats-2"] == "running"

        # Restarted on request, the node catches up with what was acknowledged while it was down.
        restarted = int(cluster_command(tmp_path, "restart", "node-1").strip())
        assert restarted != victim
        assert statuses(tmp_path)["node-1"] == "running"
        assert wait_for_version([ports["node"][1]], answer["version"]) == [answer["version"]]
    finally:
        script.send_signal(signal.SIGTERM)
        script.wait(30)
    every = [proxy, stats, *ports["node"], *ports["nats"], *ports["monitor"]]
    assert not [p for p in every if listening(p)], "a process of the cluster is still listening"
