"""The page survives a server restart: it notices, backs off, reconnects and shows the same markers.
Its own module, so the restart does not disturb the other browser tests' server."""

import re

from browser_support import markers, open_map, server_features, wait_settled

# Chromium itself logs each refused WebSocket connection while the server is down; that is the
# network, not a JavaScript error.
REFUSED = re.compile(r"WebSocket connection to '.*' failed")


def test_after_a_server_restart_the_page_reconnects_and_shows_the_same_markers(page, server):
    open_map(page, server, 40.0, -98.0, 4)
    before = markers(page)
    assert len(before) > 20
    connects = page.evaluate("() => pinwheel.state.counters.connects")

    server.stop()
    page.wait_for_function("() => pinwheel.state.connection === 'reconnecting'")
    page.wait_for_function("() => document.getElementById('hud-conn').textContent === 'reconnecting'")

    server.start()
    page.wait_for_function(f"() => pinwheel.state.counters.connects > {connects} && pinwheel.state.connection === 'open'",
                           timeout=20000)
    wait_settled(page)
    after = markers(page)
    assert after == before
    assert after == server_features(server, page.evaluate("() => pinwheel.state.lastViewport"))
    page.wait_for_function("() => document.getElementById('hud-conn').textContent === 'live'")
    assert [e for e in page.console_log.errors if not REFUSED.search(e)] == []
