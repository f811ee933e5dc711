#!/usr/bin/env python3
"""What one MapLibre frame costs the GPU process in headless Chromium (not a test): the MapLibre
example page and a plain MapLibre map of an empty style, each panned by a few pixels and drawn
FRAMES times, over `pinwheel serve --synthetic 1000000`.

    PINWHEEL_BIN=.build/release/pinwheel python3 Tests/browser/maplibre_frame_cost.py [--chromium-arg ARG]

Per page: the GPU process's CPU per frame (all its threads: WebGL runs there, in software here), the
wall time the page waited for a frame's drawing (a 1-pixel readPixels after the frame, which returns
once the GPU process has run every command before it), and, with --layers, the same wait after every
draw call of one more round of frames, summed by what MapLibre was drawing: the sky pass it draws
before any layer, then each layer by id (timings inflated by the waits themselves; compare them with
each other, not with the frame). Figures go to docs/performance.md, section "The page".
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import CHROMIUM, VIEWPORT_SIZE, PinwheelServer, pinwheel_binary  # noqa: E402
from smoothness import EMPTY_MAPLIBRE, chromium_cpu_ms  # noqa: E402

from playwright.sync_api import sync_playwright  # noqa: E402

FRAMES = 40

# Pans the map by a few pixels and draws it now, FRAMES times, one per animation frame; each frame's
# drawing is waited for by a 1-pixel read-back. Returns [script ms, wait ms] per frame.
FRAMES_JS = """async (n) => {
    const gl = map.painter.context.gl, px = new Uint8Array(4), out = [];
    for (let i = 0; i < n; i++) {
        await new Promise((r) => requestAnimationFrame(r));
        const t0 = performance.now();
        map.panBy([3, 1], {duration: 0});
        map.redraw();
        const t1 = performance.now();
        gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
        out.push([t1 - t0, performance.now() - t1]);
    }
    return out;
}"""

# The same frames with a read-back after every draw call, summed by what was drawn: the painter's
# pass and layer ('sky' for what MapLibre draws before its first pass).
LAYERS_JS = """async (n) => {
    const gl = map.painter.context.gl, px = new Uint8Array(4), painter = map.painter, sums = {};
    const wait = () => { const t = performance.now(); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
                         return performance.now() - t; };
    const render = painter.render;
    painter.render = function (style, options) { painter.renderPass = 'sky'; return render.call(painter, style, options); };
    const originals = {};
    for (const name of ['drawElements', 'drawArrays']) {
        originals[name] = gl[name];
        gl[name] = function () {
            originals[name].apply(gl, arguments);
            const ms = wait();
            const pass = painter.renderPass;
            const key = pass === 'sky' || pass === 'offscreen' ? 'sky (before the layers)'
                : `${map.style._order[painter.currentLayer]} (${pass})`;
            sums[key] = (sums[key] || 0) + ms;
        };
    }
    for (let i = 0; i < n; i++) {
        await new Promise((r) => requestAnimationFrame(r));
        wait();
        map.panBy([3, 1], {duration: 0});
        map.redraw();
    }
    for (const name in originals) delete gl[name];
    painter.render = render;
    const out = {};
    for (const k of Object.keys(sums).sort((a, b) => sums[b] - sums[a])) out[k] = Math.round(sums[k] / n * 10) / 10;
    return out;
}"""


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def measure(browser, url, ready, layers):
    page = browser.new_page(viewport=VIEWPORT_SIZE)
    if url.endswith("empty-maplibre-benchmark.html"):
        page.route(url, lambda route: route.fulfill(body=EMPTY_MAPLIBRE, content_type="text/html"))
    page.goto(url)
    page.wait_for_function(ready, timeout=60000)
    page.wait_for_timeout(1500)
    cpu0 = chromium_cpu_ms("gpu-process")
    frames = page.evaluate(FRAMES_JS, FRAMES)[5:]
    cpu = chromium_cpu_ms("gpu-process") - cpu0
    result = {
        "gpuProcessCpuMsPerFrame": round(cpu / FRAMES, 1),
        "frameWaitMsMedian": round(median([w for _, w in frames]), 1),
        "frameWaitMsMax": round(max(w for _, w in frames), 1),
        "frameScriptMsMedian": round(median([s for s, _ in frames]), 1),
    }
    if layers:
        result["waitMsPerFrameByDraw"] = page.evaluate(LAYERS_JS, 10)
    page.close()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", action="store_true", help="also the wait after every draw call, by layer")
    ap.add_argument("--chromium-arg", action="append", default=[], help="a flag for Chromium (repeatable)")
    args = ap.parse_args()
    server = PinwheelServer(pinwheel_binary(), ["--synthetic", "1000000"]).start()
    try:
        os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"] + args.chromium_arg)
            figures = {
                "loadAverage1m": float(Path("/proc/loadavg").read_text().split()[0]),
                "chromiumArgs": args.chromium_arg,
                "example": measure(browser, f"{server.url}/examples/maplibre.html",
                                   "() => window.markers && markers.settled()", args.layers),
                "emptyStyle": measure(browser, f"{server.url}/examples/empty-maplibre-benchmark.html",
                                      "() => window.map && map.loaded()", args.layers),
            }
            browser.close()
    finally:
        server.stop()
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
