"""A flood of WebSocket sessions beyond `--max-sessions`: the extra ones are closed with 1013 and a
reason, the sessions inside the limit and a viewer connected before the flood keep being served,
memory stays bounded, and once the flood is gone new sessions are accepted again."""

import asyncio
import multiprocessing
import time

import pytest
from viewer import Viewer, assert_not_starved, percentile
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

MAX_SESSIONS = 50
FLOOD = 600
LONDON = [-0.5, 51.3, 0.3, 51.7]


pytestmark = pytest.mark.server_args("--max-sessions", str(MAX_SESSIONS))

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def flood(url, outcome):
    """Opens FLOOD sessions at once and records how each ended; the accepted ones stay open a while."""

    async def one(results):
        try:
            async with connect(url, subprotocols=["pinwheel.v1"], open_timeout=20, close_timeout=2) as ws:
                try:
                    while True:
                        await asyncio.wait_for(ws.recv(), 3)
                except asyncio.TimeoutError:
                    results.append("kept")
                except ConnectionClosed as closed:
                    results.append((closed.rcvd.code, closed.rcvd.reason) if closed.rcvd else (1006, ""))
        except (InvalidStatus, OSError, asyncio.TimeoutError) as error:
            results.append(("refused", type(error).__name__))

    async def main():
        results = []
        await asyncio.gather(*(one(results) for _ in range(FLOOD)))
        return results

    results = asyncio.run(main())
    outcome["kept"] = sum(1 for r in results if r == "kept")
    outcome["1013"] = sum(1 for r in results if isinstance(r, tuple) and r[0] == 1013)
    outcome["reasons"] = sorted({r[1] for r in results if isinstance(r, tuple) and r[0] == 1013})
    outcome["other"] = [r for r in results if r != "kept" and not (isinstance(r, tuple) and r[0] == 1013)][:5]




def test_sessions_beyond_the_limit_get_1013_and_the_viewer_keeps_its_latency(server):
    with Viewer(server.ws_url) as viewer:
        rss_before = rss_kib(server.process.pid)
        outcome = multiprocessing.Manager().dict()
        attack = multiprocessing.Process(target=flood, args=(server.ws_url, outcome))
        attack.start()
        latencies = []
        while attack.is_alive() and len(latencies) < 100:
            latencies.append(viewer.viewport_done_seconds(LONDON, 9 + len(latencies) % 2))
        attack.join(60)
        rss_after = rss_kib(server.process.pid)
    print(f"flood: {dict(outcome)}; viewer p99 {percentile(latencies, 99) * 1000:.1f} ms over {len(latencies)}; "
          f"RSS {rss_before} -> {rss_after} KiB")
    # The viewer holds one session: the flood gets the other MAX_SESSIONS - 1.
    assert outcome["kept"] == MAX_SESSIONS - 1
    assert outcome["1013"] == FLOOD - outcome["kept"], outcome["other"]
    assert outcome["reasons"] and all("sessions" in r for r in outcome["reasons"])
    assert_not_starved(latencies)
    assert rss_after - rss_before < 64 * 1024
    # The flood is gone: a new session is accepted and served.
    time.sleep(1)
    with Viewer(server.ws_url) as late:
        assert late.viewport_done_seconds(LONDON, 10) < 1
