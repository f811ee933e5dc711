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


def at_resolution(msg):
    """A message as a decoder returns it: every `lat` and `lon` at the encoding's 1e-7°."""
    if isinstance(msg, dict):
        return {k: (fixed(v) / 1e7 if k in ("lat", "lon") else at_resolution(v)) for k, v in msg.items()}
    if isinstance(msg, list):
        return [at_resolution(v) for v in msg]
    return msg


def string(s):
    b = s.encode()
    return varint(len(b)) + b


class Encoder:
    """One message's running state: the previous id's tag and low part, the previous feature's
    fixed-point position, the previous parent's tag, the name table."""

    def __init__(self):
        self.tag = self.low = self.lat = self.lon = self.parent_tag = 0
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
        elif parent == self.parent_tag * LOW_SPAN + low:
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
        if mode == 3:
            parent_tag, parent_low = divmod(parent, LOW_SPAN)
            changed = parent_tag != self.parent_tag
            self.out += varint(2 * zigzag(parent_low - low) + changed)
            if changed:
                self.out += varint(parent_tag)
            self.parent_tag = parent_tag
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
        capped, version = msg.get("capped"), msg.get("version", 0)
        # Type 1; flags: done, capped, remove / add / update not empty, version not 0.
        e.out.append(1 | (4 if msg["done"] else 0) | (8 if capped else 0) | (16 if msg["remove"] else 0)
                     | (32 if msg["add"] else 0) | (64 if msg["update"] else 0) | (128 if version else 0))
        e.out += varint(msg["seq"]) + varint(msg["batch"])
        if version:
            e.out += varint(version)
        if capped:
            e.out += varint(capped["limit"]) + varint(capped["available"])
        if msg["remove"]:
            e.out += varint(len(msg["remove"]))
            for i in msg["remove"]:
                e.id(i)
        if msg["add"]:
            e.features(msg["add"])
        if msg["update"]:
            e.features(msg["update"])
    else:
        e.out.append(2 | (0 if "zoom" in msg else 4))
        e.id(msg["id"])
        if "zoom" in msg:
            e.out += struct.pack("<d", msg["zoom"])
        else:
            e.features(msg["spread"])
    return bytes(e.out)
