/* Pinwheel for MapLibre GL JS: a Pinwheel stream as a GeoJSON source of a MapLibre map.
 *
 *     import { pinwheelMapLibre } from '/pinwheel/maplibre.js';
 *     maplibregl.setWorkerUrl('/vendor/maplibre/maplibre-gl-worker.js');  // under a strict CSP
 *     const map = new maplibregl.Map({ container: 'map', style: ..., center: [10, 48], zoom: 4 });
 *     pinwheelMapLibre('ws://localhost:8080/').addTo(map);
 *
 * The server clusters; MapLibre only draws. Each batch of the stream (web/pinwheel/client.js) becomes
 * one keyed diff of the source (`updateData`: removes, then adds and updates by feature id), once per
 * animation frame, so a pan costs what changed, not the whole view. The clusters and points are drawn
 * by ordinary MapLibre layers (ids below) that an app may restyle or replace. Needs MapLibre GL JS 5
 * loaded as the global `maplibregl`. The options are documented in docs/client.md.
 */

import { PinwheelClient, normalizedBBox } from './client.js';
import { markerButtons } from './keyboard.js';
import { defaultPopup, shortCount } from './leaflet.js';

// ---- Constants -----------------------------------------------------------------------------------

/** Tile size of MapLibre's zoom levels, the server's own: cluster radius means screen pixels. */
const MAPLIBRE_TILE_SIZE = 512;
/** Ids of the sources and layers the layer adds (prefixed by the `id` option). */
const SOURCE = '';
const SPREAD_SOURCE = '-spread';
export const LAYERS = { clusters: '-clusters', counts: '-counts', points: '-points', legs: '-spread-legs',
                        pins: '-spread-pins' };
/** Cluster colour by count (the Leaflet layer's stops) and radius (pixels) by count. */
const CLUSTER_COLOR = ['interpolate', ['linear'], ['log10', ['get', 'count']],
    0, 'rgb(45,212,191)', 1, 'rgb(56,189,248)', 2, 'rgb(129,140,248)', 3, 'rgb(192,132,252)',
    4, 'rgb(232,121,249)', 5, 'rgb(251,146,60)'];
const CLUSTER_RADIUS = ['+', 10, ['*', 3.6, ['log10', ['get', 'count']]]];
const POINT_COLOR = '#fbbf24';
const RIM_COLOR = '#0b1220';
/** Count labels are images drawn here (a symbol layer's text would need a glyph server). */
const LABEL_PREFIX = 'pinwheel-count-';
const LABEL_FONT = '600 11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const LABEL_COLOR = '#0b1220';
const LABEL_HEIGHT_PX = 14;
/** A moved feature (a live point, a recounted cluster) glides this long to its new place; beyond
 *  MAX_GLIDES at once, features jump. */
const MOVE_MS = 300;
const MAX_GLIDES = 250;
/** Radius (pixels) of the default layers' circles, for the keyboard's focus ring. */
const POINT_RADIUS_PX = 5;
function clusterRadius(count) {
    return 10 + 3.6 * Math.log10(count);
}

/** The default layers, under the ids `id + LAYERS.*`; `source` and `spread` are the sources' ids. */
export function defaultLayers(id, source, spread) {
    return [
        { id: id + LAYERS.clusters, type: 'circle', source: source, filter: ['>', ['get', 'count'], 1],
          paint: { 'circle-color': CLUSTER_COLOR, 'circle-radius': CLUSTER_RADIUS, 'circle-opacity': 0.92,
                   'circle-stroke-color': CLUSTER_COLOR, 'circle-stroke-width': 4, 'circle-stroke-opacity': 0.35 } },
        { id: id + LAYERS.counts, type: 'symbol', source: source, filter: ['>', ['get', 'count'], 1],
          layout: { 'icon-image': ['concat', LABEL_PREFIX, ['get', 'label']], 'icon-allow-overlap': true,
                    'icon-ignore-placement': true } },
        { id: id + LAYERS.points, type: 'circle', source: source, filter: ['==', ['get', 'count'], 1],
          paint: { 'circle-color': POINT_COLOR, 'circle-radius': POINT_RADIUS_PX, 'circle-stroke-color': RIM_COLOR,
                   'circle-stroke-width': 1.5 } },
        // Hidden until a spread is shown: a layer over an empty source still costs every frame the
        // clipping masks of its tiles.
        { id: id + LAYERS.legs, type: 'line', source: spread, filter: ['==', ['geometry-type'], 'LineString'],
          layout: { visibility: 'none' }, paint: { 'line-color': '#fde68a', 'line-width': 1, 'line-opacity': 0.75 } },
        { id: id + LAYERS.pins, type: 'circle', source: spread, filter: ['==', ['geometry-type'], 'Point'],
          layout: { visibility: 'none' }, paint: { 'circle-color': POINT_COLOR, 'circle-radius': 5, 'circle-stroke-color': RIM_COLOR,
                   'circle-stroke-width': 1.5 } },
    ];
}

/** A Pinwheel feature as a GeoJSON feature keyed by its id: its dataset properties, then `count`,
 *  `label` (the short count), `pinwheelId` (the id, also for apps that restyle by it) and, for a
 *  point a producer named, `key`. */
export function toGeoJSON(f) {
    const properties = Object.assign({}, f.properties, { count: f.count, label: shortCount(f.count), pinwheelId: f.id });
    if (f.key !== undefined) properties.key = f.key;
    return { type: 'Feature', id: f.id, geometry: { type: 'Point', coordinates: [f.lon, f.lat] }, properties: properties };
}

function easeOutCubic(t) {
    return 1 - Math.pow(1 - t, 3);
}

function emptyCollection() {
    return { type: 'FeatureCollection', features: [] };
}

/** A count label as an image for `map.addImage`. */
function labelImage(label) {
    const ratio = window.devicePixelRatio || 1;
    const canvas = document.createElement('canvas');
    const ctx = canvas.getContext('2d');
    ctx.font = LABEL_FONT;
    const width = Math.ceil(ctx.measureText(label).width) + 2;
    canvas.width = width * ratio;
    canvas.height = LABEL_HEIGHT_PX * ratio;
    ctx.scale(ratio, ratio);
    ctx.font = LABEL_FONT;
    ctx.fillStyle = LABEL_COLOR;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(label, width / 2, LABEL_HEIGHT_PX / 2 + 0.5);
    return { image: ctx.getImageData(0, 0, canvas.width, canvas.height), pixelRatio: ratio };
}

// ---- The layer -------------------------------------------------------------------------------------

/**
 * Creates the layer. `url` is the server's WebSocket address. Options: `id` (prefix of the source
 * and layer ids, 'pinwheel'), `layers` (false: add no layers, the app styles the sources itself),
 * `beforeId` (the map layer to draw below), `popup(feature)`, `zoomOnClusterClick`, and the client's
 * options (`rate`, `pace`, `algorithm`, `encoding`, `presence`). Fires `clusterclick` and
 * `pointclick` `{feature, lngLat}`, `viewcomplete`, `status`.
 */
export function pinwheelMapLibre(url, options) {
    return new PinwheelMapLibre(url, options);
}

export class PinwheelMapLibre {
    constructor(url, options = {}) {
        this.options = Object.assign({ id: 'pinwheel', layers: true, beforeId: undefined, popup: defaultPopup,
                                       zoomOnClusterClick: true, animate: true }, options);
        const clientOptions = { tileSize: MAPLIBRE_TILE_SIZE, presence: Boolean(this.options.presence) };
        for (const k of ['rate', 'pace', 'algorithm', 'encoding', 'token']) {
            if (this.options[k] !== undefined) clientOptions[k] = this.options[k];
        }
        /** The stream (web/pinwheel/client.js). */
        this.client = new PinwheelClient(url, clientOptions);
        this.sourceId = this.options.id + SOURCE;
        this.spreadSourceId = this.options.id + SPREAD_SOURCE;
        this.map = null;
        this._listeners = new Map();
        /** id → GeoJSON feature, or null for a removal, not yet handed to the source. */
        this._pending = new Map();
        this._frame = 0;
        /** id → {feature, from, to, t0, at}: features gliding to where an update put them. */
        this._glides = new Map();
        this._popup = null;
        const c = this.client;
        c.on('feature-added', (e) => this._changed(e.feature.id, toGeoJSON(e.feature)));
        c.on('feature-updated', (e) => this._updated(e.feature, e.previous));
        c.on('feature-removed', (e) => {
            this._glides.delete(e.feature.id);
            this._changed(e.feature.id, null);
        });
        c.on('reset', () => this._replaceAll());
        c.on('view-complete', (e) => {
            if (this._keyboard) this._keyboard.schedule();
            this._fire('viewcomplete', e);
        });
        /** The keyboard's list of the markers in view (web/pinwheel/keyboard.js), while on a map. */
        this._keyboard = null;
        c.on('status', (e) => this._fire('status', e));
        this._onMove = () => this._sendView(false);
        this._onMoveEnd = () => this._sendView(true);
        this._onClusterClick = (e) => this._clicked(e, true);
        this._onPointClick = (e) => this._clicked(e, false);
        this._onPinClick = (e) => this._pinClicked(e);
        this._onMissingImage = (e) => this._drawLabel(e.id);
        this._onZoomStart = () => this._clearSpread();
        this._pointer = () => { this.map.getCanvas().style.cursor = 'pointer'; };
        this._noPointer = () => { this.map.getCanvas().style.cursor = ''; };
    }

    /** Calls `fn(detail)` for every event of `type`; returns a function that unsubscribes. */
    on(type, fn) {
        let set = this._listeners.get(type);
        if (!set) this._listeners.set(type, (set = new Set()));
        set.add(fn);
        return () => set.delete(fn);
    }

    _fire(type, detail) {
        for (const fn of this._listeners.get(type) || []) {
            try {
                fn(detail);
            } catch (e) {
                console.error(e);
            }
        }
    }

    /** Adds the sources and layers to `map` (once its style has loaded) and connects. */
    addTo(map) {
        this.map = map;
        if (map.isStyleLoaded()) this._install();
        else map.once('load', () => this._install());
        return this;
    }

    _install() {
        const map = this.map;
        const features = Array.from(this.client.features.values(), toGeoJSON);
        map.addSource(this.sourceId, { type: 'geojson', data: { type: 'FeatureCollection', features: features } });
        map.addSource(this.spreadSourceId, { type: 'geojson', data: emptyCollection() });
        map.on('styleimagemissing', this._onMissingImage);
        if (this.options.layers) {
            for (const layer of defaultLayers(this.options.id, this.sourceId, this.spreadSourceId)) {
                map.addLayer(layer, this.options.beforeId);
            }
        }
        const layerId = (k) => this.options.id + LAYERS[k];
        map.on('click', layerId('clusters'), this._onClusterClick);
        map.on('click', layerId('points'), this._onPointClick);
        map.on('click', layerId('pins'), this._onPinClick);
        for (const k of ['clusters', 'points', 'pins']) {
            map.on('mouseenter', layerId(k), this._pointer);
            map.on('mouseleave', layerId(k), this._noPointer);
        }
        map.on('move', this._onMove);
        map.on('moveend', this._onMoveEnd);
        map.on('zoomstart', this._onZoomStart);
        this._keyboard = markerButtons(map.getContainer(), {
            entries: () => this._drawnEntries(),
            place: (entry) => {
                const f = entry.feature;
                const p = map.project([f.lon, f.lat]);
                return { x: p.x, y: p.y, radius: f.count > 1 ? clusterRadius(f.count) : POINT_RADIUS_PX };
            },
            activate: (entry) => this._activate(entry.feature, entry.spread),
        });
        map.on('moveend', this._keyboard.schedule);
        map.on('move', this._keyboard.placeRing);
        if (!this.client.connected) this.client.connect();
        this._sendView(true);
    }

    /** Takes the sources and layers off the map and closes the stream. */
    remove() {
        const map = this.map;
        if (!map) return;
        map.off('move', this._onMove);
        map.off('moveend', this._onMoveEnd);
        map.off('styleimagemissing', this._onMissingImage);
        map.off('zoomstart', this._onZoomStart);
        if (this._keyboard) {
            map.off('moveend', this._keyboard.schedule);
            map.off('move', this._keyboard.placeRing);
            this._keyboard.stop();
            this._keyboard = null;
        }
        for (const k of Object.keys(LAYERS)) if (map.getLayer(this.options.id + LAYERS[k])) map.removeLayer(this.options.id + LAYERS[k]);
        for (const s of [this.sourceId, this.spreadSourceId]) if (map.getSource(s)) map.removeSource(s);
        if (this._frame) cancelAnimationFrame(this._frame);
        this._frame = 0;
        this.client.close();
        this.map = null;
    }

    /** True when the view has been served, applied, handed to the source, and the map is still. */
    settled() {
        const map = this.map;
        return Boolean(map) && this.client.settled() && this._pending.size === 0 && !map.isMoving() &&
            map.isSourceLoaded(this.sourceId);
    }

    // ---- View ----

    _sendView(now) {
        const map = this.map;
        if (!map) return;
        const b = map.getBounds();
        const canvas = map.getContainer();
        this.client.setViewport({ bbox: normalizedBBox(b.getWest(), b.getSouth(), b.getEast(), b.getNorth()),
                                  zoom: map.getZoom(), width: canvas.clientWidth, height: canvas.clientHeight },
                                { now: now });
    }

    /** True while features glide to new places. */
    animating() {
        return this._glides.size > 0;
    }

    // ---- Keyed diffs ----

    _changed(id, feature) {
        this._pending.set(id, feature);
        this._schedule();
    }

    _schedule() {
        if (!this._frame) this._frame = requestAnimationFrame(() => this._flush());
    }

    /** An update that moved a feature starts a glide from where it is drawn now. */
    _updated(f, previous) {
        const glide = this._glides.get(f.id);
        const moved = previous.lat !== f.lat || previous.lon !== f.lon;
        if (!this.options.animate || !moved || (!glide && this._glides.size >= MAX_GLIDES)) {
            this._glides.delete(f.id);
            this._changed(f.id, toGeoJSON(f));
            return;
        }
        const from = glide ? glide.at : [previous.lon, previous.lat];
        this._glides.set(f.id, { feature: f, from: from, to: [f.lon, f.lat], t0: performance.now(), at: from });
        this._schedule();
    }

    /** Each glide's place at this frame, into the frame's diff. */
    _stepGlides(now) {
        for (const [id, g] of this._glides) {
            const t = Math.min(1, Math.max(0, (now - g.t0) / MOVE_MS));
            const e = easeOutCubic(t);
            g.at = [g.from[0] + (g.to[0] - g.from[0]) * e, g.from[1] + (g.to[1] - g.from[1]) * e];
            this._pending.set(id, toGeoJSON(Object.assign({}, g.feature, { lon: g.at[0], lat: g.at[1] })));
            if (t >= 1) this._glides.delete(id);
        }
        if (this._glides.size) this._schedule();
    }

    /** Hands the frame's changes to the source as one diff: removals first, then adds and updates
     *  (an add of a known id replaces it). */
    _flush() {
        this._frame = 0;
        const source = this.map && this.map.getSource(this.sourceId);
        if (!source) return;
        this._stepGlides(performance.now());
        if (!this._pending.size) return;
        const remove = [];
        const add = [];
        for (const [id, f] of this._pending) {
            if (f === null) remove.push(id);
            else add.push(f);
        }
        this._pending.clear();
        source.updateData({ remove: remove, add: add });
    }

    _replaceAll() {
        this._pending.clear();
        this._glides.clear();
        const source = this.map && this.map.getSource(this.sourceId);
        if (source) source.setData(emptyCollection());
    }

    _drawLabel(id) {
        if (!id.startsWith(LABEL_PREFIX) || this.map.hasImage(id)) return;
        const { image, pixelRatio } = labelImage(id.slice(LABEL_PREFIX.length));
        this.map.addImage(id, image, { pixelRatio: pixelRatio });
    }

    // ---- Clicks ----

    /** What is drawn, spread pins first, for the keyboard's list. */
    *_drawnEntries() {
        if (this._spread) for (const f of this._spread.values()) yield { feature: f, spread: true };
        for (const f of this.client.features.values()) yield { feature: f, spread: false };
    }

    _clicked(e, cluster) {
        const hit = e.features && e.features[0];
        const f = hit && this.client.features.get(hit.properties.pinwheelId);
        if (!f || (f.count > 1) !== cluster) return;
        this._activate(f, false);
    }

    /** A click on a feature's marker, or Enter on its button. */
    _activate(f, spread) {
        const lngLat = { lng: f.lon, lat: f.lat };
        if (spread) {
            this._pointClick(f, lngLat);
        } else if (f.count > 1) {
            this._fire('clusterclick', { feature: f, lngLat: lngLat });
            if (this.options.zoomOnClusterClick) {
                this.zoomToExpansion(f).catch((err) => console.warn(`pinwheel: ${err}`));
            }
        } else {
            this._pointClick(f, lngLat);
        }
    }

    _pinClicked(e) {
        const hit = e.features && e.features[0];
        const f = hit && this._spread && this._spread.get(hit.properties.pinwheelId);
        if (f) this._pointClick(f, { lng: f.lon, lat: f.lat });
    }

    _pointClick(f, lngLat) {
        this._fire('pointclick', { feature: f, lngLat: lngLat });
        const content = this.options.popup ? this.options.popup(f) : null;
        if (!content) return;
        if (this._popup) this._popup.remove();
        this._popup = new maplibregl.Popup({ offset: 8 }).setLngLat([lngLat.lng, lngLat.lat]);
        if (typeof content === 'string') this._popup.setHTML(content);
        else this._popup.setDOMContent(content);
        this._popup.addTo(this.map);
    }

    /** Asks the server how `feature` opens: eases the map to its zoom (MapLibre's levels are the
     *  server's), or shows a same-coordinate group spread, with legs to its true position. */
    zoomToExpansion(feature) {
        return this.client.expand(feature.id).then((msg) => {
            if (!this.map) return msg;
            if (typeof msg.zoom === 'number') {
                this.map.easeTo({ center: [feature.lon, feature.lat], zoom: Math.min(msg.zoom, this.map.getMaxZoom()),
                                  duration: 600 });
            } else if (Array.isArray(msg.spread)) {
                this._showSpread(msg.spread);
            }
            return msg;
        });
    }

    _showSpread(members) {
        this._spread = new Map(members.map((f) => [f.id, f]));
        const features = [];
        for (const f of members) {
            if (f.anchor) {
                features.push({ type: 'Feature', properties: {}, geometry: { type: 'LineString',
                    coordinates: [[f.anchor.lon, f.anchor.lat], [f.lon, f.lat]] } });
            }
            features.push(toGeoJSON(f));
        }
        this.map.getSource(this.spreadSourceId).setData({ type: 'FeatureCollection', features: features });
        this._showSpreadLayers(true);
        if (this._keyboard) this._keyboard.schedule();
    }

    _clearSpread() {
        if (!this._spread) return;
        this._spread = null;
        const source = this.map && this.map.getSource(this.spreadSourceId);
        if (source) source.setData(emptyCollection());
        this._showSpreadLayers(false);
        if (this._keyboard) this._keyboard.schedule();
    }

    /** Shows or hides the default spread layers (an app's own layers are the app's to show). */
    _showSpreadLayers(shown) {
        if (!this.options.layers) return;
        for (const k of ['legs', 'pins']) {
            const id = this.options.id + LAYERS[k];
            if (this.map.getLayer(id)) this.map.setLayoutProperty(id, 'visibility', shown ? 'visible' : 'none');
        }
    }
}
