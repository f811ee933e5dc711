"""`pinwheel.v1+bin` frames built in Python from JSON messages, following docs/protocol.md ("Binary
encoding"), so the page's decoder can be given what the demo server never sends: every header bit,
ids up to 2^53, long and non-ASCII strings, and malformed frames cut from valid ones."""

import math
import struct

LOW_SPAN = 1 << 32


def varint(n):
    assert 0 <= n < 1 << 56, n
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n):
    return 2 * n if n >= 0 else -2 * n - 1


def fixed(degrees):
    """Fixed-point degrees, rounded as the `held` digest rounds (halves up)."""
    return math.floor(degrees * 1e7 + 0.5)


def string(s):
    b = s.encode()
    return varint(len(b)) + b


class Encoder:
    """One message's running state: the previous id's tag and low part, the previous feature's
    fixed-point position, the name table."""

    def __init__(self):
        self.tag = self.low = self.lat = self.lon = 0
        self.names = {}
        self.out = bytearray()

    def id(self, i):
        tag, low = divmod(i, LOW_SPAN)
        changed = tag != self.tag
        self.out += varint(2 * zigzag(low - self.low) + changed)
        if changed:
            self.out += varint(tag)
        self.tag, self.low = tag, low

    def name(self, n):
        if n in self.names:
            self.out += varint(self.names[n])
        else:
            self.out += varint(len(self.names)) + string(n)
            self.names[n] = len(self.names)

    def feature(self, f):
        tag, low = divmod(f["id"], LOW_SPAN)
        parent = f.get("parent")
        if parent is None:
            mode = 0
        elif parent == f["id"]:
            mode = 1
        elif parent % LOW_SPAN == low:
            mode = 2
        else:
            mode = 3
        header = (mode | (4 if f["count"] == 1 else 0) | (8 if "anchor" in f else 0) | (16 if "key" in f else 0)
                  | (32 if "properties" in f else 0) | (64 if "aggregates" in f else 0))
        self.out.append(header)
        self.id(f["id"])
        lat, lon = fixed(f["lat"]), fixed(f["lon"])
        self.out += varint(zigzag(lat - self.lat)) + varint(zigzag(lon - self.lon))
        self.lat, self.lon = lat, lon
        if f["count"] != 1:
            self.out += varint(f["count"])
        if mode == 2:
            self.out += varint(parent // LOW_SPAN)
        elif mode == 3:
            self.out += varint(parent // LOW_SPAN) + varint(zigzag(parent % LOW_SPAN - low))
        if "anchor" in f:
            a = f["anchor"]
            self.out += varint(zigzag(fixed(a["lat"]) - lat)) + varint(zigzag(fixed(a["lon"]) - lon))
        if "key" in f:
            self.out += string(f["key"])
        if "properties" in f:
            self.out += varint(len(f["properties"]))
            for k, v in f["properties"].items():
                self.name(k)
                self.out += string(v)
        if "aggregates" in f:
            self.out += varint(len(f["aggregates"]))
            for k, v in f["aggregates"].items():
                self.name(k)
                self.out += struct.pack("<d", math.nan if v is None else v)

    def features(self, fs):
        self.out += varint(len(fs))
        for f in fs:
            self.feature(f)


def encode(msg):
    """The binary frame of a `batch` or `expansion` message (a dict as its JSON parses)."""
    e = Encoder()
    if msg["type"] == "batch":
        capped = msg.get("capped")
        e.out += bytes([0x01, (1 if msg["done"] else 0) | (2 if capped else 0)])
        e.out += varint(msg["seq"]) + varint(msg["batch"]) + varint(msg.get("version", 0))
        if capped:
            e.out += varint(capped["limit"]) + varint(capped["available"])
        e.out += varint(len(msg["remove"]))
        for i in msg["remove"]:
            e.id(i)
        e.features(msg["add"])
        e.features(msg["update"])
    else:
        e.out.append(0x02)
        e.id(msg["id"])
        if "zoom" in msg:
            e.out += b"\x00" + struct.pack("<d", msg["zoom"])
        else:
            e.out.append(1)
            e.features(msg["spread"])
    return bytes(e.out)
