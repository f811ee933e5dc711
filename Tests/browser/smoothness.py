#!/usr/bin/env python3
"""Smoothness benchmark of the page (not a test): a scripted 30-second pan and zoom tour in headless
Chromium over `pinwheel serve --synthetic 1000000`, recording long tasks (PerformanceObserver
'longtask', > 50 ms), frame intervals and the time to the first markers.

    PINWHEEL_BIN=.build/release/pinwheel python3 Tests/browser/smoothness.py [--points N] [--seconds S] [--json FILE]

With --maplibre, the same tour on the MapLibre example page (web/examples/maplibre.html), which passes
with no long task over 100 ms; with --maplibre-empty, on a plain MapLibre map of an empty style at the
same size (no Pinwheel, no basemap): what MapLibre and this Chromium cost before the page adds anything.
The trace then also says how long the long tasks waited for the GPU process (WebGL in software, with
software compositing: the page's frame waits for the canvas to be read back) and how much CPU the GPU
process used per frame. --chromium-arg adds a Chromium flag (to compare configurations).

Figures go to docs/performance.md, section "The page".
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
from browser_support import CHROMIUM, VIEWPORT_SIZE, PinwheelServer, pinwheel_binary, random_drag, screenshot  # noqa: E402

from playwright.sync_api import sync_playwright  # noqa: E402

# Installed before any page script runs (CDP, so the page's CSP does not apply): long tasks and the
# interval between animation frames from the very start.
PROBE = """
window.__bench = {longTasks: [], frames: []};
new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longTasks.push({start: e.startTime, ms: e.duration});
}).observe({type: 'longtask', buffered: true});
(function frame(t) { window.__bench.frames.push(t); requestAnimationFrame(frame); })(performance.now());
"""

# Times Leaflet's canvas redraws (the drawing half of the page's work; the other half is in
# pinwheel.state.timing).
REDRAW_PROBE = """() => {
    window.__bench.redraws = [];
    for (const name of ['_redraw', '_update']) {
        const original = L.Canvas.prototype[name];
        L.Canvas.prototype[name] = function () {
            const t0 = performance.now();
            const result = original.apply(this, arguments);
            window.__bench.redraws.push(performance.now() - t0);
            return result;
        };
    }
}"""

# Places the tour visits: (lat, lon, zoom).
CITIES = [(48.86, 2.35, 9), (40.71, -74.0, 8), (35.68, 139.7, 9), (-23.55, -46.63, 8), (28.61, 77.21, 7),
          (51.5, -0.12, 10), (-33.87, 151.2, 8), (30.04, 31.24, 7), (55.75, 37.62, 8), (19.43, -99.13, 9)]


def main_thread_tasks(trace):
    """(wall ms, thread CPU ms) of every task on the page's main thread, from a Chrome trace."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace if e.get("name") == "thread_name"}
    return [(e["dur"] / 1000, e.get("tdur", 0) / 1000) for e in trace
            if e.get("name") == "RunTask" and e.get("ph") == "X" and names.get((e["pid"], e["tid"])) == "CrRendererMain"]


def gpu_waits(trace):
    """(wall ms, ms waiting for the GPU process) of every task over 50 ms on the page's main thread."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace if e.get("name") == "thread_name"}
    main = [e for e in trace if e.get("ph") == "X" and names.get((e["pid"], e["tid"])) == "CrRendererMain"]
    tasks = sorted((e for e in main if e["name"] == "RunTask" and e["dur"] > 50_000), key=lambda e: e["ts"])
    # A synchronous GL call (the software compositor's read-back of the WebGL canvas, a readPixels)
    # blocks in this call until the GPU process has run every command before it.
    waits = sorted((e for e in main if e["name"] == "GpuChannel::WaitForGetOffsetInRange"), key=lambda e: e["ts"])
    out = []
    for t in tasks:
        end = t["ts"] + t["dur"]
        waited = sum(w["dur"] for w in waits if t["ts"] <= w["ts"] and w["ts"] + w["dur"] <= end)
        out.append((t["dur"] / 1000, waited / 1000))
    return out


def chromium_cpu_ms(kind):
    """CPU ms (user + system) used so far by this script's Chromium processes of `--type=kind`."""
    me, total = os.getpid(), 0.0
    for pid in (d for d in os.listdir("/proc") if d.isdigit()):
        try:
            if f"--type={kind}".encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            parent = int(stat[1])
            while parent > 1 and parent != me:
                parent = int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        if parent == me:
            total += (int(stat[11]) + int(stat[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    return total


# A plain MapLibre map of an empty style, the example page's size (served to the browser by the
# script itself under the server's origin, for the MapLibre files).
EMPTY_MAPLIBRE = """<!doctype html><meta charset="utf-8"><title>MapLibre, empty style</title>
<link rel="stylesheet" href="/vendor/maplibre/maplibre-gl.css">
<style>html, body, #map { margin: 0; width: 100%; height: 100%; }</style>
<div id="map"></div><script src="/vendor/maplibre/maplibre-gl.js"></script><script>
maplibregl.setWorkerUrl('/vendor/maplibre/maplibre-gl-worker.js');
window.map = new maplibregl.Map({container: 'map', center: [2.35, 48.86], zoom: 4,
                                 style: {version: 8, sources: {}, layers: []}});
</script>"""


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else 0


# The page's figures and a fly to a city, on the demo page (Leaflet) or the MapLibre example.
PAGES = {
    False: {"state": "pinwheel.state", "shown": "pinwheel.state.markers.size", "settled": "pinwheel.settled()",
            "fly": "pinwheel.map.flyTo([{lat}, {lon}], {zoom}, {{duration: 1.2}})"},
    # MapLibre's levels are 512-px tiles: one less than Leaflet's for the same view.
    True: {"state": "markers.client.state", "shown": "markers.client.features.size", "settled": "markers.settled()",
           "fly": "map.flyTo({{center: [{lon}, {lat}], zoom: {zoom} - 1, duration: 1200}})"},
    # No stream: nothing to count, settled once MapLibre has drawn.
    "empty": {"state": "window.__none", "shown": "0", "settled": "map.loaded()",
              "fly": "map.flyTo({{center: [{lon}, {lat}], zoom: {zoom} - 1, duration: 1200}})"},
}


def tour(page, seconds, rng, maplibre=False):
    """Drags, wheel zooms and jumps like a person, for `seconds`; returns the settle times seen and
    the most markers seen on the map."""
    js = PAGES[maplibre]
    empty = maplibre == "empty"
    settled = []
    most = 0
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        kind = step % 6
        if kind in (0, 1, 3):
            random_drag(page, rng, 100, 600)
        elif kind in (2, 4):
            # Two wheel steps in or out around a random spot.
            page.mouse.move(rng.uniform(300, 980), rng.uniform(200, 600))
            direction = -1 if rng.random() < 0.55 else 1
            for _ in range(2):
                page.mouse.wheel(0, 120 * direction)
                time.sleep(0.3)
        else:
            lat, lon, zoom = rng.choice(CITIES)
            page.evaluate("() => { " + js["fly"].format(lat=lat, lon=lon, zoom=zoom) + "; }")
            time.sleep(1.3)
        step += 1
        time.sleep(0.4)
        if empty:
            continue
        ms, shown = page.evaluate(f"() => [{js['state']}.settledMs, {js['shown']}]")
        most = max(most, shown)
        if ms is not None:
            settled.append(ms)
    return settled, most


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--algorithm", help="the page's algorithm (default: the server's)")
    ap.add_argument("--control", action="store_true",
                    help="the same tour with the stream cut off (the page's WebSocket points at a closed port): "
                         "the long tasks the map, the basemap and this machine's load make without any markers")
    ap.add_argument("--maplibre", action="store_true", help="the MapLibre example page instead of the demo (Leaflet)")
    ap.add_argument("--maplibre-empty", action="store_true",
                    help="a plain MapLibre map of an empty style at the same size: MapLibre's own cost here")
    ap.add_argument("--chromium-arg", action="append", default=[], help="a flag for Chromium (repeatable)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--trace", help="also write the tour's Chrome trace to this file (for chrome://tracing or Perfetto)")
    args = ap.parse_args()
    page_kind = "empty" if args.maplibre_empty else args.maplibre

    server = PinwheelServer(pinwheel_binary(), ["--synthetic", str(args.points)])
    t0 = time.monotonic()
    server.start()
    print(f"server up with {args.points:,} synthetic points in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    try:
        os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] + args.chromium_arg)
            page = browser.new_page(viewport=VIEWPORT_SIZE)
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(f"console.error: {m.text}") if m.type == "error" else None)
            page.add_init_script(PROBE)
            # A warm-up load so the first measured load does not pay for Chromium's cold caches.
            url = f"{server.url}/?lat=48.86&lon=2.35&zoom=5" + (f"&algorithm={args.algorithm}" if args.algorithm else "")
            if args.control:
                url += "&ws=ws://127.0.0.1:9/"
            js = PAGES[page_kind]
            ready = "() => window.pinwheel && pinwheel.state.firstMarkerMs !== null"
            if args.maplibre:
                url = f"{server.url}/examples/maplibre.html"
                ready = "() => window.markers && markers.client.state.firstMarkerMs !== null"
            if args.maplibre_empty:
                url = f"{server.url}/examples/empty-maplibre-benchmark.html"
                page.route(url, lambda route: route.fulfill(body=EMPTY_MAPLIBRE, content_type="text/html"))
                ready = "() => window.map && map.loaded()"
            if args.control:
                ready = "() => window.pinwheel && document.querySelector('.leaflet-basemap-pane canvas')"
            page.goto(url)
            page.wait_for_function(ready, timeout=30000)
            page.goto(url)
            page.wait_for_function(ready, timeout=30000)
            first_marker = page.evaluate(f"() => {js['state']}.firstMarkerMs") if not args.maplibre_empty else None
            startup = page.evaluate(f"() => {js['state']}.startup") if not args.maplibre_empty else None
            if not args.control:
                page.wait_for_function(f"() => {js['settled']}", timeout=30000)
            else:
                page.wait_for_timeout(1000)
            if args.maplibre or args.maplibre_empty:
                # MapLibre draws only when something changed: its frames, not the page's animation frames.
                page.evaluate("() => { window.__bench.redraws = []; window.__bench.renders = 0; "
                              "map.on('render', () => { window.__bench.renders++; }); }")
            else:
                page.evaluate(REDRAW_PROBE)
            if not args.maplibre_empty:
                page.evaluate(f"() => {{ {js['state']}.timing.applyMaxMs = 0; {js['state']}.timing.animateMaxMs = 0; }}")
            tour_start = page.evaluate("() => performance.now()")
            # mojom and gpu: the main thread's waits for the GPU process.
            browser.start_tracing(page=page, categories=["toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline",
                                                         "gpu", "mojom"])
            cpu0 = {kind: chromium_cpu_ms(kind) for kind in ("gpu-process", "renderer")}
            settled, most = tour(page, args.seconds, random.Random(args.seed), page_kind)
            cpu = {kind: chromium_cpu_ms(kind) - cpu0[kind] for kind in cpu0}
            raw_trace = browser.stop_tracing()
            if args.trace:
                Path(args.trace).write_bytes(raw_trace)
            trace = json.loads(raw_trace)["traceEvents"]
            bench = page.evaluate(f"() => ({{b: window.__bench, s: {js['state']} || null}})")
            screenshot(page, "smoothness-end.png")
            browser.close()
    finally:
        server.stop()

    long_tasks = [t["ms"] for t in bench["b"]["longTasks"] if t["start"] >= tour_start]
    load_long_tasks = [t["ms"] for t in bench["b"]["longTasks"] if t["start"] < tour_start]
    frames = [t for t in bench["b"]["frames"] if t >= tour_start]
    intervals = [b - a for a, b in zip(frames, frames[1:])]
    s = bench["s"] or {"hello": None, "timing": {"applyMaxMs": 0}, "counters": dict.fromkeys(
        ["viewports", "batches", "adds", "removes", "bytes"], 0)}
    redraws = bench["b"]["redraws"]
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    tasks = main_thread_tasks(trace)
    long_cpu = [c for wall, c in tasks if wall > 50]
    waits = gpu_waits(trace)
    figures = {
        "points": args.points,
        "page": "maplibre-empty" if args.maplibre_empty else "maplibre" if args.maplibre else "leaflet",
        "chromiumArgs": args.chromium_arg,
        "algorithm": s["hello"]["algorithm"] if s["hello"] else "(no stream)",
        "loadAverage1m": float(load),
        "tourSeconds": args.seconds,
        "firstMarkersMs": first_marker,
        "startupMs": startup,
        "longTasksDuringTour": len(long_tasks),
        "longestTaskMsDuringTour": round(max(long_tasks, default=0), 1),
        "longTasksOver100msDuringTour": sum(1 for x in long_tasks if x > 100),
        "longTasksDuringLoad": [round(x, 1) for x in load_long_tasks],
        # The same tour's main-thread tasks from a Chrome trace: wall time > 50 ms, and how much of
        # that was the thread's own CPU time (the rest is waiting: the OS scheduler, the compositor).
        "traceTasksOver50msWall": len(long_cpu),
        "traceTasksOver50msCpu": sum(1 for cpu in (c for _, c in tasks) if cpu > 50),
        "traceLongTaskCpuMsMax": round(max(long_cpu, default=0), 1),
        "traceLongTaskCpuMsMedian": round(statistics.median(long_cpu), 1) if long_cpu else 0,
        "traceTaskCpuMsMax": round(max((c for _, c in tasks), default=0), 1),
        # Of the tasks over 50 ms wall: the share of their time spent waiting for the GPU process, and
        # how many are over 100 ms even without that wait.
        "traceLongTaskGpuWaitShare": round(sum(w for _, w in waits) / max(1e-9, sum(t for t, _ in waits)), 3),
        "traceTasksOver100msBesidesGpuWait": sum(1 for t, w in waits if t - w > 100),
        "gpuProcessCpuMs": round(cpu["gpu-process"]),
        "rendererCpuMs": round(cpu["renderer"]),
        "mapLibreFrames": bench["b"].get("renders"),
        "gpuProcessCpuMsPerMapLibreFrame": round(cpu["gpu-process"] / bench["b"]["renders"], 1) if bench["b"].get("renders") else None,
        "frames": len(intervals),
        "frameMsP50": round(percentile(intervals, 50), 1),
        "frameMsP99": round(percentile(intervals, 99), 1),
        "frameMsMax": round(max(intervals, default=0), 1),
        "framesOver50ms": sum(1 for x in intervals if x > 50),
        "applyMaxMs": round(s["timing"]["applyMaxMs"], 1),
        "animateMaxMs": round(s["timing"].get("animateMaxMs", 0), 1),
        "canvasRedraws": len(redraws),
        "canvasRedrawMsP99": round(percentile(redraws, 99), 1),
        "canvasRedrawMsMax": round(max(redraws, default=0), 1),
        "markersMax": most,
        "settledMsMedian": statistics.median(settled) if settled else None,
        "settledMsP90": percentile(settled, 90) if settled else None,
        "viewportsSent": s["counters"]["viewports"],
        "batches": s["counters"]["batches"],
        "adds": s["counters"]["adds"],
        "removes": s["counters"]["removes"],
        "bytes": s["counters"]["bytes"],
        "pageErrors": errors,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    if args.maplibre or args.maplibre_empty:
        # The MapLibre page's bound: no long task over 100 ms (WebGL drawing runs outside the page).
        ok = figures["longTasksOver100msDuringTour"] == 0 and not errors
        print("PASS" if ok else "FAIL: long tasks over 100 ms or page errors", file=sys.stderr)
        return 0 if ok else 1
    ok = figures["longTasksDuringTour"] == 0 and (args.control or (first_marker is not None and first_marker <= 300)) and not errors
    print("PASS" if ok else "FAIL: long tasks over 50 ms, first markers over 300 ms, or page errors", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
