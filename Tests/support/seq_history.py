"""Per-id histories for fault runs: producers write sequential values into each id's `seq` property
and keep what was acknowledged (with its version); a checker reads every id back through a
`pinwheel.v1` viewer at the raw zoom and proves that nothing acknowledged was lost or reverted and
that nothing appears twice."""

import http.client
import random
import threading

from ingest import post_changes
from live_patch import TOKEN, grid_point, patch_box
from viewer import Watcher

BOX = patch_box(0.012)
ZOOM = 17


def position(i):
    """Id i's fixed place: a grid 0.0001 degrees (11 m) apart, unclustered at ZOOM."""
    return grid_point(i, columns=100, spacing=0.0001, margin=0.0005)


class History:
    """What producers wrote to ids h-0 … h-(n-1): per id, every acknowledged (seq, version) and the
    highest seq ever sent (acknowledged or not)."""

    def __init__(self, ids):
        self.ids = ids
        self.lock = threading.Lock()
        self.acked = {i: [] for i in range(ids)}
        self.sent = {i: 0 for i in range(ids)}
        self.acknowledged_requests = 0

    def floor(self, i, up_to=None):
        """The seq id i must hold at least: its last acknowledged one (with version <= up_to)."""
        seqs = [s for s, v in self.acked[i] if up_to is None or v <= up_to]
        return max(seqs, default=0)

    def forget_after(self, version):
        """A repair cut the log after `version`: acknowledgements of later versions are gone (and the
        log will hand those versions out again)."""
        with self.lock:
            for i in self.acked:
                self.acked[i] = [(s, v) for s, v in self.acked[i] if v <= version]


class Producer:
    """Threads that post batches for their own share of the ids, one request at a time, until
    stopped or the server stops answering."""

    def __init__(self, history, port, rng, threads=3, batch=8):
        self.history = history
        self.port = port
        self.stop_event = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(t, threads, batch, rng.random()), daemon=True)
                        for t in range(threads)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(15)

    def _run(self, t, threads, batch, seed):
        rng = random.Random(seed)
        mine = [i for i in range(self.history.ids) if i % threads == t]
        h = self.history
        while not self.stop_event.is_set():
            chosen = rng.sample(mine, min(batch, len(mine)))
            with h.lock:
                seqs = {i: h.sent[i] + 1 for i in chosen}
                h.sent.update(seqs)
            changes = [{"op": "upsert", "id": f"h-{i}", "lat": position(i)[0], "lon": position(i)[1],
                        "properties": {"seq": seqs[i]}} for i in chosen]
            try:
                status, answer, _ = post_changes(self.port, TOKEN, changes, timeout_s=5)
            except (OSError, http.client.HTTPException):
                # The server stopped or was killed: whatever was not answered was not acknowledged.
                return
            if status != 200:
                # 503 from a log that cannot write: nothing of the request was kept; try again.
                if status == 503:
                    self.stop_event.wait(0.05)
                    continue
                raise AssertionError(f"ingest answered {status}: {answer}")
            assert answer["accepted"] == len(changes), answer
            last = answer["version"]
            first = last - len(changes) + 1
            with h.lock:
                for k, i in enumerate(chosen):
                    h.acked[i].append((seqs[i], first + k))
                h.acknowledged_requests += 1


def check(history, ws_url, up_to=None):
    """Reads every id back and proves the history holds: every id acknowledged is there, holding at
    least its last acknowledged seq (with version <= up_to, when a cut of the log was reported) and at
    most the highest seq sent; no id appears twice. Returns how many ids were checked and how many
    hold less than their last acknowledged seq (only possible with `up_to`)."""
    with Watcher(ws_url, timeout_s=20) as viewer:
        viewer.watch(BOX, ZOOM, width=4096, height=4096)
        shown = [f for f in viewer.features.values() if "key" in f]
    keys = [f["key"] for f in shown]
    assert len(keys) == len(set(keys)), f"an id appears twice: {sorted(k for k in keys if keys.count(k) > 1)[:5]}"
    held = {f["key"]: int(f["properties"]["seq"]) for f in shown if f["key"].startswith("h-")}
    problems = []
    for i in range(history.ids):
        floor = history.floor(i, up_to)
        value = held.get(f"h-{i}")
        if floor and value is None:
            problems.append(f"h-{i}: acknowledged seq {floor} is gone")
        elif value is not None and value < floor:
            problems.append(f"h-{i}: holds seq {value}, older than acknowledged seq {floor}")
        elif value is not None and value > history.sent[i]:
            problems.append(f"h-{i}: holds seq {value}, never sent (highest {history.sent[i]})")
    assert not problems, f"{len(problems)} ids wrong, e.g. {problems[:5]}"
    behind = sum(1 for i in range(history.ids) if held.get(f"h-{i}", 0) < history.floor(i))
    return len(held), behind
