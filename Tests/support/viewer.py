"""A well-behaved `pinwheel.v1` viewer, as the page behaves: hello, one viewport at a time, every
batch acknowledged with what it applied and how long that took (so the server's pace rises to what a
fast client absorbs), and no more viewports a second than the server's `viewportHz`, as the page
sends them. It measures viewport -> first batch and viewport -> done, the latencies the attack
scenarios must protect."""

import json
import time
from contextlib import ExitStack

from websockets.sync.client import connect

PROTOCOL = "pinwheel.v1"


class Viewer:
    """Use as a context manager: `with Viewer(server.ws_url) as viewer: ...`."""

    def __init__(self, ws_url, timeout_s=10):
        self.timeout_s = timeout_s
        self._connection = ExitStack()
        self.ws = self._connection.enter_context(
            connect(ws_url, subprotocols=[PROTOCOL], max_size=None, open_timeout=timeout_s))
        self.hello = self.receive("hello")
        self.spacing_s = 1 / self.hello["limits"]["viewportHz"]
        self.last_sent = -self.spacing_s
        self.seq = 0
        # Viewport -> first batch of the last viewport, in seconds.
        self.first_batch_s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._connection.close()

    def receive(self, wanted):
        while True:
            msg = json.loads(self.ws.recv(timeout=self.timeout_s))
            if msg["type"] == wanted:
                return msg
            if msg["type"] == "error":
                raise AssertionError(f"server error: {msg}")

    def viewport_done_seconds(self, bbox, zoom, width=1280, height=800):
        """Sends one viewport and acknowledges its batches until `done`; returns the seconds it took."""
        self.seq += 1
        time.sleep(max(0.0, self.last_sent + self.spacing_s - time.monotonic()))
        start = self.last_sent = time.monotonic()
        self.ws.send(json.dumps({"type": "viewport", "seq": self.seq, "bbox": bbox, "zoom": zoom,
                                 "width": width, "height": height}))
        self.first_batch_s = None
        while True:
            batch = self.receive("batch")
            received = time.monotonic()
            if self.first_batch_s is None and batch["seq"] == self.seq:
                self.first_batch_s = received - start
            applied = sum(len(batch.get(k, [])) for k in ("remove", "update", "add"))
            ms = max(0.05, (time.monotonic() - received) * 1000)
            self.ws.send(json.dumps({"type": "ack", "batch": batch["batch"], "applied": applied, "ms": ms}))
            if batch["done"] and batch["seq"] == self.seq:
                return time.monotonic() - start


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def assert_not_starved(latencies, at_least=20):
    """What the attack scenarios promise a well-behaved viewer. A starved viewer waits behind a queue
    of other sessions' work: seconds, growing while the attack goes on. A fair server makes it wait at
    most for the turns already running (about 50 ms each on a slow two-core machine). With a few dozen
    samples p99 is the single slowest, and one scheduling hiccup of a machine the attackers' own
    Python shares (131 ms once) is not starvation: so p95 bounds the tail and the maximum gets a
    margin that a queue would still exceed."""
    assert len(latencies) >= at_least, f"only {len(latencies)} viewports served"
    slowest = sorted(latencies)[-5:]
    assert percentile(latencies, 95) < 0.1, slowest
    assert max(latencies) < 0.5, slowest


class Watcher(Viewer):
    """A viewer that keeps what the page would show (id -> feature) and every batch it got, for
    following live data: `watch(bbox, zoom)`, then `wait_for(lambda w: ...)`."""

    def __init__(self, ws_url, timeout_s=10):
        super().__init__(ws_url, timeout_s)
        self.features = {}
        self.batches = []

    def watch(self, bbox, zoom, width=1280, height=800):
        self.viewport_done_seconds(bbox, zoom, width, height)

    def apply(self, batch):
        """Applies a batch as the page does: removes, then updates, then adds; every id must make sense."""
        for i in batch["remove"]:
            assert i in self.features, f"remove of {i}, which the viewer does not have"
            del self.features[i]
        for f in batch["update"]:
            assert f["id"] in self.features, f"update of {f['id']}, which the viewer does not have"
            self.features[f["id"]] = f
        for f in batch["add"]:
            assert f["id"] not in self.features, f"add of {f['id']}, which the viewer already has"
            self.features[f["id"]] = f
        self.batches.append(batch)

    def receive(self, wanted):
        msg = super().receive(wanted)
        if wanted == "batch":
            self.apply(msg)
        return msg

    def wait_for(self, predicate, timeout_s=10):
        """Acknowledges batches until `predicate(self)` holds; fails after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not predicate(self):
            left = deadline - time.monotonic()
            assert left > 0, f"condition not met in {timeout_s} s; last batches: {self.batches[-3:]}"
            try:
                self._take(json.loads(self.ws.recv(timeout=min(left, 1))))
            except TimeoutError:
                continue

    def next_message(self, *wanted):
        """The next message of one of the types `wanted`, acknowledging batches on the way as the page
        would."""
        while True:
            msg = self._take(json.loads(self.ws.recv(timeout=self.timeout_s)))
            if msg["type"] in wanted:
                return msg

    def _take(self, msg):
        """Applies and acknowledges a batch; returns the message."""
        if msg["type"] == "batch":
            self.apply(msg)
            applied = sum(len(msg[k]) for k in ("remove", "update", "add"))
            self.ws.send(json.dumps({"type": "ack", "batch": msg["batch"], "applied": applied, "ms": 0.1}))
        return msg

    def keyed(self):
        """The points producers named by strings: key -> feature."""
        return {f["key"]: f for f in self.features.values() if "key" in f}
