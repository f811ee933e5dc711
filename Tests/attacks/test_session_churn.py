"""Sessions come and go by the thousand (tabs opened, panned once, closed): each one's memory goes
with it. 10,000 sessions, each with a viewport served to its end and acknowledged batch by batch,
over permessage-deflate as browsers negotiate it; the server's RSS after them is what it was after
the first 1,000, within a small allowance for the allocator."""

import asyncio
import json
import random
from concurrent.futures import ThreadPoolExecutor

from websockets.asyncio.client import connect

SESSIONS = 10_000
WARM_UP = 1_000
AT_ONCE = 32
# What RSS may still grow by between the warm-up and the end: allocator slack, not per-session state
# (10,000 sessions holding even 2 kB each would be 20 MB).
ALLOWANCE_KIB = 8 * 1024


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


# Cities of the demo data the sessions look at (lon, lat), each view shifted a little from them.
CITIES = [(2.35, 48.86), (13.40, 52.52), (-3.70, 40.42), (12.50, 41.90), (21.01, 52.23), (4.90, 52.37)]


async def one_session(url, rng):
    """hello, one viewport near a European city acknowledged until `done`, close; the features it got."""
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


def test_ten_thousand_sessions_leave_no_memory_behind(server):
    served = run_churn(server.ws_url, WARM_UP, seed=1)
    after_warm_up = rss_kib(server.process.pid)
    served += run_churn(server.ws_url, SESSIONS - WARM_UP, seed=2)
    at_end = rss_kib(server.process.pid)
    print(f"RSS after {WARM_UP} sessions {after_warm_up} KiB, after {SESSIONS}: {at_end} KiB")
    assert len(served) == SESSIONS and min(served) > 0, "every session was served features"
    assert at_end - after_warm_up < ALLOWANCE_KIB, f"RSS {after_warm_up} -> {at_end} KiB over {SESSIONS - WARM_UP} sessions"
