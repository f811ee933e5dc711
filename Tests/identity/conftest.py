"""Viewer and producer identity against the real `pinwheel serve` process: tokens minted with PyJWT
(HS256, RS256, ES256, a JWKS), tenants in a CSV's `tenant` column, producers limited to a tenant."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from identity import SECRET, write_points  # noqa: E402
from pinwheel_process import PinwheelServer, pinwheel_binary  # noqa: E402


@pytest.fixture
def points_csv(tmp_path):
    """Two tenants' points mixed over one region (see identity.write_points)."""
    return write_points(tmp_path / "points.csv")


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "viewer.key"
    path.write_text(SECRET + "\n")
    return path


@pytest.fixture
def start_server():
    """Starts `pinwheel serve` with the given arguments; every server started is stopped at the end."""
    started = []

    def start(args):
        server = PinwheelServer(pinwheel_binary(), args).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        server.log.close()
