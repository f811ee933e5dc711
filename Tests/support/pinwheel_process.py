"""The real `pinwheel serve` binary as a test fixture: started on a free port, its output kept in
artifacts/, stopped with SIGTERM. Shared by every Python suite under Tests/.

PINWHEEL_BIN names a built `pinwheel` binary (scripts/test sets it to the release build).
"""

import os
import re
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
ARTIFACTS = ROOT / "artifacts"
LISTENING = re.compile(r"pinwheel listening on (http://[\d.]+:(\d+))")
START_TIMEOUT_S = 60


def stop_process(process, grace_s=10):
    """Asks a process to stop with SIGTERM and kills it after `grace_s` seconds; None or an ended
    process is left as it is."""
    if process and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class PinwheelServer:
    """One `pinwheel serve` process; `restart()` stops it and starts a new one on the same port."""

    def __init__(self, binary, extra_args=()):
        self.binary = binary
        self.extra_args = list(extra_args)
        self.port = 0
        self.url = None
        self.process = None
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / "pinwheel-serve.log", "a")

    def start(self):
        args = [self.binary, "serve", "--port", str(self.port), "--web", str(WEB), *self.extra_args]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        found = threading.Event()

        def drain(process):
            # Reads stdout to the end so the server never blocks on a full pipe.
            for line in process.stdout:
                self.log.write(line)
                self.log.flush()
                m = LISTENING.search(line)
                if m and not found.is_set():
                    self.url, self.port = m.group(1), int(m.group(2))
                    found.set()

        threading.Thread(target=drain, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not found.wait(0.1):
            if self.process.poll() is not None:
                raise RuntimeError(f"{' '.join(args)} exited with {self.process.returncode}; see artifacts/pinwheel-serve.log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{' '.join(args)} printed no 'pinwheel listening on' line in {START_TIMEOUT_S} s")
        return self

    def stop(self):
        stop_process(self.process)

    def kill(self):
        """SIGKILL: the process gets no chance to flush or close anything."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self):
        self.stop()
        # The port was just released; a few quick retries cover a slow socket teardown.
        for attempt in range(20):
            try:
                return self.start()
            except RuntimeError:
                if attempt == 19:
                    raise
                time.sleep(0.25)

    @property
    def ws_url(self):
        return self.url.replace("http://", "ws://") + "/"


def pinwheel_binary():
    binary = os.environ.get("PINWHEEL_BIN")
    if not binary:
        raise RuntimeError("PINWHEEL_BIN is not set: point it at a built `pinwheel` binary (scripts/test does)")
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"PINWHEEL_BIN={binary} is not an executable file")
    return binary


@contextmanager
def running_server(extra_args=()):
    """A started `pinwheel serve` with `extra_args`, stopped (SIGTERM) when the block ends."""
    server = PinwheelServer(pinwheel_binary(), extra_args).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()
