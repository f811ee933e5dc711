"""Faults against the real `pinwheel serve` with a file change log, then a history checker: a short
seeded run of every kind (see fault_run.py); scripts/faults runs a long one."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from fault_run import run  # noqa: E402
from pinwheel_process import pinwheel_binary  # noqa: E402


def test_a_seeded_run_of_stops_flips_and_cuts_loses_and_reverts_no_acknowledged_write(tmp_path):
    seed = int(os.environ.get("PINWHEEL_FAULT_SEED", "43"))
    tally = run(pinwheel_binary(), tmp_path, seed=seed, count=24, report=lambda line: None)
    print(tally)
    assert sum(tally["faults"].values()) == 24
    assert tally["acknowledged requests"] >= 50, "too few writes acknowledged for the run to mean anything"
    assert tally["ids checked"] > 0
