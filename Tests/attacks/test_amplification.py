"""Five sessions send the most expensive viewports the protocol accepts (the whole world on a
16384-px map, at the deepest zoom where it still fits), as fast as the rate limit serves them, and
flip the clustering algorithm in between. A well-behaved viewer on the same server must keep its
latency, and the server must still stop promptly."""

import asyncio
import json
import multiprocessing
import signal
import time
import urllib.request

import pytest
from viewer import Viewer, assert_not_starved, percentile
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

ATTACKERS = 5
ATTACK_SECONDS = 10
RATE_HZ = 10
LONDON = [-0.5, 51.3, 0.3, 51.7]
# 256 × 2^7 = 32,768 px: the whole world fits a 16,384-px map at zoom 7 under the span rule.
HEAVY_ZOOMS = [6.9, 7.0]

pytestmark = pytest.mark.server_args("--synthetic", "1000000")


async def attacker(url, deadline, stats):
    async with connect(url, subprotocols=["pinwheel.v1"], max_size=None) as ws:
        async def drain():
            try:
                async for raw in ws:
                    message = json.loads(raw)
                    if message["type"] == "batch":
                        stats["batches"] += 1
                        # Acknowledge at once, claiming a very fast page: the pace rises to the maximum.
                        await ws.send(json.dumps({"type": "ack", "batch": message["batch"],
                                                  "applied": 1000, "ms": 1}))
                    elif message["type"] == "error":
                        stats["errors"] += 1
            except ConnectionClosed:
                pass

        reader = asyncio.create_task(drain())
        seq = 0
        while time.monotonic() < deadline:
            seq += 1
            await ws.send(json.dumps({"type": "viewport", "seq": seq, "bbox": [-180, -85, 180, 85],
                                      "zoom": HEAVY_ZOOMS[seq % 2], "width": 16384, "height": 16384}))
            if seq % 2 == 0:
                algorithm = "pca-tree" if seq % 4 == 0 else "hierarchical"
                await ws.send(json.dumps({"type": "settings", "algorithm": algorithm}))
            stats["sent"] += 1
            await asyncio.sleep(1 / RATE_HZ)
        reader.cancel()



def run_attack(url, outcome):
    """In a process of its own, so the attackers do not slow the viewer's Python."""
    stats = {"sent": 0, "batches": 0, "errors": 0}

    async def main():
        deadline = time.monotonic() + ATTACK_SECONDS
        await asyncio.gather(*(attacker(url, deadline, stats) for _ in range(ATTACKERS)))

    asyncio.run(main())
    outcome.update(stats)




def test_expensive_viewports_do_not_starve_a_viewer_and_sigterm_stays_prompt(server):
    with Viewer(server.ws_url) as viewer:
        outcome = multiprocessing.Manager().dict()
        attack = multiprocessing.Process(target=run_attack, args=(server.ws_url, outcome))
        attack.start()
        time.sleep(1)  # the attackers are connected and busy
        latencies = []
        while attack.is_alive() and len(latencies) < 200:
            latencies.append(viewer.viewport_done_seconds(LONDON, 9 + len(latencies) % 2))
        # SIGTERM while the attack still runs.
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(10)
        exit_seconds = time.monotonic() - started
        attack.join()
    print(f"viewer during the attack: {len(latencies)} viewports, p50 {percentile(latencies, 50) * 1000:.1f} ms, "
          f"p99 {percentile(latencies, 99) * 1000:.1f} ms; SIGTERM -> exit {exit_seconds:.2f} s; "
          f"attackers {dict(outcome)}")
    assert outcome["batches"] > 0, "the attack was not served at all"
    assert_not_starved(latencies, at_least=50)
    assert code == 0
    assert exit_seconds < 2


def test_a_bbox_no_map_can_show_is_refused_and_the_session_goes_on(server):
    with Viewer(server.ws_url) as viewer:
        viewer.ws.send(json.dumps({"type": "viewport", "seq": 1, "bbox": [-180, -85, 180, 85], "zoom": 16,
                                   "width": 16384, "height": 16384}))
        error = json.loads(viewer.ws.recv(timeout=5))
        assert error["type"] == "error" and error["code"] == "invalid-field" and error["field"] == "bbox"
        assert "zoom 16 shows at most" in error["message"]
        assert viewer.viewport_done_seconds(LONDON, 10) < 1
    assert urllib.request.urlopen(f"{server.url}/healthz", timeout=5).read().strip() == b"ok"
