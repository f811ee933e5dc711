"""Live data against the real `pinwheel serve` process: producers post changes over HTTP, viewers
watch over WebSockets, the change log lives in a temporary --data-dir."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from live_patch import TOKEN  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402


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
