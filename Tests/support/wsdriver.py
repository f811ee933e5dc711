"""A scriptable WebSocket client for the server tests (Python `websockets`).

Reads one JSON command per line on stdin and writes one JSON event per line on stdout, so a Swift
test can drive real WebSocket connections without a WebSocket library of its own.

Commands (`id` names a connection):
  {"op":"connect","id":"a","url":"ws://…","subprotocols":["pinwheel.v1"],"origin":"http://…",
   "compression":true,"read":true,"frames":false}
      -> {"event":"open","id":"a","subprotocol":"pinwheel.v1","extensions":["permessage-deflate"]} or {"event":"refused","id":"a","error":…}
      "frames":true reports each message as it came: {"event":"frame","id":"a","binary":false,"text":"…"}
      or {"event":"frame","id":"a","binary":true,"hex":"…"}
  {"op":"send","id":"a","text":"…"}               a text frame
  {"op":"send","id":"a","hex":"…","binary":true}  raw bytes as a binary frame (false: as a text frame)
  {"op":"connect",…,"read":false}                 a stalled reader (raw socket, tiny receive buffer)
  {"op":"read","id":"a","read":true}              resume reading (a stalled reader: until its close)
  {"op":"close","id":"a"}
  {"op":"flood","id":"a","text":"…","rate":300,"seconds":8}   sends text at that rate
  {"op":"swarm","url":…,"n":200,"viewport":{…},"origin":…}  n sessions at once, each: hello, one
      viewport, batches acked until done -> {"event":"swarm","ok":…,"failed":…,"features":[…],"errors":[…]}
Events: {"event":"message","id":"a","data":<the JSON message>} ({"event":"binary","id":"a","length":…} for a
binary frame), {"event":"close","id":"a","code":…,"reason":…}
"""

import asyncio
import base64
import json
import os
import socket
import ssl
import struct
import sys
import urllib.parse

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Connection:
    def __init__(self, cid, ws, frames=False):
        self.cid = cid
        self.ws = ws
        self.frames = frames
        self.reading = asyncio.Event()
        self.reading.set()

    async def pump(self):
        rcvd = None
        try:
            while True:
                await self.reading.wait()
                message = await self.ws.recv()
                if self.frames:
                    binary = isinstance(message, bytes)
                    emit({"event": "frame", "id": self.cid, "binary": binary,
                          **({"hex": message.hex()} if binary else {"text": message})})
                elif isinstance(message, bytes):
                    emit({"event": "binary", "id": self.cid, "length": len(message)})
                else:
                    emit({"event": "message", "id": self.cid, "data": json.loads(message)})
        except ConnectionClosed as closed:
            rcvd = closed.rcvd
        emit({"event": "close", "id": self.cid,
              "code": rcvd.code if rcvd else 1006, "reason": rcvd.reason if rcvd else ""})


class StalledConnection:
    """A hand-made WebSocket client over a raw socket with a tiny receive buffer that reads nothing
    until told to: the stalled reader the server must close. Frames it receives are only parsed for
    the close frame."""

    def __init__(self, cid, sock):
        self.cid = cid
        self.sock = sock
        self.reading = asyncio.Event()

    @staticmethod
    async def open(cid, command):
        loop = asyncio.get_running_loop()
        parts = urllib.parse.urlsplit(command["url"])
        host, port = parts.hostname, parts.port
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, port))
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Protocol: pinwheel.v1\r\n")
        if "origin" in command:
            request += f"Origin: {command['origin']}\r\n"
        await loop.sock_sendall(sock, (request + "\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = await loop.sock_recv(sock, 1)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            response += chunk
        if b" 101 " not in response.split(b"\r\n")[0]:
            raise ConnectionError(response.split(b"\r\n")[0].decode())
        return StalledConnection(cid, sock)

    async def send(self, payload, opcode=1):
        mask = os.urandom(4)
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        await asyncio.get_running_loop().sock_sendall(self.sock, header + mask + masked)

    async def pump(self):
        loop = asyncio.get_running_loop()
        await self.reading.wait()
        buffer = b""
        code, reason = 1006, ""
        while True:
            try:
                chunk = await loop.sock_recv(self.sock, 65536)
            except OSError:
                break
            if not chunk:
                break
            buffer += chunk
            # Drop whole frames from the front, stopping at a close frame.
            while len(buffer) >= 2:
                opcode, n, at = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
                # A read may end inside the extended length: wait for the rest of the header.
                if n == 126:
                    if len(buffer) < 4:
                        break
                    n, at = struct.unpack("!H", buffer[2:4])[0], 4
                elif n == 127:
                    if len(buffer) < 10:
                        break
                    n, at = struct.unpack("!Q", buffer[2:10])[0], 10
                if len(buffer) < at + n:
                    break
                payload, buffer = buffer[at:at + n], buffer[at + n:]
                if opcode == 8:
                    code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                    reason = payload[2:].decode(errors="replace")
                    emit({"event": "close", "id": self.cid, "code": code, "reason": reason})
                    self.sock.close()
                    return
        emit({"event": "close", "id": self.cid, "code": code, "reason": reason})


async def open_connection(command):
    kwargs = {
        "subprotocols": command.get("subprotocols", ["pinwheel.v1"]),
        "compression": "deflate" if command.get("compression", True) else None,
        "max_size": None,
        "ping_interval": None,
        "open_timeout": 10,
        "close_timeout": 5,
    }
    if "origin" in command:
        kwargs["origin"] = command["origin"]
    if command["url"].startswith("wss://"):
        # Tests use a throw-away self-signed certificate.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        kwargs["ssl"] = context
    return await connect(command["url"], **kwargs)


async def swarm_member(command, index, results):
    try:
        async with await open_connection(command) as ws:
            hello = json.loads(await asyncio.wait_for(ws.recv(), 20))
            assert hello["type"] == "hello", hello
            viewport = dict(command["viewport"], type="viewport", seq=1)
            await ws.send(json.dumps(viewport))
            ids = set()
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if msg["type"] != "batch":
                    raise AssertionError(f"unexpected {msg}")
                for rid in msg["remove"]:
                    ids.discard(rid)
                for f in msg["add"]:
                    ids.add(f["id"])
                await ws.send(json.dumps({"type": "ack", "batch": msg["batch"],
                                          "applied": len(msg["add"]) + len(msg["remove"]), "ms": 1.0}))
                if msg["done"]:
                    break
            results["features"][index] = len(ids)
            results["ok"] += 1
    except Exception as error:  # reported to the test, which fails on any
        results["failed"] += 1
        results["errors"].append(f"{index}: {error!r}")


async def flood(conn, command):
    """Sends `text` `rate` times a second for `seconds` seconds, in slices every 50 ms."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    sent = 0
    try:
        while loop.time() - started < command["seconds"]:
            due = int((loop.time() - started) * command["rate"]) + 1
            for _ in range(due - sent):
                await conn.ws.send(command["text"])
            sent = due
            await asyncio.sleep(0.05)
    except ConnectionClosed:
        pass
    emit({"event": "flooded", "id": conn.cid, "sent": sent})


async def swarm(command):
    n = command["n"]
    results = {"ok": 0, "failed": 0, "features": [0] * n, "errors": []}
    await asyncio.gather(*(swarm_member(command, i, results) for i in range(n)))
    emit(dict(results, event="swarm", errors=results["errors"][:5]))


async def main():
    connections = {}
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        command = json.loads(line)
        op = command["op"]
        cid = command.get("id")
        if op == "connect" and not command.get("read", True):
            try:
                conn = await StalledConnection.open(cid, command)
            except Exception as error:
                emit({"event": "refused", "id": cid, "error": repr(error)})
                continue
            connections[cid] = conn
            emit({"event": "open", "id": cid, "subprotocol": "pinwheel.v1"})
            tasks.add(asyncio.create_task(conn.pump()))
        elif op == "connect":
            try:
                ws = await open_connection(command)
            except Exception as error:
                emit({"event": "refused", "id": cid, "error": repr(error)})
                continue
            conn = Connection(cid, ws, command.get("frames", False))
            connections[cid] = conn
            emit({"event": "open", "id": cid, "subprotocol": ws.subprotocol,
                  "extensions": [e.name for e in ws.protocol.extensions]})
            task = asyncio.create_task(conn.pump())
            tasks.add(task)
        elif op == "send":
            conn = connections[cid]
            if isinstance(conn, StalledConnection):
                data = command["text"].encode() if "text" in command else bytes.fromhex(command["hex"])
                try:
                    await conn.send(data, opcode=1 if "text" in command or not command.get("binary", True) else 2)
                except OSError:
                    pass
                emit({"event": "done", "op": op, "id": cid})
                continue
            try:
                if "text" in command:
                    await conn.ws.send(command["text"])
                else:
                    await conn.ws.send(bytes.fromhex(command["hex"]), text=not command.get("binary", True))
            except ConnectionClosed:
                pass
        elif op == "read":
            conn = connections[cid]
            conn.reading.set() if command.get("read", True) else conn.reading.clear()
        elif op == "close":
            await connections[cid].ws.close()
        elif op == "flood":
            tasks.add(asyncio.create_task(flood(connections[cid], command)))
        elif op == "swarm":
            task = asyncio.create_task(swarm(command))
            tasks.add(task)
        emit({"event": "done", "op": op, "id": cid})
    for conn in connections.values():
        if isinstance(conn, Connection):
            await conn.ws.close()


asyncio.run(main())
