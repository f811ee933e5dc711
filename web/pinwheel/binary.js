/* Pinwheel binary decoder: `batch` and `expansion` frames of `pinwheel.v1+bin` (docs/protocol.md,
 * "Binary encoding") into exactly the objects their JSON form parses to.
 *
 * A plain ES module, no build step, no dependencies. One pass over the bytes; numbers are read with
 * Number arithmetic (ids reach 2^53, beyond what 32-bit bitwise operators hold).
 */

// ---- Constants -----------------------------------------------------------------------------------

/** Subprotocol of the binary encoding. */
export const BINARY_PROTOCOL = 'pinwheel.v1+bin';
/** First byte: the message type in bits 0–1, that type's flags above. */
const TYPE_MASK = 0x03;
const BATCH = 1;
const EXPANSION = 2;
/** Batch flags: `done`, `capped`, which lists are not empty, `version` not 0. */
const BATCH_DONE = 0x04;
const BATCH_CAPPED = 0x08;
const BATCH_REMOVE = 0x10;
const BATCH_ADD = 0x20;
const BATCH_UPDATE = 0x40;
const BATCH_VERSION = 0x80;
/** Expansion flag: `spread` (else `zoom`). */
const EXPANSION_SPREAD = 0x04;
/** Feature header bits. */
const PARENT_MASK = 0x03;
const PARENT_SELF = 1;
const PARENT_SAME_LOW = 2;
const PARENT_WRITTEN = 3;
const COUNT_ONE = 0x04;
const HAS_ANCHOR = 0x08;
const HAS_KEY = 0x10;
const HAS_PROPERTIES = 0x20;
const HAS_AGGREGATES = 0x40;
const HEADER_RESERVED = 0x80;
/** Longest varint: 8 bytes of 7 bits. */
const VARINT_MAX_BYTES = 8;
/** An id is `tag × 2^32 + low`. */
const LOW_SPAN = 4294967296;
/** Fixed-point degrees per degree. */
const FIXED = 1e7;

const utf8 = new TextDecoder('utf-8', { fatal: true });

// ---- Errors --------------------------------------------------------------------------------------

/** A frame that is not a valid `pinwheel.v1+bin` message; `offset` is the byte where it went wrong. */
export class BinaryDecodeError extends Error {
    constructor(problem, offset) {
        super(`pinwheel.v1+bin: ${problem} at byte ${offset}`);
        this.name = 'BinaryDecodeError';
        this.problem = problem;
        this.offset = offset;
    }
}

// ---- Reader ----------------------------------------------------------------------------------------

/** The bytes of one message and the running state its deltas refer to (all 0 at its start). */
class Reader {
    constructor(bytes) {
        this.bytes = bytes;
        this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        this.pos = 0;
        this.end = bytes.length;
        this.tag = 0;
        this.low = 0;
        this.lat = 0;
        this.lon = 0;
        /** The previous parent's tag. */
        this.parentTag = 0;
        /** Property and aggregate names seen in this message, by index. */
        this.names = [];
    }

    fail(problem, offset = this.pos) {
        throw new BinaryDecodeError(problem, offset);
    }

    byte(what) {
        if (this.pos >= this.end) this.fail(`frame ends before ${what}`);
        return this.bytes[this.pos++];
    }

    varint(what) {
        const bytes = this.bytes;
        const start = this.pos;
        if (start >= this.end) this.fail(`frame ends before ${what}`);
        let b = bytes[start];
        if (b < 0x80) {
            this.pos = start + 1;
            return b;
        }
        let value = b & 0x7f;
        let scale = 128;
        let p = start + 1;
        for (;;) {
            if (p >= this.end) this.fail(`frame ends inside ${what}`, start);
            if (p - start >= VARINT_MAX_BYTES) this.fail(`${what} is a varint longer than ${VARINT_MAX_BYTES} bytes`, start);
            b = bytes[p++];
            value += (b & 0x7f) * scale;
            if (b < 0x80) break;
            scale *= 128;
        }
        // Nothing the protocol carries reaches 2^53; above it a Number would silently round.
        if (value > Number.MAX_SAFE_INTEGER) this.fail(`${what} is 2^53 or more`, start);
        this.pos = p;
        return value;
    }

    zigzag(what) {
        return unzigzag(this.varint(what));
    }

    f64(what) {
        if (this.pos + 8 > this.end) this.fail(`frame ends inside ${what}`);
        const v = this.view.getFloat64(this.pos, true);
        this.pos += 8;
        return v;
    }

    string(what) {
        const start = this.pos;
        const n = this.varint(`the length of ${what}`);
        const from = this.pos;
        if (from + n > this.end) this.fail(`${what} of ${n} bytes runs past the end of the frame`, start);
        this.pos = from + n;
        if (n === 0) return '';
        try {
            return utf8.decode(this.bytes.subarray(from, from + n));
        } catch (e) {
            return this.fail(`${what} is not UTF-8`, from);
        }
    }

    /** An id, relative to the previous one; updates the running tag and low part. */
    id(what) {
        const start = this.pos;
        const v = this.varint(what);
        const changed = v % 2;
        const z = (v - changed) / 2;
        const low = this.low + unzigzag(z);
        if (low < 0 || low >= LOW_SPAN) this.fail(`${what} has low part ${low}, outside 0…2^32−1`, start);
        if (changed) this.tag = this.varint(`the tag of ${what}`);
        this.low = low;
        const id = this.tag * LOW_SPAN + low;
        if (id > Number.MAX_SAFE_INTEGER) this.fail(`${what} is 2^53 or more`, start);
        return id;
    }

    /** A name: an index into the table, or the next entry of it followed by its text. */
    name(what) {
        const start = this.pos;
        const r = this.varint(what);
        const names = this.names;
        if (r < names.length) return names[r];
        if (r > names.length) this.fail(`${what} refers to name ${r} of a table of ${names.length}`, start);
        const s = this.string(what);
        names.push(s);
        return s;
    }

    feature() {
        const start = this.pos;
        const header = this.byte('a feature');
        if (header & HEADER_RESERVED) this.fail(`feature header 0x${hex(header)} has reserved bit 7 set`, start);
        const id = this.id('a feature id');
        const low = this.low;
        const lat = (this.lat += this.zigzag('a latitude'));
        const lon = (this.lon += this.zigzag('a longitude'));
        // Built in JSON's key order, so every feature shares one shape.
        const f = { id: id, lat: lat / FIXED, lon: lon / FIXED, count: header & COUNT_ONE ? 1 : this.varint('a count') };
        const parent = header & PARENT_MASK;
        if (parent === PARENT_SELF) {
            f.parent = id;
        } else if (parent === PARENT_SAME_LOW) {
            f.parent = this.parentTag * LOW_SPAN + low;
        } else if (parent === PARENT_WRITTEN) {
            const at = this.pos;
            const v = this.varint('a parent');
            const changed = v % 2;
            const z = (v - changed) / 2;
            const parentLow = low + unzigzag(z);
            if (parentLow < 0 || parentLow >= LOW_SPAN) this.fail(`a parent has low part ${parentLow}, outside 0…2^32−1`, at);
            if (changed) this.parentTag = this.varint('the tag of a parent');
            f.parent = this.parentTag * LOW_SPAN + parentLow;
        }
        if (parent > PARENT_SELF && f.parent > Number.MAX_SAFE_INTEGER) this.fail(`the parent of feature ${id} is 2^53 or more`, start);
        if (header & HAS_ANCHOR) {
            const anchorLat = lat + this.zigzag('an anchor latitude');
            f.anchor = { lat: anchorLat / FIXED, lon: (lon + this.zigzag('an anchor longitude')) / FIXED };
        }
        if (header & HAS_KEY) f.key = this.string('a key');
        if (header & HAS_PROPERTIES) {
            const properties = {};
            for (let n = this.varint('a property count'); n > 0; n--) {
                setOwn(properties, this.name('a property name'), this.string('a property value'));
            }
            f.properties = properties;
        }
        if (header & HAS_AGGREGATES) {
            const aggregates = {};
            for (let n = this.varint('an aggregate count'); n > 0; n--) {
                const name = this.name('an aggregate name');
                const v = this.f64('an aggregate value');
                // NaN stands for JSON's null (a min or max over points that all lack the column).
                setOwn(aggregates, name, v !== v ? null : v);
            }
            f.aggregates = aggregates;
        }
        return f;
    }

    features(what) {
        const list = [];
        for (let n = this.varint(`the count of ${what}`); n > 0; n--) list.push(this.feature());
        return list;
    }
}

/** The signed integer a zigzag value stands for (0, 1, 2, 3 … are 0, −1, 1, −2 …). */
function unzigzag(z) {
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

function hex(byte) {
    return byte.toString(16).padStart(2, '0');
}

/** `o[k] = v` as JSON.parse does it: a key `__proto__` becomes an own property, not the prototype. */
function setOwn(o, k, v) {
    if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
    else o[k] = v;
}

// ---- Messages ----------------------------------------------------------------------------------------

function batch(r, flags) {
    const seq = r.varint('seq');
    const number = r.varint('the batch number');
    // A list or version whose flag is clear is empty or 0 and not written.
    const version = flags & BATCH_VERSION ? r.varint('version') : 0;
    let capped = null;
    if (flags & BATCH_CAPPED) capped = { limit: r.varint('capped.limit'), available: r.varint('capped.available') };
    const remove = [];
    if (flags & BATCH_REMOVE) {
        for (let n = r.varint('the count of remove'); n > 0; n--) remove.push(r.id('a removed id'));
    }
    const add = flags & BATCH_ADD ? r.features('add') : [];
    const update = flags & BATCH_UPDATE ? r.features('update') : [];
    const msg = { type: 'batch', seq: seq, batch: number, remove: remove, add: add, update: update,
                  done: (flags & BATCH_DONE) !== 0, version: version };
    if (capped) msg.capped = capped;
    return msg;
}

function expansion(r, flags) {
    const id = r.id('the cluster id');
    if (flags & EXPANSION_SPREAD) return { type: 'expansion', id: id, spread: r.features('spread') };
    return { type: 'expansion', id: id, zoom: r.f64('zoom') };
}

/**
 * Decodes one binary frame.
 * @param {ArrayBuffer | Uint8Array} data the frame's payload.
 * @returns the message, exactly as its JSON form parses (`batch` or `expansion`).
 * @throws {BinaryDecodeError} naming the problem and its byte offset.
 */
export function decodeBinary(data) {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const r = new Reader(bytes);
    const first = r.byte('the message type');
    const type = first & TYPE_MASK;
    const flags = first & ~TYPE_MASK;
    let msg;
    if (type === BATCH) {
        msg = batch(r, flags);
    } else if (type === EXPANSION) {
        if (flags & ~EXPANSION_SPREAD) r.fail(`expansion flags 0x${hex(flags)} have bits an expansion does not have`, 0);
        msg = expansion(r, flags);
    } else {
        r.fail(`first byte 0x${hex(first)} has message type ${type}, neither 1 (batch) nor 2 (expansion)`, 0);
    }
    const left = r.end - r.pos;
    if (left) r.fail(`${left} byte${left === 1 ? '' : 's'} left after the message`);
    return msg;
}
