#!/usr/bin/env python3
"""Decode benchmark of the page (not a test): a real batch of about 1,000 markers, taken from the
server over `pinwheel.v1+bin` and over `pinwheel.v1` for the same view, decoded many times in headless
Chromium: web/pinwheel/binary.js's `BinaryDecoder` against `JSON.parse` of the JSON batch.

    PINWHEEL_BIN=.build/release/pinwheel python3 Tests/browser/decode.py [--markers N] [--runs R] [--json FILE]

Figures go to docs/performance.md, section "Decoding a batch".
"""

import argparse
import json
import os
import statistics
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_support import (BINARY_PROTOCOL, CHROMIUM, PROTOCOL, PinwheelServer, batch_frames,  # noqa: E402
                             pinwheel_binary)

from playwright.sync_api import sync_playwright  # noqa: E402

# Two views of the demo data at zoom 8 on a 16384-px map, Europe then the eastern United States:
# about 8,000 features each (clusters and named points), so acks have raised the server's pace before
# the second view's adds arrive in full batches.
VIEWS = [{"bbox": bbox, "zoom": 8, "width": 16384, "height": 16384, "tileSize": 256}
         for bbox in ([-10.0, 35.0, 30.0, 60.0], [-100.0, 30.0, -70.0, 50.0])]

# [removes, markers (removes + updates + adds)] of each batch, and for a binary one the running state
# its decoding starts from.
SIZES = """async (frames) => {
    const { BinaryDecoder } = await import('/pinwheel/binary.js');
    const decoder = new BinaryDecoder();
    return frames.map((f) => {
        if (typeof f === 'string') {
            const m = JSON.parse(f);
            return [m.remove.length, m.remove.length + m.update.length + m.add.length, null];
        }
        const state = decoder.state;
        const m = decoder.decode(Uint8Array.from(f).buffer);
        return [m.remove.length, m.remove.length + m.update.length + m.add.length, state];
    });
}"""

# Milliseconds per decode, each sample the mean of `inner` decodes (performance.now() is coarsened to
# 0.1 ms in a page that is not cross-origin isolated), after a warm-up that lets the JIT compile.
TIME = """async ([frame, state, text, runs, inner]) => {
    const { BinaryDecoder } = await import('/pinwheel/binary.js');
    const buffer = Uint8Array.from(frame).buffer;
    const decoder = new BinaryDecoder();
    // Each decode starts from the state the frame's connection had before it.
    const decodeBinary = (b) => { decoder.state = state; return decoder.decode(b); };
    const sample = (decode) => {
        const t0 = performance.now();
        for (let i = 0; i < inner; i++) decode();
        return (performance.now() - t0) / inner;
    };
    for (let i = 0; i < 100; i++) { decodeBinary(buffer); JSON.parse(text); }
    const binary = [], json = [];
    for (let r = 0; r < runs; r++) {
        binary.push(sample(() => decodeBinary(buffer)));
        json.push(sample(() => JSON.parse(text)));
    }
    return { binary, json };
}"""


# An empty icon, so the page asks the server for no /favicon.ico.
BLANK = '<!doctype html><title>blank</title><link rel="icon" href="data:,">'


def open_blank(page, server):
    """A page of the server's origin with no script of its own, so nothing else runs while it measures."""
    page.route(f"{server.url}/blank", lambda r: r.fulfill(status=200, content_type="text/html", body=BLANK))
    page.goto(f"{server.url}/blank")


def batch_of(page, server, subprotocol, markers):
    """The first batch of new features, `markers` of them (±2 %), that the server sends for VIEWS over
    `subprotocol`, with acks steering its pace to `markers` a batch: (frame, its marker count, the
    running state a binary frame's decoding starts from)."""
    frames = batch_frames(server, subprotocol, VIEWS, pace=markers / 50)
    sizes = page.evaluate(SIZES, [f if isinstance(f, str) else list(f) for f in frames])
    k = next(i for i, (removes, n, _) in enumerate(sizes) if removes == 0 and abs(n - markers) <= 0.02 * markers)
    return frames[k], sizes[k][1], sizes[k][2]


def measure(page, server, markers=1000, runs=400, inner=10):
    """Median, 10th and 90th percentile milliseconds of decoding a real batch of `markers` markers in
    each encoding, with the batches' sizes."""
    frame, binary_markers, state = batch_of(page, server, BINARY_PROTOCOL, markers)
    text, json_markers, _ = batch_of(page, server, PROTOCOL, markers)
    samples = page.evaluate(TIME, [list(frame), state, text, runs, inner])

    def figures(values):
        values = sorted(values)
        return {"median": round(statistics.median(values), 3), "p10": round(values[len(values) // 10], 3),
                "p90": round(values[len(values) * 9 // 10], 3)}

    def deflated(data):
        """Bytes after permessage-deflate without context takeover (a raw deflate stream per message)."""
        z = zlib.compressobj(wbits=-15)
        return len(z.compress(data) + z.flush())

    return {
        "binary": {"markers": binary_markers, "bytes": len(frame), "deflated": deflated(frame),
                   "ms": figures(samples["binary"])},
        "json": {"markers": json_markers, "bytes": len(text.encode()), "deflated": deflated(text.encode()),
                 "ms": figures(samples["json"])},
        "runs": runs,
        "decodesPerRun": inner,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markers", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("serve_args", nargs="*", help="extra arguments for pinwheel serve")
    args = ap.parse_args()

    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    server = PinwheelServer(pinwheel_binary(), args.serve_args).start()
    try:
        os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            open_blank(page, server)
            figures = measure(page, server, args.markers, args.runs)
            figures["chromium"] = browser.version
            browser.close()
    finally:
        server.stop()
    figures["loadAverage1mBefore"] = load
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
