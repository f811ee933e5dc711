/* Pinwheel for Leaflet: a layer that draws a Pinwheel stream on any Leaflet map.
 *
 *     import { pinwheelLayer } from '/pinwheel/leaflet.js';
 *     pinwheelLayer('ws://localhost:8080/').addTo(map);
 *
 * The stream itself is web/pinwheel/client.js. This file is the layer: its options, what it does on
 * being added to and removed from a map, the view it asks the server for, and its events. Its other
 * concerns are modules included into the class, as Leaflet.markercluster includes its own:
 * leaflet-drawing.js (canvas sprites and icon sizes), leaflet-spread.js (spread pins and their legs),
 * leaflet-motion.js (splits, merges, fades and moves), leaflet-clicks.js (clicks and popups),
 * leaflet-contents.js (donuts of what clusters hold, flag rings, the legend), leaflet-members.js
 * (a cluster's points and children, the member list) and leaflet-icons.js (point icons, headings); the
 * Leaflet internals it needs are all in leaflet-internals.js. Needs Leaflet 1.6+ loaded as the global
 * `L` before this module runs. The options are documented in docs/client.md.
 */

import { PinwheelClient, normalizedBBox } from './client.js';
import { markerButtons } from './keyboard.js';
import { Clicks, defaultPopup, hitTesting } from './leaflet-clicks.js';
import { Contents, FLAG_RING_COLOR } from './leaflet-contents.js';
import { DEFAULT_POINT_STYLE, Drawing, defaultClusterIcon } from './leaflet-drawing.js';
import { DEFAULT_HEADING_PROPERTY, PointIcons } from './leaflet-icons.js';
import { panAnimating, panTarget, rendererCanvas, redrawWhileDragging, watchPanBy, zoomAnimating } from './leaflet-internals.js';
import { DEFAULT_LIST_PAGE_SIZE, Members } from './leaflet-members.js';
import { Motion } from './leaflet-motion.js';
import { SpreadLegs } from './leaflet-spread.js';

export { DEFAULT_POINT_STYLE, clusterColor, defaultClusterIcon, shortCount } from './leaflet-drawing.js';
export { defaultPopup } from './leaflet-clicks.js';
export { FLAG_RING_COLOR, GROUP_COLORS, OTHER_GROUP_COLOR, clusterContents } from './leaflet-contents.js';
export { headingOfMove } from './leaflet-icons.js';
export { followHash, viewFromHash } from './leaflet-hash.js';
export { redrawWhileDragging } from './leaflet-internals.js';

// ---- Constants -----------------------------------------------------------------------------------

/** Extra canvas around the view (fraction of its size), Leaflet's default. */
const RENDERER_PADDING = 0.1;
/** Tile size of Leaflet's zoom levels: cluster radius then means screen pixels. */
const LEAFLET_TILE_SIZE = 256;
/** The pane the layer draws in unless its `pane` option names another: above Leaflet's overlayPane
 *  (400), where an app's polygons and vector basemaps go, and below its markers (600) and popups. */
const DEFAULT_PANE = 'pinwheel';
const DEFAULT_PANE_Z_INDEX = 450;
/** Spacing (pixels) at which clusters get the full size; packed closer, they shrink, down to MIN_SCALE. */
const CLUSTER_ROOMY_SPACING_PX = 44;
const CLUSTER_MIN_SCALE = 0.6;
/** Length (seconds) of the flight to a cluster's expansion zoom. */
const EXPANSION_FLIGHT_S = 0.6;

// ---- The layer -------------------------------------------------------------------------------------

/**
 * Creates the layer. `url` is the server's WebSocket address (ws:// or wss://). Options:
 * `clusterIcon(feature, sizing, contents)`, `pointStyle` (object or function of the feature),
 * `pointIcon`, `headingProperty`, `popup(feature)`, `clusterPopup(feature, layer)`, `clusterList`,
 * `clusterListPageSize`, `zoomOnClusterClick`, `legend`, `groupColors`, `flagRing`, `animate`, and the
 * client's options (`rate`, `pace`, `algorithm`, `encoding`, `presence`, `filter`, `token`;
 * `layer.setFilter(expression)` changes the filter). Fires `clusterclick`
 * `{feature, latlng, leaves, children}` and `pointclick` `{feature, latlng}`; see docs/client.md.
 */
export function pinwheelLayer(url, options) {
    return new (layerClass())(url, options);
}

/** The layer's own part of the class: options, add and remove, the view, events. */
const LayerCore = {
    options: {
        clusterIcon: defaultClusterIcon,
        pointStyle: DEFAULT_POINT_STYLE,
        popup: defaultPopup,
        clusterPopup: null,
        clusterList: false,
        clusterListPageSize: DEFAULT_LIST_PAGE_SIZE,
        zoomOnClusterClick: true,
        pointIcon: null,
        headingProperty: DEFAULT_HEADING_PROPERTY,
        legend: true,
        groupColors: null,
        flagRing: FLAG_RING_COLOR,
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
                                canApply: () => this._map && !zoomAnimating(this._map) && !this._flying };
        for (const k of ['rate', 'pace', 'algorithm', 'encoding', 'token', 'filter']) if (o[k] !== undefined) clientOptions[k] = o[k];
        /** The stream (web/pinwheel/client.js); listen to it for anything the layer does not fire. */
        this.client = new PinwheelClient(url, clientOptions);
        this.client.state.counters.splits = 0;
        this.client.state.counters.merges = 0;
        this.client.state.timing.animateMaxMs = 0;
        /** id → {layer, feature, leg, dot, origin}: what is drawn for each feature of the store. */
        this.markers = new Map();
        this._initDrawing();
        this._initSpread();
        this._initMotion();
        this._initContents();
        this._initIcons();
        this._flying = false;
        /** A viewport for where the running pan or zoom animation ends has been sent. */
        this._predicted = false;
        this._insidePanBy = false;
        /** The keyboard's list of the markers in view (web/pinwheel/keyboard.js), while on a map. */
        this._keyboard = null;
        this._listenToClient(this.client);
    },

    _listenToClient: function (c) {
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
        const canvas = rendererCanvas(this._renderer);
        canvas.style.pointerEvents = 'none';
        // Screen readers and keyboards reach the markers through a list of buttons instead.
        canvas.setAttribute('aria-hidden', 'true');
        this._stopHitTesting = hitTesting(map, (e) => this._markerAt(e), (entry) => this._onMarkerClick(entry));
        this._addKeyboard(map);
        this._group = L.featureGroup().addTo(map);
        this._expansionGroup = L.featureGroup().addTo(map);
        this._stopDragRedraw = redrawWhileDragging(map, this._renderer);
        this._wrapCenter = map.getCenter().lng;
        map.on('move zoom', this._onMove, this);
        map.on('zoomanim', this._onZoomAnim, this);
        this._unwrapPanBy = watchPanBy(map, (inside) => {
            this._insidePanBy = inside;
        }, () => this._onPanStart());
        map.on('moveend', this._onMoveEnd, this);
        map.on('zoomstart', this._clearSpread, this);
        map.on('zoomend', this._scheduleFit, this);
        map.on('click', this._clearSpread, this);
        // The features already held (the layer was removed and added again) are drawn at once.
        for (const f of this.client.features.values()) this._draw(f, null, 1);
        if (!this.client.connected) this.client.connect();
        this._updateLegend(this.client.state.hello);
        this._onMove();
    },

    _addKeyboard: function (map) {
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
        this._updateLegend(null);
        map.removeLayer(this._group);
        map.removeLayer(this._expansionGroup);
        this.client.close();
    },

    /** Shows only the points `expression` (a filter, docs/protocol.md) matches; null shows them all. */
    setFilter: function (expression) {
        this.client.setFilter(expression);
        return this;
    },

    /** True when the map is still (no flight, zoom or pan animation) and its view has been served
     *  and applied. */
    settled: function () {
        const map = this._map;
        return this.client.settled() && !this._flying && !zoomAnimating(map) && !panAnimating(map);
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
                this._map.flyTo(latlng, Math.min(msg.zoom, this._map.getMaxZoom()), { duration: EXPANSION_FLIGHT_S });
            } else if (Array.isArray(msg.spread)) {
                this._showSpread(msg);
            }
            return msg;
        });
    },

    /** Empties the drawing (the client's store was reset, or the layer leaves the map). */
    _clearDrawing: function () {
        this._resetMotion();
        if (this._group) this._group.clearLayers();
        this._clearSpread();
        this.markers.clear();
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
        const centre = this._flying ? null : panTarget(this._map);
        if (!centre) {
            // Not animated (or already over): the view is where it is.
            this._onMove(true);
            return;
        }
        this.client.setViewport(this._viewAt(centre, this._map.getZoom()), { now: true });
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
        this._setSizing(scale, maxRadius);
        this._onContentsDescribed(msg);
        this.fire('hello', msg);
    },
};

let PinwheelLayer = null;
/** The class, made on first use (Leaflet must be loaded by then, not when this module is). */
function layerClass() {
    if (PinwheelLayer) return PinwheelLayer;
    PinwheelLayer = L.Layer.extend(LayerCore);
    PinwheelLayer.include(Drawing);
    PinwheelLayer.include(SpreadLegs);
    PinwheelLayer.include(Motion);
    PinwheelLayer.include(Clicks);
    PinwheelLayer.include(Contents);
    PinwheelLayer.include(Members);
    PinwheelLayer.include(PointIcons);
    return PinwheelLayer;
}
