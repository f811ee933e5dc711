"""`--host` binds exactly the address asked for: the listening sockets are read back from the kernel
(/proc/net/tcp and tcp6), and an address the machine does not have stops the server with an error."""

import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pinwheel_process import WEB, pinwheel_binary

LISTENING = re.compile(r"pinwheel listening on http://(\S+):(\d+)")


def listeners(port):
    """Every (address, port) the kernel lists as listening on `port`, from /proc/net/tcp{,6}."""
    found = []
    for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        if not Path(path).exists():
            continue
        for line in Path(path).read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            address_hex, port_hex = local.split(":")
            if state != "0A" or int(port_hex, 16) != port:  # 0A: TCP_LISTEN
                continue
            raw = bytes.fromhex(address_hex)
            # The kernel prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found.append(socket.inet_ntop(family, raw))
    return sorted(found)


def serve(host, timeout_s=60, port=0):
    """Starts `pinwheel serve --host HOST --port 0`; returns (process, address, port) once it listens,
    or (process, None, None) when it exits first."""
    process = subprocess.Popen(
        [pinwheel_binary(), "serve", "--host", host, "--port", str(port), "--web", str(WEB)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    result = {}
    ready = threading.Event()

    def read():
        for line in process.stdout:
            m = LISTENING.search(line)
            if m and not ready.is_set():
                result["address"], result["port"] = m.group(1).strip("[]"), int(m.group(2))
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not ready.wait(0.1):
        if process.poll() is not None or time.monotonic() > deadline:
            break
    return process, result.get("address"), result.get("port")


def stop(process):
    if process.poll() is None:
        process.terminate()
        process.wait(10)


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize(
    "host, expected",
    [
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("0.0.0.0", "0.0.0.0"),
        ("::1", "::1"),
        ("::", "::"),
    ],
)
def test_the_listener_is_exactly_the_address_asked_for(host, expected):
    if ":" in expected and not has_ipv6_loopback():
        pytest.fail("this machine has no IPv6 loopback, which the test needs")
    process, address, port = serve(host)
    try:
        assert port, f"--host {host}: no 'listening' line; stderr: {process.stderr.read() if process.poll() is not None else ''}"
        assert address == expected, f"--host {host} printed {address}"
        assert listeners(port) == [expected], f"--host {host}: the kernel lists {listeners(port)} on port {port}"
        # The bound address answers; for a loopback-only bind, nothing else on the port does.
        target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(expected, expected)
        with socket.create_connection((target, port), timeout=5):
            pass
    finally:
        stop(process)


def test_an_address_the_machine_does_not_have_stops_the_server():
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a real interface.
    process, address, port = serve("192.0.2.7")
    try:
        assert port is None, f"listened on {address}:{port}"
        assert process.wait(30) != 0
        error = process.stderr.read()
        assert "cannot listen on 192.0.2.7" in error and "Cannot assign requested address" in error, error
    finally:
        stop(process)


def test_a_name_that_does_not_resolve_stops_the_server():
    process, address, port = serve("no-such-host.invalid")
    try:
        assert port is None, f"listened on {address}:{port}"
        assert process.wait(30) != 0
        error = process.stderr.read()
        assert "invalid host: no-such-host.invalid (does not resolve" in error, error
    finally:
        stop(process)


def test_a_port_taken_on_that_address_stops_the_server():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process, address, bound = serve("127.0.0.1", port=port)
        try:
            assert bound is None, f"listened on {address}:{bound}"
            assert process.wait(30) != 0
            error = process.stderr.read()
            assert f"cannot listen on 127.0.0.1:{port}" in error and "Address already in use" in error, error
        finally:
            stop(process)
