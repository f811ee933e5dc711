"""Sessions come and go by the thousand (tabs opened, panned once, closed): each one's memory goes
with it. 20,000 sessions over permessage-deflate as browsers negotiate it: three in four are served a
viewport to its end, acknowledged batch by batch, and close; one in four goes mid-stream, after its
first batch, without acknowledging it (half of those with a Close, half by dropping TCP). The
server's RSS after them is what it was after the first 2,000, within 5 %."""

import asyncio
import json
import random
from concurrent.futures import ThreadPoolExecutor

from websockets.asyncio.client import connect

SESSIONS = 20_000
WARM_UP = 2_000
AT_ONCE = 32
# What RSS may still grow by between the warm-up and the end, as a share of it: allocator slack, not
# per-session state (18,000 sessions holding even 1 kB each would be 18 MB, 15 % of the server).
ALLOWANCE = 0.05


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


# Cities of the demo data the sessions look at (lon, lat), each view shifted a little from them.
CITIES = [(2.35, 48.86), (13.40, 52.52), (-3.70, 40.42), (12.50, 41.90), (21.01, 52.23), (4.90, 52.37)]


async def one_session(url, rng):
    """hello, one viewport near a European city acknowledged until `done`, close; the features it got.
    One session in four leaves after its first batch instead, half of them without a Close."""
    leaves = rng.random() < 0.25
    drops = leaves and rng.random() < 0.5
    lon, lat = rng.choice(CITIES)
    lon, lat = lon + rng.uniform(-0.5, 0.5), lat + rng.uniform(-0.5, 0.5)
    bbox = [lon - 2, lat - 1.2, lon + 2, lat + 1.2]
    features = 0
    async with connect(url, subprotocols=["pinwheel.v1"], max_size=None, open_timeout=20) as ws:
        assert json.loads(await ws.recv())["type"] == "hello"
        await ws.send(json.dumps({"type": "viewport", "seq": 1, "bbox": bbox, "zoom": 7, "width": 1280,
                                  "height": 800}))
        while True:
            batch = json.loads(await asyncio.wait_for(ws.recv(), 20))
            assert batch["type"] == "batch", batch
            if leaves:
                if drops:
                    ws.transport.abort()
                return len(batch.get("add", []))
            applied = sum(len(batch.get(k, [])) for k in ("remove", "update", "add"))
            features += len(batch.get("add", []))
            await ws.send(json.dumps({"type": "ack", "batch": batch["batch"], "applied": applied, "ms": 1}))
            if batch["done"]:
                return features


async def churn(url, count, seed):
    rng = random.Random(seed)
    queue = asyncio.Queue()
    for _ in range(count):
        queue.put_nowait(None)
    served = []

    async def worker():
        while not queue.empty():
            queue.get_nowait()
            served.append(await one_session(url, rng))

    await asyncio.gather(*(worker() for _ in range(AT_ONCE)))
    return served


def run_churn(url, count, seed):
    """On a thread of its own: a suite run in the same process may have left an event loop running
    on this one (Playwright's sync API does)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, churn(url, count, seed)).result()


def test_twenty_thousand_sessions_leave_no_memory_behind(server):
    served = run_churn(server.ws_url, WARM_UP, seed=1)
    after_warm_up = rss_kib(server.process.pid)
    curve = [after_warm_up]
    for k in range(2, 2 + (SESSIONS - WARM_UP) // WARM_UP):
        served += run_churn(server.ws_url, WARM_UP, seed=k)
        curve.append(rss_kib(server.process.pid))
    at_end = curve[-1]
    print(f"RSS after {WARM_UP} sessions {after_warm_up} KiB, after {SESSIONS}: {at_end} KiB "
          f"(every {WARM_UP}: {curve})")
    assert len(served) == SESSIONS and min(served) > 0, "every session was served features"
    assert at_end - after_warm_up < ALLOWANCE * after_warm_up, \
        f"RSS {after_warm_up} -> {at_end} KiB over {SESSIONS - WARM_UP} sessions"
