#!/usr/bin/env python3
"""First batch after a filter, against the real server: 1M random points whose `kind` is one of ten
values (so each filter matches 10 %), one session per filter that no session had (the index is built
then) and one more with the same filter (its index is warm). Needs PINWHEEL_BIN (a release build).

    PINWHEEL_BIN=.build/release/pinwheel python3 scripts/filter-first-batch.py
"""
import json
import random
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "support"))
import pinwheel_process  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

POINTS = 1_000_000
VIEW = {"type": "viewport", "seq": 1, "bbox": [-20, 30, 40, 60], "zoom": 4, "width": 1280, "height": 800}


def write_points(path):
    rng = random.Random(47)
    with open(path, "w") as f:
        f.write("lat,lon,kind,speed\n")
        for i in range(POINTS):
            f.write(f"{rng.uniform(-60, 70):.5f},{rng.uniform(-180, 180):.5f},k{i % 10},{i % 120}\n")


def served_session(url, stack):
    """A session whose view is served and applied, closed with `stack`."""
    ws = stack.enter_context(connect(url, subprotocols=["pinwheel.v1"], max_size=None))
    json.loads(ws.recv())
    ws.send(json.dumps(VIEW))
    while True:
        m = json.loads(ws.recv())
        if m["type"] == "batch":
            ws.send(json.dumps({"type": "ack", "batch": m["batch"], "applied": 1, "ms": 0.1}))
            if m["done"]:
                return ws


def first_batch_ms(ws, expression):
    """Milliseconds from sending the filter to the first batch of the filtered view, and hello's count."""
    start = time.monotonic()
    ws.send(json.dumps({"type": "settings", "filter": expression}))
    points = None
    while True:
        m = json.loads(ws.recv())
        if m["type"] == "hello":
            points = m["dataset"]["points"]
        if m["type"] == "batch":
            return (time.monotonic() - start) * 1000, points


def main():
    pinwheel_process.START_TIMEOUT_S = 300
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "points.csv"
        write_points(data)
        server = pinwheel_process.PinwheelServer(pinwheel_process.pinwheel_binary(), ["--data", str(data)]).start()
        try:
            cold, warm = [], []
            for k in range(10):
                expression = ["==", ["get", "kind"], f"k{k}"]
                with ExitStack() as stack:
                    first, second = served_session(server.ws_url, stack), served_session(server.ws_url, stack)
                    ms, points = first_batch_ms(first, expression)
                    cold.append(ms)
                    warm.append(first_batch_ms(second, expression)[0])
                print(f"k{k}: {points} points, never seen {ms:.0f} ms, warm {warm[-1]:.1f} ms", flush=True)
            cold.sort()
            warm.sort()
            print(f"never seen: median {cold[5]:.0f} ms, max {cold[-1]:.0f} ms; "
                  f"warm: median {warm[5]:.1f} ms, max {warm[-1]:.1f} ms")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
