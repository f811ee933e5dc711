"""A raw WebSocket client for frame-level tests: it does the HTTP upgrade itself and sends frames
built byte by byte (masked, as RFC 6455 requires of clients), so tests can send what ordinary client
libraries refuse to: reserved bits, unknown opcodes, broken fragmentation, invalid UTF-8."""

import base64
import os
import socket
import struct
import time
from dataclasses import dataclass, field

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def frame(opcode, payload=b"", fin=True, rsv=0, mask=True, length=None):
    """One frame; `rsv` is the three reserved bits (RSV1 = 4, RSV2 = 2, RSV3 = 1)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length is None else length
    if n < 126:
        header = struct.pack("!BB", first, (0x80 if mask else 0) | n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", first, (0x80 if mask else 0) | 126, n)
    else:
        header = struct.pack("!BBQ", first, (0x80 if mask else 0) | 127, n)
    if not mask:
        return header + payload
    key = os.urandom(4)
    return header + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def close_payload(code=None, reason=b""):
    return b"" if code is None else struct.pack("!H", code) + reason


@dataclass
class Frame:
    opcode: int
    payload: bytes
    fin: bool
    at: float


@dataclass
class Outcome:
    """What the server sent after the test's frames, until it closed the TCP connection."""
    frames: list = field(default_factory=list)
    eof_at: float = None

    @property
    def close(self):
        return next((f for f in self.frames if f.opcode == CLOSE), None)

    @property
    def close_code(self):
        c = self.close
        if c is None:
            return None
        return struct.unpack("!H", c.payload[:2])[0] if len(c.payload) >= 2 else 1005

    @property
    def close_reason(self):
        c = self.close
        return c.payload[2:].decode("utf-8", "replace") if c else None

    @property
    def data_after_close(self):
        """Data frames (text, binary, continuation) the server sent after its Close."""
        seen = False
        after = []
        for f in self.frames:
            if seen and f.opcode in (CONTINUATION, TEXT, BINARY):
                after.append(f)
            seen = seen or f.opcode == CLOSE
        return after


class RawClient:
    def __init__(self, host, port, subprotocol="pinwheel.v1", deflate=False, timeout=5):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        extensions = "Sec-WebSocket-Extensions: permessage-deflate\r\n" if deflate else ""
        request = (f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Protocol: {subprotocol}\r\n{extensions}\r\n")
        self.sock.sendall(request.encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        self.response = head.decode("latin-1")
        if not self.response.startswith("HTTP/1.1 101"):
            raise ConnectionError(f"upgrade refused: {self.response.splitlines()[0]}")
        self.deflate = "permessage-deflate" in self.response.lower()

    def send(self, data):
        self.sock.sendall(data)

    def read_frame(self):
        while True:
            parsed = self._parse()
            if parsed:
                return parsed
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk

    def _parse(self):
        b = self.buffer
        if len(b) < 2:
            return None
        fin, opcode, n = bool(b[0] & 0x80), b[0] & 0x0F, b[1] & 0x7F
        offset = 2
        if n == 126:
            if len(b) < 4:
                return None
            n, offset = struct.unpack("!H", b[2:4])[0], 4
        elif n == 127:
            if len(b) < 10:
                return None
            n, offset = struct.unpack("!Q", b[2:10])[0], 10
        if len(b) < offset + n:
            return None
        self.buffer = b[offset + n:]
        return Frame(opcode, b[offset:offset + n], fin, time.monotonic())

    def outcome(self, deadline_s=5, answer_close=True):
        """Reads until the server closes TCP (or the deadline), answering its Close like a client."""
        result = Outcome()
        end = time.monotonic() + deadline_s
        answered = False
        while time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                f = self.read_frame()
            except socket.timeout:
                break
            except ConnectionResetError:
                f = None
            if f is None:
                result.eof_at = time.monotonic()
                break
            result.frames.append(f)
            if f.opcode == CLOSE and answer_close and not answered:
                answered = True
                try:
                    self.send(frame(CLOSE, f.payload[:2]))
                except OSError:
                    pass
        return result

    def close(self):
        self.sock.close()
