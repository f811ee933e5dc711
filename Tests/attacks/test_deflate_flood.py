"""A client that negotiates permessage-deflate and sends large compressible messages reached an
assertion in libwebsockets 4.1.6's inflate path (extension-permessage-deflate.c:351), which aborted
the whole server. Pinwheel now inflates whole messages itself and lws's deflate code never runs. This
test replays the attack against the real server process and checks that the attacking messages are
answered and the server keeps serving."""

import asyncio
import json
import multiprocessing
import time
import urllib.request

from viewer import Viewer, assert_not_starved, percentile
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

ATTACKERS = 10
ATTACK_SECONDS = 8
MESSAGES_PER_TICK = 9
TICK_S = 0.1
LONDON = [-0.5, 51.3, 0.3, 51.7]


def attack_message(k):
    # About 60 kB, highly compressible, each answered with an `error` (unknown type or bad JSON).
    if k % 2:
        return json.dumps({"type": "nonsense", "pad": "x" * 60000})
    return '{"type":"viewport","pad":"' + "ab" * 30000


async def attacker(url, deadline, stats):
    while time.monotonic() < deadline:
        try:
            async with connect(url, subprotocols=["pinwheel.v1"], max_size=None, compression="deflate") as ws:
                stats["connections"] += 1
                reader = asyncio.create_task(drain(ws, stats))
                while time.monotonic() < deadline:
                    for k in range(MESSAGES_PER_TICK):
                        await ws.send(attack_message(k))
                    await asyncio.sleep(TICK_S)
                reader.cancel()
        except (ConnectionClosed, OSError):
            stats["dropped"] += 1


async def drain(ws, stats):
    try:
        async for message in ws:
            if json.loads(message).get("type") == "error":
                stats["errors"] += 1
    except ConnectionClosed:
        pass


def run_attack(url, outcome):
    """In a process of its own, so the attackers' compression does not slow the viewer's Python."""
    stats = {"connections": 0, "dropped": 0, "errors": 0}

    async def main():
        deadline = time.monotonic() + ATTACK_SECONDS
        await asyncio.gather(*(attacker(url, deadline, stats) for _ in range(ATTACKERS)))

    asyncio.run(main())
    outcome.update(stats)


def test_deflate_flood_fails_the_attackers_and_the_server_keeps_serving(server):
    with Viewer(server.ws_url) as viewer:  # negotiates permessage-deflate too, as browsers do
        assert "permessage-deflate" in (viewer.ws.response.headers.get("Sec-WebSocket-Extensions") or "")
        latencies, outcome = [], multiprocessing.Manager().dict()
        attack = multiprocessing.Process(target=run_attack, args=(server.ws_url, outcome))
        attack.start()
        while attack.is_alive():
            latencies.append(viewer.viewport_done_seconds(LONDON, 9 + len(latencies) % 2))
        attack.join()
        after = viewer.viewport_done_seconds(LONDON, 10)

    assert server.process.poll() is None, "the server exited during the attack"
    # The attack's messages were inflated and answered by Pinwheel.
    assert outcome["errors"] > 100, outcome
    assert outcome["connections"] >= ATTACKERS, outcome
    # The well-behaved viewer was served throughout, and still is.
    print(f"viewer during the attack: {len(latencies)} viewports, p99 {percentile(latencies, 99) * 1000:.1f} ms; "
          f"{dict(outcome)}")
    assert_not_starved(latencies)
    assert after < 0.1
    assert urllib.request.urlopen(f"{server.url}/healthz", timeout=5).read().strip() == b"ok"
