"""Several Pinwheel nodes on one replicated change log (NATS JetStream), with HAProxy in front: real
nats-server, haproxy and pinwheel processes on 127.0.0.1, started and stopped by the tests."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from cluster import Cluster  # noqa: E402


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    """Three nodes and HAProxy that tests only add data to (nothing is killed)."""
    cluster = Cluster(tmp_path_factory.mktemp("cluster"), proxy=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(tmp_path):
    """A cluster of its own, for a test that kills or stops parts of it."""
    cluster = Cluster(tmp_path, proxy=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()
