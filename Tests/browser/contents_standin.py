"""A stand-in for what `pinwheel serve --group-by kind --flag alert=…` will send, until the server has
it: a real WebSocket server (Python `websockets`) on 127.0.0.1 speaking the JSON protocol's messages of
docs/protocol.md for what clusters hold — a hello naming the groups and flags, one view of two clusters
carrying `groups` and `flags` and a point, and the answers to `leaves`, `children` and `expand` — so the
page's donuts, legend, rings and member list can be driven over a socket. Everything else (the page,
the modules, the page's origin) comes from the real server.
"""

import json
import threading

from websockets.sync.server import serve

PROTOCOL = "pinwheel.v1"
GROUPS = {"column": "kind", "values": ["bus", "tram", "ferry"]}
FLAGS = ["alert"]
CENTRE = (48.0, 10.0)
# Cluster A: 45 points, 30 buses, 10 trams and 5 of other kinds, 2 alerting.
A = {"id": 7 * 2**32 + 1, "lat": 48.0, "lon": 9.0, "count": 45, "parent": 6 * 2**32 + 1,
     "groups": [[0, 30], [1, 10], [3, 5]], "flags": [2]}
# Cluster B: 12 ferries, none alerting.
B = {"id": 7 * 2**32 + 2, "lat": 48.0, "lon": 11.0, "count": 12, "parent": 6 * 2**32 + 1,
     "groups": [[2, 12]], "flags": [0]}
POINT = {"id": 5000, "lat": 47.5, "lon": 10.0, "count": 1, "properties": {"name": "Depot", "kind": "bus"}}
KINDS = ["bus"] * 30 + ["tram"] * 10 + ["cable car"] * 5
MEMBERS = [{"id": 1000 + i, "lat": 48.0 + i * 1e-3, "lon": 9.0, "count": 1,
            "properties": {"name": f"{kind.title()} {i}", "kind": kind}} for i, kind in enumerate(KINDS)]
# A cluster the stand-in never answers about: the page's request for it times out.
SILENT_ID = 999
CHILDREN = [dict(m, parent=A["id"]) for m in MEMBERS[:3]]


def hello():
    return {"type": "hello", "protocol": PROTOCOL, "session": "s1", "algorithm": "hierarchical",
            "algorithms": ["hierarchical"], "dataset": {"name": "contents stand-in", "points": 58, "bounds": None},
            "options": {"minZoom": 0, "maxZoom": 16, "minPoints": 2, "radius": 40, "extent": 512, "nodeSize": 64},
            "limits": {"viewportHz": 10, "pace": 0.5, "window": 4, "maxMessageBytes": 65536, "maxZoom": 24,
                       "maxPixels": 16384, "maxFeatures": 10000},
            "groups": GROUPS, "flags": FLAGS}


def answer(msg, state):
    """The stand-in's answers to one client message."""
    kind = msg.get("type")
    if kind == "viewport":
        state["batch"] += 1
        first = not state["sent"]
        state["sent"] = True
        return [{"type": "batch", "seq": msg["seq"], "batch": state["batch"], "remove": [], "update": [],
                 "add": [A, B, POINT] if first else [], "done": True, "version": 0}]
    if kind == "ping":
        return [{"type": "pong", "id": msg.get("id")}]
    if kind == "expand":
        return [{"type": "expansion", "id": msg["id"], "zoom": 9}]
    if kind in ("leaves", "children") and msg["id"] == SILENT_ID:
        return []
    if kind in ("leaves", "children") and msg["id"] != A["id"]:
        # As the server does, the error names the request it refuses.
        return [{"type": "error", "code": "unknown-feature", "field": "id", "message": f"no feature {msg['id']}",
                 "req": msg["req"]}]
    if kind == "children":
        return [{"type": "children", "req": msg["req"], "id": msg["id"], "features": CHILDREN}]
    if kind == "leaves":
        start = int(msg.get("cursor") or 0)
        end = min(len(MEMBERS), start + msg.get("limit", 100))
        return [{"type": "leaves", "req": msg["req"], "id": msg["id"], "total": len(MEMBERS),
                 "points": MEMBERS[start:end], "next": str(end) if end < len(MEMBERS) else None}]
    return []


class ContentsStandIn:
    """Runs the stand-in on a free port in a thread; `requests` lists the messages it was sent."""

    def __init__(self):
        self.requests = []
        self.server = serve(self.handle, "127.0.0.1", 0, subprotocols=[PROTOCOL])
        self.port = self.server.socket.getsockname()[1]
        self.ws_url = f"ws://127.0.0.1:{self.port}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def handle(self, ws):
        state = {"batch": 0, "sent": False}
        ws.send(json.dumps(hello()))
        for text in ws:
            msg = json.loads(text)
            self.requests.append(msg)
            for out in answer(msg, state):
                ws.send(json.dumps(out))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.thread.join(timeout=10)
