"""Tokens and tenants for the identity tests: a CSV of two tenants' points, tokens minted with PyJWT,
and a viewer that authenticates first and checks every batch against its tenant's ids."""

import json
import random
import time
from contextlib import ExitStack

import jwt
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

PROTOCOL = "pinwheel.v1"
SECRET = "s3cret-for-tests-only-0123456789abcdef"
# Ids of each tenant's points: disjoint, so a feature's id says whose point it is.
TENANT_IDS = {"acme": range(1, 401), "globex": range(1001, 1301)}
# The region both tenants' points are spread over, interleaved so any cluster could mix them.
REGION = (4.0, 50.0, 8.0, 53.0)


def write_points(path, seed=7):
    rng = random.Random(seed)
    west, south, east, north = REGION
    lines = ["id,lat,lon,tenant,kind"]
    for tenant, ids in TENANT_IDS.items():
        for i in ids:
            lines.append(f"{i},{rng.uniform(south, north):.6f},{rng.uniform(west, east):.6f},{tenant},"
                         f"{'truck' if i % 2 else 'van'}")
    # A few points in the same places, so same-coordinate groups hold both tenants too.
    lines.append("2001,51.5,6.0,acme,truck")
    lines.append("2002,51.5,6.0,globex,truck")
    path.write_text("\n".join(lines) + "\n")
    return path


def shown(batches, held=None):
    """id -> feature the client holds after applying `batches` in order over `held`."""
    held = {} if held is None else held
    for batch in batches:
        for fid in batch.get("remove", []):
            held.pop(fid, None)
        for f in batch.get("update", []) + batch.get("add", []):
            held[f["id"]] = f
    return held


def mint(claims=None, key=SECRET, algorithm="HS256", lifetime_s=300, headers=None):
    """A signed token with `exp` `lifetime_s` from now (unless `claims` sets or removes it)."""
    body = {"exp": int(time.time()) + lifetime_s}
    body.update(claims or {})
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode(body, key, algorithm=algorithm, headers=headers)


def close_of(ws, timeout_s=10):
    """(code, reason) of the server's Close, reading and dropping whatever comes before it."""
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ws.recv(timeout=max(0.01, deadline - time.monotonic()))
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None, closed.rcvd.reason if closed.rcvd else None
    except TimeoutError:
        pass
    raise AssertionError(f"the server did not close the session within {timeout_s} s")


class ScopedViewer:
    """A `pinwheel.v1` session that sends `auth` first (unless `token` is None), then reads `hello`."""

    def __init__(self, ws_url, token, timeout_s=10):
        self._connection = ExitStack()
        self.ws = self._connection.enter_context(
            connect(ws_url, subprotocols=[PROTOCOL], max_size=None, open_timeout=timeout_s))
        self.timeout_s = timeout_s
        self.seq = 0
        self.auth = None
        self.hello = None
        if token is not None:
            self.ws.send(json.dumps({"type": "auth", "token": token}))

    def greeted(self):
        """Reads up to `hello`: the `auth` answer first, then `hello`."""
        while self.hello is None:
            msg = self.receive()
            if msg["type"] == "auth":
                self.auth = msg
            elif msg["type"] == "hello":
                self.hello = msg
        return self

    def receive(self):
        return json.loads(self.ws.recv(timeout=self.timeout_s))

    def view(self, bbox, zoom, width=1024, height=768):
        """Sends a viewport and acknowledges its batches until `done`; returns every batch received."""
        self.seq += 1
        self.ws.send(json.dumps({"type": "viewport", "seq": self.seq, "bbox": list(bbox), "zoom": zoom,
                                 "width": width, "height": height}))
        batches = []
        while True:
            msg = self.receive()
            if msg["type"] == "error":
                raise AssertionError(f"server error: {msg}")
            if msg["type"] != "batch":
                continue
            batches.append(msg)
            applied = sum(len(msg.get(k, [])) for k in ("remove", "update", "add"))
            self.ws.send(json.dumps({"type": "ack", "batch": msg["batch"], "applied": applied, "ms": 0.1}))
            if msg["seq"] == self.seq and msg.get("done"):
                return batches

    def close(self):
        self._connection.close()
