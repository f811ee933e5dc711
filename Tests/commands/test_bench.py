"""`pinwheel bench` as a user runs it: the figures it promises are there and are what they say."""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from pinwheel_process import pinwheel_binary  # noqa: E402

ZOOMS = ["2", "5", "8", "11", "14", "17"]


def bench(*args):
    done = subprocess.run(
        [pinwheel_binary(), "bench", "--synthetic", "20000", "--queries", "20", "--rounds", "2", "--json", *args],
        capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def test_bench_reads_a_pan_as_a_move_at_every_zoom_of_the_hierarchical_index():
    figures = bench()
    assert figures["points"] == 20000
    assert sorted(figures["queries"], key=int) == ZOOMS
    for zoom in ZOOMS:
        query = figures["queries"][zoom]
        assert query["cpuMedianUs"] > 0, zoom
        assert 0 < query["panCPUMedianUs"] < 10_000, (zoom, query)


def test_bench_gives_no_pan_figure_for_pca_tree_which_reads_whole_views_only():
    figures = bench("--algorithm", "pca-tree")
    for zoom in ZOOMS:
        assert figures["queries"][zoom]["cpuMedianUs"] > 0, zoom
        assert "panCPUMedianUs" not in figures["queries"][zoom], zoom


def test_bench_refuses_a_bad_option_naming_it():
    done = subprocess.run([pinwheel_binary(), "bench", "--synthetic", "100", "--queries", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "--queries and --rounds must be positive" in done.stderr
