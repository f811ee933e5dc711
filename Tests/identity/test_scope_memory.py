"""A token's scope needs an index of its own; when `--filter-memory` cannot hold it beside the indexes
in use, the session is closed with 1013 (try again later) before anything is sent, never served more
than its scope; once room is free, the same token is served its scope alone.

16,000 synthetic points of two tenants (t0, t1, about half each): a 5 MB budget holds one tenant's
index (about 3.6 MB estimated), not both."""

import sys
import time
from pathlib import Path

from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from identity import ScopedViewer, mint, shown  # noqa: E402

POINTS = 16000
WORLD = (-180, -85, 180, 85)


def messages_until_close(ws, timeout_s=10):
    """Every message the server sent before its Close, and the Close's (code, reason)."""
    received = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            received.append(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
    except ConnectionClosed as closed:
        return received, (closed.rcvd.code, closed.rcvd.reason) if closed.rcvd else (None, None)
    raise AssertionError(f"the server did not close the session within {timeout_s} s; got {received}")


def points_in(held):
    return sum(f["count"] for f in held.values())


def test_a_scope_past_the_budget_closes_with_1013_and_is_served_once_room_is_free(
        start_server, secret_file):
    server = start_server(["--synthetic", str(POINTS), "--synthetic-tenants", "2", "--viewer-key",
                           str(secret_file), "--filter-memory", "5"])
    first = ScopedViewer(server.ws_url, mint({"tenant": "t0"})).greeted()
    try:
        t0 = first.hello["dataset"]["points"]
        assert 0.4 * POINTS < t0 < 0.6 * POINTS
        held = shown(first.view(WORLD, 1))
        assert points_in(held) == t0

        second = ScopedViewer(server.ws_url, mint({"tenant": "t1"}))
        try:
            before, (code, reason) = messages_until_close(second.ws)
        finally:
            second.close()
        assert before == [], "nothing, not even hello, before the close"
        assert code == 1013, (code, reason)
        assert reason.startswith("filter memory full: the token's scope needs about "), reason
        assert reason.endswith(" of 5.0 MB in use; try again later"), reason
        assert metric(server.port, "pinwheel_filter_refusals_total") == 1
        # The first viewer goes on.
        assert points_in(shown(first.view(WORLD, 2), held)) == t0
    finally:
        first.close()

    deadline = time.monotonic() + 10
    while metric(server.port, "pinwheel_filter_indexes_in_use") != 0:
        assert time.monotonic() < deadline, "the first viewer's index is still in use 10 s after it left"
        time.sleep(0.05)
    again = ScopedViewer(server.ws_url, mint({"tenant": "t1"})).greeted()
    try:
        assert again.hello["dataset"]["points"] == POINTS - t0
        assert points_in(shown(again.view(WORLD, 1))) == POINTS - t0
        assert metric(server.port, "pinwheel_filter_indexes") == 1
    finally:
        again.close()
