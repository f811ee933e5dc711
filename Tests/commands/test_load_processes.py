"""`pinwheel load --processes N`: the clients shared by N processes of the tool, one report as if one
process had run them all, with the server's side read while every part was still connected."""

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from pinwheel_process import pinwheel_binary, running_server  # noqa: E402


def load(url, *args):
    return subprocess.run(
        [pinwheel_binary(), "load", "--url", url, "--duration", "3s", "--ramp", "1s", "--quiet", *args],
        capture_output=True, text=True, timeout=120)


def load_report(tmp_path, *args):
    """Runs the tool against a fresh 50,000-point server; its exit and its JSON report."""
    report_file = tmp_path / "load.json"
    with running_server(["--synthetic", "50000"]) as server:
        done = load(server.ws_url, *args, "--encoding", "binary", "--json", str(report_file))
    assert done.returncode == 0, done.stderr
    return done, json.loads(report_file.read_text())


def test_two_processes_report_every_client_once_and_the_server_saw_them_all(tmp_path):
    done, report = load_report(tmp_path, "--clients", "30", "--processes", "2")
    assert report["run"]["processes"] == 2
    assert report["run"]["clients"] == 30
    assert sorted(c["index"] for c in report["clients"]) == list(range(30))
    assert len({c["session"] for c in report["clients"]}) == 30, "every client its own session"
    totals = report["totals"]
    assert totals["connected"] == 30 and totals["failedToConnect"] == 0
    assert totals["viewportsSent"] > 0 and totals["viewportsAnswered"] == totals["viewportsSent"]
    assert report["errors"] == {}
    assert report["latency"]["firstBatch"]["count"] == totals["viewportsAnswered"]
    # Read before the parts closed: the server held all 30 sessions.
    assert report["server"]["sessionsAfter"] == 30, report["server"]
    assert report["server"]["dataChanged"] is False and "rssPerSessionBytes" in report["server"]
    assert report["rates"]["viewports"]["count"] >= 2, "per-second rates merged from both parts"
    assert report["tool"]["cpuPercent"] > 0
    assert "2 tool processes" in done.stdout


def test_clients_that_cannot_connect_are_counted_from_every_part():
    # Nothing listens on port 9: each part's clients fail to connect, and the merged report counts all.
    done = load("ws://127.0.0.1:9/", "--clients", "4", "--processes", "2", "--no-metrics")
    assert done.returncode == 1, done.stderr
    assert "connections 0 opened, 4 failed" in done.stdout, done.stdout
    assert "connect failed ×4" in done.stdout, done.stdout


def test_the_parts_run_the_options_they_were_not_told_on_their_command_line(tmp_path):
    # A part gets the starting process's options as a file: 2 viewports a second, not the default 10,
    # each client from its hello (within the 1 s ramp) to the tour's end 3 s after the ramp.
    _, report = load_report(tmp_path, "--clients", "20", "--processes", "2", "--viewport-hz", "2",
                            "--trace", "pan")
    sent = report["totals"]["viewportsSent"]
    assert 20 * 2 * 2 <= sent <= 20 * (2 * 4 + 1), sent


def test_without_processes_the_tool_splits_itself_past_5000_viewports_a_second(tmp_path):
    # 501 clients × 10 viewports a second: one process per 5,000 a second, as many as the cores allow.
    _, report = load_report(tmp_path, "--clients", "501", "--viewport-hz", "10")
    assert report["run"]["processes"] == min(2, os.cpu_count())
    assert sorted(c["index"] for c in report["clients"]) == list(range(501))
    assert report["errors"] == {}


def test_without_processes_fewer_viewports_stay_in_one_process(tmp_path):
    _, report = load_report(tmp_path, "--clients", "499", "--viewport-hz", "10")
    assert report["run"]["processes"] == 1


def test_the_progress_line_adds_the_parts_together():
    # Without --quiet: one line a second on stderr, counting every part's clients.
    with running_server(["--synthetic", "50000"]) as server:
        done = subprocess.run(
            [pinwheel_binary(), "load", "--url", server.ws_url, "--clients", "30", "--processes", "2",
             "--duration", "3s", "--ramp", "1s"],
            capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if " open " in line]
    assert len(lines) >= 3, done.stderr
    assert any(line.split()[1] == "30/30" for line in lines), done.stderr
    assert any(float(line.split()[3].rstrip("k")) > 0 for line in lines if "viewports/s" in line), done.stderr
