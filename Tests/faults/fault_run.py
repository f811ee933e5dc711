"""A seeded run of faults against one real `pinwheel serve` with a file change log, each followed by
a restart and the history checker (Tests/support/seq_history.py). Used by test_faults.py (a short run)
and scripts/faults (a long one).

Faults, at random moments while producers append and `--snapshot-every` is small enough that
snapshots fire all the time:
  term             SIGTERM (a clean stop); the folder must check intact
  kill             kill -9; the folder may end in a torn write, nothing worse
  flip-segment     one bit flipped at a random offset of a random segment (server stopped)
  flip-snapshot    the same in a snapshot
  cut-segment      a segment cut short at a random offset
  cut-snapshot     a snapshot cut short
  disk-full        (with a tmpfs work folder) the disk filled while producers append: /healthz must
                   say 503 unwritable, then ok once the filler is deleted, and ingest must resume
                   without a restart; then a SIGTERM
After each, the server either starts and the checker passes (every acknowledged write there, no id
older than its last acknowledged value, nothing twice), or (damage) it refuses to start naming the
file and the byte, `pinwheel log check` exits 1 naming it too, and `pinwheel log repair --yes` cuts
the folder back to what it says it keeps, after which the checker passes for those versions.
A cut at the end of the last segment looks exactly like a torn write: the server cuts it and logs
the last version kept; the checker then holds it to the writes up to that version.
"""

import errno
import http.client
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from seq_history import History, Producer, check  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import WEB  # noqa: E402

LISTENING = re.compile(r"pinwheel listening on http://[\d.]+:(\d+)")
DAMAGED = re.compile(r"(/\S+/(?:changes|snapshot)-\d{20}\.(?:log|bin)) is damaged at byte (\d+)")
CUT = re.compile(r"cut (\d+) bytes of an interrupted write off (\S+) at byte (\d+); the last version kept is (\d+)")
KEPT = re.compile(r"and the changes up to version (\d+)")
FALLBACK = re.compile(r"snapshot \S+ is damaged \(")
HARMLESS = re.compile(r"damaged bytes at byte \d+, holding no change after version")

# Shares of each fault in a run; a run of 100 has 56 stops, 24 flips and 20 cuts.
SHARES = {"term": 28, "kill": 28, "flip-segment": 14, "flip-snapshot": 10, "cut-segment": 12, "cut-snapshot": 8}


def schedule(rng, count, disk_full=False):
    """`count` faults in the shares above, in a seeded order (and 6 % full disks when asked)."""
    shares = dict(SHARES, **({"disk-full": 6} if disk_full else {}))
    total = sum(shares.values())
    kinds = []
    for kind, share in shares.items():
        kinds += [kind] * max(1, count * share // total)
    # What rounding left over goes to stops, which the issue asks the most of.
    while len(kinds) < count:
        kinds.append("term" if len(kinds) % 2 else "kill")
    rng.shuffle(kinds)
    return kinds[:count]


class Node:
    """`pinwheel serve` on a data folder, restarted on a new port each time; its stderr kept in a file
    so a refusal's message can be read."""

    def __init__(self, binary, workdir, snapshot_every, stderr_path=None):
        self.binary = binary
        self.data = workdir / "data"
        token = workdir / "token"
        token.write_text(TOKEN + "\n")
        self.args = [binary, "serve", "--port", "0", "--web", str(WEB), "--synthetic", "200", "--data-dir",
                     str(self.data), "--ingest-token-file", str(token), "--snapshot-every", str(snapshot_every)]
        self.stderr_path = stderr_path or workdir / "serve.stderr"
        self.process = None
        self.port = None

    def start(self, timeout_s=60):
        """Starts it; returns (True, stderr of this start) once it listens, or (False, stderr) when it
        exits first."""
        offset = self.stderr_path.stat().st_size if self.stderr_path.exists() else 0
        err = open(self.stderr_path, "a")
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
        err.close()
        found = threading.Event()

        def drain(process):
            for line in process.stdout:
                m = LISTENING.search(line)
                if m and not found.is_set():
                    self.port = int(m.group(1))
                    found.set()

        threading.Thread(target=drain, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while not found.wait(0.05):
            if self.process.poll() is not None:
                return False, self.stderr_since(offset)
            assert time.monotonic() < deadline, "the server neither listened nor exited in time"
        return True, self.stderr_since(offset)

    def stderr_since(self, offset):
        with open(self.stderr_path) as f:
            f.seek(offset)
            return f.read()

    def stop(self, sig):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(f"the server did not stop within 20 s of signal {sig}")

    @property
    def ws_url(self):
        return f"ws://127.0.0.1:{self.port}/"

    def log_command(self, *args):
        done = subprocess.run([self.binary, "log", *args, "--data-dir", str(self.data)], capture_output=True,
                              text=True, timeout=60)
        return done.returncode, done.stdout + done.stderr


def healthz(port):
    """(status, body) of GET /healthz."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def wait_until(condition, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} not seen within {timeout_s} s"
        time.sleep(0.05)


def fill(path):
    """Appends to `path` until not one more byte fits on its file system."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\xff" * size)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


def disk_full(rng, node, history, workdir, where):
    """Fills the disk under appending producers, holds it full a moment, frees it: /healthz must go
    503 unwritable and come back ok, and ingest must resume, all without a restart."""
    fill(workdir / "filler")
    seen = []
    wait_until(lambda: seen.append(healthz(node.port)) or seen[-1][0] == 503, 10, f"{where}: /healthz 503 on a full disk")
    assert seen[-1][1].startswith("change log unwritable: write "), f"{where}: {seen[-1]}"
    time.sleep(rng.uniform(0.2, 1.0))
    os.unlink(workdir / "filler")
    wait_until(lambda: healthz(node.port) == (200, "ok\n"), 10, f"{where}: /healthz ok after space returned")
    before = history.acknowledged_requests
    wait_until(lambda: history.acknowledged_requests > before + 5, 10, f"{where}: ingest resuming")


def damage(rng, data, kind):
    """Flips a bit or cuts a file of the kind asked; returns (file, offset) or None when there is none."""
    pattern = "changes-*.log" if kind.endswith("segment") else "snapshot-*.bin"
    files = sorted(p for p in data.glob(pattern) if p.stat().st_size > 0)
    if not files:
        return None
    if rng.random() < 0.5:
        target = rng.choice(files)
    elif kind.endswith("snapshot"):
        target = files[-1]
    else:
        # A segment holding changes after the newest snapshot, which a start needs (with snapshots
        # this frequent, most of the others are covered by one).
        snapshots = [int(p.name[9:29]) for p in data.glob("snapshot-*.bin")]
        newest = max(snapshots, default=0)
        needed = [p for p in files if int(p.name[8:28]) > newest] + [p for p in files if int(p.name[8:28]) <= newest][-1:]
        target = rng.choice(needed)
    size = target.stat().st_size
    # The changes after the snapshot are at a segment's end: aim there half the time too.
    offset = rng.randrange(size) if rng.random() < 0.5 else rng.randrange(size * 3 // 4, size)
    if kind.startswith("flip"):
        with open(target, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << rng.randrange(8))]))
    else:
        os.truncate(target, offset)
    return target, offset


def run(binary, workdir, seed, count, snapshot_every=200, report=print, full_disk_at=None):
    """Runs `count` faults with `seed`; returns the tallies. Raises AssertionError on the first broken
    promise, naming the fault, its number and the seed. With `full_disk_at` (a small file system,
    a tmpfs say, mounted there) the data folder lives on it and full disks are among the faults."""
    rng = random.Random(seed)
    workdir = Path(workdir)
    history = History(ids=300)
    if full_disk_at:
        node = Node(binary, Path(full_disk_at), snapshot_every, stderr_path=workdir / "serve.stderr")
    else:
        node = Node(binary, workdir, snapshot_every)
    tally = {"faults": {}, "started": 0, "cut reported": 0, "snapshot fallbacks": 0, "refused then repaired": 0,
             "damage passed over (a snapshot had it)": 0,
             "ids behind their last acknowledged write after a cut or repair": 0,
             "acknowledged requests": 0, "ids checked": 0, "changes lost to repair": 0}
    ok, text = node.start()
    assert ok, text
    started = time.monotonic()
    # Damage a start passed over stays until a snapshot's clean-up removes its file.
    damaged_files_left = False
    for n, kind in enumerate(schedule(rng, count, disk_full=full_disk_at is not None)):
        where = f"fault {n + 1}/{count} ({kind}, seed {seed})"
        tally["faults"][kind] = tally["faults"].get(kind, 0) + 1
        producer = Producer(history, node.port, rng).start()
        time.sleep(rng.uniform(0.2, 0.9))
        if kind == "disk-full":
            disk_full(rng, node, history, Path(full_disk_at), where)
        if kind in ("term", "kill", "disk-full"):
            node.stop(signal.SIGKILL if kind == "kill" else signal.SIGTERM)
            producer.stop()
            code, out = node.log_command("check")
            allowed = (0,) if kind != "kill" and not damaged_files_left else (0, 2)
            assert code in allowed, f"{where}: `pinwheel log check` exited {code}:\n{out}"
            damaged_files_left = damaged_files_left and code != 0
            hit = None
        else:
            # Stopped while appending, so the newest segment holds changes no snapshot has yet.
            node.stop(signal.SIGTERM)
            producer.stop()
            hit = damage(rng, node.data, kind)
        ok, text = node.start()
        up_to = None
        if ok:
            cut = CUT.search(text)
            if cut:
                assert kind in ("kill", "cut-segment"), f"{where}: a cut after {kind}: {cut.group(0)}"
                tally["cut reported"] += 1
                # After kill -9 the cut is a torn write, never acknowledged: the checker stays strict.
                if kind == "cut-segment":
                    up_to = int(cut.group(4))
            if HARMLESS.search(text):
                tally["damage passed over (a snapshot had it)"] += 1
            if FALLBACK.search(text):
                assert kind in ("flip-snapshot", "cut-snapshot"), f"{where}: a snapshot fallback after {kind}"
                tally["snapshot fallbacks"] += 1
            tally["started"] += 1
            damaged_files_left = damaged_files_left or hit is not None
        else:
            assert hit is not None, f"{where}: the server refused to start:\n{text[-2000:]}"
            m = DAMAGED.search(text)
            assert m, f"{where}: the refusal names no file and byte:\n{text[-2000:]}"
            assert Path(m.group(1)).parent == node.data, f"{where}: {m.group(0)}"
            code, out = node.log_command("check")
            assert code == 1 and Path(m.group(1)).name in out, f"{where}: `log check` exited {code}:\n{out}"
            code, out = node.log_command("repair")
            assert code == 0 and "nothing changed" in out, f"{where}: `log repair` without --yes:\n{out}"
            code, out = node.log_command("repair", "--yes")
            kept = KEPT.search(out)
            assert code == 0 and kept, f"{where}: `log repair --yes` exited {code}:\n{out}"
            up_to = int(kept.group(1))
            lost = re.search(r"changes lost: (\d+)", out)
            tally["changes lost to repair"] += int(lost.group(1)) if lost else 0
            ok, text = node.start()
            assert ok, f"{where}: no start after repair:\n{text[-2000:]}"
            tally["refused then repaired"] += 1
            damaged_files_left = True
        try:
            checked, behind = check(history, node.ws_url, up_to)
        except AssertionError as e:
            raise AssertionError(f"{where}: {e}") from None
        tally["ids checked"] += checked
        tally["ids behind their last acknowledged write after a cut or repair"] += behind
        if up_to is not None:
            history.forget_after(up_to)
        report(f"{where}: ok{' (cut to ' + str(up_to) + ')' if up_to is not None else ''}")
    node.stop(signal.SIGTERM)
    tally["acknowledged requests"] = history.acknowledged_requests
    tally["seconds"] = round(time.monotonic() - started)
    return tally
