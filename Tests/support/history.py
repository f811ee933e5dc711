"""Producers' histories and the checker that reads them back: each point h-<j> is moved through
sequential values n = 1, 2, 3, ... (in its `n` property and a small step of its latitude); the history
keeps, for each point, every value sent and the last value acknowledged with its version. After a
fault, every node's copy is read back through the protocol (a viewer over the patch) and checked:
no acknowledged value is missing or reverted, no value appears that was never sent, no point appears
twice, and every node holds the same value for every point."""

import json
import socket
import time

from ingest import post_changes
from live_patch import TOKEN, grid_point, patch_box
from viewer import Watcher

BOX = patch_box(0.012)
ZOOM = 17


def change(j, n):
    """Point h-<j> at value n: its grid place, moved north by n ten-thousandths of a grid step."""
    lat, lon = grid_point(j, columns=20, spacing=0.0004, margin=0.0005)
    return {"op": "upsert", "id": f"h-{j}", "lat": lat + n * 0.0000004, "lon": lon, "properties": {"n": str(n)}}


class History:
    """What producers sent and what was acknowledged, per point."""

    def __init__(self, points):
        self.points = points
        self.sent = {f"h-{j}": set() for j in range(points)}
        self.acked = {f"h-{j}": 0 for j in range(points)}
        self.version = 0

    def batch(self, n):
        """Every point at value n, recorded as sent."""
        for key in self.sent:
            self.sent[key].add(n)
        return [change(j, n) for j in range(self.points)]

    def acknowledged(self, n, answer):
        for key in self.acked:
            self.acked[key] = max(self.acked[key], n)
        self.version = max(self.version, answer["version"])

    def post(self, port, n, key=None, timeout_s=3):
        """Posts every point at value n once; (status, answer), or (None, reason) when no answer came
        in `timeout_s`. A 200 is recorded as acknowledged."""
        headers = {"Idempotency-Key": key} if key else {}
        try:
            status, answer, _ = post_changes(port, TOKEN, self.batch(n), headers=headers, timeout_s=timeout_s)
        except (socket.timeout, TimeoutError, OSError) as e:
            return None, repr(e)
        if status == 200:
            self.acknowledged(n, answer)
        return status, answer

    def post_until_acknowledged(self, port, n, key, timeout_s=3, give_up_s=60):
        """Retries value n with the same key until one answer is 200; the attempts made."""
        deadline = time.monotonic() + give_up_s
        attempts = 0
        while True:
            attempts += 1
            status, answer = self.post(port, n, key=key, timeout_s=timeout_s)
            if status == 200:
                return attempts, answer
            assert time.monotonic() < deadline, f"value {n} never acknowledged: last {status} {answer}"
            time.sleep(0.2)

    def check(self, nodes):
        """Reads every point back from every node (`name -> ws url`) and returns the problems found."""
        problems = []
        values = {}
        for name, url in nodes.items():
            with Watcher(url, timeout_s=30) as viewer:
                viewer.watch(BOX, ZOOM, width=4096, height=4096)
                shown = [f["key"] for f in viewer.features.values() if f.get("key", "").startswith("h-")]
                if len(shown) != len(set(shown)):
                    problems.append(f"{name}: a point appears twice")
                values[name] = {f["key"]: int(f["properties"]["n"]) for f in viewer.features.values()
                                if f.get("key", "").startswith("h-")}
        for key, acked in self.acked.items():
            held = {name: v.get(key) for name, v in values.items()}
            for name, value in held.items():
                if value is None:
                    problems.append(f"{name}: {key} missing (acknowledged value {acked})")
                elif value < acked:
                    problems.append(f"{name}: {key} holds {value}, older than its acknowledged {acked} (reverted)")
                elif value not in self.sent[key]:
                    problems.append(f"{name}: {key} holds {value}, never sent")
            if len(set(held.values())) > 1:
                problems.append(f"nodes disagree on {key}: {json.dumps(held)}")
        return problems
