"""The binary encoding in headless Chromium: web/pinwheel/binary.js decodes every field as JSON.parse
reads the same message, and malformed frames are refused naming the problem and the byte."""

import json

import pytest

from binary_frames import encode, fixed, varint

# Decodes each frame (a list of byte values) in the page; returns JSON.stringify of each message, or
# {error, name, offset} for a frame that is refused.
DECODE = """async (frames) => {
    const { decodeBinary } = await import('/pinwheel/binary.js');
    return frames.map((bytes) => {
        try {
            return JSON.stringify(decodeBinary(Uint8Array.from(bytes).buffer));
        } catch (e) {
            return {error: e.message, name: e.name, offset: e.offset};
        }
    });
}"""

# JSON.stringify(JSON.parse(text)) in the page: what the JSON encoding gives a consumer.
PARSED = "(texts) => texts.map((t) => JSON.stringify(JSON.parse(t)))"

# The examples of docs/protocol.md, then every header bit and the extremes: ids up to 2^53 − 1 going
# down as well as up and across tags, each parent form, counts beyond 2^31, a string-named point,
# properties with empty, long (two-byte length) and non-ASCII values and a `__proto__` name, aggregates
# with null, names repeated through the table, coordinates at ±90 and ±180.
MESSAGES = [
    {"type": "batch", "seq": 7, "batch": 3, "remove": [17, 4294967396],
     "add": [{"id": 18, "lat": 1.5, "lon": 2.5, "count": 1, "parent": 18}], "update": [], "done": False, "version": 0},
    {"type": "batch", "seq": 8, "batch": 4, "remove": [], "add": [], "update": [], "done": True, "version": 0},
    {"type": "batch", "seq": 9, "batch": 7, "remove": [], "add": [], "update": [], "done": True, "version": 0,
     "capped": {"limit": 10000, "available": 57992}},
    {"type": "expansion", "id": 4294967396, "zoom": 9},
    {"type": "expansion", "id": 4294967396, "spread": [
        {"id": 5, "lat": 48.85003, "lon": 2.35, "count": 1, "parent": 4294967396, "anchor": {"lat": 48.85, "lon": 2.35}}]},
    {"type": "batch", "seq": 2**53 - 1, "batch": 2**40, "remove": [2**53 - 1, 0, 5 * 2**32 + 7, 3, 2**32 - 1], "add": [
        {"id": 2**53 - 1, "lat": -90, "lon": 180, "count": 2**31 + 5, "parent": 2**52 + 2**32 - 1,
         "aggregates": {"people": 2140526, "highest": None, "ø": -35.25}},
        {"id": 2**31 + 3, "lat": 48.8512345, "lon": -179.9999999, "count": 1, "key": "bus-12 ✓",
         "properties": {"name": "Zürich " + "x" * 200, "cc": "", "__proto__": "p"}},
        {"id": 7 * 2**32 + 1, "lat": 90, "lon": -180, "count": 3, "parent": 9 * 2**32 + 1,
         "aggregates": {"highest": 1e300, "people": 0}},
        {"id": 9 * 2**32 + 2**31, "lat": 0.0000001, "lon": 0, "count": 12, "parent": 2**32 + 5},
        {"id": 1, "lat": -0.0000001, "lon": 0, "count": 1, "parent": 4294967296 * 3 + 1,
         "properties": {"cc": "FR", "name": "Paris"}}],
     "update": [{"id": 4, "lat": 10, "lon": 10, "count": 1, "anchor": {"lat": 10.0000003, "lon": 9.9999998}}],
     "done": True, "version": 2**53 - 1},
]


def exact(msg):
    """The message as a decoder returns it: coordinates at the encoding's 1e-7° resolution."""
    if isinstance(msg, dict):
        return {k: (fixed(v) / 1e7 if k in ("lat", "lon") else exact(v)) for k, v in msg.items()}
    if isinstance(msg, list):
        return [exact(v) for v in msg]
    return msg


@pytest.fixture
def blank(page, server):
    """The demo page, for its origin: the modules are imported from the server."""
    page.goto(f"{server.url}/")
    return page


def test_every_field_decodes_as_json_parse_reads_it(blank):
    decoded = blank.evaluate(DECODE, [list(encode(m)) for m in MESSAGES])
    parsed = blank.evaluate(PARSED, [json.dumps(exact(m)) for m in MESSAGES])
    for m, got, want in zip(MESSAGES, decoded, parsed):
        assert got == want, m
    assert json.loads(decoded[0])["add"][0]["lat"] == 1.5
    assert blank.console_log.errors == []


def test_every_malformed_frame_is_refused_naming_the_problem_and_its_byte(blank):
    good = encode(MESSAGES[-1])
    # 0x01, flags, seq, batch, version, 0 removes, 1 add: the feature's header at 7, its id, lat and lon,
    # 1 property: name 0 (12) new, "a" (13, 14), value "b" (15, 16); 0 updates (17).
    feature = encode({"type": "batch", "seq": 1, "batch": 1, "remove": [], "done": False, "version": 0,
                      "add": [{"id": 1, "lat": 0, "lon": 0, "count": 1, "properties": {"a": "b"}}], "update": []})
    assert feature == bytes([1, 0, 1, 1, 0, 0, 1, 0x24, 4, 0, 0, 1, 0, 1, 97, 1, 98, 0])

    def patched(at, value):
        return feature[:at] + bytes([value]) + feature[at + 1:]

    cases = [
        (b"", "frame ends before the message type at byte 0"),
        (b"\x03", "unknown message type 0x03 at byte 0"),
        (b"{", "unknown message type 0x7b at byte 0"),
        (good + b"\x00\x00", "2 bytes left after the message at byte %d" % len(good)),
        (b"\x01\x04" + bytes(5), "batch flags 0x4 have unknown bits set at byte 1"),
        (patched(7, 0xA4), "feature header 0xa4 has reserved bit 7 set at byte 7"),
        (patched(12, 1), "a property name refers to name 1 of a table of 0 at byte 12"),
        (patched(16, 0xFF), "a property value is not UTF-8 at byte 16"),
        (patched(15, 5), "a property value of 5 bytes runs past the end of the frame at byte 15"),
        (b"\x01\x00" + b"\xff" * 8 + b"\x01", "seq is a varint longer than 8 bytes at byte 2"),
        (b"\x01\x00" + b"\xff" * 7 + b"\x7f", "seq is 2^53 or more at byte 2"),
        (b"\x01\x00\x01\x01\x00\x01" + varint(2 * (2 * 5 + 1)), "a removed id has low part -6, outside 0…2^32−1 at byte 6"),
        (b"\x02\x00\x02", "expansion kind 2 is neither 0 (zoom) nor 1 (spread) at byte 2"),
        (b"\x02\x00\x00" + bytes(7), "frame ends inside zoom at byte 3"),
    ]
    results = blank.evaluate(DECODE, [list(frame) for frame, _ in cases])
    for (frame, message), got in zip(cases, results):
        assert got == {"error": f"pinwheel.v1+bin: {message}", "name": "BinaryDecodeError",
                       "offset": int(message.rsplit(" ", 1)[1])}, frame.hex()
    # A frame cut anywhere is refused, at or before the cut.
    prefixes = blank.evaluate(DECODE, [list(good[:n]) for n in range(len(good))])
    for n, got in enumerate(prefixes):
        assert isinstance(got, dict) and got["name"] == "BinaryDecodeError" and got["offset"] <= n, (n, got)
    assert blank.console_log.errors == []

