"""A producer that floods `pinwheel.ingest.v1` with moves of the synthetic points, as fast as asked,
keeping frames in flight instead of waiting for each ack: what a fleet's firehose does."""

import json
import random
import threading
import time

from websockets.sync.client import connect

PROTOCOL = "pinwheel.ingest.v1"


def flood_frames(points, lines, count=16, seed=7):
    """`count` frames of `lines` moves each over ids 0 ..< points (text, ready to send)."""
    rng = random.Random(seed)
    frames = []
    for _ in range(count):
        changes = ({"op": "upsert", "id": rng.randrange(points), "lat": rng.uniform(-60, 60),
                    "lon": rng.uniform(-170, 170)} for _ in range(lines))
        frames.append("\n".join(json.dumps(c, separators=(",", ":")) for c in changes))
    return frames


class Flood:
    """Runs in a thread: sends frames of `lines` moves at up to `rate` changes/s with at most `window`
    frames unanswered, until stopped; counts what was sent, acknowledged and accepted, and when."""

    def __init__(self, url, token, points, rate, lines=1000, window=32):
        self.url, self.token, self.points = url, token, points
        self.rate, self.lines, self.window = rate, lines, window
        self.sent = 0
        self.acked = 0
        self.accepted = 0
        self.errors = []
        self.closed = None
        self.answers = []
        self.started = None
        self.stopped_at = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(30)
        return self

    def accepted_rate(self):
        """Changes accepted per second over the flood."""
        span = (self.stopped_at or time.monotonic()) - (self.started or time.monotonic())
        return self.accepted / span if span > 0 else 0.0

    def _run(self):
        frames = flood_frames(self.points, self.lines)
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            with connect(self.url, subprotocols=[PROTOCOL], additional_headers=headers, open_timeout=10,
                         max_size=None) as ws:
                self.started = time.monotonic()
                interval = self.lines / self.rate
                next_send = self.started
                while not self._stop.is_set():
                    # Read what has come back without waiting, or wait when the window is full.
                    while True:
                        full = self.sent - self.acked >= self.window
                        try:
                            text = ws.recv(timeout=1.0 if full else 0)
                        except TimeoutError:
                            break
                        self._answer(json.loads(text))
                        if self._stop.is_set():
                            break
                    if self.sent - self.acked >= self.window or time.monotonic() < next_send:
                        time.sleep(min(0.002, max(0.0, next_send - time.monotonic())))
                        continue
                    ws.send(frames[self.sent % len(frames)])
                    self.sent += 1
                    next_send = max(next_send + interval, time.monotonic() - interval)
                self.stopped_at = time.monotonic()
        except Exception as error:  # noqa: BLE001 - reported to the test
            # Frames still in flight when the flood stops may end the closing handshake abruptly: that
            # is the producer leaving, not the server refusing it.
            if self.stopped_at is None:
                self.closed = repr(error)
            self.stopped_at = self.stopped_at or time.monotonic()

    def _answer(self, answer):
        self.acked += 1
        self.answers.append(answer)
        if answer.get("type") == "ack":
            self.accepted += answer.get("accepted", 0)
        else:
            self.errors.append(answer)
