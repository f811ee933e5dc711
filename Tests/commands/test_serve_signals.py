"""`pinwheel serve` and SIGTERM at any moment of its start: right after it announces that it listens
(while it still starts its movers), and while it is still loading its data. Each ends the process
cleanly within seconds, exit status 0."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from pinwheel_process import ARTIFACTS, LISTENING, WEB, pinwheel_binary  # noqa: E402

EXIT_WITHIN_S = 5


def serve(*args):
    ARTIFACTS.mkdir(exist_ok=True)
    return subprocess.Popen(
        [pinwheel_binary(), "serve", "--port", "0", "--web", str(WEB), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)


def ended(process):
    """Waits for the exit (killing the process past EXIT_WITHIN_S); its status, time and stderr."""
    started = time.monotonic()
    try:
        process.wait(EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    took = time.monotonic() - started
    errors = process.stderr.read()
    (ARTIFACTS / "serve-signals.log").open("a").write(errors)
    return process.returncode, took, errors


@pytest.mark.parametrize("args", [["--synthetic", "2000"], ["--synthetic", "2000", "--movers", "50"]])
def test_sigterm_right_after_the_listening_line_stops_the_server_cleanly(args):
    for _ in range(5):
        process = serve(*args)
        line = process.stdout.readline()
        assert LISTENING.search(line), line
        process.terminate()
        status, took, errors = ended(process)
        assert status == 0, f"exit status {status} after {took:.1f} s; stderr: {errors[-2000:]}"
        assert "signal 15: closing every session with 1001" in errors and "stopped" in errors, errors[-2000:]


def test_sigterm_while_the_data_loads_ends_the_process_at_once():
    process = serve("--synthetic", "10000000")
    # Loading ten million points takes far longer than this on any machine.
    time.sleep(0.5)
    assert process.poll() is None
    process.terminate()
    status, took, errors = ended(process)
    assert status == 0, f"exit status {status} after {took:.1f} s; stderr: {errors[-2000:]}"
    assert "signal 15 while loading: exiting" in errors
