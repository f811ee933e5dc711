"""`pinwheel.v1+bin` frames built in Python from JSON messages, following docs/protocol.md ("Binary
encoding"), so the page's decoder can be given what the demo server never sends: every flag bit,
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


LAT_LIMIT, LON_LIMIT = 900_000_000, 1_800_000_000


def grid_unit(feature_id):
    """The grid of a feature's position in fixed-point degrees (1e-7°): a cluster of the hierarchical
    index (tag 1–31, its zoom + 1) at a 32nd of a pixel of its zoom, anything else at 1e-6°."""
    tag = feature_id // LOW_SPAN
    return 1 << max(0, 19 - tag) if 1 <= tag <= 31 else 10


def fixed(degrees, unit=1, limit=LON_LIMIT):
    """Fixed-point degrees on a grid of `unit`, halves up, never past `limit`."""
    q = math.floor(degrees * (1e7 / unit) + 0.5)
    if abs(q * unit) > limit:
        q -= 1 if q > 0 else -1
    return q * unit


def on_grid(feature):
    """A feature as a binary decoder returns it: `lat`, `lon` and anchor on the feature's grid."""
    unit = grid_unit(feature["id"])

    def placed(p):
        return dict(p, lat=fixed(p["lat"], unit, LAT_LIMIT) / 1e7, lon=fixed(p["lon"], unit) / 1e7)
    f = placed(feature)
    if "anchor" in f:
        f["anchor"] = placed(f["anchor"])
    return f


def on_a_grid_tie(feature):
    """True when a coordinate of a feature received as JSON lies exactly half-way between two points
    of the feature's binary grid. JSON rounds to 1e-7° first, so the exact position, and the binary
    one, may be on either side."""
    unit = grid_unit(feature["id"])
    places = [feature] + ([feature["anchor"]] if "anchor" in feature else [])
    return unit % 2 == 0 and any(fixed(p["lat"], 1, LAT_LIMIT) % unit == unit // 2
                                 or fixed(p["lon"], 1) % unit == unit // 2 for p in places)


def agrees_on_grid(decoded, sent):
    """True when `decoded` (from a binary session) is `sent` (the same feature from a JSON session) on
    its grid, or, where `sent` lies on a grid tie, a grid step below it on those coordinates."""
    want = on_grid(sent)
    if decoded == want:
        return True
    step = grid_unit(sent["id"]) / 1e7

    def near(a, b):
        """Each coordinate of `a` is that of `b`, or one grid step below it."""
        return all(a[k] == b[k] or abs(b[k] - a[k] - step) <= step * 1e-6 for k in ("lat", "lon"))
    same_rest = {k: v for k, v in decoded.items() if k not in ("lat", "lon", "anchor")} == \
        {k: v for k, v in want.items() if k not in ("lat", "lon", "anchor")}
    anchors = ("anchor" in decoded) == ("anchor" in want) and ("anchor" not in want or near(decoded["anchor"], want["anchor"]))
    return on_a_grid_tie(sent) and same_rest and near(decoded, want) and anchors


def message_on_grid(msg):
    """A message as a binary decoder returns it: every feature `on_grid`."""
    return {k: ([on_grid(f) for f in v] if k in ("add", "update", "spread") else v) for k, v in msg.items()}


def string(s):
    b = s.encode()
    return varint(len(b)) + b


class Encoder:
    """A connection's running state, carried from message to message: the previous batch's seq and
    number, the previous id's tag and low part, the previous feature's fixed-point position, the
    previous parent's tag; and the message's own name table and bytes."""

    def __init__(self):
        self.seq = self.number = self.tag = self.low = self.lat = self.lon = self.parent_tag = 0
        self.held, self.slots = [], {}

    def hold(self, ids):
        """What the client holds, in slot order: after a reconnect, the ids of its `held` messages;
        after each batch, its adds and updates."""
        for i in ids:
            if i not in self.slots:
                self.slots[i] = len(self.held)
                self.held.append(i)

    def remove(self, ids):
        """The removals' slots, written as distances below the previous slot; `ids` must be held and
        listed from the highest slot down, as the server lists them. Then removes them, each slot
        taken by the last id held."""
        slots = [self.slots[i] for i in ids]
        assert slots == sorted(slots, reverse=True) and len(set(slots)) == len(slots), (ids, slots)
        above = len(self.held)
        for slot in slots:
            self.out += varint(above - 1 - slot)
            above = slot
        for slot in slots:
            del self.slots[self.held[slot]]
            last = self.held.pop()
            if slot < len(self.held):
                self.held[slot] = last
                self.slots[last] = slot

    def relative(self, i):
        """`2 × zigzag(low − previous low) + t` and the tag's bytes when `t` is 1."""
        tag, low = divmod(i, LOW_SPAN)
        changed = tag != self.tag
        self.tag, self.low, previous = tag, low, self.low
        return 2 * zigzag(low - previous) + changed, varint(tag) if changed else b""

    def id(self, i):
        value, tag = self.relative(i)
        self.out += varint(value) + tag

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
        flags = ((1 if f["count"] != 1 and tag == 0 else 0) | (2 if "anchor" in f else 0) | (4 if "key" in f else 0)
                 | (8 if "properties" in f else 0) | (16 if "aggregates" in f else 0))
        value, tag_bytes = self.relative(f["id"])
        self.out += varint(value << 3 | mode << 1 | (1 if flags else 0)) + tag_bytes
        if flags:
            self.out.append(flags)
        unit = grid_unit(f["id"])
        lat, lon = fixed(f["lat"], unit, LAT_LIMIT), fixed(f["lon"], unit)
        self.out += varint(zigzag(lat // unit - self.lat // unit)) + varint(zigzag(lon // unit - self.lon // unit))
        self.lat, self.lon = lat, lon
        if tag != 0 or f["count"] != 1:
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
            self.out += (varint(zigzag((fixed(a["lat"], unit, LAT_LIMIT) - lat) // unit))
                         + varint(zigzag((fixed(a["lon"], unit) - lon) // unit)))
        if "key" in f:
            self.out += string(f["key"])
        if "properties" in f:
            self.out += varint(len(f["properties"]))
            for k, v in f["properties"].items():
                self.name(k)
                # A tag, then the value: 0 a string, 1 an f64, 2 false, 3 true.
                if isinstance(v, bool):
                    self.out += bytes([3 if v else 2])
                elif isinstance(v, (int, float)):
                    self.out += bytes([1]) + struct.pack("<d", v)
                else:
                    self.out += bytes([0]) + string(v)
        if "aggregates" in f:
            self.out += varint(len(f["aggregates"]))
            for k, v in f["aggregates"].items():
                self.name(k)
                self.out += struct.pack("<d", math.nan if v is None else v)

    def features(self, fs):
        self.out += varint(len(fs))
        for f in fs:
            self.feature(f)

    def encode(self, msg):
        """The binary frame of a `batch` or `expansion` message (a dict as its JSON parses), the next
        of this connection."""
        e = self
        e.names, e.out = {}, bytearray()
        if msg["type"] == "batch":
            capped, version = msg.get("capped"), msg.get("version", 0)
            # Type 1; flags: done, capped, remove / add / update not empty, version not 0.
            e.out.append(1 | (4 if msg["done"] else 0) | (8 if capped else 0) | (16 if msg["remove"] else 0)
                         | (32 if msg["add"] else 0) | (64 if msg["update"] else 0) | (128 if version else 0))
            e.out += varint(zigzag(msg["seq"] - e.seq)) + varint(zigzag(msg["batch"] - e.number - 1))
            e.seq, e.number = msg["seq"], msg["batch"]
            if version:
                e.out += varint(version)
            if capped:
                e.out += varint(capped["limit"]) + varint(capped["available"])
            if msg["remove"]:
                e.out += varint(len(msg["remove"]))
                e.remove(msg["remove"])
            if msg["add"]:
                e.features(msg["add"])
            if msg["update"]:
                e.features(msg["update"])
            e.hold(f["id"] for f in msg["update"] + msg["add"])
        else:
            e.out.append(2 | (0 if "zoom" in msg else 4))
            e.id(msg["id"])
            if "zoom" in msg:
                e.out += struct.pack("<d", msg["zoom"])
            else:
                e.features(msg["spread"])
        return bytes(e.out)


def encode(msg, held=()):
    """The binary frame of a `batch` or `expansion` message as the first of a connection whose client
    reported `held`."""
    e = Encoder()
    e.hold(held)
    return e.encode(msg)
