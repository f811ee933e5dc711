"""A scriptable WebSocket client for the server tests (Python `websockets`).

Reads one JSON command per line on stdin and writes one JSON event per line on stdout, so a Swift
test can drive real WebSocket connections without a WebSocket library of its own.

Commands (`id` names a connection):
  {"op":"connect","id":"a","url":"ws://…","subprotocols":["pinwheel.v1"],"origin":"http://…",
   "compression":true,"read":true}
      -> {"event":"open","id":"a","subprotocol":"pinwheel.v1"} or {"event":"refused","id":"a","error":…}
  {"op":"send","id":"a","text":"…"}               a text frame
  {"op":"send","id":"a","hex":"…","binary":true}  raw bytes as a binary frame (false: as a text frame)
  {"op":"read","id":"a","read":false}             stop (or resume) reading: a stalled reader
  {"op":"close","id":"a"}
  {"op":"swarm","url":…,"n":200,"viewport":{…},"origin":…}  n sessions at once, each: hello, one
      viewport, batches acked until done -> {"event":"swarm","ok":…,"failed":…,"features":[…],"errors":[…]}
Events: {"event":"message","id":"a","data":<the JSON message>}, {"event":"close","id":"a","code":…,"reason":…}
"""

import asyncio
import json
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Connection:
    def __init__(self, cid, ws):
        self.cid = cid
        self.ws = ws
        self.reading = asyncio.Event()
        self.reading.set()

    async def pump(self):
        try:
            while True:
                await self.reading.wait()
                message = await self.ws.recv()
                if isinstance(message, bytes):
                    emit({"event": "binary", "id": self.cid, "length": len(message)})
                else:
                    emit({"event": "message", "id": self.cid, "data": json.loads(message)})
        except ConnectionClosed:
            pass
        rcvd = self.ws.close_rcvd
        emit({"event": "close", "id": self.cid,
              "code": rcvd.code if rcvd else 1006, "reason": rcvd.reason if rcvd else ""})


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
    if not command.get("read", True):
        # A stalled reader: no client-side buffering beyond the kernel's, so the server sees it.
        kwargs["max_queue"] = 1
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
        if op == "connect":
            try:
                ws = await open_connection(command)
            except Exception as error:
                emit({"event": "refused", "id": cid, "error": repr(error)})
                continue
            conn = Connection(cid, ws)
            if not command.get("read", True):
                conn.reading.clear()
            connections[cid] = conn
            emit({"event": "open", "id": cid, "subprotocol": ws.subprotocol})
            task = asyncio.create_task(conn.pump())
            tasks.add(task)
        elif op == "send":
            conn = connections[cid]
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
        elif op == "swarm":
            task = asyncio.create_task(swarm(command))
            tasks.add(task)
        emit({"event": "done", "op": op, "id": cid})
    for conn in connections.values():
        await conn.ws.close()


asyncio.run(main())
