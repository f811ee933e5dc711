/* Pinwheel page: a Leaflet map fed by the pinwheel.v1 stream (docs/protocol.md).
 *
 * Plain script, no build step. Everything lives in one namespace, window.pinwheel; tests read
 * window.pinwheel.state. Markers sit in a Map id → entry so a batch applies in O(changed).
 */
(function () {
    'use strict';

    // ---- Constants -------------------------------------------------------------------------------

    /** WebSocket subprotocol spoken by the server. */
    const PROTOCOL = 'pinwheel.v1';
    /** Most viewports per second the page sends while a drag goes on (the server coalesces further). */
    const MAX_VIEWPORT_RATE = 20;
    /** Reconnect backoff: first delay, cap, and growth per failed attempt. */
    const RECONNECT_MIN_MS = 250;
    const RECONNECT_MAX_MS = 5000;
    const RECONNECT_GROWTH = 2;
    /** Milliseconds of batch application allowed per animation frame, so a frame stays under 16 ms,
     *  checked every APPLY_CHUNK operations (a batch may span frames; it is acknowledged when whole). */
    const FRAME_BUDGET_MS = 8;
    const APPLY_CHUNK = 64;
    /** Animation lengths: fade-in of a new feature, and the move of a split or merge. */
    const FADE_MS = 300;
    const MOVE_MS = 450;
    /** Most features animating at once; beyond it features appear and vanish without animation, so a
     *  frame's work stays bounded however many markers a batch brings. */
    const MAX_ANIMATIONS = 250;
    /** How long a removed feature's position can still serve as the origin of its children's split. */
    const GHOST_TTL_MS = 3000;
    /** Farthest (screen pixels) a split or merge looks for a parent it cannot name by id. */
    const NEAREST_PARENT_PX = 160;
    /** HUD refresh period and the window over which per-second rates are measured. */
    const HUD_INTERVAL_MS = 250;
    const RATE_WINDOW_MS = 1000;
    /** Offline basemap shipped next to this file: GeoJSON of Natural Earth 1:110m countries (public
     *  domain). Named .json because libwebsockets' static mounts answer 415 to unknown suffixes. */
    const BASEMAP_URL = 'world-110m.json';
    const BASEMAP_ATTRIBUTION = 'Basemap: Natural Earth (public domain)';
    /** Longest the basemap waits for the first markers before it is drawn anyway. */
    const BASEMAP_WAIT_MS = 400;
    /** Extra canvas around the view (fraction of its size). Leaflet's default: larger canvases made
     *  every drag frame a long task in Chromium's software compositing. */
    const RENDERER_PADDING = 0.1;
    /** Page-side pace choices in markers per millisecond; Infinity applies each batch at once. */
    const PACE_STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, Infinity];

    /** Points: small amber dots with a dark rim. */
    const POINT_STYLE = { radius: 5, color: '#0b1220', weight: 1.5, fillColor: '#fbbf24', opacity: 0.9 };
    /** Legs from a spread pin to its true position, and the dot marking that position. */
    const LEG_STYLE = { color: '#fde68a', weight: 1, opacity: 0.75, interactive: false };
    const ANCHOR_STYLE = { radius: 2.5, color: '#fde68a', weight: 0, fillColor: '#fde68a', fillOpacity: 1, interactive: false };
    /** Cluster colour by count: RGB stops at 10^0, 10^1, … 10^5 points, interpolated on log10(count),
     *  from cool (few) to warm (many). */
    const CLUSTER_COLOR_STOPS = [
        [45, 212, 191], [56, 189, 248], [129, 140, 248], [192, 132, 252], [232, 121, 249], [251, 146, 60],
    ];
    /** Cluster radius in pixels: base plus growth per decade of count, for clusters with room around them. */
    const CLUSTER_RADIUS_BASE = 10;
    const CLUSTER_RADIUS_PER_DECADE = 3.6;
    /** Spacing (pixels) at which clusters get the full size; packed closer, they shrink, down to MIN_SCALE. */
    const CLUSTER_ROOMY_SPACING_PX = 44;
    const CLUSTER_MIN_SCALE = 0.6;
    const CLUSTER_HALO_WEIGHT = 6;
    const CLUSTER_HALO_OPACITY = 0.35;
    const CLUSTER_FILL_OPACITY = 0.92;
    /** Distinct marker sprites kept (one per colour, size and label seen). */
    const SPRITE_CACHE_LIMIT = 4000;
    /** Opacity of a cluster while its same-coordinate members are shown spread around it. */
    const SPREAD_OWNER_ALPHA = 0.25;
    const CLUSTER_LABEL_COLOR = '#0b1220';
    const CLUSTER_LABEL_FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    /** Outlines of other sessions' viewports (presence; off with ?presence=0). */
    const PRESENCE_STYLE = { color: '#f472b6', weight: 1.5, opacity: 0.7, fill: true, fillOpacity: 0.04,
                             dashArray: '5 4', interactive: false };
    const PRESENCE_DOT_STYLE = { radius: 3, color: '#f472b6', weight: 0, fillColor: '#f472b6', fillOpacity: 0.9,
                                 interactive: false };

    // ---- State (read by tests through window.pinwheel.state) -------------------------------------

    const params = new URLSearchParams(location.search);

    const state = {
        /** 'connecting' | 'open' (hello received) | 'reconnecting' */
        connection: 'connecting',
        /** Last hello from the server. */
        hello: null,
        /** id → { layer, feature, leg, dot, origin }: exactly the features the server believes we have;
         *  `origin` is where the feature's entrance animation started (its parent's position on a split). */
        markers: new Map(),
        points: 0,
        clusters: 0,
        /** `splits`: features that entered from their parent's position; `merges`: features that
         *  moved into the cluster now holding them before vanishing. */
        counters: { adds: 0, removes: 0, updates: 0, batches: 0, acks: 0, bytes: 0, messages: 0,
                    viewports: 0, errors: 0, connects: 0, splits: 0, merges: 0 },
        /** Per-second rates over the last RATE_WINDOW_MS. */
        rates: { adds: 0, removes: 0, updates: 0 },
        /** The change-log version of the data last drawn; 0 for data that never changes. */
        dataVersion: 0,
        /** Seq of the last viewport sent, and of the last viewport whose `done` batch was applied. */
        seq: 0,
        doneSeq: 0,
        lastViewport: null,
        /** Viewport sent → its done batch applied, in milliseconds (last completed viewport). */
        settledMs: null,
        /** `{limit, available}` when the last completed viewport held more features than the server
         *  serves for one (the nearest the centre came); null otherwise. */
        capped: null,
        /** Batches received and not yet applied and acknowledged. */
        inFlight: 0,
        /** Longest work of one animation frame, in milliseconds: applying batches, stepping animations. */
        timing: { applyMaxMs: 0, animateMaxMs: 0 },
        /** Milliseconds from page start to the first marker drawn. */
        firstMarkerMs: null,
        /** Milliseconds from page start to this script running, the first socket open, hello and batch. */
        startup: { script: Math.round(performance.now()), open: null, hello: null, batch: null },
        lastError: null,
        /** Last `expansion` answer, and the pins of a same-coordinate group shown on request (id → entry). */
        lastExpansion: null,
        spread: new Map(),
        /** Page-side settings: viewports per second and pace in markers per millisecond. */
        settings: { rate: MAX_VIEWPORT_RATE, pace: Infinity },
        /** Other sessions' viewports drawn from the last presence message. */
        presence: 0,
    };

    // ---- Connection state: the socket opens first, so its handshake overlaps building the map ------

    let socket = null;
    let reconnectDelay = RECONNECT_MIN_MS;
    let helloSeen = false;
    /** A `settings` for the `?algorithm=` parameter is on its way; the first viewport waits for its hello. */
    let awaitingAlgorithm = false;
    // No message can be handled before this script has run to its end, so every handler below is
    // defined by the time the socket delivers anything.
    connect();

    // ---- Map and basemap -------------------------------------------------------------------------

    const map = L.map('map', {
        zoomControl: false,
        minZoom: 1,
        maxZoom: 20,
        worldCopyJump: false,
        preferCanvas: true,
    }).setView(initialCenter(), initialZoom());
    L.control.zoom({ position: 'bottomright' }).addTo(map);
    map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');

    map.createPane('basemap').style.zIndex = 200;
    const basemapRenderer = L.canvas({ pane: 'basemap', padding: RENDERER_PADDING });
    const markerRenderer = L.canvas({ padding: RENDERER_PADDING });

    /** Markers the stream manages; one click handler serves all of them. */
    const markerGroup = L.featureGroup().addTo(map);
    /** A same-coordinate group shown on request (`expand` answered with `spread`). */
    const expansionGroup = L.featureGroup().addTo(map);
    /** Other people's viewports (presence), under the markers. */
    const presenceGroup = L.featureGroup().addTo(map);

    /** Called once when the first markers are on the map (the basemap waits for it). */
    let onFirstMarkers = () => {};
    setUpBasemap();

    function initialCenter() {
        const lat = parseFloat(params.get('lat'));
        const lon = parseFloat(params.get('lon'));
        return [Number.isFinite(lat) ? lat : 30, Number.isFinite(lon) ? lon : 10];
    }

    function initialZoom() {
        const z = parseFloat(params.get('zoom'));
        return Number.isFinite(z) ? z : 3;
    }

    /** `?tiles=URL&attribution=TEXT` uses a raster tile server; otherwise the offline vector world. */
    function setUpBasemap() {
        const tiles = params.get('tiles');
        if (tiles) {
            L.tileLayer(tiles, { maxZoom: 20, attribution: escapeHTML(params.get('attribution') || '') }).addTo(map);
            document.body.classList.add('tiles');
            return;
        }
        map.attributionControl.addAttribution(BASEMAP_ATTRIBUTION);
        // Fetched at once, drawn once the first markers are (or BASEMAP_WAIT_MS passed): building 177
        // country polygons must not delay the first markers. It runs in a task of its own: in the
        // frame that applied the first batch it made that frame a long task (~14 ms more).
        const firstMarkersOrTimeout = new Promise((resolve) => {
            onFirstMarkers = () => setTimeout(resolve, 0);
            setTimeout(resolve, BASEMAP_WAIT_MS);
        });
        Promise.all([fetch(BASEMAP_URL).then((r) => {
            if (!r.ok) throw new Error(`basemap ${BASEMAP_URL}: HTTP ${r.status}`);
            return r.json();
        }), firstMarkersOrTimeout])
            .then(([world]) => {
                L.geoJSON(world, {
                    renderer: basemapRenderer,
                    pane: 'basemap',
                    interactive: false,
                    style: { color: '#3b5068', weight: 0.8, fillColor: '#1b2a3b', fillOpacity: 1 },
                }).addTo(map);
            })
            .catch((e) => console.warn(String(e)));
    }

    // ---- Drawing ---------------------------------------------------------------------------------

    /** A point or cluster drawn on the shared canvas as a pre-rendered sprite (circle, halo, count):
     *  one drawImage per marker instead of arcs, strokes and text, so thousands stay cheap to redraw
     *  in a software-rendered canvas. It hooks Leaflet 1.6's canvas renderer (`_ctx`, `_drawing`,
     *  `_empty`), the only renderer this page uses for markers; hit-testing stays CircleMarker's. */
    const SpriteMarker = L.CircleMarker.extend({
        _updatePath: function () {
            const renderer = this._renderer;
            if (!renderer._drawing || this._empty()) return;
            const sprite = this.options.sprite;
            const ctx = renderer._ctx;
            ctx.globalAlpha = this.options.opacity;
            // Whole pixels keep the sprite crisp.
            ctx.drawImage(sprite.canvas, Math.round(this._point.x) - sprite.half, Math.round(this._point.y) - sprite.half,
                          sprite.size, sprite.size);
        },
    });

    /** Sprites by appearance; cleared when it grows past SPRITE_CACHE_LIMIT (counts vary widely). */
    const sprites = new Map();

    /** A canvas of `size` CSS pixels at the screen's pixel ratio, drawn once by `draw(ctx, centre)`. */
    function sprite(key, radius, draw) {
        let s = sprites.get(key);
        if (s) return s;
        if (sprites.size >= SPRITE_CACHE_LIMIT) sprites.clear();
        const ratio = window.devicePixelRatio || 1;
        const half = Math.ceil(radius + CLUSTER_HALO_WEIGHT / 2 + 1);
        const canvas = document.createElement('canvas');
        canvas.width = canvas.height = Math.ceil(2 * half * ratio);
        const ctx = canvas.getContext('2d');
        ctx.scale(ratio, ratio);
        draw(ctx, half);
        s = { canvas: canvas, half: half, size: 2 * half };
        sprites.set(key, s);
        return s;
    }

    function circlePath(ctx, c, r) {
        ctx.beginPath();
        ctx.arc(c, c, r, 0, Math.PI * 2);
    }

    function pointSprite() {
        return sprite('point', POINT_STYLE.radius, (ctx, c) => {
            circlePath(ctx, c, POINT_STYLE.radius);
            ctx.fillStyle = POINT_STYLE.fillColor;
            ctx.fill();
            ctx.globalAlpha = POINT_STYLE.opacity;
            ctx.lineWidth = POINT_STYLE.weight;
            ctx.strokeStyle = POINT_STYLE.color;
            ctx.stroke();
        });
    }

    function clusterSprite(count) {
        const color = clusterColor(count);
        const radius = Math.round(clusterRadius(count) * 2) / 2;
        const label = shortCount(count);
        return sprite(`${color}|${radius}|${label}|${clusterScale}`, radius, (ctx, c) => {
            circlePath(ctx, c, radius);
            ctx.globalAlpha = CLUSTER_FILL_OPACITY;
            ctx.fillStyle = color;
            ctx.fill();
            ctx.globalAlpha = CLUSTER_HALO_OPACITY;
            ctx.lineWidth = CLUSTER_HALO_WEIGHT;
            ctx.strokeStyle = color;
            ctx.stroke();
            ctx.globalAlpha = 1;
            ctx.fillStyle = CLUSTER_LABEL_COLOR;
            ctx.font = clusterLabelFont;
            ctx.textAlign = 'center';
            ctx.textBaseline = 'middle';
            ctx.fillText(label, c, c + 0.5);
        });
    }

    /** Colours cached per 1/20 decade of count, so restyling thousands of clusters makes no strings. */
    const clusterColors = new Map();
    function clusterColor(count) {
        const last = CLUSTER_COLOR_STOPS.length - 1;
        const step = Math.min(last * 20, Math.round(Math.log10(count) * 20));
        let color = clusterColors.get(step);
        if (!color) {
            const i = Math.min(last - 1, Math.floor(step / 20));
            const t = step / 20 - i;
            const a = CLUSTER_COLOR_STOPS[i];
            const b = CLUSTER_COLOR_STOPS[i + 1];
            color = `rgb(${a.map((v, k) => Math.round(v + (b[k] - v) * t)).join(',')})`;
            clusterColors.set(step, color);
        }
        return color;
    }

    /** Size factor for clusters and their labels, from how closely the algorithm packs them. */
    let clusterScale = 1;
    let clusterLabelFont = `600 11px ${CLUSTER_LABEL_FONT_FAMILY}`;

    /** The hierarchical index packs clusters `radius` apart (supercluster's units: radius/extent of a
     *  256-pixel Leaflet tile), so they shrink to fit; the PCA cut shows at most maxClusters and keeps
     *  full size. Returns true when the scale changed. */
    function setClusterScale(hello) {
        const o = hello.options || {};
        let scale = 1;
        if (hello.algorithm === 'hierarchical' && o.radius > 0 && o.extent > 0) {
            const spacing = (o.radius * 256) / o.extent;
            scale = Math.max(CLUSTER_MIN_SCALE, Math.min(1, spacing / CLUSTER_ROOMY_SPACING_PX));
        }
        if (scale === clusterScale) return false;
        clusterScale = scale;
        clusterLabelFont = `600 ${Math.max(9, Math.round(11 * Math.sqrt(scale)))}px ${CLUSTER_LABEL_FONT_FAMILY}`;
        return true;
    }

    function clusterRadius(count) {
        return clusterScale * (CLUSTER_RADIUS_BASE + CLUSTER_RADIUS_PER_DECADE * Math.log10(count));
    }

    /** Short count for a label: 950, 1.2k, 12k, 3.4M. */
    function shortCount(n) {
        if (n < 1000) return String(n);
        if (n < 10000) return (n / 1000).toFixed(1).replace(/\.0$/, '') + 'k';
        if (n < 1e6) return Math.round(n / 1000) + 'k';
        return (n / 1e6).toFixed(1).replace(/\.0$/, '') + 'M';
    }

    /** Leaflet options for a feature's marker at a given opacity (0…1, for fades). `radius` is for
     *  hit-testing and `weight` pads Leaflet's redraw bounds around the halo. */
    function styleFor(feature, alpha) {
        const cluster = feature.count > 1;
        return {
            renderer: markerRenderer,
            radius: cluster ? clusterRadius(feature.count) : POINT_STYLE.radius,
            weight: CLUSTER_HALO_WEIGHT,
            opacity: alpha,
            sprite: cluster ? clusterSprite(feature.count) : pointSprite(),
        };
    }

    function setAlpha(entry, alpha) {
        entry.layer.setStyle({ opacity: alpha });
        if (entry.leg) entry.leg.setStyle({ opacity: LEG_STYLE.opacity * alpha });
        if (entry.dot) entry.dot.setStyle({ fillOpacity: ANCHOR_STYLE.fillOpacity * alpha });
    }

    /** Longitude shifted by whole turns to lie nearest the view, so markers show across the antimeridian. */
    let wrapCenter = map.getCenter().lng;
    function displayLng(lon) {
        return lon + 360 * Math.round((wrapCenter - lon) / 360);
    }

    function featureLatLng(f) {
        return L.latLng(f.lat, displayLng(f.lon));
    }

    function anchorLatLng(f) {
        return L.latLng(f.anchor.lat, displayLng(f.anchor.lon));
    }

    /** Creates the layers for a feature at `at` (its own position unless it animates from elsewhere). */
    function createEntry(feature, at, alpha, group) {
        const style = styleFor(feature, alpha);
        const layer = new SpriteMarker(at, style);
        layer.pinwheelId = feature.id;
        const entry = { layer: layer, feature: feature, leg: null, dot: null };
        if (feature.anchor) {
            const anchor = anchorLatLng(feature);
            entry.leg = L.polyline([anchor, at], Object.assign({ renderer: markerRenderer }, LEG_STYLE,
                { opacity: LEG_STYLE.opacity * alpha }));
            entry.dot = L.circleMarker(anchor, Object.assign({ renderer: markerRenderer }, ANCHOR_STYLE));
            group.addLayer(entry.leg);
            group.addLayer(entry.dot);
        }
        group.addLayer(layer);
        return entry;
    }

    function removeEntryLayers(entry, group) {
        group.removeLayer(entry.layer);
        if (entry.leg) group.removeLayer(entry.leg);
        if (entry.dot) group.removeLayer(entry.dot);
    }

    function placeEntry(entry, at) {
        entry.layer.setLatLng(at);
        if (entry.leg) entry.leg.setLatLngs([anchorLatLng(entry.feature), at]);
    }

    // ---- Animation -------------------------------------------------------------------------------

    /** entry → { from, to, t0, move, fade: 'in' | 'out' | null, removeAtEnd } */
    const animations = new Map();
    /** Features removed from state but still on screen while they move into their parent or fade. */
    const retiring = new Map();
    let animationFrame = 0;

    function animate(entry, spec) {
        // A move that interrupts a fade-in must not leave the feature half transparent.
        const previous = animations.get(entry);
        if (previous && previous.fade === 'in' && !spec.fade) setAlpha(entry, 1);
        if (!previous && animations.size >= MAX_ANIMATIONS) {
            finishAt(entry, spec);
            return;
        }
        animations.set(entry, Object.assign({ t0: performance.now() }, spec));
        if (!animationFrame) animationFrame = requestAnimationFrame(stepAnimations);
    }

    function easeOutCubic(t) {
        return 1 - Math.pow(1 - t, 3);
    }

    function stepAnimations(now) {
        animationFrame = 0;
        const started = performance.now();
        for (const [entry, a] of animations) {
            const duration = a.from ? MOVE_MS : FADE_MS;
            const t = Math.min(1, Math.max(0, (now - a.t0) / duration));
            const e = easeOutCubic(t);
            if (a.from) {
                placeEntry(entry, L.latLng(a.from.lat + (a.to.lat - a.from.lat) * e,
                                           a.from.lng + (a.to.lng - a.from.lng) * e));
            }
            if (a.fade === 'in') setAlpha(entry, e);
            else if (a.fade === 'out') setAlpha(entry, 1 - e);
            if (t >= 1) {
                animations.delete(entry);
                if (a.removeAtEnd) finishAt(entry, a);
            }
        }
        if (animations.size) animationFrame = requestAnimationFrame(stepAnimations);
        state.timing.animateMaxMs = Math.max(state.timing.animateMaxMs, performance.now() - started);
    }

    /** Puts an entry where its animation would end: removed, or in place and opaque. */
    function finishAt(entry, spec) {
        if (spec.removeAtEnd) {
            removeEntryLayers(entry, markerGroup);
            if (retiring.get(entry.feature.id) === entry) retiring.delete(entry.feature.id);
            return;
        }
        if (spec.from) placeEntry(entry, spec.to);
        if (spec.fade === 'in') setAlpha(entry, 1);
    }

    /** Ends every animation at once (a resync starts from a clean map). */
    function clearAnimations() {
        animations.clear();
        if (animationFrame) cancelAnimationFrame(animationFrame);
        animationFrame = 0;
        for (const entry of retiring.values()) removeEntryLayers(entry, markerGroup);
        retiring.clear();
    }

    // ---- Applying batches ------------------------------------------------------------------------

    /** Batches waiting for an animation frame; the cursor is the batch being applied. */
    const batchQueue = [];
    let cursor = null;
    let applyFrame = 0;
    /** id → parent id for every feature seen, so a merge can climb to an ancestor on the map. */
    const parentOf = new Map();
    /** id → { at, t } for recently removed features: where their children's split starts. */
    const ghosts = new Map();
    /** Map view is mid-animation (CSS zoom or flight): layers added now would be misplaced. */
    let flying = false;

    function enqueueBatch(msg) {
        if (state.startup.batch === null) state.startup.batch = Math.round(performance.now());
        batchQueue.push(msg);
        state.inFlight = batchQueue.length + (cursor ? 1 : 0);
        scheduleApply();
    }

    function scheduleApply() {
        if (!applyFrame) applyFrame = requestAnimationFrame(applyBatches);
    }

    function applyBatches(now) {
        applyFrame = 0;
        if (map._animatingZoom || flying) {
            scheduleApply();
            return;
        }
        const frameStart = performance.now();
        // Page-side pace: at most pace × (frame time) markers per frame; ops left over wait a frame.
        let allowance = state.settings.pace === Infinity ? Infinity : Math.max(1, Math.round(state.settings.pace * 16.7));
        while (allowance > 0 && performance.now() - frameStart < FRAME_BUDGET_MS) {
            if (!cursor) {
                if (!batchQueue.length) break;
                cursor = startBatch(batchQueue.shift());
            }
            allowance -= stepBatch(cursor, Math.min(allowance, APPLY_CHUNK));
            if (cursor.next >= cursor.total) {
                finishBatch(cursor);
                cursor = null;
            }
        }
        state.inFlight = batchQueue.length + (cursor ? 1 : 0);
        if (cursor || batchQueue.length) scheduleApply();
        state.timing.applyMaxMs = Math.max(state.timing.applyMaxMs, performance.now() - frameStart);
    }

    /** The viewport the last applied batch served: its seq, integer zoom, and whether it went deeper
     *  (+1: clusters split), shallower (-1: clusters merge) or stayed (0: a pan, neither) compared with
     *  the viewport served before it. A pan right after a zoom change (within GHOST_TTL_MS) keeps the
     *  change's direction, since the server may finish that change in the pan's batches. */
    const served = { seq: null, level: null, direction: 0, changedAt: -Infinity };

    function startBatch(msg) {
        const remove = msg.remove || [];
        const update = msg.update || [];
        const add = msg.add || [];
        if (msg.seq !== served.seq) {
            const zoom = viewportZoom.get(msg.seq);
            const level = zoom === undefined ? served.level : Math.floor(zoom);
            const change = served.level === null || level === null ? 0 : Math.sign(level - served.level);
            const now = performance.now();
            if (change !== 0) {
                served.direction = change;
                served.changedAt = now;
            } else if (now - served.changedAt > GHOST_TTL_MS) {
                served.direction = 0;
            }
            served.seq = msg.seq;
            served.level = level;
        }
        const direction = served.direction;
        let addById = null;
        if (direction < 0) {
            addById = new Map();
            for (const f of add) addById.set(f.id, f);
        }
        pruneGhosts();
        return { msg, remove, update, add, addById, direction, nearby: null, next: 0,
                 total: remove.length + update.length + add.length, ms: 0 };
    }

    /** Applies up to `limit` operations of the batch in protocol order: remove, update, add. */
    function stepBatch(c, limit) {
        const t0 = performance.now();
        const end = Math.min(c.total, c.next + limit);
        const nRemove = c.remove.length;
        const nUpdate = c.update.length;
        for (let i = c.next; i < end; i++) {
            if (i < nRemove) removeFeature(c.remove[i], c);
            else if (i < nRemove + nUpdate) updateFeature(c.update[i - nRemove]);
            else addFeature(c.add[i - nRemove - nUpdate], c);
        }
        const done = end - c.next;
        c.next = end;
        c.ms += performance.now() - t0;
        return done;
    }

    function finishBatch(c) {
        const msg = c.msg;
        state.counters.batches++;
        if (msg.version) state.dataVersion = msg.version;
        send({ type: 'ack', batch: msg.batch, applied: c.total, ms: Math.round(c.ms * 100) / 100 });
        state.counters.acks++;
        if (msg.done) {
            const sentAt = viewportSentAt.get(msg.seq);
            if (sentAt !== undefined) state.settledMs = Math.round(performance.now() - sentAt);
            for (const s of viewportSentAt.keys()) if (s <= msg.seq) viewportSentAt.delete(s);
            for (const s of viewportZoom.keys()) if (s < msg.seq) viewportZoom.delete(s);
            state.doneSeq = Math.max(state.doneSeq, msg.seq);
            state.capped = msg.capped || null;
        }
        if (state.firstMarkerMs === null && state.markers.size) {
            state.firstMarkerMs = Math.round(performance.now());
            onFirstMarkers();
        }
    }

    function countKind(feature, delta) {
        if (feature.count > 1) state.clusters += delta;
        else state.points += delta;
    }

    function removeFeature(id, c) {
        const entry = state.markers.get(id);
        if (!entry) return;
        state.markers.delete(id);
        countKind(entry.feature, -1);
        state.counters.removes++;
        const at = entry.layer.getLatLng();
        ghosts.set(id, { at: at, t: performance.now() });
        animations.delete(entry);
        retiring.set(id, entry);
        // A merge: the feature moves into the cluster that now holds it, then vanishes there.
        const target = c.direction < 0 ? mergeTarget(entry.feature, at, c) : null;
        if (target) state.counters.merges++;
        animate(entry, { from: target ? at : null, to: target, fade: 'out', removeAtEnd: true });
    }

    function updateFeature(f) {
        const entry = state.markers.get(f.id);
        if (!entry) {
            addFeature(f, null);
            return;
        }
        state.counters.updates++;
        rememberParent(f);
        const from = entry.layer.getLatLng();
        countKind(entry.feature, -1);
        countKind(f, +1);
        entry.feature = f;
        if (Boolean(entry.leg) !== Boolean(f.anchor)) {
            // Gaining or losing a leg needs other layers; the id stays, the drawing is rebuilt.
            removeEntryLayers(entry, markerGroup);
            animations.delete(entry);
            state.markers.set(f.id, createEntry(f, featureLatLng(f), 1, markerGroup));
            return;
        }
        const style = styleFor(f, 1);
        entry.layer.setStyle(style);
        if (style.radius) entry.layer.setRadius(style.radius);
        if (entry.dot) entry.dot.setLatLng(anchorLatLng(f));
        const to = featureLatLng(f);
        if (!from.equals(to)) animate(entry, { from: from, to: to, fade: null });
    }

    function addFeature(f, c) {
        if (state.markers.has(f.id)) {
            updateFeature(f);
            return;
        }
        const old = retiring.get(f.id);
        if (old) {
            animations.delete(old);
            removeEntryLayers(old, markerGroup);
            retiring.delete(f.id);
        }
        state.counters.adds++;
        rememberParent(f);
        countKind(f, +1);
        const to = featureLatLng(f);
        // A split: children start where their parent was (a spread pin starts on its anchor).
        const from = f.anchor ? anchorLatLng(f) : c && c.direction > 0 ? splitOrigin(f, to, c) : null;
        const entry = createEntry(f, from || to, 0, markerGroup);
        entry.origin = from;
        if (from && !f.anchor) state.counters.splits++;
        state.markers.set(f.id, entry);
        animate(entry, { from: from && !from.equals(to) ? from : null, to: to, fade: 'in' });
    }

    function rememberParent(f) {
        if (f.parent !== undefined && f.parent !== f.id) parentOf.set(f.id, f.parent);
    }

    /** Where a new feature's split starts (zoom-in batches only): its parent, just removed or still
     *  shown, else the nearest cluster removed in the last GHOST_TTL_MS. */
    function splitOrigin(f, to, c) {
        if (f.parent === undefined || f.parent === f.id) return null;
        const ghost = ghosts.get(f.parent);
        if (ghost) return ghost.at;
        const shown = state.markers.get(f.parent);
        if (shown) return shown.layer.getLatLng();
        // Projected once per batch: the candidates as screen points (only clusters split).
        if (!c.nearby) {
            c.nearby = [];
            for (const [id, g] of ghosts) if (id > 0xffffffff) c.nearby.push(screenCandidate(g.at, Infinity));
        }
        return nearest(c.nearby, map.latLngToContainerPoint(to), 0);
    }

    /** Where a removed feature merges to (zoom-out batches only): its parent or nearest known
     *  ancestor arriving in this batch or on the map, else the nearest larger cluster arriving. */
    function mergeTarget(f, at, c) {
        let id = f.parent;
        for (let hops = 0; id !== undefined && id !== f.id && hops < 32; hops++) {
            const added = c.addById.get(id);
            if (added) return featureLatLng(added);
            const shown = state.markers.get(id);
            if (shown) return featureLatLng(shown.feature);
            id = parentOf.get(id);
        }
        if (!c.nearby) {
            c.nearby = [];
            for (const g of c.add) if (g.count > 1) c.nearby.push(screenCandidate(featureLatLng(g), g.count));
        }
        return nearest(c.nearby, map.latLngToContainerPoint(at), f.count);
    }

    function screenCandidate(at, count) {
        const p = map.latLngToContainerPoint(at);
        return { x: p.x, y: p.y, at: at, count: count };
    }

    /** The candidate nearest to point p within NEAREST_PARENT_PX holding more than `count` points. */
    function nearest(candidates, p, count) {
        let best = null;
        let bestSquared = NEAREST_PARENT_PX * NEAREST_PARENT_PX;
        for (const q of candidates) {
            if (q.count <= count) continue;
            const dx = q.x - p.x;
            const dy = q.y - p.y;
            const d = dx * dx + dy * dy;
            if (d < bestSquared) {
                bestSquared = d;
                best = q.at;
            }
        }
        return best;
    }

    function pruneGhosts() {
        const now = performance.now();
        for (const [id, g] of ghosts) if (now - g.t > GHOST_TTL_MS) ghosts.delete(id);
    }

    /** After a long pan the longitude wrap may be stale: redraw every marker in the copy nearest the view. */
    function rewrapIfNeeded() {
        const center = map.getCenter().lng;
        if (Math.abs(center - wrapCenter) < 90) return;
        wrapCenter = center;
        for (const entry of state.markers.values()) {
            animations.delete(entry);
            placeEntry(entry, featureLatLng(entry.feature));
            if (entry.dot) entry.dot.setLatLng(anchorLatLng(entry.feature));
        }
    }

    /** Forgets every marker (resynchronisation after a reconnect). */
    function clearMarkers() {
        clearAnimations();
        batchQueue.length = 0;
        cursor = null;
        markerGroup.clearLayers();
        clearSpread();
        state.markers.clear();
        state.points = 0;
        state.clusters = 0;
        state.inFlight = 0;
        parentOf.clear();
        ghosts.clear();
        viewportSentAt.clear();
        viewportZoom.clear();
        Object.assign(served, { seq: null, level: null, direction: 0, changedAt: -Infinity });
    }

    // ---- Connection ------------------------------------------------------------------------------


    function socketURL() {
        const explicit = params.get('ws');
        if (explicit) return explicit;
        return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/';
    }

    function connect() {
        state.counters.connects++;
        helloSeen = false;
        awaitingAlgorithm = false;
        let ws;
        try {
            ws = new WebSocket(socketURL(), PROTOCOL);
        } catch (e) {
            console.warn('pinwheel: cannot open WebSocket:', String(e));
            scheduleReconnect();
            return;
        }
        socket = ws;
        // The connection counts as open once the server's hello has arrived and the page resynchronised.
        ws.onopen = () => {
            reconnectDelay = RECONNECT_MIN_MS;
            if (state.startup.open === null) state.startup.open = Math.round(performance.now());
        };
        ws.onmessage = onMessage;
        ws.onclose = () => {
            if (socket !== ws) return;
            socket = null;
            scheduleReconnect();
        };
        // onclose follows every error; the error itself carries nothing to show.
        ws.onerror = () => {};
    }

    function scheduleReconnect() {
        state.connection = 'reconnecting';
        const delay = reconnectDelay * (0.75 + Math.random() * 0.5);
        reconnectDelay = Math.min(RECONNECT_MAX_MS, reconnectDelay * RECONNECT_GROWTH);
        setTimeout(connect, delay);
    }

    function send(msg) {
        if (!socket || socket.readyState !== WebSocket.OPEN) return false;
        socket.send(JSON.stringify(msg));
        return true;
    }

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

    /** The one message handler: every server message goes through this switch. */
    function onMessage(event) {
        if (typeof event.data !== 'string') {
            console.warn('pinwheel: unexpected binary frame');
            return;
        }
        state.counters.bytes += utf8Length(event.data);
        state.counters.messages++;
        let msg;
        try {
            msg = JSON.parse(event.data);
        } catch (e) {
            console.warn('pinwheel: server sent invalid JSON');
            return;
        }
        switch (msg.type) {
            case 'hello':
                onHello(msg);
                break;
            case 'batch':
                enqueueBatch(msg);
                break;
            case 'expansion':
                onExpansion(msg);
                break;
            case 'presence':
                drawPresence(msg);
                break;
            case 'error':
                state.counters.errors++;
                state.lastError = msg;
                console.warn(`pinwheel: server error ${msg.code}: ${msg.message}`);
                break;
            default:
                console.warn(`pinwheel: unknown message type ${msg.type}`);
        }
    }

    /** The first hello of a connection resynchronises: forget everything, send the viewport again.
     *  A later hello (after `settings`) only updates what we know; the server re-sends a diff. */
    function onHello(msg) {
        state.hello = msg;
        if (state.startup.hello === null) state.startup.hello = Math.round(performance.now());
        if (setClusterScale(msg)) {
            for (const entry of state.markers.values()) if (entry.feature.count > 1) entry.layer.setStyle(styleFor(entry.feature, 1));
        }
        const wanted = params.get('algorithm');
        if (!helloSeen) {
            helloSeen = true;
            state.connection = 'open';
            clearMarkers();
            lastViewportKey = '';
            // `?algorithm=NAME` picks the session's algorithm before the first viewport.
            if (wanted && wanted !== msg.algorithm && (msg.algorithms || []).includes(wanted)) {
                awaitingAlgorithm = true;
                send({ type: 'settings', algorithm: wanted });
            } else {
                sendViewport();
            }
            // Other sessions' viewports as outlines (`presence`), unless `?presence=0`.
            if (params.get('presence') !== '0') send({ type: 'settings', presence: true });
        } else if (awaitingAlgorithm && msg.algorithm === wanted) {
            awaitingAlgorithm = false;
            sendViewport();
        }
        hud.showHello(msg);
    }

    // ---- Viewport --------------------------------------------------------------------------------

    /** seq → performance.now() when sent, until its done batch is applied. */
    const viewportSentAt = new Map();
    /** seq → zoom of that viewport, so a batch knows whether it splits, merges or pans. */
    const viewportZoom = new Map();
    let lastViewportKey = '';
    let lastViewportAt = -Infinity;
    let viewportTimer = 0;

    /** The view as the protocol wants it: bbox west, south, east, north in [-180, 180]. */
    function currentViewport() {
        const b = map.getBounds();
        const size = map.getSize();
        let west = b.getWest();
        let east = b.getEast();
        if (east - west >= 360) {
            west = -180;
            east = 180;
        } else {
            west = ((((west + 180) % 360) + 360) % 360) - 180;
            east = ((((east + 180) % 360) + 360) % 360) - 180;
        }
        const south = Math.max(-90, b.getSouth());
        const north = Math.min(90, b.getNorth());
        const round = (v) => Math.round(v * 1e6) / 1e6;
        return {
            bbox: [round(west), round(south), round(east), round(north)],
            zoom: Math.round(map.getZoom() * 1000) / 1000,
            width: Math.max(1, Math.round(size.x)),
            height: Math.max(1, Math.round(size.y)),
        };
    }

    /** Sends the viewport now if the rate allows, else once the interval has passed (latest wins). */
    function requestViewport() {
        if (flying) return;
        const interval = 1000 / state.settings.rate;
        const wait = interval - (performance.now() - lastViewportAt);
        if (wait <= 0) {
            sendViewport();
        } else if (!viewportTimer) {
            viewportTimer = setTimeout(() => {
                viewportTimer = 0;
                sendViewport();
            }, wait);
        }
    }

    function sendViewport() {
        if (!socket || socket.readyState !== WebSocket.OPEN || !helloSeen || awaitingAlgorithm) return;
        const v = currentViewport();
        const key = JSON.stringify(v);
        if (key === lastViewportKey) return;
        const seq = state.seq + 1;
        if (!send(Object.assign({ type: 'viewport', seq: seq }, v))) return;
        state.seq = seq;
        lastViewportKey = key;
        lastViewportAt = performance.now();
        viewportSentAt.set(seq, lastViewportAt);
        viewportZoom.set(seq, v.zoom);
        state.lastViewport = Object.assign({ seq: seq }, v);
        state.counters.viewports++;
    }

    map.on('move zoom', requestViewport);
    map.on('moveend', () => {
        flying = false;
        rewrapIfNeeded();
        requestViewport();
    });
    map.on('zoomstart', () => clearSpread());

    // ---- Clicks: expand clusters, popups for points ----------------------------------------------

    /** The cluster whose expansion we asked for, and where it was. */
    let pendingExpand = null;
    /** The entry of the cluster whose spread is shown. */
    let spreadOwner = null;

    markerGroup.on('click', (e) => {
        const id = e.layer && e.layer.pinwheelId;
        const entry = id !== undefined && state.markers.get(id);
        if (!entry) return;
        if (entry.feature.count > 1 && entry.feature.aggregates) {
            openClusterPopup(entry.feature, entry.layer.getLatLng());
        } else if (entry.feature.count > 1) {
            expand(id, entry.layer.getLatLng());
        } else {
            openPopup(entry.feature, entry.layer.getLatLng());
        }
    });

    expansionGroup.on('click', (e) => {
        const f = e.layer && e.layer.pinwheelFeature;
        if (f) openPopup(f, e.layer.getLatLng());
    });

    map.on('click', () => clearSpread());

    function expand(id, at) {
        pendingExpand = { id: id, at: at };
        send({ type: 'expand', id: id });
    }

    function onExpansion(msg) {
        state.lastExpansion = msg;
        const at = pendingExpand && pendingExpand.id === msg.id ? pendingExpand.at : null;
        pendingExpand = null;
        if (typeof msg.zoom === 'number') {
            const target = at || map.getCenter();
            flying = true;
            map.flyTo(target, Math.min(msg.zoom, map.getMaxZoom()), { duration: 0.6 });
        } else if (Array.isArray(msg.spread)) {
            clearSpread();
            // The group's cluster steps back while its members are shown around it.
            const owner = state.markers.get(msg.id);
            if (owner) {
                setAlpha(owner, SPREAD_OWNER_ALPHA);
                spreadOwner = owner;
            }
            for (const f of msg.spread) {
                const entry = createEntry(f, featureLatLng(f), 1, expansionGroup);
                entry.layer.pinwheelFeature = f;
                state.spread.set(f.id, entry);
            }
        }
    }

    function clearSpread() {
        expansionGroup.clearLayers();
        state.spread.clear();
        if (spreadOwner && state.markers.get(spreadOwner.feature.id) === spreadOwner) setAlpha(spreadOwner, 1);
        spreadOwner = null;
    }

    /** A popup built from DOM nodes (dataset text is never parsed as HTML). */
    function openPopup(f, at) {
        const root = document.createElement('div');
        root.className = 'pw-popup';
        const props = f.properties || {};
        const title = document.createElement('h3');
        // A point a producer named by a string (live data) is titled by that name.
        title.textContent = props.name !== undefined ? String(props.name) : f.key !== undefined ? f.key : `#${f.id}`;
        root.appendChild(title);
        const table = document.createElement('table');
        const rows = Object.keys(props).filter((k) => k !== 'name').map((k) => [k, props[k]]);
        // A text id from the file is the property `id`; the wire id is then the point's number.
        rows.push([props.id !== undefined ? 'number' : 'id', String(f.id)]);
        rows.push(['position', `${f.lat.toFixed(5)}, ${f.lon.toFixed(5)}`]);
        if (f.anchor) rows.push(['true position', `${f.anchor.lat.toFixed(5)}, ${f.anchor.lon.toFixed(5)}`]);
        for (const [k, v] of rows) {
            const tr = table.insertRow();
            tr.insertCell().textContent = k;
            tr.insertCell().textContent = typeof v === 'number' ? v.toLocaleString('en') : String(v);
        }
        root.appendChild(table);
        L.popup({ offset: [0, -4] }).setLatLng(at).setContent(root).openOn(map);
    }

    /** A cluster's popup when the server aggregates columns (`--aggregate`): its count, each
     *  aggregate as hello announced it, and a button that opens the cluster as a plain click does. */
    function openClusterPopup(f, at) {
        const root = document.createElement('div');
        root.className = 'pw-popup';
        const title = document.createElement('h3');
        title.textContent = `${f.count.toLocaleString('en')} points`;
        root.appendChild(title);
        const table = document.createElement('table');
        const announced = (state.hello && state.hello.dataset && state.hello.dataset.aggregates) || [];
        for (const a of announced) {
            const v = f.aggregates[a.name];
            const tr = table.insertRow();
            tr.insertCell().textContent = `${a.name} (${a.op} of ${a.column})`;
            tr.insertCell().textContent = typeof v === 'number' ? v.toLocaleString('en', { maximumFractionDigits: 2 }) : '–';
        }
        root.appendChild(table);
        const zoom = document.createElement('button');
        zoom.type = 'button';
        zoom.textContent = 'Zoom in';
        zoom.addEventListener('click', () => {
            map.closePopup();
            expand(f.id, at);
        });
        root.appendChild(zoom);
        L.popup({ offset: [0, -4] }).setLatLng(at).setContent(root).openOn(map);
    }

    // ---- HUD -------------------------------------------------------------------------------------

    const hud = (function () {
        const $ = (id) => document.getElementById(id);
        const el = {
            root: $('hud'), conn: $('hud-conn'), dataset: $('hud-dataset'), points: $('hud-points'),
            clusters: $('hud-clusters'), adds: $('hud-adds'), removes: $('hud-removes'), updates: $('hud-updates'),
            bytes: $('hud-bytes'), settled: $('hud-settled'), inflight: $('hud-inflight'), capped: $('hud-capped'),
            algorithm: $('set-algorithm'), pace: $('set-pace'), paceOut: $('set-pace-out'),
            rate: $('set-rate'), rateOut: $('set-rate-out'),
        };
        /** Samples of cumulative counters for the per-second rates. */
        const samples = [];

        function formatBytes(n) {
            if (n < 1024) return `${n} B`;
            if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
            return `${(n / 1024 / 1024).toFixed(2)} MiB`;
        }

        function refresh() {
            const now = performance.now();
            const c = state.counters;
            samples.push({ t: now, adds: c.adds, removes: c.removes, updates: c.updates });
            while (samples.length > 2 && now - samples[1].t >= RATE_WINDOW_MS) samples.shift();
            const first = samples[0];
            const span = Math.max(1, now - first.t) / 1000;
            state.rates.adds = Math.round((c.adds - first.adds) / span);
            state.rates.removes = Math.round((c.removes - first.removes) / span);
            state.rates.updates = Math.round((c.updates - first.updates) / span);

            // Live data: the change-log version the map shows.
            if (state.dataVersion) el.dataset.textContent = `${datasetName} · live data v${state.dataVersion.toLocaleString('en')}`;
            el.root.dataset.connection = state.connection;
            el.conn.textContent = state.connection === 'open' ? 'live' : state.connection;
            el.points.textContent = state.points.toLocaleString('en');
            el.clusters.textContent = state.clusters.toLocaleString('en');
            el.adds.textContent = state.rates.adds.toLocaleString('en');
            el.removes.textContent = state.rates.removes.toLocaleString('en');
            el.updates.textContent = state.rates.updates.toLocaleString('en');
            el.bytes.textContent = formatBytes(c.bytes);
            el.settled.textContent = state.settledMs === null ? '–' : `${state.settledMs} ms`;
            el.inflight.textContent = String(state.inFlight);
            el.capped.hidden = !state.capped;
            if (state.capped) {
                const { limit, available } = state.capped;
                el.capped.textContent = `Showing the ${limit.toLocaleString('en')} nearest of ${available.toLocaleString('en')} — zoom in for the rest`;
            }
        }

        let datasetName = '';

        function showHello(msg) {
            const d = msg.dataset || {};
            const name = d.name || 'dataset';
            datasetName = name;
            el.dataset.textContent = `${name} · ${(d.points || 0).toLocaleString('en')} points`;
            if (/geonames/i.test(name)) map.attributionControl.addAttribution('Data © <a href="https://www.geonames.org/">GeoNames</a> (CC BY 4.0)');
            const algorithms = Array.isArray(msg.algorithms) ? msg.algorithms : [msg.algorithm];
            el.algorithm.replaceChildren(...algorithms.filter(Boolean).map((a) => new Option(a, a, false, a === msg.algorithm)));
            el.algorithm.disabled = algorithms.length < 2;
        }

        el.algorithm.addEventListener('change', () => send({ type: 'settings', algorithm: el.algorithm.value }));

        el.pace.max = String(PACE_STEPS.length - 1);
        el.pace.value = String(PACE_STEPS.indexOf(state.settings.pace));
        function showPace() {
            const p = state.settings.pace;
            el.paceOut.textContent = p === Infinity ? 'max' : `${p}/ms`;
        }
        el.pace.addEventListener('input', () => {
            state.settings.pace = PACE_STEPS[Number(el.pace.value)];
            showPace();
        });

        el.rate.max = String(MAX_VIEWPORT_RATE);
        el.rate.value = String(state.settings.rate);
        function showRate() {
            el.rateOut.textContent = `${state.settings.rate}/s`;
        }
        el.rate.addEventListener('input', () => {
            state.settings.rate = Math.max(1, Math.min(MAX_VIEWPORT_RATE, Number(el.rate.value)));
            showRate();
        });

        showPace();
        showRate();
        setInterval(refresh, HUD_INTERVAL_MS);
        return { showHello: showHello };
    })();

    /** Replaces the outlines with the viewports of a presence message; a box over the antimeridian
     *  (west > east) is drawn as its two halves. */
    function drawPresence(msg) {
        presenceGroup.clearLayers();
        const viewports = Array.isArray(msg.viewports) ? msg.viewports : [];
        for (const v of viewports) {
            const [w, s, e, n] = v.bbox;
            const spans = w > e ? [[w, 180], [-180, e]] : [[w, e]];
            for (const [west, east] of spans) {
                L.rectangle([[s, west], [n, east]], PRESENCE_STYLE).addTo(presenceGroup);
            }
            // A dot at the centre keeps a city-sized view visible when the map shows the world.
            const lon = w > e ? displayLng((w + e + 360) / 2) : (w + e) / 2;
            L.circleMarker([(s + n) / 2, lon], PRESENCE_DOT_STYLE).addTo(presenceGroup);
        }
        state.presence = viewports.length;
    }

    function escapeHTML(s) {
        return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
    }

    // ---- Namespace -------------------------------------------------------------------------------

    window.pinwheel = {
        state: state,
        map: map,
        /** True when the map is still and the last viewport sent has been served and applied completely. */
        settled: () => state.connection === 'open' && state.seq > 0 && state.doneSeq >= state.seq &&
            batchQueue.length === 0 && cursor === null && !flying && !map._animatingZoom,
        /** True while markers are still moving or fading. */
        animating: () => animations.size > 0,
        send: send,
    };
})();
