"""With live data the server's two workers and its compactions yield the cores to its index and
service threads on a busy machine (a nice value 5 above the process's); without live data none does.
(Dispatch's own threads keep a nice value of their own.)"""

import os
import time
from pathlib import Path

from ingest import post_changes
from live_patch import TOKEN
from pinwheel_process import running_server

WORKERS = 2
LIVE_NICENESS = 5


def nice_values(pid):
    """The nice value of each of the process's threads (field 19 of /proc/PID/task/TID/stat)."""
    values = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        # Fields after the command name, which may hold spaces, start at field 3.
        values.append(int(stat.read_text().rsplit(")", 1)[1].split()[16]))
    return values


def test_with_live_data_the_two_workers_run_at_a_higher_nice_value(live_args):
    own = os.nice(0)
    with running_server(live_args) as server:
        values = nice_values(server.process.pid)
    assert values.count(own + LIVE_NICENESS) == WORKERS, values
    assert values.count(own) >= 3, values  # the main, lws service and index threads among them


def test_without_live_data_the_workers_keep_the_process_nice_value():
    own = os.nice(0)
    with running_server(["--synthetic", "2000"]) as server:
        values = nice_values(server.process.pid)
    assert values.count(own + LIVE_NICENESS) == 0 and values.count(own) > WORKERS, values


def test_a_compaction_runs_at_the_higher_nice_value(live_args):
    own = os.nice(0)
    # Enough points that a compaction's build takes a while to catch.
    args = [*live_args]
    args[args.index("--synthetic") + 1] = "300000"
    with running_server(args) as server:
        status, answer, _ = post_changes(server.port, TOKEN, [
            {"op": "upsert", "id": k, "lat": 50 + k / 1000, "lon": 4 + k / 1000} for k in range(1000)])
        assert status == 200 and answer["accepted"] == 1000, answer
        most = WORKERS
        deadline = time.monotonic() + 20
        while most == WORKERS and time.monotonic() < deadline:
            most = max(most, nice_values(server.process.pid).count(own + LIVE_NICENESS))
            time.sleep(0.005)
    assert most == WORKERS + 1, "no compaction thread seen at the higher nice value"
