#!/usr/bin/env python3
"""Round trips of `leaves` pages of 100 against a running `pinwheel serve`: up to five clusters of each
of a run of views at zooms 2-14 around random points over Europe, a first page each, timed from the
request to its answer (a `rate-limited` answer waits its retryMs and the request is timed again).
Prints p50, p99 and max in ms.

    python3 scripts/leaves-rtt.py ws://127.0.0.1:8080/ 400
"""
import json, math, random, sys, time
from websockets.sync.client import connect

url, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)

def box(lat, lon, zoom, w=1280, h=800):
    world = 512 * 2 ** zoom
    cx = (lon + 180) / 360 * world
    cy = (1 - math.log(math.tan(math.pi / 4 + math.radians(lat) / 2)) / math.pi) / 2 * world
    la = lambda y: math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * y / world))))
    return [(cx - w / 2) / world * 360 - 180, la(min(world, cy + h / 2)), (cx + w / 2) / world * 360 - 180, la(max(0, cy - h / 2))]

with connect(url, subprotocols=["pinwheel.v1"], max_size=None) as ws:
    json.loads(ws.recv())
    seq, times = 0, []
    while len(times) < n:
        lat, lon = rng.uniform(30, 55), rng.uniform(-10, 30)
        zoom = rng.choice([2, 5, 8, 11, 14])
        seq += 1
        ws.send(json.dumps({"type": "viewport", "seq": seq, "bbox": box(lat, lon, zoom), "zoom": zoom, "width": 1280, "height": 800}))
        shown = {}
        while True:
            m = json.loads(ws.recv())
            if m["type"] != "batch": continue
            for f in m["add"] + m["update"]: shown[f["id"]] = f
            ws.send(json.dumps({"type": "ack", "batch": m["batch"], "applied": 1, "ms": 0.1}))
            if m["done"] and m["seq"] == seq: break
        for c in [f for f in shown.values() if f["count"] > 1][:5]:
            time.sleep(0.03)  # under the flood detector's 100 messages/s
            while True:
                t = time.perf_counter()
                ws.send(json.dumps({"type": "leaves", "id": c["id"], "req": len(times)}))
                while True:
                    m = json.loads(ws.recv())
                    if m["type"] in ("leaves", "error"): break
                if m["type"] == "leaves": break
                assert m["code"] == "rate-limited", m
                time.sleep(m["retryMs"] / 1000)
            times.append((time.perf_counter() - t) * 1000)
times.sort()
print(f"{len(times)} leaves pages of 100: p50 {times[len(times)//2]:.2f} ms, p99 {times[int(len(times)*0.99)]:.2f} ms, max {times[-1]:.2f} ms")
