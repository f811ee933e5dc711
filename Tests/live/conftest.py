"""Live data against the real `pinwheel serve` process: producers post changes over HTTP, viewers
watch over WebSockets, the change log lives in a temporary --data-dir."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402

TOKEN = "test-token-0123456789abcdef"

# A patch of the South Pacific with no synthetic points: everything in it is the producers'.
SOUTH, WEST = -40.0, -120.0


def patch_box(size):
    """The patch's corner square of `size` degrees, as a viewport bbox."""
    return [WEST, SOUTH, WEST + size, SOUTH + size]


def grid_point(k, columns, spacing, margin):
    """Point k of a grid in the patch: `columns` wide, `spacing` degrees apart, `margin` from the corner."""
    return SOUTH + margin + (k // columns) * spacing, WEST + margin + (k % columns) * spacing


@pytest.fixture
def live_args(tmp_path):
    """Arguments of a live server: a data dir and a token file under the test's temporary folder."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    return ["--synthetic", "2000", "--data-dir", str(tmp_path / "data"), "--ingest-token-file", str(token_file)]


@pytest.fixture
def live_server(live_args):
    server = PinwheelServer(pinwheel_binary(), live_args).start()
    try:
        yield server
    finally:
        server.stop()
        server.log.close()
