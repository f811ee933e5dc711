#!/usr/bin/env python3
"""Staleness as a dashboard sees it, measured from outside: a still viewer holds one view at zoom 17
(where a point is its own marker) and a producer, in a loop, inserts a point there, moves it, and
deletes it, each with `POST /v1/changes`. Each change is timed from just before its POST is sent to
the moment the viewer receives the batch that shows it. Independent of `pinwheel load`: only the
protocol's JSON, Python's HTTP client and the `websockets` library.

    scripts/staleness-probe.py --url ws://127.0.0.1:8099/ --token-file token --cycles 30

prints the figures per kind of change and, with --json FILE, writes every sample."""

import argparse
import http.client
import json
import random
import sys
import threading
import time
from contextlib import ExitStack
from urllib.parse import urlparse

from websockets.sync.client import connect

# A spot of open sea, far from any synthetic city: the probe's points are alone in the view.
SPOT = (-47.5, -140.5)


class StillViewer:
    """A `pinwheel.v1` viewer that sets one viewport and never moves; a thread receives and acks every
    batch, keeping the features by id and noting when each batch came."""

    def __init__(self, ws_url, lat, lon, zoom=17, width=1280, height=800):
        self._connection = ExitStack()
        self.ws = self._connection.enter_context(
            connect(ws_url, subprotocols=["pinwheel.v1"], max_size=None, open_timeout=10))
        self.features = {}
        # When the last batch came: the moment a delete was shown.
        self.last_batch_at = None
        self.changed = threading.Condition()
        self.closed = None
        hello = json.loads(self.ws.recv(timeout=10))
        assert hello["type"] == "hello", hello
        span = width / 256 / 2 ** zoom * 360
        height_deg = height / 256 / 2 ** zoom * 180
        self.bbox = [lon - span / 2, lat - height_deg / 2, lon + span / 2, lat + height_deg / 2]
        self.ws.send(json.dumps({"type": "viewport", "seq": 1, "bbox": self.bbox, "zoom": zoom,
                                 "width": width, "height": height}))
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self):
        try:
            while True:
                msg = json.loads(self.ws.recv())
                received = time.monotonic()
                if msg["type"] != "batch":
                    continue
                with self.changed:
                    for i in msg["remove"]:
                        self.features.pop(i, None)
                    for f in msg["update"] + msg["add"]:
                        self.features[f["id"]] = (f, received)
                    self.last_batch_at = received
                    self.changed.notify_all()
                applied = len(msg["remove"]) + len(msg["update"]) + len(msg["add"])
                self.ws.send(json.dumps({"type": "ack", "batch": msg["batch"], "applied": applied, "ms": 0.1}))
        except Exception as error:  # noqa: BLE001 - the connection ended
            self.closed = repr(error)
            with self.changed:
                self.changed.notify_all()

    def wait_for(self, predicate, timeout_s):
        """What `predicate(viewer)` gives (the receipt time of the batch that showed a change) once it
        gives one, or None if it does not within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while True:
                found = predicate(self)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self.changed.wait(left)

    def close(self):
        self._connection.close()


def keyed(features, key):
    for f, received in features.values():
        if f.get("key") == key:
            return f, received
    return None


def post(host, port, token, change):
    """Posts one change, waiting out 429s as Retry-After says; returns the monotonic time just before
    the first attempt was sent: a change held back is as late to the user as one shown late."""
    body = (json.dumps(change) + "\n").encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    first = None
    while True:
        connection = http.client.HTTPConnection(host, port, timeout=30)
        try:
            connection.connect()
            sent = time.monotonic()
            first = first if first is not None else sent
            connection.request("POST", "/v1/changes", body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            if response.status == 429:
                time.sleep(float(response.getheader("Retry-After", "1")))
                continue
            assert response.status == 200, (response.status, answer)
            return first
        finally:
            connection.close()


def probe(ws_url, token, cycles=20, spot=SPOT, timeout_s=8, pause_s=0.3, seed=1):
    """Runs the cycles; returns {"insert": [...], "move": [...], "delete": [...], "missed": {...}},
    latencies in seconds."""
    url = urlparse(ws_url)
    rng = random.Random(seed)
    viewer = StillViewer(ws_url, *spot)
    samples = {"insert": [], "move": [], "delete": []}
    missed = {"insert": 0, "move": 0, "delete": 0}
    lat0, lon0 = spot
    # A fraction of the view: the view at zoom 17 is about 0.0055 by 0.0017 degrees.
    offset = lambda: ((rng.random() - 0.5) * 0.001, (rng.random() - 0.5) * 0.003)  # noqa: E731
    try:
        time.sleep(0.5)
        for k in range(cycles):
            key = f"probe-{seed}-{k}"
            steps = []
            dlat, dlon = offset()
            steps.append(("insert", {"op": "upsert", "id": key, "lat": lat0 + dlat, "lon": lon0 + dlon}))
            dlat, dlon = offset()
            steps.append(("move", {"op": "upsert", "id": key, "lat": lat0 + dlat, "lon": lon0 + dlon}))
            steps.append(("delete", {"op": "delete", "id": key}))
            for kind, change in steps:
                if kind == "delete":
                    def shown(viewer, key=key):
                        return None if keyed(viewer.features, key) else viewer.last_batch_at
                else:
                    def shown(viewer, key=key, change=change):
                        found = keyed(viewer.features, key)
                        if found and abs(found[0]["lat"] - change["lat"]) < 1e-6 \
                                and abs(found[0]["lon"] - change["lon"]) < 1e-6:
                            return found[1]
                        return None
                sent = post(url.hostname, url.port, token, change)
                at = viewer.wait_for(shown, timeout_s)
                if at is None:
                    missed[kind] += 1
                else:
                    samples[kind].append(max(0.0, at - sent))
                time.sleep(pause_s * rng.random())
    finally:
        viewer.close()
    return {**samples, "missed": missed}


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the server's WebSocket URL, e.g. ws://127.0.0.1:8099/")
    parser.add_argument("--token-file", required=True, help="file holding the server's ingest token")
    parser.add_argument("--cycles", type=int, default=20, help="insert, move, delete cycles")
    parser.add_argument("--timeout", type=float, default=8, help="seconds a change may take before it counts as missed")
    parser.add_argument("--json", help="write the samples here")
    args = parser.parse_args()
    token = open(args.token_file).read().strip()
    result = probe(args.url, token, cycles=args.cycles, timeout_s=args.timeout)
    for kind in ("insert", "move", "delete"):
        ms = [s * 1000 for s in result[kind]]
        if ms:
            print(f"{kind:7} n={len(ms):4} p50 {percentile(ms, 50):8.1f} ms  p95 {percentile(ms, 95):8.1f} ms  "
                  f"p99 {percentile(ms, 99):8.1f} ms  max {max(ms):8.1f} ms  missed {result['missed'][kind]}")
        else:
            print(f"{kind:7} no sample, missed {result['missed'][kind]}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out)
    return 0 if not any(result["missed"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
