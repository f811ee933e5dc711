"""A full disk under the file change log, for real: the data folder on a 2 MiB tmpfs, filled while
producers write. Appends fail with 503 and /healthz says the log is unwritable; once space is freed
ingest resumes without a restart and /healthz says ok; after a restart every acknowledged write is
there. Mounting needs root (the test machines run as root)."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from fault_run import Node, fill, healthz, wait_until  # noqa: E402
from seq_history import History, Producer, check  # noqa: E402
from ingest import post_changes  # noqa: E402
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import pinwheel_binary  # noqa: E402


def test_a_full_disk_refuses_appends_reports_unwritable_and_recovers_once_space_returns(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    assert mounted.returncode == 0, f"this test needs root to mount a small tmpfs: {mounted.stderr}"
    try:
        workdir = disk
        node = Node(pinwheel_binary(), workdir, snapshot_every=1_000_000)
        node.stderr_path = tmp_path / "serve.stderr"
        ok, text = node.start()
        assert ok, text
        assert healthz(node.port) == (200, "ok\n")
        history = History(ids=200)
        producer = Producer(history, node.port, random.Random(5)).start()
        wait_until(lambda: history.acknowledged_requests >= 20, 10, "20 acknowledged requests")

        producer.stop()
        fill(disk / "filler")
        # The segment's last page may still have room for a few records: post until one fails.
        change = [{"op": "upsert", "id": "probe", "lat": 1, "lon": 2}]
        answers = [post_changes(node.port, TOKEN, change)[:2] for _ in range(100)]
        refused = [a for a in answers if a[0] != 200]
        assert refused, "the log kept taking changes on a full disk"
        assert refused[0][0] == 503 and "errno 28" in refused[0][1]["error"], refused[0]
        status, body = healthz(node.port)
        assert status == 503 and body.startswith("change log unwritable: write ") and "errno 28" in body, body
        # Still refused a while later: the log does not claim room it has not got.
        time.sleep(1)
        assert post_changes(node.port, TOKEN, change)[0] == 503
        assert healthz(node.port)[0] == 503

        os.unlink(disk / "filler")
        wait_until(lambda: healthz(node.port) == (200, "ok\n"), 10, "/healthz ok again")
        before = history.acknowledged_requests
        producer = Producer(history, node.port, random.Random(6)).start()
        wait_until(lambda: history.acknowledged_requests >= before + 20, 10, "ingest resuming")
        producer.stop()
        assert "the change log is writable again" in node.stderr_since(0)

        node.stop(signal.SIGTERM)
        ok, text = node.start()
        assert ok, text
        assert check(history, node.ws_url)[0] > 0
        node.stop(signal.SIGTERM)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
