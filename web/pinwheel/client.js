/* Pinwheel client core: the pinwheel.v1 stream (docs/protocol.md) without any map.
 *
 * A plain ES module, no build step. It owns the socket (JSON or the binary encoding, whichever the
 * server agrees to: web/pinwheel/binary.js decodes the latter), reconnection with backoff, the viewport rate
 * limit, applying batches within a frame budget and acknowledging them with their measured cost, and
 * the feature store (id → feature). A map adapter (web/pinwheel/leaflet.js) listens to its events
 * and draws; the API is documented in docs/client.md.
 */

import { BINARY_PROTOCOL, BinaryDecoder } from './binary.js';

// ---- Constants -----------------------------------------------------------------------------------

/** WebSocket subprotocol of the JSON encoding, which every server speaks. */
export const PROTOCOL = 'pinwheel.v1';
/** Encoding asked for when the caller names none: see docs/client.md, "Encodings". */
const DEFAULT_ENCODING = 'binary';
/** Most viewports per second sent while the view moves (the server coalesces further). */
export const MAX_VIEWPORT_RATE = 20;
/** Reconnect backoff: first delay, cap, and growth per failed attempt. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5000;
const RECONNECT_GROWTH = 2;
/** Milliseconds of batch application allowed per animation frame, checked every APPLY_CHUNK
 *  operations (a batch may span frames; it is acknowledged when whole). */
const FRAME_BUDGET_MS = 8;
const APPLY_CHUNK = 64;
/** Held features per `held` message after a reconnect: about 30 bytes each, well under the
 *  server's 64 KiB message limit. */
const HELD_PER_MESSAGE = 1500;
/** Tile size of the map's zoom convention when the caller names none (Leaflet, Google, OSM). */
const DEFAULT_TILE_SIZE = 256;
/** Close code (application range) after a binary frame that did not decode. */
const CLOSE_UNDECODABLE = 4000;
/** Heartbeat: after PING_AFTER_MS without a message from the server the client sends a `ping`; a
 *  server that then sends nothing for PONG_TIMEOUT_MS has stopped answering (a frozen process, a
 *  dead link, a proxy holding a dead socket), and the client reconnects (through a load balancer,
 *  to another node). Checked every HEARTBEAT_CHECK_MS; a ping is only judged from when it was sent,
 *  so timers slowed in a background tab raise no false alarm. */
const PING_AFTER_MS = 3000;
const PONG_TIMEOUT_MS = 5000;
const HEARTBEAT_CHECK_MS = 1000;
/** Longest a connection may take from the WebSocket's creation to the server's `hello`. */
const OPEN_TIMEOUT_MS = 10000;
/** Longest the question to `/v1/admission` may take after a WebSocket failed before opening. */
const ADMISSION_TIMEOUT_MS = 5000;
/** Close code (application range) after the heartbeat found the server silent. */
const CLOSE_STALE = 4001;
/** Longest a `children` or `leaves` request waits for its answer before its promise rejects. */
const REQUEST_TIMEOUT_MS = 10000;
/** Most times a request the server turned away as `rate-limited` is sent again (after `retryMs`). */
const REQUEST_RETRIES = 3;
/** Error codes the server answers a `children` or `leaves` request with instead of its answer
 *  (`unknown-type` from a server older than those requests). */
const REQUEST_ERRORS = new Set(['unknown-feature', 'rate-limited', 'invalid-field', 'missing-field', 'unknown-type']);
/** Close codes of a server that verifies tokens: no valid token (missing, invalid, expired), and a
 *  valid one that does not give what was asked (docs/protocol.md, "Identity"). */
const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_FORBIDDEN = 4403;
/** A token is refreshed this long before its `exp`: a fifth of its lifetime, at least 1 s and at
 *  most 30 s, so a clock a little off or a slow callback still beats the expiry. */
const REFRESH_LEAD_MIN_MS = 1000;
const REFRESH_LEAD_MAX_MS = 30000;
const REFRESH_LEAD_SHARE = 0.2;

// ---- Helpers ---------------------------------------------------------------------------------------

/** Bytes of a string once encoded as UTF-8 (what travelled on the wire). */
function utf8Length(s) {
    let n = s.length;
    for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c < 0x80) continue;
        if (c < 0x800) n += 1;
        else if (c >= 0xd800 && c < 0xdc00) { n += 2; i++; } // surrogate pair: 4 bytes for 2 units
        else n += 2;
    }
    return n;
}

/** A 32-bit digest of how a feature is drawn (count and position to 1e-7°), the same one the server
 *  computes for the features it would send (`held` in docs/protocol.md). */
export function featureDigest(f) {
    let h = 0x811c9dc5;
    for (const v of [f.count, Math.floor(f.lat * 1e7 + 0.5), Math.floor(f.lon * 1e7 + 0.5)]) {
        h = Math.imul(h ^ (v | 0), 0x01000193);
    }
    return h >>> 0;
}

/** The protocol's bbox (west, south, east, north within ±180) from any west/east in degrees. */
export function normalizedBBox(west, south, east, north) {
    if (east - west >= 360) {
        west = -180;
        east = 180;
    } else {
        west = ((((west + 180) % 360) + 360) % 360) - 180;
        east = ((((east + 180) % 360) + 360) % 360) - 180;
    }
    const round = (v) => Math.round(v * 1e6) / 1e6;
    return [round(west), round(Math.max(-90, south)), round(east), round(Math.min(90, north))];
}

// ---- Client ----------------------------------------------------------------------------------------

/**
 * One connection to a Pinwheel server, kept open across drops.
 *
 * Events (subscribe with `on(type, fn)`): `status` `{connection}`, `hello` (the message),
 * `batch-start` (the batch message, before its first change), `feature-removed` `{feature, batch}`,
 * `feature-updated` `{feature, previous, batch}`, `feature-added` `{feature, batch}`,
 * `batch-applied` `{batch, applied, ms}`, `view-complete` `{seq, ms, capped}`, `expansion`,
 * `presence`, `server-error`, `decode-error` (a BinaryDecodeError), `reset` (the store was emptied),
 * `children` and `leaves` (the answers to those requests, also given to their promises),
 * `stale` `{silentMs}` (the server stopped answering; the client reconnects), `refused` `{reason}`
 * (the server refuses this page, e.g. its origin: the client stops retrying), `auth` `{exp}` (a token
 * was accepted), `token-refused` `{code, reason}` (the server closed the session over its token).
 */
export class PinwheelClient {
    /**
     * @param {string} url ws:// or wss:// address of the server.
     * @param {object} [options]
     * @param {number} [options.rate] most viewports per second (1…20).
     * @param {number} [options.pace] markers applied per millisecond; Infinity applies batches as
     *   fast as the frame budget allows.
     * @param {string} [options.algorithm] clustering algorithm to ask for.
     * @param {boolean} [options.presence] receive other sessions' viewports.
     * @param {Array|boolean|null} [options.filter] show only the points passing this filter, a
     *   MapLibre-style expression such as `['==', ['get', 'kind'], 'bus']` (see docs/protocol.md).
     * @param {number} [options.tileSize] pixels of a tile at the map's integer zooms (256 for
     *   Leaflet), so cluster radius means screen pixels.
     * @param {() => boolean} [options.canApply] false while the map cannot take changes (mid zoom
     *   animation); batches wait.
     * @param {'binary' | 'json'} [options.encoding] 'binary' offers `pinwheel.v1+bin` first (a server
     *   without it answers in JSON); 'json' offers only `pinwheel.v1`.
     * @param {string | (() => (string | Promise<string>))} [options.token] a signed token for a server
     *   that verifies viewers (`--viewer-key`), sent first on every connection. A function is called
     *   for a fresh token at each connection and before the current one expires.
     */
    constructor(url, options = {}) {
        this.url = url;
        this.options = Object.assign({ rate: MAX_VIEWPORT_RATE, pace: Infinity, algorithm: null,
                                       presence: false, filter: null, tileSize: DEFAULT_TILE_SIZE,
                                       canApply: () => true, encoding: DEFAULT_ENCODING, token: null },
                                     options);
        if (this.options.encoding !== 'binary' && this.options.encoding !== 'json') {
            throw new Error(`pinwheel: encoding must be 'binary' or 'json', got ${this.options.encoding}`);
        }
        /** What the next connection offers: the option, until a binary frame fails to decode. */
        this._encoding = this.options.encoding;
        /** id → feature: exactly what the server believes this client has. */
        this.features = new Map();
        /** Figures an application or test may read; adapters may add their own counters. */
        this.state = {
            /** 'connecting' | 'open' (hello received) | 'reconnecting' | 'refused' (the server said
             *  why: `refusal`; no more retries) | 'closed' */
            connection: 'connecting',
            /** The server's reason when it refuses this page (see the `refused` event). */
            refusal: null,
            /** When the accepted token expires, seconds since 1970 (null without a token). */
            tokenExpires: null,
            /** 'binary' or 'json': what the server chose for the current connection (null before one). */
            encoding: null,
            hello: null,
            points: 0,
            clusters: 0,
            /** `bytes` counts every message received, `batchBytes` batches only; `held` counts the
             *  features reported held after reconnects. */
            counters: { adds: 0, removes: 0, updates: 0, batches: 0, acks: 0, bytes: 0, batchBytes: 0, messages: 0,
                        viewports: 0, errors: 0, connects: 0, held: 0, pings: 0, pongs: 0, stale: 0 },
            dataVersion: 0,
            seq: 0,
            doneSeq: 0,
            lastViewport: null,
            settledMs: null,
            capped: null,
            inFlight: 0,
            timing: { applyMaxMs: 0 },
            firstMarkerMs: null,
            startup: { script: Math.round(performance.now()), open: null, hello: null, batch: null },
            lastError: null,
            lastExpansion: null,
            settings: { rate: this.options.rate, pace: this.options.pace },
            presence: 0,
        };
        this._listeners = new Map();
        this._socket = null;
        /** The current connection's decoder of binary frames. */
        this._decoder = null;
        this._reconnectDelay = RECONNECT_MIN_MS;
        this._reconnectTimer = 0;
        this._helloSeen = false;
        this._awaitingAlgorithm = false;
        this._closed = true;
        this._view = null;
        this._lastViewportKey = '';
        this._lastViewportAt = -Infinity;
        this._viewportTimer = 0;
        /** seq → performance.now() when sent, until its done batch is applied. */
        this._sentAt = new Map();
        /** seq → zoom of that viewport, for adapters that animate by zoom direction. */
        this.viewportZoom = new Map();
        this._queue = [];
        this._cursor = null;
        this._applyFrame = 0;
        this._expansions = new Map();
        /** performance.now() of the current connection's last message from the server, and of its
         *  last unanswered ping (0: none). */
        this._heardAt = 0;
        this._pingSentAt = 0;
        this._pingId = 0;
        this._heartbeatTimer = 0;
        /** Whether /v1/admission was asked since the last connection that opened. */
        this._admissionAsked = false;
        /** req → {msg, resolve, reject, timer, tries}: `children` and `leaves` requests awaiting answers. */
        this._requests = new Map();
        this._lastReq = 0;
        /** Timer of the next token refresh (0: none). */
        this._refreshTimer = 0;
    }

    // ---- Events ----

    /** Calls `fn(detail)` for every event of `type`; returns a function that unsubscribes. */
    on(type, fn) {
        let set = this._listeners.get(type);
        if (!set) this._listeners.set(type, (set = new Set()));
        set.add(fn);
        return () => this.off(type, fn);
    }

    off(type, fn) {
        const set = this._listeners.get(type);
        if (set) set.delete(fn);
    }

    _emit(type, detail) {
        const set = this._listeners.get(type);
        if (!set) return;
        for (const fn of set) {
            try {
                fn(detail);
            } catch (e) {
                console.error(e);
            }
        }
    }

    // ---- Connection ----

    /** Opens the socket (and keeps reopening it until `close()`). */
    connect() {
        this._closed = false;
        this._admissionAsked = false;
        this.state.refusal = null;
        this._open();
        return this;
    }

    /** True while a WebSocket is open or opening; false once closed for good, while waiting to
     *  reconnect, and after a refusal. */
    get connected() {
        return this._socket !== null;
    }

    /** Closes the socket for good; the store is kept. */
    close() {
        this._closed = true;
        clearTimeout(this._reconnectTimer);
        clearTimeout(this._refreshTimer);
        this._stopHeartbeat();
        if (this._socket) this._socket.close(1000);
        this._socket = null;
        this._setConnection('closed');
    }

    _setConnection(c) {
        if (this.state.connection === c) return;
        this.state.connection = c;
        this._emit('status', { connection: c });
    }

    _open() {
        this.state.counters.connects++;
        this._helloSeen = false;
        this._awaitingAlgorithm = false;
        let ws;
        try {
            ws = new WebSocket(this.url, this._encoding === 'binary' ? [BINARY_PROTOCOL, PROTOCOL] : [PROTOCOL]);
        } catch (e) {
            console.warn('pinwheel: cannot open WebSocket:', String(e));
            this._scheduleReconnect();
            return;
        }
        this._socket = ws;
        ws.binaryType = 'arraybuffer';
        let opened = false;
        ws.onopen = () => {
            opened = true;
            this._admissionAsked = false;
            // The handshake names the subprotocol the server picked; only then do binary frames come.
            this.state.encoding = ws.protocol === BINARY_PROTOCOL ? 'binary' : 'json';
            this._reconnectDelay = RECONNECT_MIN_MS;
            if (this.state.startup.open === null) this.state.startup.open = Math.round(performance.now());
            // The token goes first, in a message: a browser cannot set a WebSocket's headers, and a
            // URL ends up in logs.
            if (this.options.token) this._sendToken(ws);
        };
        this._startHeartbeat(ws);
        // Binary frames carry their deltas over from the connection's previous one, and name removals
        // by the slots of what this connection's client holds.
        const decoder = new BinaryDecoder();
        this._decoder = decoder;
        ws.onmessage = (event) => this._onMessage(event, decoder);
        ws.onclose = (event) => {
            if (this._socket !== ws) return;
            this._socket = null;
            this._stopHeartbeat();
            clearTimeout(this._refreshTimer);
            if (this._closed) return;
            if (this._tokenRefused(event)) return;
            // A refused upgrade looks like any failed connection to a page: ask the server why.
            if (!opened && !this._admissionAsked) this._askAdmission();
            else this._scheduleReconnect();
        };
        // onclose follows every error; the error itself carries nothing to show.
        ws.onerror = () => {};
    }

    /** A binary frame that does not decode: the store no longer matches what the server believes the
     *  page has, so the connection is dropped and the next one (JSON from now on) sends `held` and
     *  gets the view's difference. */
    _undecodable(ws, error) {
        console.error(`pinwheel: ${error.message}; reconnecting with JSON`);
        this.state.lastError = { code: 'undecodable-frame', message: error.message };
        this._emit('decode-error', error);
        this._encoding = 'json';
        if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE_UNDECODABLE, 'undecodable binary frame');
    }

    // ---- Identity ----

    /** Sends `{"type":"auth","token":…}` on `ws`, the token from the option (a string, or what the
     *  callback returns or resolves to). A callback that fails closes the socket and retries later. */
    _sendToken(ws) {
        const token = this.options.token;
        Promise.resolve(typeof token === 'function' ? token() : token).then((value) => {
            if (this._socket !== ws || ws.readyState !== WebSocket.OPEN) return;
            if (typeof value !== 'string' || value === '') throw new Error('the token callback gave no token');
            ws.send(JSON.stringify({ type: 'auth', token: value }));
        }).catch((e) => {
            console.warn(`pinwheel: no token: ${e && e.message ? e.message : e}`);
            this.state.lastError = { code: 'no-token', message: String(e && e.message ? e.message : e) };
            if (this._socket === ws) ws.close(1000, 'no token');
        });
    }

    /** The server accepted a token valid until `exp` (seconds since 1970): with a callback, a fresh
     *  one is sent before then, so the session goes on. */
    _onAuth(msg) {
        this.state.tokenExpires = msg.exp;
        this._emit('auth', msg);
        clearTimeout(this._refreshTimer);
        if (typeof this.options.token !== 'function' || typeof msg.exp !== 'number') return;
        const lifetime = msg.exp * 1000 - Date.now();
        const lead = Math.min(REFRESH_LEAD_MAX_MS, Math.max(REFRESH_LEAD_MIN_MS, lifetime * REFRESH_LEAD_SHARE));
        const ws = this._socket;
        this._refreshTimer = setTimeout(() => {
            if (this._socket === ws && ws) this._sendToken(ws);
        }, Math.max(0, lifetime - lead));
    }

    /** Whether a close was the server refusing the token for good: a fixed token that is invalid or
     *  expired, or any token that does not give what was asked (4403). A callback gets another try
     *  at the next connection, after the usual backoff. */
    _tokenRefused(event) {
        const code = event && event.code;
        if (code !== CLOSE_UNAUTHORIZED && code !== CLOSE_FORBIDDEN) return false;
        const reason = event.reason || 'the server refused the token';
        this.state.lastError = { code: 'token-refused', message: reason };
        this._emit('token-refused', { code: code, reason: reason });
        if (code === CLOSE_UNAUTHORIZED && typeof this.options.token === 'function') return false;
        this._refused(reason);
        return true;
    }

    // ---- Heartbeat and refusals ----

    /** Watches the connection `ws` from its creation: no `hello` within OPEN_TIMEOUT_MS, or a ping
     *  unanswered for PONG_TIMEOUT_MS, and it is dropped for a new one. */
    _startHeartbeat(ws) {
        this._stopHeartbeat();
        const created = performance.now();
        this._heardAt = 0;
        this._pingSentAt = 0;
        this._heartbeatTimer = setInterval(() => {
            if (this._socket !== ws) return;
            const now = performance.now();
            if (!this._helloSeen) {
                if (now - created > OPEN_TIMEOUT_MS) this._stale(ws, now - created);
            } else if (this._pingSentAt > this._heardAt) {
                if (now - this._pingSentAt > PONG_TIMEOUT_MS) this._stale(ws, now - this._heardAt);
            } else if (now - this._heardAt >= PING_AFTER_MS && ws.readyState === WebSocket.OPEN) {
                this._pingSentAt = now;
                this.state.counters.pings++;
                ws.send(JSON.stringify({ type: 'ping', id: ++this._pingId }));
            }
        }, HEARTBEAT_CHECK_MS);
    }

    _stopHeartbeat() {
        clearInterval(this._heartbeatTimer);
        this._heartbeatTimer = 0;
    }

    /** The server stopped answering: the socket is let go at once (its close handshake would wait
     *  for the silent server) and a new connection starts. */
    _stale(ws, silentMs) {
        this.state.counters.stale++;
        console.warn(`pinwheel: no answer from the server for ${Math.round(silentMs)} ms; reconnecting`);
        this._emit('stale', { silentMs: Math.round(silentMs) });
        this._stopHeartbeat();
        this._socket = null;
        ws.onclose = null;
        ws.onmessage = null;
        ws.close(CLOSE_STALE, 'no answer to ping');
        this._reconnectDelay = RECONNECT_MIN_MS;
        this._scheduleReconnect();
    }

    /** The address of `/v1/admission` on the server of `this.url`, naming this page's origin (a
     *  browser sends no Origin header with a GET to the page's own origin). */
    _admissionURL() {
        const u = new URL(this.url);
        u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
        u.pathname = '/v1/admission';
        u.search = `?origin=${encodeURIComponent(location.origin)}`;
        u.hash = '';
        return u.href;
    }

    /** Asks the server whether it admits this page. A refusal ends the retries with a `refused`
     *  event and its reason; anything else (no answer, an older server) retries with backoff. */
    _askAdmission() {
        this._admissionAsked = true;
        this._setConnection('reconnecting');
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), ADMISSION_TIMEOUT_MS);
        fetch(this._admissionURL(), { cache: 'no-store', signal: abort.signal })
            .then((r) => (r.status === 403 ? r.json() : null))
            .catch(() => null)
            .then((answer) => {
                clearTimeout(timer);
                if (this._closed || this._socket) return;
                if (answer && answer.allowed === false) this._refused(String(answer.reason || 'refused by the server'));
                else this._scheduleReconnect();
            });
    }

    _refused(reason) {
        this.state.refusal = reason;
        this.state.lastError = { code: 'refused', message: reason };
        console.error(`pinwheel: the server refuses this page: ${reason}`);
        this._setConnection('refused');
        this._emit('refused', { reason: reason });
    }

    _scheduleReconnect() {
        this._setConnection('reconnecting');
        const delay = this._reconnectDelay * (0.75 + Math.random() * 0.5);
        this._reconnectDelay = Math.min(RECONNECT_MAX_MS, this._reconnectDelay * RECONNECT_GROWTH);
        this._reconnectTimer = setTimeout(() => this._open(), delay);
    }

    /** Sends a protocol message as JSON; false when the socket is not open. */
    send(msg) {
        const s = this._socket;
        if (!s || s.readyState !== WebSocket.OPEN) return false;
        s.send(JSON.stringify(msg));
        return true;
    }

    /** The one message handler: every server message goes through this switch. Text frames are JSON;
     *  binary frames (`batch` and `expansion` of `pinwheel.v1+bin`) decode to the same objects. */
    _onMessage(event, decoder) {
        const data = event.data;
        const text = typeof data === 'string';
        const bytes = text ? utf8Length(data) : data.byteLength;
        // Any message at all shows the server is alive.
        this._heardAt = performance.now();
        this.state.counters.bytes += bytes;
        this.state.counters.messages++;
        let msg;
        try {
            msg = text ? JSON.parse(data) : decoder.decode(data);
        } catch (e) {
            if (text) console.warn('pinwheel: server sent invalid JSON');
            else this._undecodable(event.target, e);
            return;
        }
        if (msg.type === 'batch') this.state.counters.batchBytes += bytes;
        switch (msg.type) {
            case 'hello':
                this._onHello(msg);
                break;
            case 'batch':
                this._enqueue(msg);
                break;
            case 'expansion':
                this._onExpansion(msg);
                break;
            case 'children':
            case 'leaves':
                this._onAnswer(msg);
                break;
            case 'pong':
                this.state.counters.pongs++;
                break;
            case 'auth':
                this._onAuth(msg);
                break;
            case 'presence':
                this.state.presence = Array.isArray(msg.viewports) ? msg.viewports.length : 0;
                this._emit('presence', msg);
                break;
            case 'error':
                this.state.counters.errors++;
                this.state.lastError = msg;
                console.warn(`pinwheel: server error ${msg.code}: ${msg.message}`);
                // A server that cannot take `held` sends the whole view as adds: start from nothing.
                if (msg.code === 'unknown-type' && /"held"/.test(msg.message || '')) {
                    this.reset();
                }
                // No room for the filter's index: the view keeps the filter it had, and so does the
                // client, so a reconnect does not ask for the refused one again.
                if (msg.code === 'filter-memory') this.options.filter = this._filterTaken ?? null;
                this._onRequestError(msg);
                this._emit('server-error', msg);
                break;
            default:
                console.warn(`pinwheel: unknown message type ${msg.type}`);
        }
    }

    /** The first hello of a connection: tell the server what is still held (so only the difference
     *  comes), then the view. A later hello (after `settings`) only updates what we know. */
    _onHello(msg) {
        this.state.hello = msg;
        if (this.state.startup.hello === null) this.state.startup.hello = Math.round(performance.now());
        const wanted = this.options.algorithm;
        if (!this._helloSeen) {
            this._helloSeen = true;
            // A connection starts with no filter of the client's own (a token's scope is the server's).
            this._filterTaken = null;
            // Batches of the previous connection that never got applied are of no use now.
            this._queue.length = 0;
            if (this._cursor) this._finishPartial();
            this._sentAt.clear();
            this._lastViewportKey = '';
            this._setConnection('open');
            // Before the view, so the first batch is already the filtered one (and after a reconnect
            // the held markers are diffed against it).
            if (this.options.filter !== null && this.options.filter !== undefined) {
                this.send({ type: 'settings', filter: this.options.filter });
            }
            if (wanted && wanted !== msg.algorithm && (msg.algorithms || []).includes(wanted)) {
                this._awaitingAlgorithm = true;
                this.send({ type: 'settings', algorithm: wanted });
            } else {
                this._sendHeld();
                this._sendViewport();
            }
            if (this.options.presence) this.send({ type: 'settings', presence: true });
        } else {
            // A later hello answers `settings`: the filter asked for is the one in use.
            this._filterTaken = this.options.filter;
            if (this._awaitingAlgorithm && msg.algorithm === wanted) {
                this._awaitingAlgorithm = false;
                this._sendHeld();
                this._sendViewport();
            }
        }
        this._emit('hello', msg);
    }

    /** After a reconnect: the features still held, as [id, digest] pairs in a few `held` messages;
     *  the server diffs the next viewport against them instead of sending everything again. */
    _sendHeld() {
        if (!this.features.size) return;
        const pairs = [];
        for (const f of this.features.values()) pairs.push([f.id, featureDigest(f)]);
        // The server keeps them in this order; a binary connection's removals name their places.
        this._decoder.hold(this.features.keys());
        for (let i = 0; i < pairs.length; i += HELD_PER_MESSAGE) {
            this.send({ type: 'held', version: this.state.dataVersion, features: pairs.slice(i, i + HELD_PER_MESSAGE) });
        }
        this.state.counters.held += pairs.length;
    }

    // ---- Viewport ----

    /**
     * The map's view: `{bbox: [west, south, east, north], zoom, width, height}` (see
     * `normalizedBBox`). Sent now if the rate allows, else when it does (latest wins).
     *
     * Views go out no faster than the server serves them (its hello's `limits.viewportHz`), so its
     * rate limiter keeps a spare turn: `{now: true}` (where a gesture will end, the view the user
     * waits for) uses it and goes out at once.
     */
    setViewport(view, { now = false } = {}) {
        this._view = view;
        const limits = (this.state.hello && this.state.hello.limits) || {};
        const rate = Math.min(this.state.settings.rate, limits.viewportHz || Infinity);
        const wait = now ? 0 : 1000 / rate - (performance.now() - this._lastViewportAt);
        if (wait <= 0) {
            clearTimeout(this._viewportTimer);
            this._viewportTimer = 0;
            this._sendViewport();
        } else if (!this._viewportTimer) {
            this._viewportTimer = setTimeout(() => {
                this._viewportTimer = 0;
                this._sendViewport();
            }, wait);
        }
    }

    _sendViewport() {
        const v = this._view;
        if (!v || !this._helloSeen || this._awaitingAlgorithm) return;
        const view = { bbox: v.bbox, zoom: Math.round(v.zoom * 1000) / 1000,
                       width: Math.max(1, Math.round(v.width)), height: Math.max(1, Math.round(v.height)) };
        const key = JSON.stringify(view);
        if (key === this._lastViewportKey) return;
        const seq = this.state.seq + 1;
        // 512-px tiles are the server's own convention: the field is left out.
        if (this.options.tileSize !== 512) view.tileSize = this.options.tileSize;
        const msg = Object.assign({ type: 'viewport', seq: seq }, view);
        if (!this.send(msg)) return;
        this.state.seq = seq;
        this._lastViewportKey = key;
        this._lastViewportAt = performance.now();
        this._sentAt.set(seq, this._lastViewportAt);
        this.viewportZoom.set(seq, view.zoom);
        this.state.lastViewport = Object.assign({ seq: seq }, view);
        this.state.counters.viewports++;
    }

    // ---- Settings, expand ----

    /** Switches the session's algorithm; the server re-sends the view as a diff. */
    setAlgorithm(name) {
        this.options.algorithm = name;
        this.send({ type: 'settings', algorithm: name });
    }

    /** Shows only the points passing `expression` (null: every point); the server re-sends the view
     *  as a diff, and its next `hello` counts the matching points (`dataset.points`). A filter it
     *  refuses comes back as a `server-error` naming the position, and the view stays as it was. */
    setFilter(expression) {
        this.options.filter = expression === undefined ? null : expression;
        this.send({ type: 'settings', filter: this.options.filter });
    }

    /** Opts in or out of `presence` events. */
    setPresence(on) {
        this.options.presence = on;
        this.send({ type: 'settings', presence: on });
    }

    /** Viewports per second while the view moves (1…20). */
    setRate(rate) {
        this.state.settings.rate = Math.max(1, Math.min(MAX_VIEWPORT_RATE, rate));
    }

    /** Markers applied per millisecond; Infinity for as fast as the frame budget allows. */
    setPace(pace) {
        this.state.settings.pace = pace;
        this._schedule();
    }

    /** Asks how a cluster opens. Resolves with the `expansion` message (`zoom`, in the map's zoom
     *  convention, or `spread`); rejects when the server does not know the id. */
    expand(id) {
        return new Promise((resolve, reject) => {
            if (!this.send({ type: 'expand', id: id })) {
                reject(new Error('not connected'));
                return;
            }
            const waiting = this._expansions.get(id) || [];
            waiting.push({ resolve, reject });
            this._expansions.set(id, waiting);
        });
    }

    _onExpansion(msg) {
        this.state.lastExpansion = msg;
        const waiting = this._expansions.get(msg.id) || [];
        this._expansions.delete(msg.id);
        for (const w of waiting) w.resolve(msg);
        this._emit('expansion', msg);
    }

    // ---- What a cluster holds ----

    /** Asks for the features one zoom finer that make up cluster `id` (supercluster's `getChildren`).
     *  Resolves with the `children` answer (`features`); rejects on an error, or after `timeoutMs`. */
    children(id, { timeoutMs = REQUEST_TIMEOUT_MS } = {}) {
        return this._request({ type: 'children', id: id }, timeoutMs);
    }

    /** Asks for one page of cluster `id`'s points (supercluster's `getLeaves`): `limit` points (the
     *  server's default 100, at most 500) from `cursor` (null: the first page; else a previous
     *  answer's `next`). Resolves with the `leaves` answer (`total`, `points`, `next`). */
    leaves(id, { limit, cursor = null, timeoutMs = REQUEST_TIMEOUT_MS } = {}) {
        const msg = { type: 'leaves', id: id, cursor: cursor };
        if (limit !== undefined) msg.limit = limit;
        return this._request(msg, timeoutMs);
    }

    /** Sends a request under a new `req` number; its answer (or error, or the timeout) settles it. */
    _request(msg, timeoutMs) {
        return new Promise((resolve, reject) => {
            msg.req = ++this._lastReq;
            if (!this.send(msg)) {
                reject(new Error('not connected'));
                return;
            }
            const timer = setTimeout(() => {
                if (this._requests.delete(msg.req)) reject(new Error(`no answer to ${msg.type} of ${msg.id} in ${timeoutMs} ms`));
            }, timeoutMs);
            this._requests.set(msg.req, { msg: msg, resolve: resolve, reject: reject, timer: timer, tries: 0 });
        });
    }

    _onAnswer(msg) {
        const r = this._requests.get(msg.req);
        if (r) {
            this._requests.delete(msg.req);
            clearTimeout(r.timer);
            r.resolve(msg);
        }
        this._emit(msg.type, msg);
    }

    /** An error naming a waiting request's `req` settles that request. One naming none settles no
     *  request, except `unknown-type` from a server older than these requests, which is taken as the
     *  answer to the oldest request still waiting (such a server answers one session in order). A
     *  `rate-limited` request is sent again after the `retryMs` it was told, up to REQUEST_RETRIES times. */
    _onRequestError(msg) {
        if (!REQUEST_ERRORS.has(msg.code) || this._requests.size === 0) return;
        let req = msg.req;
        if (req === undefined) {
            if (msg.code !== 'unknown-type') return;
            req = this._requests.keys().next().value;
        }
        const r = this._requests.get(req);
        if (!r) return;
        if (msg.code === 'rate-limited' && r.tries < REQUEST_RETRIES) {
            r.tries++;
            setTimeout(() => {
                if (this._requests.get(req) === r && !this.send(r.msg)) this._failRequest(req, 'not connected');
            }, Math.max(0, Number(msg.retryMs) || 0));
            return;
        }
        this._failRequest(req, `${msg.code}: ${msg.message}`);
    }

    _failRequest(req, why) {
        const r = this._requests.get(req);
        if (!r) return;
        this._requests.delete(req);
        clearTimeout(r.timer);
        r.reject(new Error(`pinwheel: ${r.msg.type} of ${r.msg.id}: ${why}`));
    }

    // ---- Applying batches ----

    /** True when the last viewport sent has been served and applied completely. */
    settled() {
        return this.state.connection === 'open' && this.state.seq > 0 && this.state.doneSeq >= this.state.seq &&
            this._queue.length === 0 && this._cursor === null;
    }

    _enqueue(msg) {
        if (this.state.startup.batch === null) this.state.startup.batch = Math.round(performance.now());
        this._queue.push(msg);
        this.state.inFlight = this._queue.length + (this._cursor ? 1 : 0);
        this._schedule();
    }

    _schedule() {
        if (!this._applyFrame && (this._queue.length || this._cursor)) {
            this._applyFrame = requestAnimationFrame(() => this._apply());
        }
    }

    /** Applies queued batches for at most FRAME_BUDGET_MS of this frame (and the page-side pace). */
    _apply() {
        this._applyFrame = 0;
        if (!this.options.canApply()) {
            this._schedule();
            return;
        }
        const frameStart = performance.now();
        const pace = this.state.settings.pace;
        let allowance = pace === Infinity ? Infinity : Math.max(1, Math.round(pace * 16.7));
        while (allowance > 0 && performance.now() - frameStart < FRAME_BUDGET_MS) {
            if (!this._cursor) {
                if (!this._queue.length) break;
                this._cursor = this._start(this._queue.shift());
            }
            allowance -= this._step(this._cursor, Math.min(allowance, APPLY_CHUNK));
            if (this._cursor.next >= this._cursor.total) {
                this._finish(this._cursor);
                this._cursor = null;
            }
        }
        this.state.inFlight = this._queue.length + (this._cursor ? 1 : 0);
        this._schedule();
        this.state.timing.applyMaxMs = Math.max(this.state.timing.applyMaxMs, performance.now() - frameStart);
    }

    _start(msg) {
        const remove = msg.remove || [];
        const update = msg.update || [];
        const add = msg.add || [];
        this._emit('batch-start', msg);
        return { msg, remove, update, add, next: 0, total: remove.length + update.length + add.length, ms: 0 };
    }

    /** Applies up to `limit` operations in protocol order: remove, update, add. */
    _step(c, limit) {
        const t0 = performance.now();
        const end = Math.min(c.total, c.next + limit);
        const nRemove = c.remove.length;
        const nUpdate = c.update.length;
        for (let i = c.next; i < end; i++) {
            if (i < nRemove) this._remove(c.remove[i], c.msg);
            else if (i < nRemove + nUpdate) this._put(c.update[i - nRemove], c.msg);
            else this._put(c.add[i - nRemove - nUpdate], c.msg);
        }
        const done = end - c.next;
        c.next = end;
        c.ms += performance.now() - t0;
        return done;
    }

    /** A batch cut short by a dropped connection: what was applied of it stays, nothing is acked. */
    _finishPartial() {
        this._cursor = null;
        this.state.inFlight = this._queue.length;
    }

    _finish(c) {
        const msg = c.msg;
        const s = this.state;
        s.counters.batches++;
        if (msg.version) s.dataVersion = msg.version;
        const ms = Math.round(c.ms * 100) / 100;
        this.send({ type: 'ack', batch: msg.batch, applied: c.total, ms: ms });
        s.counters.acks++;
        if (s.firstMarkerMs === null && this.features.size) s.firstMarkerMs = Math.round(performance.now());
        this._emit('batch-applied', { batch: msg, applied: c.total, ms: ms });
        if (msg.done) {
            const sentAt = this._sentAt.get(msg.seq);
            if (sentAt !== undefined) s.settledMs = Math.round(performance.now() - sentAt);
            for (const k of this._sentAt.keys()) if (k <= msg.seq) this._sentAt.delete(k);
            for (const k of this.viewportZoom.keys()) if (k < msg.seq) this.viewportZoom.delete(k);
            s.doneSeq = Math.max(s.doneSeq, msg.seq);
            s.capped = msg.capped || null;
            this._emit('view-complete', { seq: msg.seq, ms: s.settledMs, capped: s.capped });
        }
    }

    _count(feature, delta) {
        if (feature.count > 1) this.state.clusters += delta;
        else this.state.points += delta;
    }

    _remove(id, batch) {
        const f = this.features.get(id);
        if (!f) return;
        this.features.delete(id);
        this._count(f, -1);
        this.state.counters.removes++;
        this._emit('feature-removed', { feature: f, batch: batch });
    }

    /** An add or an update: the protocol treats an add of a held id as an update of it. */
    _put(f, batch) {
        const previous = this.features.get(f.id);
        this.features.set(f.id, f);
        this._count(f, +1);
        if (previous) {
            this._count(previous, -1);
            this.state.counters.updates++;
            this._emit('feature-updated', { feature: f, previous: previous, batch: batch });
        } else {
            this.state.counters.adds++;
            this._emit('feature-added', { feature: f, batch: batch });
        }
    }

    /** Forgets every feature (emits `reset`; adapters clear their drawing). */
    reset() {
        this._queue.length = 0;
        this._cursor = null;
        this.features.clear();
        this.state.points = 0;
        this.state.clusters = 0;
        this.state.inFlight = 0;
        this._sentAt.clear();
        this.viewportZoom.clear();
        this._emit('reset', {});
    }
}
