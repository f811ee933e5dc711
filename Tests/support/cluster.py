"""A Pinwheel cluster on loopback, as scripts/cluster starts it: a NATS cluster with JetStream, Pinwheel
nodes sharing one change log on it, and HAProxy in front. Every port is free when chosen and every
process is stopped by the test that started it."""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from live_patch import TOKEN
from pinwheel_process import ARTIFACTS, ROOT, PinwheelServer, pinwheel_binary, stop_process

HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"


# Ports handed out by this process: the kernel may offer a port again once its socket is closed, and
# two servers of one cluster given the same port would talk to each other's protocol.
_given = set()


def free_port():
    """A port free now and not handed out before by this process."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _given:
            _given.add(port)
            return port


def wait_for_port(port, timeout_s=20, process=None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def http_get(port, path, timeout_s=5):
    """(status, body text) of a GET on 127.0.0.1:port."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


class NatsCluster:
    """`size` nats-server processes with JetStream, routed to each other."""

    def __init__(self, folder, size=3):
        self.folder = Path(folder)
        self.client_ports = [free_port() for _ in range(size)]
        self.route_ports = [free_port() for _ in range(size)]
        self.monitor_ports = [free_port() for _ in range(size)]
        self.processes = [None] * size
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / "nats-server.log", "a")

    @property
    def urls(self):
        return ",".join(f"127.0.0.1:{p}" for p in self.client_ports)

    def start(self, k=None):
        for i in ([k] if k is not None else range(len(self.processes))):
            routes = ",".join(f"nats://127.0.0.1:{p}" for j, p in enumerate(self.route_ports) if j != i)
            args = ["nats-server", "-a", "127.0.0.1", "-p", str(self.client_ports[i]), "-n", f"nats-{i}",
                    "-m", str(self.monitor_ports[i]), "-js", "-sd", str(self.folder / f"nats-{i}"),
                    "--cluster_name", "pinwheel", "--cluster", f"nats://127.0.0.1:{self.route_ports[i]}",
                    "--routes", routes]
            self.processes[i] = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        for i in ([k] if k is not None else range(len(self.processes))):
            wait_for_port(self.client_ports[i], process=self.processes[i])
        return self

    def wait_healthy(self, timeout_s=60):
        """Until every server's /healthz says its JetStream is current."""
        deadline = time.monotonic() + timeout_s
        for port in self.monitor_ports:
            while True:
                try:
                    if http_get(port, "/healthz")[0] == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, f"NATS server on monitor port {port} not healthy"
                time.sleep(0.2)

    def kill(self, i):
        self.processes[i].kill()
        self.processes[i].wait()

    def stop(self):
        for p in self.processes:
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.processes:
            if p is not None:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.log.close()


class Cluster:
    """NATS, `nodes` Pinwheel nodes on one JetStream change log, and (with `proxy`) HAProxy."""

    def __init__(self, folder, nodes=3, extra_args=(), proxy=False, drain=2):
        self.folder = Path(folder)
        self.nats = NatsCluster(self.folder / "nats")
        token_file = self.folder / "token"
        token_file.write_text(TOKEN + "\n")
        self.node_args = [
            ["--synthetic", "2000", "--data-dir", str(self.folder / f"node-{i}"), "--ingest-token-file",
             str(token_file), "--allowed-origin", "*", "--drain", str(drain), *extra_args]
            for i in range(nodes)]
        self.nodes = []
        self.proxy = None
        self.with_proxy = proxy

    def start(self):
        try:
            self.nats.start()
            self.nats.wait_healthy()
            log_args = ["--log", "nats://" + self.nats.urls]
            for args in self.node_args:
                self.nodes.append(PinwheelServer(pinwheel_binary(), args + log_args))
                self.nodes[-1].start()
            if self.with_proxy:
                self.proxy = HAProxy(self.folder, [n.port for n in self.nodes])
                self.proxy.start()
        except BaseException:
            # Whatever started is stopped: a failed start leaves no process behind.
            self.stop()
            raise
        return self

    def stop(self):
        if self.proxy:
            self.proxy.stop()
        # Every node drains at the same time, then each is waited for.
        for node in self.nodes:
            if node.process and node.process.poll() is None:
                node.process.send_signal(signal.SIGTERM)
        for node in self.nodes:
            node.stop()
            node.log.close()
        self.nats.stop()


class HAProxy:
    """haproxy with deploy/haproxy.cfg, its addresses given through the environment."""

    def __init__(self, folder, node_ports):
        self.port = free_port()
        self.stats_port = free_port()
        self.env = dict(os.environ, PINWHEEL_PROXY_BIND=f"127.0.0.1:{self.port}",
                        PINWHEEL_PROXY_STATS=f"127.0.0.1:{self.stats_port}",
                        **{f"PINWHEEL_NODE{i + 1}": f"127.0.0.1:{p}" for i, p in enumerate(node_ports)})
        self.process = None
        self.log = open(ARTIFACTS / "haproxy.log", "a")

    def start(self):
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.process = subprocess.Popen([binary, "-db", "-f", str(HAPROXY_CONFIG)], env=self.env,
                                        stdout=self.log, stderr=self.log)
        wait_for_port(self.port, process=self.process)
        return self

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self):
        return f"ws://127.0.0.1:{self.port}/"

    def stop(self):
        stop_process(self.process)
        self.log.close()


def index_state(port):
    """The data version a node's index serves now and the points it lays over its last full build,
    from its /metrics."""
    status, text = http_get(port, "/metrics")
    assert status == 200
    values = {"pinwheel_data_version": 0, "pinwheel_index_delta_points": 0}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in values:
            values[name] = int(float(value))
    return values["pinwheel_data_version"], values["pinwheel_index_delta_points"]


def wait_for_version(ports, version, timeout_s=60):
    """Until every node's index serves `version` or later as a full build: nodes that took changes
    lay them over their last build until a compaction catches up, and only full builds of the same
    points are identical."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = [index_state(p) for p in ports]
        if all(v >= version and delta == 0 for v, delta in states):
            return [v for v, _ in states]
        assert time.monotonic() < deadline, f"nodes at (version, delta) {states}, waiting for {version}"
        time.sleep(0.1)


def metric(port, name):
    """One unlabelled metric of a node's /metrics, 0 when absent."""
    status, text = http_get(port, "/metrics")
    assert status == 200
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def proxy_server_states(stats_port):
    """HAProxy's view of the backend: node name -> status (UP, DOWN, ...), from its CSV stats."""
    status, text = http_get(stats_port, "/;csv")
    assert status == 200
    states = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) > 17 and fields[0] == "nodes" and fields[1].startswith("node"):
            states[fields[1]] = fields[17]
    return states
