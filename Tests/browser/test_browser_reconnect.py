"""The page survives a server restart: its markers stay on screen, it says so, backs off, reconnects,
tells the server what it still holds and gets only the difference. Its own module, so the restarts
do not disturb the other browser tests' server."""

import re

import pytest

from browser_support import markers, open_map, server_features, wait_settled

# Chromium itself logs each refused connection while the server is down (the WebSocket, a resource
# such as the favicon); that is the network, not a JavaScript error.
REFUSED = re.compile(r"WebSocket connection to '.*' failed|Failed to load resource: net::ERR_CONNECTION_REFUSED")


def counters(page):
    return page.evaluate("() => ({...pinwheel.state.counters})")


def drawn(page):
    """Markers of the store that are on the map."""
    return page.evaluate("() => Array.from(pinwheel.state.markers.values()).filter(e => pinwheel.map.hasLayer(e.layer)).length")


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_after_a_server_restart_the_markers_stay_and_only_the_difference_is_sent(page, server, encoding):
    open_map(page, server, 40.0, -98.0, 4, encoding=encoding)
    before = markers(page)
    assert len(before) > 20
    full_view = counters(page)

    server.stop()
    page.wait_for_function("() => pinwheel.state.connection === 'reconnecting'")
    page.wait_for_function("() => document.getElementById('hud-conn').textContent === 'reconnecting'")
    assert markers(page) == before and drawn(page) == len(before), "the map keeps its markers while offline"

    server.start()
    page.wait_for_function(f"() => pinwheel.state.counters.connects > {full_view['connects']} && pinwheel.state.connection === 'open'",
                           timeout=20000)
    wait_settled(page)
    after = markers(page)
    assert after == before
    assert after == server_features(server, page.evaluate("() => pinwheel.state.lastViewport"))
    now = counters(page)
    assert now["held"] - full_view["held"] == len(before), "the page told the server what it holds"
    assert [now[k] - full_view[k] for k in ("adds", "updates", "removes")] == [0, 0, 0], "nothing was sent again"
    resent = now["batchBytes"] - full_view["batchBytes"]
    assert resent <= 0.05 * full_view["batchBytes"], f"{resent} bytes re-sent for a {full_view['batchBytes']}-byte view"
    page.wait_for_function("() => document.getElementById('hud-conn').textContent === 'live'")
    assert [e for e in page.console_log.errors if not REFUSED.search(e)] == []


def test_a_view_moved_while_offline_ends_with_what_a_fresh_session_sees(page, server):
    open_map(page, server, 48.0, 10.0, 5)
    first = markers(page)
    full_view = counters(page)
    server.stop()
    page.wait_for_function("() => pinwheel.state.connection === 'reconnecting'")
    page.evaluate("() => { pinwheel.map.panBy([300, 0], {animate: false}); }")
    assert drawn(page) == len(first), "the markers stay while the view moves offline"

    server.start()
    page.wait_for_function(f"() => pinwheel.state.counters.connects > {full_view['connects']} && pinwheel.state.connection === 'open'",
                           timeout=20000)
    wait_settled(page)
    after = markers(page)
    assert after == server_features(server, page.evaluate("() => pinwheel.state.lastViewport"))
    now = counters(page)
    kept = first.keys() & after.keys()
    assert kept, "a 300-pixel pan keeps some features"
    assert now["adds"] - full_view["adds"] == len(after.keys() - first.keys()), "only the features new to the page came"
    assert drawn(page) == len(after)
    assert [e for e in page.console_log.errors if not REFUSED.search(e)] == []
