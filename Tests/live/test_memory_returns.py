"""Memory under live data returns: after an ingest flood (bursts of large POSTs from several producers
moving the points) ends, the server's RSS comes back to near what a server holding the same points
without changes holds (the same data folder, started afresh), instead of keeping what the flood's
allocations left in the allocator's arenas."""

import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from ingest import post_changes  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402

POINTS = 100_000
PRODUCERS = 4
FLOOD_S = 8
# The bound after the flood: the RSS of the same points without changes plus a fifth, plus room for
# the change log's write buffers and the allocator's own bookkeeping. Measured on 2 busy cores: 123 MB
# after against 94 before the flood and 113 MB for the same points started afresh; without handing
# free memory back, 335 MB after.
GROWTH = 1.2
SLACK_MB = 24


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def settled_rss(pid, seconds=3):
    """The RSS once it has not moved by more than 1 MB over `seconds`."""
    samples = []
    while len(samples) < seconds * 4 or max(samples[-seconds * 4:]) - min(samples[-seconds * 4:]) > 1:
        samples.append(rss_mb(pid))
        time.sleep(0.25)
    return samples[-1]


def lowest_rss(pid, seconds):
    """The lowest RSS over `seconds`: the last compaction after the changes stop, and the hand-back
    of free memory after it, come within a few seconds."""
    lowest = rss_mb(pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.25)
        lowest = min(lowest, rss_mb(pid))
    return lowest


def flood(port, stop, seed, counts):
    rng = random.Random(seed)
    while not stop.is_set():
        # Moves of the points there are, so the data is no larger after the flood than before it.
        batch = [{"op": "upsert", "id": rng.randrange(POINTS), "lat": rng.uniform(-60, 60),
                  "lon": rng.uniform(-170, 170)} for _ in range(1000)]
        status, answer, _ = post_changes(port, TOKEN, batch)
        if status == 200:
            counts.append(answer["accepted"])


def test_rss_after_an_ingest_flood_returns_near_the_rss_before_it(tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    args = ["--synthetic", str(POINTS), "--data-dir", str(tmp_path / "data"), "--ingest-token-file", str(token)]
    server = PinwheelServer(pinwheel_binary(), args).start()
    try:
        pid = server.process.pid
        before = settled_rss(pid)
        stop = threading.Event()
        counts = []
        producers = [threading.Thread(target=flood, args=(server.port, stop, k, counts)) for k in range(PRODUCERS)]
        for p in producers:
            p.start()
        peak = before
        deadline = time.monotonic() + FLOOD_S
        while time.monotonic() < deadline:
            peak = max(peak, rss_mb(pid))
            time.sleep(0.1)
        stop.set()
        for p in producers:
            p.join(30)
        assert sum(counts) >= 50_000, f"only {sum(counts)} changes accepted: the flood did not flood"
        # Each start hands back what loading left, so a fresh start of the same folder is the
        # memory these points take without changes.
        after = lowest_rss(pid, seconds=15)
        server.restart()
        fresh = settled_rss(server.process.pid)
        bound = fresh * GROWTH + SLACK_MB
        print(f"RSS before {before:.0f} MB, peak {peak:.0f}, after {after:.0f}, fresh {fresh:.0f}, bound {bound:.0f}")
        # The flood must have taken RSS past the bound, or this test would prove nothing.
        assert peak > bound, f"RSS {before:.0f} MB before, peak {peak:.0f} MB: below the bound {bound:.0f} MB"
        assert after <= bound, (
            f"RSS {before:.0f} MB before the flood, {peak:.0f} MB at its peak, at least {after:.0f} MB in the 15 s after; "
            f"the same points started afresh: {fresh:.0f} MB (bound {bound:.0f} MB)")
    finally:
        server.stop()
        server.log.close()
