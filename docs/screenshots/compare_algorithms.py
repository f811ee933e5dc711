"""Screenshots of the page drawing the same view with each clustering algorithm.

Usage: python3 docs/screenshots/compare_algorithms.py PINWHEEL_BINARY DATA_FILE
Starts `pinwheel serve --algorithm A` for each algorithm on a free port, opens the page in Debian's
headless Chromium (1280x800) at each view below, waits until the stream has settled and saves
docs/screenshots/<view>-<algorithm>.png.
"""

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
VIEWS = {"europe-z5": (50.0, 10.0, 5), "japan-z6": (36.0, 138.0, 6)}
ALGORITHMS = ["hierarchical", "pca-tree"]
LISTENING = re.compile(r"pinwheel listening on (http://[\d.]+:\d+)")


def serve(binary, data, algorithm):
    args = [binary, "serve", "--port", "0", "--web", str(ROOT / "web"), "--data", data, "--algorithm", algorithm]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    found = threading.Event()
    url = []

    def drain():
        # Reads stdout to the end so the server never blocks on a full pipe.
        for line in process.stdout:
            m = LISTENING.search(line)
            if m and not found.is_set():
                url.append(m.group(1))
                found.set()

    threading.Thread(target=drain, daemon=True).start()
    if not found.wait(120):
        process.kill()
        raise RuntimeError(f"{' '.join(args)} did not start")
    return process, url[0]


def main(binary, data):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for algorithm in ALGORITHMS:
            process, url = serve(binary, data, algorithm)
            try:
                for name, (lat, lon, zoom) in VIEWS.items():
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.goto(f"{url}/?lat={lat}&lon={lon}&zoom={zoom}")
                    # The offline basemap arrives over HTTP after the page; the markers over the socket.
                    page.wait_for_load_state("networkidle")
                    page.wait_for_function(
                        "() => window.pinwheel && window.pinwheel.settled() && !window.pinwheel.animating()",
                        timeout=30000)
                    page.screenshot(path=str(OUT / f"{name}-{algorithm}.png"))
                    page.close()
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(20)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
