/* Pinwheel for Leaflet: a layer that draws a Pinwheel stream on any Leaflet map.
 *
 *     import { pinwheelLayer } from '/pinwheel/leaflet.js';
 *     pinwheelLayer('ws://localhost:8080/').addTo(map);
 *
 * The stream itself is web/pinwheel/client.js; this file only turns its feature events into canvas
 * markers, animates splits, merges, fades and moves, and handles clicks. Needs Leaflet 1.6+ loaded as
 * the global `L` before this module runs. The options are documented in docs/client.md.
 */

import { PinwheelClient, normalizedBBox } from './client.js';
import { markerButtons } from './keyboard.js';

// ---- Constants -----------------------------------------------------------------------------------

/** Animation lengths: fade-in of a new feature, and the move of a split, merge or update. */
const FADE_MS = 300;
const MOVE_MS = 300;
/** Most features animating at once; beyond it features appear and vanish without animation. */
const MAX_ANIMATIONS = 250;
/** Room (screen pixels) around the view within which a marker's animation can be seen: the largest
 *  cluster icon with its halo. Animations wholly outside it end at once. */
const VISIBLE_MARGIN_PX = 48;
/** How long a removed feature's position can still serve as the origin of its children's split. */
const GHOST_TTL_MS = 3000;
/** Farthest (screen pixels) a split or merge looks for a parent it cannot name by id. */
const NEAREST_PARENT_PX = 160;
/** Extra canvas around the view (fraction of its size), Leaflet's default. */
const RENDERER_PADDING = 0.1;
/** Tile size of Leaflet's zoom levels: cluster radius then means screen pixels. */
const LEAFLET_TILE_SIZE = 256;
/** The pane the layer draws in unless its `pane` option names another: above Leaflet's overlayPane
 *  (400), where an app's polygons and vector basemaps go, and below its markers (600) and popups. */
const DEFAULT_PANE = 'pinwheel';
const DEFAULT_PANE_Z_INDEX = 450;

/** Points: small amber dots with a dark rim. */
export const DEFAULT_POINT_STYLE = { radius: 5, color: '#0b1220', weight: 1.5, fillColor: '#fbbf24', opacity: 0.9 };
/** Legs from a spread pin to its true position, and the dot marking that position. */
const LEG_STYLE = { color: '#fde68a', weight: 1, opacity: 0.75, interactive: false };
const ANCHOR_STYLE = { radius: 2.5, color: '#fde68a', weight: 0, fillColor: '#fde68a', fillOpacity: 1, interactive: false };
/** Cluster colour by count: RGB stops at 10^0 … 10^5 points, interpolated on log10(count). */
const CLUSTER_COLOR_STOPS = [
    [45, 212, 191], [56, 189, 248], [129, 140, 248], [192, 132, 252], [232, 121, 249], [251, 146, 60],
];
/** Cluster radius in pixels: base plus growth per decade of count. */
const CLUSTER_RADIUS_BASE = 10;
const CLUSTER_RADIUS_PER_DECADE = 3.6;
/** Spacing (pixels) at which clusters get the full size; packed closer, they shrink, down to MIN_SCALE. */
const CLUSTER_ROOMY_SPACING_PX = 44;
const CLUSTER_MIN_SCALE = 0.6;
const CLUSTER_HALO_WEIGHT = 6;
const CLUSTER_HALO_OPACITY = 0.35;
const CLUSTER_FILL_OPACITY = 0.92;
const CLUSTER_LABEL_COLOR = '#0b1220';
const CLUSTER_LABEL_FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
/** A cluster's icon radius is at most this share of the distance to its nearest neighbouring
 *  cluster (two such icons overlap by less than a quarter of a radius), but at least MIN_ICON_RADIUS. */
const NEIGHBOUR_RADIUS_SHARE = 0.55;
const MIN_ICON_RADIUS = 8;
/** Distinct marker sprites kept (one per colour, size and label seen). */
const SPRITE_CACHE_LIMIT = 4000;
/** Opacity of a cluster while its same-coordinate members are shown spread around it. */
const SPREAD_OWNER_ALPHA = 0.25;

// ---- Default styles --------------------------------------------------------------------------------

const clusterColors = new Map();

/** The default cluster colour: cool for few points, warm for many (cached per 1/20 decade). */
export function clusterColor(count) {
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

/** Short count for a label: 950, 1.2k, 12k, 3.4M. */
export function shortCount(n) {
    if (n < 1000) return String(n);
    if (n < 10000) return (n / 1000).toFixed(1).replace(/\.0$/, '') + 'k';
    if (n < 1e6) return Math.round(n / 1000) + 'k';
    return (n / 1e6).toFixed(1).replace(/\.0$/, '') + 'M';
}

/** The default cluster icon: `{radius, color, label, textColor}`. `sizing.scale` shrinks clusters
 *  the algorithm packs closely; `sizing.maxRadius` is half the server's cluster spacing, so icons
 *  of neighbouring clusters do not overlap. */
export function defaultClusterIcon(feature, sizing) {
    const radius = sizing.scale * (CLUSTER_RADIUS_BASE + CLUSTER_RADIUS_PER_DECADE * Math.log10(feature.count));
    return {
        radius: Math.min(sizing.maxRadius, radius),
        color: clusterColor(feature.count),
        label: shortCount(feature.count),
        textColor: CLUSTER_LABEL_COLOR,
    };
}

/** The default point popup: its name, properties, id and position, built from DOM nodes (dataset
 *  text is never parsed as HTML). */
export function defaultPopup(f) {
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
    return root;
}

// ---- Canvas helpers --------------------------------------------------------------------------------

/**
 * Leaflet's canvas renderers redraw only when a move ends, over the view plus their padding: a held
 * drag past that padding shows nothing in the revealed area. This moves the canvas to the view and
 * redraws it (at most once a frame) whenever a drag reveals ground outside it.
 * @returns a function that stops it.
 */
export function redrawWhileDragging(map, renderer) {
    let frame = 0;
    const check = () => {
        frame = 0;
        const b = renderer._bounds;
        if (!b || !renderer._map || map._animatingZoom) return;
        const size = map.getSize();
        const topLeft = map.containerPointToLayerPoint([0, 0]);
        const view = L.bounds(topLeft, topLeft.add(size));
        if (!b.contains(view)) recentre(renderer);
    };
    const onMove = () => {
        if (!frame) frame = requestAnimationFrame(check);
    };
    map.on('move', onMove);
    return () => {
        map.off('move', onMove);
        if (frame) cancelAnimationFrame(frame);
    };
}

/** Moves a canvas renderer's canvas to the view and redraws it, as its own update at the end of a
 *  move does, but without setting the canvas size again when it has not changed: that reallocates
 *  and re-uploads the whole canvas, which made drag frames long tasks in software compositing. */
function recentre(renderer) {
    const canvas = renderer._container;
    const ratio = L.Browser.retina ? 2 : 1;
    L.Renderer.prototype._update.call(renderer);
    const b = renderer._bounds;
    const size = b.getSize();
    if (canvas.width !== ratio * size.x || canvas.height !== ratio * size.y) {
        renderer._update();
        return;
    }
    L.DomUtil.setPosition(canvas, b.min);
    renderer._ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    renderer._ctx.translate(-b.min.x, -b.min.y);
    // Paths clip themselves to the new bounds and the whole canvas is cleared and drawn again.
    renderer.fire('update');
}

/** A marker drawn on the shared canvas as a pre-rendered sprite: one drawImage per marker instead of
 *  arcs, strokes and text. It hooks Leaflet's canvas renderer (`_ctx`, `_drawing`, `_empty`), the
 *  only renderer this layer uses; hit-testing stays CircleMarker's. */
let SpriteMarker = null;
function spriteMarkerClass() {
    if (!SpriteMarker) {
        SpriteMarker = L.CircleMarker.extend({
            _updatePath: function () {
                const renderer = this._renderer;
                if (!renderer._drawing || this._empty()) return;
                const sprite = this.options.sprite;
                const ctx = renderer._ctx;
                ctx.globalAlpha = this.options.opacity;
                // Whole pixels keep the sprite crisp.
                ctx.drawImage(sprite.canvas, Math.round(this._point.x) - sprite.half,
                              Math.round(this._point.y) - sprite.half, sprite.size, sprite.size);
            },
        });
    }
    return SpriteMarker;
}

/**
 * Clicks on markers drawn on a canvas that lets events through: a listener on the map's container,
 * in the capture phase, takes a click that lands on a marker (`find(event)` returns it) before any
 * layer beneath sees it, and hands it to `click(marker)`; other clicks go on to their targets. The
 * pointer becomes a hand over markers.
 * @returns a function that stops it.
 */
function hitTesting(map, find, click) {
    const container = map.getContainer();
    let frame = 0;
    let lastMove = null;
    let pointing = false;
    const onClick = (e) => {
        // A click that ends a drag of the map is no click on a marker, nor is one on a control, a
        // popup or the keyboard's list.
        if (map.dragging && map.dragging.moved()) return;
        if (e.target !== container && !map.getPane('mapPane').contains(e.target)) return;
        if (e.target.closest && e.target.closest('.leaflet-popup-pane')) return;
        const marker = find(e);
        if (!marker) return;
        e.stopPropagation();
        e.preventDefault();
        click(marker);
    };
    const hover = () => {
        frame = 0;
        // While the map is dragged, Leaflet's own cursor stays.
        const over = !map._animatingZoom && !L.Draggable._dragging && find(lastMove) !== null;
        if (over === pointing) return;
        pointing = over;
        container.style.cursor = over ? 'pointer' : '';
    };
    const onMove = (e) => {
        lastMove = e;
        if (!frame) frame = requestAnimationFrame(hover);
    };
    container.addEventListener('click', onClick, true);
    container.addEventListener('mousemove', onMove, { capture: true, passive: true });
    return () => {
        container.removeEventListener('click', onClick, true);
        container.removeEventListener('mousemove', onMove, { capture: true, passive: true });
        if (frame) cancelAnimationFrame(frame);
        container.style.cursor = '';
    };
}

function circlePath(ctx, c, r) {
    ctx.beginPath();
    ctx.arc(c, c, r, 0, Math.PI * 2);
}

function easeOutCubic(t) {
    return 1 - Math.pow(1 - t, 3);
}

// ---- The layer -------------------------------------------------------------------------------------

/**
 * Creates the layer. `url` is the server's WebSocket address (ws:// or wss://). Options:
 * `clusterIcon(feature, scale)`, `pointStyle` (object or function of the feature), `popup(feature)`,
 * `clusterPopup(feature, layer)`, `zoomOnClusterClick`, `animate`, and the client's options
 * (`rate`, `pace`, `algorithm`, `encoding`, `presence`, `filter`; `layer.setFilter(expression)` changes
 * the filter). Fires `clusterclick` and `pointclick` `{feature, latlng}`.
 */
export function pinwheelLayer(url, options) {
    return new (layerClass())(url, options);
}

let PinwheelLayer = null;
function layerClass() {
    if (PinwheelLayer) return PinwheelLayer;
    PinwheelLayer = L.Layer.extend({
        options: {
            clusterIcon: defaultClusterIcon,
            pointStyle: DEFAULT_POINT_STYLE,
            popup: defaultPopup,
            clusterPopup: null,
            zoomOnClusterClick: true,
            animate: true,
            rate: undefined,
            pace: undefined,
            algorithm: undefined,
            encoding: undefined,
            presence: false,
            pane: DEFAULT_PANE,
        },

        initialize: function (url, options) {
            L.setOptions(this, options);
            const o = this.options;
            const clientOptions = { tileSize: LEAFLET_TILE_SIZE, presence: o.presence,
                                    canApply: () => this._map && !this._map._animatingZoom && !this._flying };
            for (const k of ['rate', 'pace', 'algorithm', 'encoding', 'filter']) if (o[k] !== undefined) clientOptions[k] = o[k];
            /** The stream (web/pinwheel/client.js); listen to it for anything the layer does not fire. */
            this.client = new PinwheelClient(url, clientOptions);
            this.client.state.counters.splits = 0;
            this.client.state.counters.merges = 0;
            this.client.state.timing.animateMaxMs = 0;
            /** id → {layer, feature, leg, dot, origin}: what is drawn for each feature of the store. */
            this.markers = new Map();
            /** The pins of a same-coordinate group shown on request (id → entry). */
            this.spread = new Map();
            this._sprites = new Map();
            /** What cluster icons are sized by: see defaultClusterIcon. */
            this._sizing = { scale: 1, maxRadius: Infinity };
            this._animations = new Map();
            this._retiring = new Map();
            this._animationFrame = 0;
            this._parentOf = new Map();
            this._ghosts = new Map();
            this._served = { seq: null, level: null, direction: 0, changedAt: -Infinity };
            this._batch = null;
            this._flying = false;
            /** A viewport for where the running pan or zoom animation ends has been sent. */
            this._predicted = false;
            this._insidePanBy = false;
            this._spreadOwner = null;
            this._wrapCenter = 0;
            const c = this.client;
            c.on('hello', (msg) => this._onHello(msg));
            c.on('batch-start', (msg) => this._onBatchStart(msg));
            c.on('feature-removed', (e) => this._onRemoved(e.feature));
            c.on('feature-updated', (e) => this._onUpdated(e.feature));
            c.on('feature-added', (e) => this._onAdded(e.feature));
            c.on('view-complete', (e) => {
                this._scheduleFit();
                if (this._keyboard) this._keyboard.schedule();
                this.fire('viewcomplete', e);
            });
            this._fitFrame = 0;
            /** The keyboard's list of the markers in view (web/pinwheel/keyboard.js), while on a map. */
            this._keyboard = null;
            c.on('status', (e) => this.fire('status', e));
            c.on('reset', () => this._clearDrawing());
        },

        onAdd: function (map) {
            const pane = this.options.pane;
            if (pane === DEFAULT_PANE && !map.getPane(pane)) map.createPane(pane).style.zIndex = DEFAULT_PANE_Z_INDEX;
            this._renderer = L.canvas({ padding: RENDERER_PADDING, pane: pane });
            // The canvas covers the whole map: it lets every event through to the layers beneath, and
            // the layer takes the clicks that land on its markers before they reach them.
            map.addLayer(this._renderer);
            this._renderer._container.style.pointerEvents = 'none';
            // Screen readers and keyboards reach the markers through a list of buttons instead.
            this._renderer._container.setAttribute('aria-hidden', 'true');
            this._stopHitTesting = hitTesting(map, (e) => this._markerAt(e), (entry) => this._onMarkerClick(entry));
            this._keyboard = markerButtons(map.getContainer(), {
                entries: () => this._drawnEntries(),
                place: (entry) => {
                    if (!map.hasLayer(entry.layer)) return null;
                    const p = map.latLngToContainerPoint(entry.layer.getLatLng());
                    return { x: p.x, y: p.y, radius: entry.layer.getRadius() };
                },
                activate: (entry) => this._onMarkerClick(entry),
            });
            // Leaflet must not read a button's click as a click on the map.
            L.DomEvent.disableClickPropagation(this._keyboard.list);
            map.on('moveend zoomend', this._keyboard.schedule);
            map.on('move', this._keyboard.placeRing);
            this._group = L.featureGroup().addTo(map);
            this._expansionGroup = L.featureGroup().addTo(map);
            this._stopDragRedraw = redrawWhileDragging(map, this._renderer);
            this._wrapCenter = map.getCenter().lng;
            map.on('move zoom', this._onMove, this);
            map.on('zoomanim', this._onZoomAnim, this);
            // Leaflet starts animated pans (a drag's inertia among them) through panBy, with no event
            // that says where they end: this map's panBy is wrapped to tell.
            const layer = this;
            const panBy = map.panBy;
            this._unwrapPanBy = () => {
                if (map.panBy === wrapped) delete map.panBy;
            };
            const wrapped = function () {
                // Its first step fires `move` from inside panBy, before the end is known.
                layer._insidePanBy = true;
                let result;
                try {
                    result = panBy.apply(this, arguments);
                } finally {
                    layer._insidePanBy = false;
                }
                layer._onPanStart();
                return result;
            };
            map.panBy = wrapped;
            map.on('moveend', this._onMoveEnd, this);
            map.on('zoomstart', this._clearSpread, this);
            map.on('zoomend', this._scheduleFit, this);
            map.on('click', this._clearSpread, this);
            // The features already held (the layer was removed and added again) are drawn at once.
            for (const f of this.client.features.values()) this._draw(f, null, 1);
            if (this.client.state.connection === 'closed' || !this.client._socket) this.client.connect();
            this._onMove();
        },

        onRemove: function (map) {
            this._stopDragRedraw();
            this._stopHitTesting();
            map.off('moveend zoomend', this._keyboard.schedule);
            map.off('move', this._keyboard.placeRing);
            this._keyboard.stop();
            this._keyboard = null;
            map.off('move zoom', this._onMove, this);
            map.off('zoomanim', this._onZoomAnim, this);
            this._unwrapPanBy();
            map.off('moveend', this._onMoveEnd, this);
            map.off('zoomstart', this._clearSpread, this);
            map.off('zoomend', this._scheduleFit, this);
            map.off('click', this._clearSpread, this);
            this._clearDrawing();
            map.removeLayer(this._group);
            map.removeLayer(this._expansionGroup);
            this.client.close();
        },

        /** True when the map is still (no flight, zoom or pan animation) and its view has been served
         *  and applied. */
        setFilter: function (expression) {
            this.client.setFilter(expression);
            return this;
        },

        settled: function () {
            const map = this._map;
            return this.client.settled() && !this._flying && !(map && (map._animatingZoom || (map._panAnim && map._panAnim._inProgress)));
        },

        /** True while markers are still moving or fading. */
        animating: function () {
            return this._animations.size > 0;
        },

        /** Asks the server how `feature` opens and zooms there (or shows its spread group). */
        zoomToExpansion: function (feature, at) {
            const latlng = at || this._featureLatLng(feature);
            return this.client.expand(feature.id).then((msg) => {
                if (typeof msg.zoom === 'number' && this._map) {
                    this._flying = true;
                    this._map.flyTo(latlng, Math.min(msg.zoom, this._map.getMaxZoom()), { duration: 0.6 });
                } else if (Array.isArray(msg.spread)) {
                    this._showSpread(msg);
                }
                return msg;
            });
        },

        // ---- View ----

        /** The map moved; `final` when it has stopped (the view the user now waits for). */
        _onMove: function (final) {
            // While an inertia pan or a zoom animation runs to a view already asked for, the views
            // it passes through are not worth serving.
            if (!this._map || this._flying || this._predicted || this._insidePanBy) return;
            this.client.setViewport(this._viewAt(this._map.getCenter(), this._map.getZoom()), { now: final === true });
        },

        /** The view the map will have at `center` and `zoom`, in the protocol's form. */
        _viewAt: function (center, zoom) {
            const map = this._map;
            const size = map.getSize();
            const c = map.project(center, zoom);
            const sw = map.unproject(c.add([-size.x / 2, size.y / 2]), zoom);
            const ne = map.unproject(c.add([size.x / 2, -size.y / 2]), zoom);
            return { bbox: normalizedBBox(sw.lng, sw.lat, ne.lng, ne.lat), zoom: zoom, width: size.x, height: size.y };
        },

        /** A zoom animation starts: ask for where it ends now, not when it has ended, so the batches
         *  arrive while it runs. */
        _onZoomAnim: function (e) {
            if (this._flying) return;
            this.client.setViewport(this._viewAt(e.center, e.zoom), { now: true });
            this._predicted = true;
        },

        /** An animated pan (a drag's inertia, keyboard panning, panTo) has started: ask for where it
         *  will stop, so the batches arrive while it runs. */
        _onPanStart: function () {
            const map = this._map;
            const anim = map && map._panAnim;
            if (!anim || !anim._inProgress || this._flying) {
                // Not animated (or already over): the view is where it is.
                this._onMove(true);
                return;
            }
            const target = anim._startPos.add(anim._offset);
            const shift = target.subtract(map._getMapPanePos());
            const centre = map.layerPointToLatLng(map._getCenterLayerPoint().subtract(shift));
            this.client.setViewport(this._viewAt(centre, map.getZoom()), { now: true });
            this._predicted = true;
        },

        _onMoveEnd: function () {
            this._flying = false;
            this._predicted = false;
            this._rewrapIfNeeded();
            this._onMove(true);
        },

        _onHello: function (msg) {
            // The hierarchical index packs clusters `radius` apart in screen pixels (the client tells
            // the server its tile size); they shrink to fit. The PCA cut keeps full size.
            const o = msg.options || {};
            let scale = 1;
            if (msg.algorithm === 'hierarchical' && o.radius > 0) {
                scale = Math.max(CLUSTER_MIN_SCALE, Math.min(1, o.radius / CLUSTER_ROOMY_SPACING_PX));
            }
            // Clusters are at least about `radius` pixels apart: icons up to half that do not overlap.
            const maxRadius = o.radius > 0 && msg.algorithm === 'hierarchical' ? o.radius / 2 : Infinity;
            if (scale !== this._sizing.scale || maxRadius !== this._sizing.maxRadius) {
                this._sizing = { scale: scale, maxRadius: maxRadius };
                for (const entry of this.markers.values()) {
                    if (entry.feature.count > 1) entry.layer.setStyle(this._style(entry.feature, 1, entry.room));
                }
            }
            this.fire('hello', msg);
        },

        // ---- Drawing ----

        _sprite: function (key, radius, draw) {
            let s = this._sprites.get(key);
            if (s) return s;
            if (this._sprites.size >= SPRITE_CACHE_LIMIT) this._sprites.clear();
            const ratio = window.devicePixelRatio || 1;
            const half = Math.ceil(radius + CLUSTER_HALO_WEIGHT / 2 + 1);
            const canvas = document.createElement('canvas');
            canvas.width = canvas.height = Math.ceil(2 * half * ratio);
            const ctx = canvas.getContext('2d');
            ctx.scale(ratio, ratio);
            draw(ctx, half);
            s = { canvas: canvas, half: half, size: 2 * half };
            this._sprites.set(key, s);
            return s;
        },

        _pointStyle: function (feature) {
            const p = this.options.pointStyle;
            return Object.assign({}, DEFAULT_POINT_STYLE, typeof p === 'function' ? p(feature) : p);
        },

        _pointSprite: function (style) {
            const key = `p|${style.radius}|${style.fillColor}|${style.color}|${style.weight}|${style.opacity}`;
            return this._sprite(key, style.radius, (ctx, c) => {
                circlePath(ctx, c, style.radius);
                ctx.fillStyle = style.fillColor;
                ctx.fill();
                if (style.weight > 0) {
                    ctx.globalAlpha = style.opacity;
                    ctx.lineWidth = style.weight;
                    ctx.strokeStyle = style.color;
                    ctx.stroke();
                }
            });
        },

        _clusterSprite: function (icon) {
            const radius = Math.round(icon.radius * 2) / 2;
            const label = icon.label === undefined ? '' : String(icon.label);
            const fontPx = Math.max(9, Math.round(11 * Math.sqrt(Math.min(1, radius / 14))));
            const key = `c|${icon.color}|${radius}|${label}|${icon.textColor}|${fontPx}`;
            return this._sprite(key, radius, (ctx, c) => {
                circlePath(ctx, c, radius);
                ctx.globalAlpha = CLUSTER_FILL_OPACITY;
                ctx.fillStyle = icon.color;
                ctx.fill();
                ctx.globalAlpha = CLUSTER_HALO_OPACITY;
                ctx.lineWidth = CLUSTER_HALO_WEIGHT;
                ctx.strokeStyle = icon.color;
                ctx.stroke();
                ctx.globalAlpha = 1;
                ctx.fillStyle = icon.textColor || CLUSTER_LABEL_COLOR;
                ctx.font = `600 ${fontPx}px ${CLUSTER_LABEL_FONT_FAMILY}`;
                ctx.textAlign = 'center';
                ctx.textBaseline = 'middle';
                ctx.fillText(label, c, c + 0.5);
            });
        },

        /** Leaflet options for a feature's marker at opacity `alpha`. `radius` is for hit-testing and
         *  `weight` pads Leaflet's redraw bounds around the halo. */
        _style: function (feature, alpha, room) {
            if (feature.count > 1) {
                const sizing = room === undefined || room >= this._sizing.maxRadius ? this._sizing
                    : { scale: this._sizing.scale, maxRadius: room };
                const icon = Object.assign(defaultClusterIcon(feature, sizing), this.options.clusterIcon(feature, sizing));
                icon.radius = Math.min(icon.radius, sizing.maxRadius);
                return { renderer: this._renderer, radius: icon.radius, weight: CLUSTER_HALO_WEIGHT, opacity: alpha,
                         sprite: this._clusterSprite(icon) };
            }
            const style = this._pointStyle(feature);
            return { renderer: this._renderer, radius: style.radius, weight: CLUSTER_HALO_WEIGHT, opacity: alpha,
                     sprite: this._pointSprite(style) };
        },

        _setAlpha: function (entry, alpha) {
            entry.layer.setStyle({ opacity: alpha });
            if (entry.leg) entry.leg.setStyle({ opacity: LEG_STYLE.opacity * alpha });
            if (entry.dot) entry.dot.setStyle({ fillOpacity: ANCHOR_STYLE.fillOpacity * alpha });
        },

        /** Longitude shifted by whole turns to lie nearest the view (markers across the antimeridian). */
        _displayLng: function (lon) {
            return lon + 360 * Math.round((this._wrapCenter - lon) / 360);
        },

        _featureLatLng: function (f) {
            return L.latLng(f.lat, this._displayLng(f.lon));
        },

        _anchorLatLng: function (f) {
            return L.latLng(f.anchor.lat, this._displayLng(f.anchor.lon));
        },

        _createEntry: function (feature, at, alpha, group) {
            const layer = new (spriteMarkerClass())(at, this._style(feature, alpha));
            layer.pinwheelId = feature.id;
            const entry = { layer: layer, feature: feature, leg: null, dot: null, origin: null };
            if (feature.anchor) {
                const anchor = this._anchorLatLng(feature);
                entry.leg = L.polyline([anchor, at], Object.assign({ renderer: this._renderer }, LEG_STYLE,
                    { opacity: LEG_STYLE.opacity * alpha }));
                entry.dot = L.circleMarker(anchor, Object.assign({ renderer: this._renderer }, ANCHOR_STYLE));
                group.addLayer(entry.leg);
                group.addLayer(entry.dot);
            }
            group.addLayer(layer);
            return entry;
        },

        _removeEntryLayers: function (entry, group) {
            group.removeLayer(entry.layer);
            if (entry.leg) group.removeLayer(entry.leg);
            if (entry.dot) group.removeLayer(entry.dot);
        },

        _place: function (entry, at) {
            entry.layer.setLatLng(at);
            if (entry.leg) entry.leg.setLatLngs([this._anchorLatLng(entry.feature), at]);
        },

        _rewrapIfNeeded: function () {
            const center = this._map.getCenter().lng;
            if (Math.abs(center - this._wrapCenter) < 90) return;
            this._wrapCenter = center;
            for (const entry of this.markers.values()) {
                this._animations.delete(entry);
                this._place(entry, this._featureLatLng(entry.feature));
                if (entry.dot) entry.dot.setLatLng(this._anchorLatLng(entry.feature));
            }
        },

        _clearDrawing: function () {
            this._animations.clear();
            if (this._animationFrame) cancelAnimationFrame(this._animationFrame);
            this._animationFrame = 0;
            if (this._group) this._group.clearLayers();
            this._retiring.clear();
            this._clearSpread();
            this.markers.clear();
            this._parentOf.clear();
            this._ghosts.clear();
            Object.assign(this._served, { seq: null, level: null, direction: 0, changedAt: -Infinity });
        },

        /** Gives each cluster icon room up to its nearest neighbour (NEIGHBOUR_RADIUS_SHARE), using a
         *  grid of the clusters' final screen positions; restyles only those whose room changed. */
        _fitClusters: function () {
            this._fitFrame = 0;
            const map = this._map;
            if (!map || map._animatingZoom) return;
            const cell = 64;
            const grid = new Map();
            const clusters = [];
            for (const entry of this.markers.values()) {
                if (entry.feature.count < 2) continue;
                const p = map.latLngToLayerPoint(this._featureLatLng(entry.feature));
                const c = { entry: entry, x: p.x, y: p.y, gx: Math.floor(p.x / cell), gy: Math.floor(p.y / cell) };
                clusters.push(c);
                const key = c.gx * 100003 + c.gy;
                const list = grid.get(key);
                if (list) list.push(c);
                else grid.set(key, [c]);
            }
            for (const c of clusters) {
                let nearest = Infinity;
                for (let dx = -1; dx <= 1; dx++) {
                    for (let dy = -1; dy <= 1; dy++) {
                        const list = grid.get((c.gx + dx) * 100003 + c.gy + dy);
                        if (!list) continue;
                        for (const o of list) {
                            if (o === c) continue;
                            const d = Math.hypot(o.x - c.x, o.y - c.y);
                            if (d < nearest) nearest = d;
                        }
                    }
                }
                const room = Math.max(MIN_ICON_RADIUS, Math.round(NEIGHBOUR_RADIUS_SHARE * nearest * 2) / 2);
                const entry = c.entry;
                if (entry.room === room) continue;
                entry.room = room;
                const style = this._style(entry.feature, entry.layer.options.opacity, room);
                entry.layer.setStyle({ sprite: style.sprite });
                entry.layer.setRadius(style.radius);
            }
        },

        _scheduleFit: function () {
            if (!this._fitFrame) this._fitFrame = requestAnimationFrame(() => this._fitClusters());
        },

        // ---- Animation ----

        _animate: function (entry, spec) {
            const previous = this._animations.get(entry);
            // A move that interrupts a fade-in must not leave the feature half transparent.
            if (previous && previous.fade === 'in' && !spec.fade) this._setAlpha(entry, 1);
            const unseen = !this._mayBeSeen(entry.layer.getLatLng(), spec.to);
            if (!this.options.animate || unseen || (!previous && this._animations.size >= MAX_ANIMATIONS)) {
                if (previous) this._animations.delete(entry);
                this._finishAt(entry, spec);
                return;
            }
            this._animations.set(entry, Object.assign({ t0: performance.now() }, spec));
            if (!this._animationFrame) this._animationFrame = requestAnimationFrame((t) => this._step(t));
        },

        /** Whether an animation from `from` to `to` (or staying at `from`) passes through the view:
         *  a marker fading or moving out of sight is not worth a frame, nor a view waiting for it. */
        _mayBeSeen: function (from, to) {
            const map = this._map;
            if (!map) return false;
            const a = map.latLngToContainerPoint(from);
            const b = to ? map.latLngToContainerPoint(to) : a;
            const size = map.getSize();
            const m = VISIBLE_MARGIN_PX;
            return Math.max(a.x, b.x) >= -m && Math.min(a.x, b.x) <= size.x + m &&
                   Math.max(a.y, b.y) >= -m && Math.min(a.y, b.y) <= size.y + m;
        },

        _step: function (now) {
            this._animationFrame = 0;
            const started = performance.now();
            for (const [entry, a] of this._animations) {
                const duration = a.from ? MOVE_MS : FADE_MS;
                const t = Math.min(1, Math.max(0, (now - a.t0) / duration));
                const e = easeOutCubic(t);
                if (a.from) {
                    this._place(entry, L.latLng(a.from.lat + (a.to.lat - a.from.lat) * e,
                                                a.from.lng + (a.to.lng - a.from.lng) * e));
                }
                if (a.fade === 'in') this._setAlpha(entry, e);
                else if (a.fade === 'out') this._setAlpha(entry, 1 - e);
                if (t >= 1) {
                    this._animations.delete(entry);
                    if (a.removeAtEnd) this._finishAt(entry, a);
                }
            }
            if (this._animations.size) this._animationFrame = requestAnimationFrame((t) => this._step(t));
            const timing = this.client.state.timing;
            timing.animateMaxMs = Math.max(timing.animateMaxMs, performance.now() - started);
        },

        _finishAt: function (entry, spec) {
            if (spec.removeAtEnd) {
                this._removeEntryLayers(entry, this._group);
                if (this._retiring.get(entry.feature.id) === entry) this._retiring.delete(entry.feature.id);
                return;
            }
            if (spec.from) this._place(entry, spec.to);
            if (spec.fade === 'in') this._setAlpha(entry, 1);
        },

        // ---- Feature events ----

        /** A batch starts: whether its viewport went deeper (+1: clusters split), shallower (-1:
         *  merge) or stayed (0). A pan right after a zoom change keeps the change's direction for
         *  GHOST_TTL_MS, since the server may finish that change in the pan's batches. */
        _onBatchStart: function (msg) {
            const served = this._served;
            if (msg.seq !== served.seq) {
                const zoom = this.client.viewportZoom.get(msg.seq);
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
            let addById = null;
            if (served.direction < 0) {
                addById = new Map();
                for (const f of msg.add || []) addById.set(f.id, f);
            }
            const now = performance.now();
            for (const [id, g] of this._ghosts) if (now - g.t > GHOST_TTL_MS) this._ghosts.delete(id);
            this._batch = { add: msg.add || [], addById: addById, direction: served.direction, nearby: null };
        },

        _onRemoved: function (f) {
            const entry = this.markers.get(f.id);
            if (!entry || !this._map) return;
            this.markers.delete(f.id);
            const at = entry.layer.getLatLng();
            this._ghosts.set(f.id, { at: at, t: performance.now() });
            this._animations.delete(entry);
            this._retiring.set(f.id, entry);
            // A merge: the feature moves into the cluster that now holds it, then vanishes there.
            const c = this._batch;
            const target = c && c.direction < 0 ? this._mergeTarget(entry.feature, at, c) : null;
            if (target) this.client.state.counters.merges++;
            this._animate(entry, { from: target ? at : null, to: target, fade: 'out', removeAtEnd: true });
        },

        _onUpdated: function (f) {
            const entry = this.markers.get(f.id);
            if (!this._map) return;
            if (!entry) {
                this._onAdded(f);
                return;
            }
            this._rememberParent(f);
            const from = entry.layer.getLatLng();
            entry.feature = f;
            if (Boolean(entry.leg) !== Boolean(f.anchor)) {
                // Gaining or losing a leg needs other layers; the id stays, the drawing is rebuilt.
                this._removeEntryLayers(entry, this._group);
                this._animations.delete(entry);
                this.markers.set(f.id, this._createEntry(f, this._featureLatLng(f), 1, this._group));
                return;
            }
            const style = this._style(f, 1, entry.room);
            entry.layer.setStyle(style);
            entry.layer.setRadius(style.radius);
            if (entry.dot) entry.dot.setLatLng(this._anchorLatLng(f));
            const to = this._featureLatLng(f);
            if (!from.equals(to)) this._animate(entry, { from: from, to: to, fade: null });
        },

        _onAdded: function (f) {
            if (!this._map) return;
            if (this.markers.has(f.id)) {
                this._onUpdated(f);
                return;
            }
            const old = this._retiring.get(f.id);
            if (old) {
                this._animations.delete(old);
                this._removeEntryLayers(old, this._group);
                this._retiring.delete(f.id);
            }
            this._rememberParent(f);
            const to = this._featureLatLng(f);
            const c = this._batch;
            // A split: children start where their parent was (a spread pin starts on its anchor).
            const from = f.anchor ? this._anchorLatLng(f) : c && c.direction > 0 ? this._splitOrigin(f, to, c) : null;
            const entry = this._draw(f, from, 0);
            if (from && !f.anchor) this.client.state.counters.splits++;
            this._animate(entry, { from: from && !from.equals(to) ? from : null, to: to, fade: 'in' });
        },

        _draw: function (f, from, alpha) {
            const entry = this._createEntry(f, from || this._featureLatLng(f), alpha, this._group);
            entry.origin = from;
            this.markers.set(f.id, entry);
            return entry;
        },

        _rememberParent: function (f) {
            if (f.parent !== undefined && f.parent !== f.id) this._parentOf.set(f.id, f.parent);
        },

        /** Where a new feature's split starts: its parent, just removed or still shown, else the
         *  nearest cluster removed in the last GHOST_TTL_MS. */
        _splitOrigin: function (f, to, c) {
            if (f.parent === undefined || f.parent === f.id) return null;
            const ghost = this._ghosts.get(f.parent);
            if (ghost) return ghost.at;
            const shown = this.markers.get(f.parent);
            if (shown) return shown.layer.getLatLng();
            if (!c.nearby) {
                c.nearby = [];
                for (const [id, g] of this._ghosts) if (id > 0xffffffff) c.nearby.push(this._candidate(g.at, Infinity));
            }
            return this._nearest(c.nearby, this._map.latLngToContainerPoint(to), 0);
        },

        /** Where a removed feature merges to: its parent or nearest known ancestor arriving in this
         *  batch or on the map, else the nearest larger cluster arriving. */
        _mergeTarget: function (f, at, c) {
            let id = f.parent;
            for (let hops = 0; id !== undefined && id !== f.id && hops < 32; hops++) {
                const added = c.addById.get(id);
                if (added) return this._featureLatLng(added);
                const shown = this.markers.get(id);
                if (shown) return this._featureLatLng(shown.feature);
                id = this._parentOf.get(id);
            }
            if (!c.nearby) {
                c.nearby = [];
                for (const g of c.add) if (g.count > 1) c.nearby.push(this._candidate(this._featureLatLng(g), g.count));
            }
            return this._nearest(c.nearby, this._map.latLngToContainerPoint(at), f.count);
        },

        _candidate: function (at, count) {
            const p = this._map.latLngToContainerPoint(at);
            return { x: p.x, y: p.y, at: at, count: count };
        },

        _nearest: function (candidates, p, count) {
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
        },

        // ---- Clicks ----

        /** The marker drawn on top at a mouse event's position (a spread pin before the markers),
         *  as Leaflet's canvas renderer would find it; null when there is none. */
        _markerAt: function (e) {
            const p = this._map.mouseEventToLayerPoint(e);
            for (const entry of this.spread.values()) if (entry.layer._containsPoint(p)) return entry;
            let hit = null;
            for (const entry of this.markers.values()) {
                const layer = entry.layer;
                if (layer.options.opacity > 0 && layer._point && layer._containsPoint(p)) hit = entry;
            }
            return hit;
        },

        /** What is drawn, spread pins first (they are on top), for the keyboard's list. */
        _drawnEntries: function* () {
            yield* this.spread.values();
            yield* this.markers.values();
        },

        /** A click on a marker (or a spread pin): the same as a click on its feature. */
        _onMarkerClick: function (entry) {
            if (this.spread.get(entry.feature.id) === entry) {
                this._pointClick(entry.feature, entry.layer.getLatLng());
                return;
            }
            if (this.markers.get(entry.feature.id) !== entry) return;
            const latlng = entry.layer.getLatLng();
            if (entry.feature.count > 1) {
                this.fire('clusterclick', { feature: entry.feature, latlng: latlng });
                const content = this.options.clusterPopup ? this.options.clusterPopup(entry.feature, this) : null;
                if (content) {
                    L.popup({ offset: [0, -4] }).setLatLng(latlng).setContent(content).openOn(this._map);
                } else if (this.options.zoomOnClusterClick) {
                    this.zoomToExpansion(entry.feature, latlng).catch((err) => console.warn(`pinwheel: ${err}`));
                }
            } else {
                this._pointClick(entry.feature, latlng);
            }
        },

        _pointClick: function (f, latlng) {
            this.fire('pointclick', { feature: f, latlng: latlng });
            const content = this.options.popup ? this.options.popup(f) : null;
            if (content) L.popup({ offset: [0, -4] }).setLatLng(latlng).setContent(content).openOn(this._map);
        },

        _showSpread: function (msg) {
            this._clearSpread();
            // The group's cluster steps back while its members are shown around it.
            const owner = this.markers.get(msg.id);
            if (owner) {
                this._setAlpha(owner, SPREAD_OWNER_ALPHA);
                this._spreadOwner = owner;
            }
            for (const f of msg.spread) {
                const entry = this._createEntry(f, this._featureLatLng(f), 1, this._expansionGroup);
                entry.spread = true;
                this.spread.set(f.id, entry);
            }
            if (this._keyboard) this._keyboard.schedule();
        },

        _clearSpread: function () {
            if (this._expansionGroup) this._expansionGroup.clearLayers();
            this.spread.clear();
            const owner = this._spreadOwner;
            if (owner && this.markers.get(owner.feature.id) === owner) this._setAlpha(owner, 1);
            this._spreadOwner = null;
            if (this._keyboard) this._keyboard.schedule();
        },
    });
    return PinwheelLayer;
}

// ---- Shareable views ---------------------------------------------------------------------------

/** Parses `#lat,lon,zoom` (as `followHash` writes it); null when the hash is not a view. */
export function viewFromHash(hash) {
    const m = /^#?(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?),(\d+(?:\.\d+)?)$/.exec(hash || '');
    if (!m) return null;
    const lat = Number(m[1]);
    const lon = Number(m[2]);
    const zoom = Number(m[3]);
    if (Math.abs(lat) > 90 || Math.abs(lon) > 540) return null;
    return { lat: lat, lon: lon, zoom: zoom };
}

/**
 * Keeps the URL hash at the map's view (`#lat,lon,zoom`, replaced, not pushed, so the back button
 * is not flooded) and moves the map when the hash is edited. Call after the map has its first view.
 * @returns a function that stops it.
 */
export function followHash(map) {
    let written = '';
    const write = () => {
        const c = map.getCenter();
        const z = map.getZoom();
        const digits = Math.max(2, Math.ceil(Math.log10(Math.pow(2, z))) + 2);
        written = `#${c.lat.toFixed(digits)},${L.Util.wrapNum(c.lng, [-180, 180], true).toFixed(digits)},${Math.round(z * 100) / 100}`;
        if (location.hash !== written) history.replaceState(null, '', written);
    };
    const read = () => {
        if (location.hash === written) return;
        const v = viewFromHash(location.hash);
        if (v) map.setView([v.lat, v.lon], v.zoom);
    };
    map.on('moveend', write);
    window.addEventListener('hashchange', read);
    write();
    return () => {
        map.off('moveend', write);
        window.removeEventListener('hashchange', read);
    };
}
