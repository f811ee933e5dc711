"""With cores to spare, a compaction takes only idle cores (Linux's SCHED_IDLE policy) and every
other thread of the server's own, the workers included, keeps the process's policy and nice value.
On a machine short of cores (`pinwheel_cores_short` 1) the workers and compactions yield by a nice
value of 5 instead. (Dispatch's pool threads, named after their quality of service, keep nice values
of their own.)"""

import os
import resource
import time
import urllib.request
from pathlib import Path

from ingest import post_changes
from live_patch import TOKEN
from pinwheel_process import running_server

SCHED_OTHER = 0
SCHED_IDLE = 5
YIELDING = 5
WORKERS = 2
# The server reads the machine every three seconds and judges it from the second reading on.
JUDGED_AFTER = 4


def thread_priorities(pid):
    """(policy, nice value) of each of the process's threads but Dispatch's: fields 41 and 19 of
    /proc/PID/task/TID/stat."""
    seen = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        name, rest = stat.read_text().split("(", 1)[1].rsplit(")", 1)
        if "qos" in name:
            continue
        # Fields after the command name, which may hold spaces, start at field 3.
        fields = rest.split()
        seen.append((int(fields[38]), int(fields[16])))
    return seen


def cores_short(server):
    text = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10).read().decode()
    values = [line.split()[1] for line in text.splitlines() if line.startswith("pinwheel_cores_short ")]
    assert values, "no pinwheel_cores_short in /metrics"
    return values[0] == "1"


def judged_priorities(server):
    """The server's judgement of the machine and its threads' priorities, read while it held."""
    for _ in range(5):
        short = cores_short(server)
        seen = thread_priorities(server.process.pid)
        if cores_short(server) == short:
            return short, seen
        time.sleep(0.5)
    raise AssertionError("the judgement of the machine kept changing")


def test_between_compactions_only_a_short_machine_makes_the_workers_yield(live_args):
    own = (SCHED_OTHER, os.nice(0))
    with running_server(live_args) as server:
        short, seen = judged_priorities(server)
    # The main, lws service, index and alarm threads and the two workers among them.
    assert len(seen) >= 6, seen
    yielding = [p for p in seen if p == (SCHED_OTHER, own[1] + YIELDING)]
    assert len(yielding) == (WORKERS if short else 0), (short, seen)
    assert all(p == own for p in seen if p not in yielding), (short, seen)


def may_come_back():
    """Whether Linux lets this user's threads lower a nice value again, or leave SCHED_IDLE."""
    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20 - os.nice(0)


def test_a_compaction_runs_on_idle_cores_only_while_the_machine_has_them(live_args):
    own = (SCHED_OTHER, os.nice(0))
    # Enough points that a compaction's build takes a while to catch.
    args = [*live_args]
    args[args.index("--synthetic") + 1] = "300000"
    with running_server(args) as server:
        time.sleep(JUDGED_AFTER)  # no compaction takes idle cores before the machine is judged
        short = cores_short(server)
        yields = short or not may_come_back()
        status, answer, _ = post_changes(server.port, TOKEN, [
            {"op": "upsert", "id": k, "lat": 50 + k / 1000, "lon": 4 + k / 1000} for k in range(1000)])
        assert status == 200 and answer["accepted"] == 1000, answer
        expected = (SCHED_OTHER, own[1] + YIELDING) if yields else (SCHED_IDLE, own[1])
        # The workers at that nice value too while the machine is short of cores.
        wanted = (WORKERS if short else 0) + 1
        most = []
        deadline = time.monotonic() + 20
        while len(most) < wanted and time.monotonic() < deadline:
            seen = thread_priorities(server.process.pid)
            most = max(most, [p for p in seen if p == expected], key=len)
            time.sleep(0.005)
    assert len(most) == wanted, f"no compaction thread seen at {expected} (machine short of cores: {short})"
