"""Attack scenarios against the real `pinwheel serve` process: each starts its own server, attacks it
with ordinary client libraries on 127.0.0.1, and checks that it stays up and that a well-behaved
viewer keeps being served."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from pinwheel_process import running_server  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "server_args(*args): extra `pinwheel serve` arguments for the test's server")


@pytest.fixture
def server(request):
    """A fresh server for each test; a module's `pytestmark = pytest.mark.server_args(...)` adds options."""
    marker = request.node.get_closest_marker("server_args")
    with running_server(marker.args if marker else ()) as s:
        yield s
