"""`pinwheel load --filters` against a real live server whose points have tenants: viewers spread
over distinct filters tour while a producer moves the points, a probe sets never-seen filters, and
the tool checks every point each viewer receives against its filter."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402

TENANTS = 5


@pytest.fixture
def fleet_server(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server = PinwheelServer(pinwheel_binary(), [
        "--synthetic", "20000", "--synthetic-tenants", str(TENANTS), "--data-dir", str(tmp_path / "data"),
        "--ingest-token-file", str(token_file)]).start()
    try:
        yield server, token_file
    finally:
        server.stop()
        server.log.close()


def test_filtered_viewers_receive_only_their_points_and_each_measure_is_reported(fleet_server, tmp_path):
    server, token_file = fleet_server
    report_file = tmp_path / "load.json"
    done = subprocess.run(
        [pinwheel_binary(), "load", "--url", server.ws_url, "--clients", "12", "--duration", "5s", "--ramp", "1s",
         "--viewport-hz", "2", "--filters", "4", "--tenants", str(TENANTS), "--probes", "3",
         "--ingest-rate", "200", "--ingest-batch", "50", "--ingest-token-file", str(token_file),
         "--json", str(report_file), "--quiet"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text())
    assert report["errors"] == {}, report["errors"]
    f = report["filtered"]
    assert f["filters"] == 4 and f["viewers"] == 12
    # Filters built to select 1 % to 50 % of the points, by the server's own counts.
    assert 0.003 < f["shareMin"] < f["shareMax"] < 0.7, f
    assert f["pointsChecked"] > 0, "viewers received points to check"
    assert f["scopeViolations"] == 0
    assert f["warmFirstBatchMs"]["count"] > 0
    assert f["probesSent"] == 3 and f["neverSeenFirstBatchMs"]["count"] == 3 and f["probeErrors"] == {}
    assert f["indexBytes"] > 0 and f["allowedBytes"] > 0
    assert report["ingest"]["rejected"] == 0 and report["ingest"]["staleness"]["count"] > 0
    for line in ("warm filter (ms)", "never seen (ms)", "staleness (ms)", "0 outside it", "filter mem"):
        assert line in done.stdout, done.stdout


def test_a_bad_filter_count_is_refused_naming_the_option():
    done = subprocess.run(
        [pinwheel_binary(), "load", "--url", "ws://127.0.0.1:9/", "--filters=-1"],
        capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "filters" in done.stderr and "0 to 10000" in done.stderr, done.stderr
