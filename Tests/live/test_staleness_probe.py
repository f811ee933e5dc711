"""Staleness as a user sees it, two ways: `pinwheel load --still` sets every change in its still
viewers' views against the batch that showed it, and an independent probe (scripts/staleness-probe.py:
a still viewer at zoom 17, a producer posting an insert, a move and a delete) times each change from
just before its POST to its receipt. Run together against one server, they must agree."""

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import pinwheel_binary  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "staleness_probe", Path(__file__).resolve().parents[2] / "scripts" / "staleness-probe.py")
staleness_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(staleness_probe)

# The tool's and the probe's medians may differ by this share of the probe's, or by this many
# milliseconds on a small run, whichever is larger: both are dominated by where in the 100 ms refresh
# interval a change lands, and a few dozen probe samples place a median within about a tenth of that.
TOLERANCE_SHARE = 0.25
TOLERANCE_MS = 30


def test_the_load_tool_and_an_independent_probe_agree_on_still_viewers_staleness(live_server, live_args, tmp_path):
    token_file = live_args[live_args.index("--ingest-token-file") + 1]
    report_file = tmp_path / "load.json"
    probed = {}

    def run_probe():
        probed.update(staleness_probe.probe(live_server.ws_url, TOKEN, cycles=15, timeout_s=8, pause_s=0.2))

    prober = threading.Thread(target=run_probe)
    load = subprocess.Popen(
        [pinwheel_binary(), "load", "--url", live_server.ws_url, "--clients", "10", "--still", "6",
         "--duration", "20s", "--ramp", "1s", "--viewport-hz", "5", "--ingest-rate", "1000",
         "--ingest-batch", "100", "--ingest-token-file", token_file, "--json", str(report_file), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prober.start()
    prober.join(120)
    out, err = load.communicate(timeout=120)
    assert load.returncode == 0, err
    report = json.loads(report_file.read_text())
    ingest = report["ingest"]
    still = ingest["stillStaleness"]
    assert still["count"] >= 100, still
    assert ingest["stillUndelivered"] == 0
    assert 0 < ingest["stillLongestGapMs"] <= still["max"] + 1
    assert "still (ms)" in out and "longest wait for an update" in out

    assert probed["missed"] == {"insert": 0, "move": 0, "delete": 0}, probed
    samples = [s * 1000 for kind in ("insert", "move", "delete") for s in probed[kind]]
    assert len(samples) == 45
    probe_p50 = staleness_probe.percentile(samples, 50)
    tolerance = max(TOLERANCE_MS, TOLERANCE_SHARE * probe_p50)
    print(f"still staleness p50: tool {still['p50']:.1f} ms ({still['count']} changes), "
          f"probe {probe_p50:.1f} ms ({len(samples)} changes)")
    assert abs(still["p50"] - probe_p50) <= tolerance, (still, sorted(samples))
