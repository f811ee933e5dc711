"""`pinwheel load --ingest-rate` as a user runs it against a live server: a producer posts changes
beside the viewers at the rate asked, and the report tells how stale the viewers' data was."""

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import metric  # noqa: E402
from pinwheel_process import pinwheel_binary  # noqa: E402

RATE = 2000


def test_load_gives_the_rate_asked_and_reports_the_viewers_staleness(live_server, live_args, tmp_path):
    token_file = live_args[live_args.index("--ingest-token-file") + 1]
    report_file = tmp_path / "load.json"
    done = subprocess.run(
        [pinwheel_binary(), "load", "--url", live_server.ws_url, "--clients", "10", "--duration", "4s",
         "--ramp", "1s", "--viewport-hz", "5", "--ingest-rate", str(RATE), "--ingest-batch", "100",
         "--ingest-token-file", token_file, "--json", str(report_file), "--quiet"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(report_file.read_text())
    ingest = report["ingest"]
    assert "error" not in ingest and ingest["rejected"] == 0
    # Ramp and tour, 5 s at the rate asked.
    assert 0.8 * RATE * 5 <= ingest["accepted"] <= 1.2 * RATE * 5, ingest
    assert ingest["requests"] == ingest["answerMs"]["count"] >= ingest["accepted"] // 100
    # Every accepted change reaches the server's index: the version it serves counts them (once the
    # next refresh, every 100 ms, has laid the last request's changes).
    deadline = time.monotonic() + 10
    while metric(live_server.port, "pinwheel_data_version") < ingest["accepted"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metric(live_server.port, "pinwheel_data_version") >= ingest["accepted"]
    staleness = ingest["staleness"]
    assert staleness["count"] > 0, "viewers received batches bringing the producer's changes"
    assert 0 <= staleness["p50"] <= staleness["p99"] <= staleness["max"] < 5000
    assert "ingest" in done.stdout and f"({RATE}/s asked), 0 rejected" in done.stdout
    # The server's RSS grew with the index's newer versions too: no figure per session.
    assert report["server"]["dataChanged"] is True and "rssPerSessionBytes" not in report["server"]
    assert "not per session: the data changed" in done.stdout, done.stdout


def test_load_over_two_processes_reports_the_staleness_of_every_viewer(live_server, live_args, tmp_path):
    # The producer runs in the first process; the second one's viewers are set against its
    # acknowledgements when the report is made.
    token_file = live_args[live_args.index("--ingest-token-file") + 1]
    report_file = tmp_path / "load.json"
    done = subprocess.run(
        [pinwheel_binary(), "load", "--url", live_server.ws_url, "--clients", "10", "--processes", "2",
         "--duration", "4s", "--ramp", "1s", "--viewport-hz", "5", "--ingest-rate", str(RATE),
         "--ingest-batch", "100", "--ingest-token-file", token_file, "--json", str(report_file), "--quiet"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(report_file.read_text())
    assert report["run"]["processes"] == 2 and "2 tool processes" in done.stdout
    assert sorted(c["index"] for c in report["clients"]) == list(range(10))
    ingest = report["ingest"]
    assert "error" not in ingest and ingest["rejected"] == 0
    assert 0.8 * RATE * 5 <= ingest["accepted"] <= 1.2 * RATE * 5, ingest
    staleness = ingest["staleness"]
    # Every viewer, in either process, saw the producer's changes arrive batch after batch: at least
    # one sample each for most of the tour's seconds.
    assert staleness["count"] >= 10 * 3, staleness
    assert 0 <= staleness["p50"] <= staleness["p99"] <= staleness["max"] < 5000
    assert report["errors"] == {}
