"""A node that stops answering (SIGSTOP: its sockets stay open, nothing comes back) behind HAProxy:
the page's heartbeat notices, and it reconnects through the proxy to a node that answers."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from browser_support import CHROMIUM, VIEWPORT_SIZE  # noqa: E402
from cluster import metric, proxy_server_states  # noqa: E402


def wait_until(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not within {timeout_s} s"
        time.sleep(0.05)


def test_a_page_on_a_frozen_node_reconnects_through_the_proxy_to_another_node(cluster):
    # Playwright's sync API refuses a thread that already runs one (the browser suite's session
    # browser, when the suites run in one process): this page gets a thread of its own.
    failures = []

    def run():
        try:
            drive_page_through_a_frozen_node(cluster)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's own thread
            failures.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def drive_page_through_a_frozen_node(cluster):
    proxy = cluster.proxy
    wait_until(lambda: set(proxy_server_states(proxy.stats_port).values()) == {"UP"}, 10, "every node UP")
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT_SIZE)
            page.goto(f"{proxy.url}/?lat=48&lon=10&zoom=5")
            page.wait_for_function("() => window.pinwheel && pinwheel.settled()", timeout=30000)
            page.evaluate("() => { window.events = []; pinwheel.client.on('stale', e => window.events.push(['stale', performance.now()])); }")
            frozen = next(n for n in cluster.nodes if metric(n.port, "pinwheel_sessions") == 1)
            connects = page.evaluate("() => pinwheel.state.counters.connects")
            stopped_at = page.evaluate("() => performance.now()")
            os.kill(frozen.process.pid, signal.SIGSTOP)
            try:
                page.wait_for_function("() => window.events.length > 0", timeout=20000)
                page.wait_for_function(f"() => pinwheel.state.counters.connects > {connects} && "
                                       "pinwheel.state.connection === 'open'", timeout=30000)
                page.wait_for_function("() => pinwheel.settled()", timeout=30000)
                noticed = page.evaluate("() => window.events[0][1]") - stopped_at
                print(f"frozen node noticed after {noticed:.0f} ms, "
                      f"view served again {page.evaluate('() => performance.now()') - stopped_at:.0f} ms after SIGSTOP")
                others = [n for n in cluster.nodes if n is not frozen]
                assert sum(metric(n.port, "pinwheel_sessions") for n in others) == 1, "the page is on another node"
                assert proxy_server_states(proxy.stats_port)[f"node{cluster.nodes.index(frozen) + 1}"].startswith("DOWN")
                assert page.evaluate("() => pinwheel.state.markers.size") > 20
            finally:
                os.kill(frozen.process.pid, signal.SIGCONT)
        finally:
            browser.close()
