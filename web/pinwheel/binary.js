/* Pinwheel binary decoder: `batch` and `expansion` frames of `pinwheel.v1+bin` (docs/protocol.md,
 * "Binary encoding") into the objects their JSON form parses to, positions on the binary grid.
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
/** A feature's first varint: bit 0 a flag byte follows, bits 1–2 the parent mode, the id above. */
const PARENT_SELF = 1;
const PARENT_SAME_LOW = 2;
const PARENT_WRITTEN = 3;
/** Flag byte bits. */
const HAS_COUNT = 0x01;
const HAS_ANCHOR = 0x02;
const HAS_KEY = 0x04;
const HAS_PROPERTIES = 0x08;
const HAS_AGGREGATES = 0x10;
const HAS_GROUPS = 0x20;
const HAS_FLAGS = 0x40;
const FLAGS_RESERVED = 0x80;
/** Longest varint: 8 bytes of 7 bits. */
const VARINT_MAX_BYTES = 8;
/** An id is `tag × 2^32 + low`. */
const LOW_SPAN = 4294967296;
/** Fixed-point degrees per degree. */
const FIXED = 1e7;
/** A point's grid in fixed-point degrees (1e-6°); clusters of the hierarchical index name a zoom. */
const POINT_UNIT = 10;
const LAT_LIMIT = 900000000;
const LON_LIMIT = 1800000000;

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

/** The bytes of one message and the running state its deltas refer to, carried over from the
 *  session's previous message (`state`, all 0 when the connection opens). */
class Reader {
    constructor(bytes, state, held) {
        /** The ids the client holds by slot, which removals name; the slots this message removes. */
        this.held = held;
        this.removedSlots = [];
        this.bytes = bytes;
        this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        this.pos = 0;
        this.end = bytes.length;
        this.seq = state.seq;
        this.number = state.number;
        this.tag = state.tag;
        this.low = state.low;
        this.lat = state.lat;
        this.lon = state.lon;
        /** The previous parent's tag. */
        this.parentTag = state.parentTag;
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

    /**
     * A cluster's [[valueIndex, count], …] as JSON has it, from a list of varints `16 × count + step`
     * or, when the first has step 0, a mask of the values present (its bits over 16) and their counts;
     * the last value's count is what the others leave of the cluster's.
     */
    groups(id, count) {
        const groups = [];
        let left = count;
        const add = (index, n, at) => {
            if (!(n > 0 && n <= left)) this.fail(`the groups of feature ${id} count more than its ${count} points`, at);
            left -= n;
            groups.push([index, n]);
        };
        let at = this.pos;
        let entry = this.varint('a group');
        if (entry % 16 === 0) {
            let mask = entry / 16;
            if (mask === 0) this.fail('a group mask is empty', at);
            const present = [];
            for (let index = 0; mask > 0; index++, mask = Math.floor(mask / 2)) if (mask % 2) present.push(index);
            for (const index of present.slice(0, -1)) {
                at = this.pos;
                add(index, this.varint('a group count'), at);
            }
            add(present[present.length - 1], left, at);
            return groups;
        }
        let index = -1;
        for (;;) {
            const step = entry % 16;
            if (step === 0 || index + step > 255) this.fail('a group index is out of order or past 255', at);
            index += step;
            add(index, (entry - step) / 16 || left, at);
            if (left === 0) return groups;
            at = this.pos;
            entry = this.varint('a group');
        }
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

    /** `base` plus a zigzag varint: a whole number below 2^53, as JSON's. The delta may need 54 bits
     *  (from 0 to 2^53 − 1), more than a Number holds exactly, so it is read as a BigInt. */
    after(base, what) {
        const start = this.pos;
        let z = 0n;
        for (let k = 0; ; k++) {
            if (this.pos >= this.end) this.fail(`frame ends ${k ? 'inside' : 'before'} ${what}`, start);
            if (k >= VARINT_MAX_BYTES) this.fail(`${what} is a varint longer than ${VARINT_MAX_BYTES} bytes`, start);
            const b = this.bytes[this.pos++];
            z |= BigInt(b & 0x7f) << BigInt(7 * k);
            if (b < 0x80) break;
        }
        const v = BigInt(base) + (z & 1n ? -((z + 1n) >> 1n) : z >> 1n);
        if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} is ${v}, outside 0…2^53−1`, start);
        return Number(v);
    }

    f64(what) {
        if (this.pos + 8 > this.end) this.fail(`frame ends inside ${what}`);
        const v = this.view.getFloat64(this.pos, true);
        this.pos += 8;
        return v;
    }

    /** A typed property value: a tag byte, then 0 a string, 1 a finite f64, 2 false, 3 true. */
    propertyValue(what) {
        const at = this.pos;
        const tag = this.byte(what);
        switch (tag) {
        case 0: return this.string(what);
        case 1: {
            const v = this.f64(what);
            if (!Number.isFinite(v)) this.fail(`${what} is a number that is not finite`, at + 1);
            return v;
        }
        case 2: return false;
        case 3: return true;
        default: return this.fail(`${what} has unknown tag ${tag}`, at);
        }
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
        return this.relativeId(this.varint(what), what, start);
    }

    /** The id whose relative value `v` was read at `start`; its tag follows when `v` is odd. */
    relativeId(v, what, start) {
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
        const head = this.varint('a feature');
        // Bits 0–2 below the id's value: Number division, as ids pass 2^32.
        const id = this.relativeId(Math.floor(head / 8), 'a feature id', start);
        const low = this.low;
        const flags = head % 2 ? this.byte('feature flags') : 0;
        if (flags & FLAGS_RESERVED) this.fail(`feature flags 0x${hex(flags)} have reserved bits set`, this.pos - 1);
        const unit = gridUnit(id);
        const lat = (Math.floor(this.lat / unit) + this.zigzag('a latitude')) * unit;
        const lon = (Math.floor(this.lon / unit) + this.zigzag('a longitude')) * unit;
        if (Math.abs(lat) > LAT_LIMIT || Math.abs(lon) > LON_LIMIT) this.fail(`feature ${id} lies outside ±90°, ±180°`, start);
        this.lat = lat;
        this.lon = lon;
        const countWritten = id >= LOW_SPAN || flags & HAS_COUNT;
        // Built in JSON's key order, so every feature shares one shape.
        const f = { id: id, lat: lat / FIXED, lon: lon / FIXED, count: countWritten ? this.varint('a count') : 1 };
        const parent = (head >> 1) & 3;
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
        if (flags & HAS_ANCHOR) {
            const anchorLat = lat + unit * this.zigzag('an anchor latitude');
            f.anchor = { lat: anchorLat / FIXED, lon: (lon + unit * this.zigzag('an anchor longitude')) / FIXED };
        }
        if (flags & HAS_KEY) f.key = this.string('a key');
        if (flags & HAS_PROPERTIES) {
            const properties = {};
            for (let n = this.varint('a property count'); n > 0; n--) {
                setOwn(properties, this.name('a property name'), this.propertyValue('a property value'));
            }
            f.properties = properties;
        }
        if (flags & HAS_AGGREGATES) {
            const aggregates = {};
            for (let n = this.varint('an aggregate count'); n > 0; n--) {
                const name = this.name('an aggregate name');
                const v = this.f64('an aggregate value');
                // NaN stands for JSON's null (a min or max over points that all lack the column).
                setOwn(aggregates, name, v !== v ? null : v);
            }
            f.aggregates = aggregates;
        }
        if (flags & HAS_GROUPS) f.groups = this.groups(id, f.count);
        if (flags & HAS_FLAGS) {
            const counts = [];
            for (let n = this.varint('a flag count'); n > 0; n--) counts.push(this.varint('a flag'));
            f.flags = counts;
        }
        return f;
    }

    features(what) {
        const list = [];
        for (let n = this.varint(`the count of ${what}`); n > 0; n--) list.push(this.feature());
        return list;
    }
}

/** The grid of a feature's position in fixed-point degrees: a cluster of the hierarchical index
 *  (tag 1–31, its zoom + 1) at a 32nd of a pixel of its zoom, anything else at 1e-6°. */
function gridUnit(id) {
    const tag = Math.floor(id / LOW_SPAN);
    return tag >= 1 && tag <= 31 ? 2 ** Math.max(0, 19 - tag) : POINT_UNIT;
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
    // The session's batches count up by one, and their seq stays or grows a little.
    const seq = (r.seq = r.after(r.seq, 'seq'));
    const number = (r.number = r.after(r.number + 1, 'the batch number'));
    // A list or version whose flag is clear is empty or 0 and not written.
    const version = flags & BATCH_VERSION ? r.varint('version') : 0;
    let capped = null;
    if (flags & BATCH_CAPPED) capped = { limit: r.varint('capped.limit'), available: r.varint('capped.available') };
    const remove = [];
    if (flags & BATCH_REMOVE) {
        // Slots of what the client holds, descending: each the distance below the one before.
        const held = r.held;
        let above = held.length;
        for (let n = r.varint('the count of remove'); n > 0; n--) {
            const at = r.pos;
            const gap = r.varint('a removed slot');
            if (gap >= above) r.fail(`no held slot lies ${gap} below slot ${above} (the client holds ${held.length})`, at);
            above -= gap + 1;
            r.removedSlots.push(above);
            remove.push(held[above]);
        }
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

/** Decodes the binary frames of one connection, in the order they came: each frame's deltas start
 *  where the previous one's ended, and removals name the slots the server keeps for what the client
 *  holds, so a connection needs a decoder of its own. */
export class BinaryDecoder {
    constructor() {
        this.state = { seq: 0, number: 0, tag: 0, low: 0, lat: 0, lon: 0, parentTag: 0 };
        /** The ids the client holds by slot, as the server applied its batches, and each id's slot. */
        this.held = [];
        this.slots = new Map();
    }

    /** After a reconnect: the ids of the `held` messages sent, in order (a repeated id keeps its
     *  first place), before the connection's first binary frame. */
    hold(ids) {
        for (const id of ids) this._holdOne(id);
    }

    _holdOne(id) {
        if (!this.slots.has(id)) {
            this.slots.set(id, this.held.length);
            this.held.push(id);
        }
    }

    /** A decoded batch's removals (slots, descending), then its updates and adds. */
    _apply(msg, removedSlots) {
        const held = this.held;
        for (const slot of removedSlots) {
            this.slots.delete(held[slot]);
            const last = held.pop();
            if (slot < held.length) {
                held[slot] = last;
                this.slots.set(last, slot);
            }
        }
        for (const f of msg.update) this._holdOne(f.id);
        for (const f of msg.add) this._holdOne(f.id);
    }

    /**
     * Decodes the connection's next binary frame. A frame that does not decode leaves the running
     * state as it was (and the connection should be dropped: the server's next frame refers to it).
     * @param {ArrayBuffer | Uint8Array} data the frame's payload.
     * @returns the message as its JSON form parses (`batch` or `expansion`), positions on the grid.
     * @throws {BinaryDecodeError} naming the problem and its byte offset.
     */
    decode(data) {
        const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
        const r = new Reader(bytes, this.state, this.held);
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
        this.state = { seq: r.seq, number: r.number, tag: r.tag, low: r.low, lat: r.lat, lon: r.lon, parentTag: r.parentTag };
        if (type === BATCH) this._apply(msg, r.removedSlots);
        return msg;
    }
}
