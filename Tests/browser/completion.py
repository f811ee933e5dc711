#!/usr/bin/env python3
"""View completion of the page (a benchmark, not a test): a scripted tour of drags and zoom steps over
the demo data in headless Chromium; for each gesture, the time from its end (mouse released, zoom
step asked for) to the view being complete: every batch of its viewport applied and every fade and
move over. Also long tasks (> 50 ms) during the tour.

    PINWHEEL_BIN=.build/release/pinwheel python3 Tests/browser/completion.py [--seconds S] [--json FILE]

Figures go to docs/performance.md, section "View completion".
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import CHROMIUM, VIEWPORT_SIZE, PinwheelServer, pinwheel_binary, random_drag  # noqa: E402

from playwright.sync_api import sync_playwright  # noqa: E402

PROBE = """
window.__bench = {longTasks: []};
new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longTasks.push({start: e.startTime, ms: e.duration});
}).observe({type: 'longtask', buffered: true});
"""

# Resolves, on the first animation frame where the view is complete, with the milliseconds since
# `t0`; a view counts once a viewport newer than `seq` was sent and has been served completely.
COMPLETE = """([t0, seq]) => new Promise((resolve) => {
    const deadline = performance.now() + 10000;
    (function check() {
        const done = pinwheel.state.seq > seq && pinwheel.settled() && !pinwheel.animating();
        if (done || performance.now() > deadline) resolve(done ? performance.now() - t0 : null);
        else requestAnimationFrame(check);
    })();
})"""

# Places the tour starts from: (lat, lon, zoom) over the demo data.
START_VIEWS = [(48.0, 10.0, 5), (40.0, -98.0, 5), (22.0, 79.0, 5), (35.7, 139.7, 7), (51.5, 0.0, 8)]




def zoom_step(page, rng, zoom_in):
    page.evaluate(f"() => {{ pinwheel.map.{'zoomIn' if zoom_in else 'zoomOut'}(1); }}")


def tour(page, seconds, rng):
    pans, zooms = [], []
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        if step % 12 == 0:
            lat, lon, z = rng.choice(START_VIEWS)
            page.evaluate(f"() => {{ pinwheel.map.setView([{lat}, {lon}], {z}, {{animate: false}}); }}")
            time.sleep(0.1)
            page.wait_for_function("() => pinwheel.settled() && !pinwheel.animating()")
        seq = page.evaluate("() => pinwheel.state.seq")
        kind = "pan" if step % 3 != 2 else "zoom"
        if kind == "pan":
            random_drag(page, rng, 200, 500)
        else:
            zoom_step(page, rng, zoom_in=(step // 3) % 2 == 0)
        t0 = page.evaluate("() => performance.now()")
        ms = page.evaluate(COMPLETE, [t0, seq])
        if ms is not None:
            (pans if kind == "pan" else zooms).append(ms)
        step += 1
        time.sleep(0.2)
    return pans, zooms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("serve_args", nargs="*", help="extra arguments for pinwheel serve")
    args = ap.parse_args()

    server = PinwheelServer(pinwheel_binary(), args.serve_args).start()
    try:
        os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport=VIEWPORT_SIZE)
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.add_init_script(PROBE)
            page.goto(f"{server.url}/#48,10,5")
            page.wait_for_function("() => window.pinwheel && pinwheel.settled() && !pinwheel.animating()", timeout=30000)
            tour_start = page.evaluate("() => performance.now()")
            pans, zooms = tour(page, args.seconds, random.Random(args.seed))
            bench = page.evaluate("() => ({b: window.__bench, pace: pinwheel.state.pace, s: pinwheel.state})")
            browser.close()
    finally:
        server.stop()
    long_tasks = [t["ms"] for t in bench["b"]["longTasks"] if t["start"] >= tour_start]
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    figures = {
        "loadAverage1m": float(load),
        "pans": len(pans),
        "panCompleteMsMedian": round(statistics.median(pans)) if pans else None,
        "panCompleteMsP90": round(sorted(pans)[int(0.9 * (len(pans) - 1))]) if pans else None,
        "zooms": len(zooms),
        "zoomCompleteMsMedian": round(statistics.median(zooms)) if zooms else None,
        "zoomCompleteMsP90": round(sorted(zooms)[int(0.9 * (len(zooms) - 1))]) if zooms else None,
        "longTasksDuringTour": len(long_tasks),
        "longestTaskMs": round(max(long_tasks, default=0), 1),
        "applyMaxMs": round(bench["s"]["timing"]["applyMaxMs"], 1),
        "animateMaxMs": round(bench["s"]["timing"]["animateMaxMs"], 1),
        "pageErrors": errors,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
