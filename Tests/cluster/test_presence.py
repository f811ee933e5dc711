"""Presence across nodes: a page on one node sees the viewport outlines of pages on the others,
named after their node, and an outline vanishes once its page closes."""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from viewer import Watcher  # noqa: E402

PARIS = [2.2, 48.8, 2.5, 48.9]
LISBON = [-9.3, 38.6, -9.0, 38.8]


def presence_until(viewer, predicate, timeout_s=10):
    """Reads messages (acknowledging batches) until a `presence` message satisfies `predicate`."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            msg = json.loads(viewer.ws.recv(timeout=0.5))
        except TimeoutError:
            continue
        if msg["type"] == "batch":
            viewer.apply(msg)
            viewer.ws.send(json.dumps({"type": "ack", "batch": msg["batch"], "applied": 1, "ms": 0.1}))
        elif msg["type"] == "presence":
            last = msg["viewports"]
            if predicate(last):
                return last
    raise AssertionError(f"no such presence message in {timeout_s} s; last: {last}")


def test_a_page_on_node_a_sees_the_outlines_of_pages_on_nodes_b_and_c_until_they_close(shared_cluster):
    a, b, c = shared_cluster.nodes
    with Watcher(a.ws_url) as here:
        here.ws.send(json.dumps({"type": "settings", "presence": True}))
        here.watch(PARIS, 11)
        with Watcher(b.ws_url) as on_b, Watcher(c.ws_url) as on_c:
            on_b.watch(PARIS, 12)
            on_c.watch(LISBON, 10)
            shown = presence_until(here, lambda v: len(v) == 2)
            bboxes = sorted(tuple(v["bbox"]) for v in shown)
            assert bboxes == sorted([tuple(PARIS), tuple(LISBON)])
            # Sessions of other nodes are named <node>-<session>: two nodes, two different prefixes.
            assert len({v["session"].split("-")[0] for v in shown}) == 2
            assert {v["zoom"] for v in shown} == {12, 10}
        presence_until(here, lambda v: v == [], timeout_s=10)
