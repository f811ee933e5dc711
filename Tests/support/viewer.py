"""A well-behaved `pinwheel.v1` viewer, as the page behaves: hello, one viewport at a time, every
batch acknowledged. It measures viewport -> done, the latency the attack scenarios must protect."""

import json
import time

from websockets.sync.client import connect

PROTOCOL = "pinwheel.v1"


class Viewer:
    def __init__(self, ws_url, timeout_s=10):
        self.timeout_s = timeout_s
        self.ws = connect(ws_url, subprotocols=[PROTOCOL], max_size=None, open_timeout=timeout_s)
        self.hello = self.receive("hello")
        self.seq = 0

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
        start = time.monotonic()
        self.ws.send(json.dumps({"type": "viewport", "seq": self.seq, "bbox": bbox, "zoom": zoom,
                                 "width": width, "height": height}))
        while True:
            batch = self.receive("batch")
            self.ws.send(json.dumps({"type": "ack", "batch": batch["batch"], "applied": 0, "ms": 0.1}))
            if batch["done"] and batch["seq"] == self.seq:
                return time.monotonic() - start

    def close(self):
        self.ws.close()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]
