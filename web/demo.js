/* The demo page: a Leaflet map with the Pinwheel layer, an offline basemap, a HUD with settings, and
 * other viewers' viewports as outlines. A user of web/pinwheel/ like any other; tests read it through
 * window.pinwheel.
 */

import { followHash, pinwheelLayer, redrawWhileDragging, viewFromHash } from './pinwheel/leaflet.js';
import { MAX_VIEWPORT_RATE } from './pinwheel/client.js';

// ---- Constants -----------------------------------------------------------------------------------

/** HUD refresh period and the window over which per-second rates are measured. */
const HUD_INTERVAL_MS = 250;
const RATE_WINDOW_MS = 1000;
/** Offline basemap shipped next to this file: GeoJSON of Natural Earth 1:110m countries (public
 *  domain). Named .json because libwebsockets' static mounts answer 415 to unknown suffixes. */
const BASEMAP_URL = 'world-110m.json';
const BASEMAP_ATTRIBUTION = 'Basemap: Natural Earth (public domain)';
/** Longest the basemap waits for the first markers before it is drawn anyway. */
const BASEMAP_WAIT_MS = 400;
const BASEMAP_STYLE = { color: '#3b5068', weight: 0.8, fillColor: '#1b2a3b', fillOpacity: 1 };
/** Page-side pace choices in markers per millisecond; Infinity applies each batch at once. */
const PACE_STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, Infinity];
/** First view when neither the hash nor `?lat=&lon=&zoom=` names one. */
const DEFAULT_VIEW = { lat: 30, lon: 10, zoom: 3 };
/** Outlines of other sessions' viewports (presence; off with ?presence=0). */
const PRESENCE_STYLE = { color: '#f472b6', weight: 1.5, opacity: 0.7, fill: true, fillOpacity: 0.04,
                         dashArray: '5 4', interactive: false };
const PRESENCE_DOT_STYLE = { radius: 3, color: '#f472b6', weight: 0, fillColor: '#f472b6', fillOpacity: 0.9,
                             interactive: false };
/** Points by their `kind`: the simulated vehicles (`serve --movers`) are arrows turned the way they
 *  drive; everything else (the cities) keeps the amber dot. */
const POINT_ICONS = { property: 'kind', icons: { vehicle: { shape: 'arrow', size: 15, color: '#22d3ee' } } };

// ---- Map -------------------------------------------------------------------------------------------

const params = new URLSearchParams(location.search);

function socketURL() {
    return params.get('ws') || (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/';
}

function initialView() {
    const fromHash = viewFromHash(location.hash);
    if (fromHash) return fromHash;
    const num = (k) => parseFloat(params.get(k));
    return {
        lat: Number.isFinite(num('lat')) ? num('lat') : DEFAULT_VIEW.lat,
        lon: Number.isFinite(num('lon')) ? num('lon') : DEFAULT_VIEW.lon,
        zoom: Number.isFinite(num('zoom')) ? num('zoom') : DEFAULT_VIEW.zoom,
    };
}

const view = initialView();
const map = L.map('map', { zoomControl: false, minZoom: 1, maxZoom: 20, worldCopyJump: false, preferCanvas: true })
    .setView([view.lat, view.lon], view.zoom);
L.control.zoom({ position: 'bottomright' }).addTo(map);
map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');

const layer = pinwheelLayer(socketURL(), {
    algorithm: params.get('algorithm') || undefined,
    encoding: params.get('encoding') || undefined,
    presence: params.get('presence') !== '0',
    clusterPopup: aggregatesPopup,
    // `?list=1`: a click on a cluster lists its points instead of zooming.
    clusterList: params.get('list') === '1',
    pointIcon: POINT_ICONS,
}).addTo(map);
const client = layer.client;
const state = client.state;
// The tests read the drawing beside the stream's figures.
state.markers = layer.markers;
state.spread = layer.spread;
state.rates = { adds: 0, removes: 0, updates: 0 };
followHash(map);

// ---- Basemap ---------------------------------------------------------------------------------------

/** `?tiles=URL&attribution=TEXT` uses a raster tile server; otherwise the offline vector world. */
function setUpBasemap() {
    const tiles = params.get('tiles');
    if (tiles) {
        L.tileLayer(tiles, { maxZoom: 20, attribution: escapeHTML(params.get('attribution') || '') }).addTo(map);
        document.body.classList.add('tiles');
        return;
    }
    map.attributionControl.addAttribution(BASEMAP_ATTRIBUTION);
    map.createPane('basemap').style.zIndex = 200;
    const renderer = L.canvas({ pane: 'basemap' });
    redrawWhileDragging(map, renderer);
    // Fetched at once, drawn once the first markers are (or BASEMAP_WAIT_MS passed), in a task of its
    // own: building 177 country polygons must not delay the first markers.
    const firstMarkersOrTimeout = new Promise((resolve) => {
        const stop = client.on('batch-applied', () => {
            if (!client.features.size) return;
            stop();
            setTimeout(resolve, 0);
        });
        setTimeout(resolve, BASEMAP_WAIT_MS);
    });
    Promise.all([fetch(BASEMAP_URL).then((r) => {
        if (!r.ok) throw new Error(`basemap ${BASEMAP_URL}: HTTP ${r.status}`);
        return r.json();
    }), firstMarkersOrTimeout])
        .then(([world]) => {
            L.geoJSON(world, { renderer: renderer, pane: 'basemap', interactive: false, style: BASEMAP_STYLE }).addTo(map);
        })
        .catch((e) => console.warn(String(e)));
}
setUpBasemap();

function escapeHTML(s) {
    return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// ---- Cluster popup with aggregates (`serve --aggregate`) ------------------------------------------

/** A cluster's popup when the server aggregates columns: its count, each aggregate as hello announced
 *  it, and a button that opens the cluster as a plain click does. Null (plain click) otherwise. */
function aggregatesPopup(f, owner) {
    if (!f.aggregates) return null;
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
        owner.zoomToExpansion(f);
    });
    root.appendChild(zoom);
    return root;
}

// ---- Presence --------------------------------------------------------------------------------------

const presenceGroup = L.featureGroup().addTo(map);

/** Replaces the outlines; a box over the antimeridian (west > east) is drawn as its two halves. */
client.on('presence', (msg) => {
    presenceGroup.clearLayers();
    for (const v of Array.isArray(msg.viewports) ? msg.viewports : []) {
        const [w, s, e, n] = v.bbox;
        const spans = w > e ? [[w, 180], [-180, e]] : [[w, e]];
        for (const [west, east] of spans) L.rectangle([[s, west], [n, east]], PRESENCE_STYLE).addTo(presenceGroup);
        // A dot at the centre keeps a city-sized view visible when the map shows the world.
        const lon = w > e ? (w + e + 360) / 2 : (w + e) / 2;
        L.circleMarker([(s + n) / 2, lon], PRESENCE_DOT_STYLE).addTo(presenceGroup);
    }
});

// ---- HUD -------------------------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);
const el = {
    root: $('hud'), toggle: $('hud-toggle'), conn: $('hud-conn'), refusal: $('hud-refusal'), dataset: $('hud-dataset'), points: $('hud-points'),
    clusters: $('hud-clusters'), adds: $('hud-adds'), removes: $('hud-removes'), updates: $('hud-updates'),
    bytes: $('hud-bytes'), encoding: $('hud-encoding'), settled: $('hud-settled'), inflight: $('hud-inflight'), capped: $('hud-capped'),
    algorithm: $('set-algorithm'), pace: $('set-pace'), paceOut: $('set-pace-out'),
    filterKind: $('set-filter-kind'), filterCC: $('set-filter-cc'), matching: $('filter-matching'),
    rate: $('set-rate'), rateOut: $('set-rate-out'),
};
/** Samples of cumulative counters for the per-second rates. */
const samples = [];
let datasetName = '';

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
    el.points.textContent = state.points.toLocaleString('en');
    el.clusters.textContent = state.clusters.toLocaleString('en');
    el.adds.textContent = state.rates.adds.toLocaleString('en');
    el.removes.textContent = state.rates.removes.toLocaleString('en');
    el.updates.textContent = state.rates.updates.toLocaleString('en');
    el.bytes.textContent = formatBytes(c.bytes);
    el.encoding.textContent = state.encoding === 'binary' ? 'binary' : state.encoding === 'json' ? 'JSON' : '';
    el.settled.textContent = state.settledMs === null ? '–' : `${state.settledMs} ms`;
    el.inflight.textContent = String(state.inFlight);
    el.capped.hidden = !state.capped;
    if (state.capped) {
        const { limit, available } = state.capped;
        el.capped.textContent = `Showing the ${limit.toLocaleString('en')} nearest of ${available.toLocaleString('en')} — zoom in for the rest`;
    }
}

client.on('hello', (msg) => {
    const d = msg.dataset || {};
    datasetName = d.name || 'dataset';
    el.dataset.textContent = `${datasetName} · ${(d.points || 0).toLocaleString('en')} points`;
    if (/geonames/i.test(datasetName)) map.attributionControl.addAttribution('Data © <a href="https://www.geonames.org/">GeoNames</a> (CC BY 4.0)');
    const algorithms = Array.isArray(msg.algorithms) ? msg.algorithms : [msg.algorithm];
    el.algorithm.replaceChildren(...algorithms.filter(Boolean).map((a) => new Option(a, a, false, a === msg.algorithm)));
    el.algorithm.disabled = algorithms.length < 2;
    // Each hello after a filter counts the points passing it.
    el.matching.textContent = (d.points || 0).toLocaleString('en');
});

/** The filter box's expression (MapLibre style-spec syntax, see docs/protocol.md); null for none. */
function filterExpression() {
    const parts = [];
    const kind = el.filterKind.value;
    if (kind === 'place') parts.push(['in', ['get', 'kind'], ['literal', ['city', 'shop']]]);
    else if (kind) parts.push(['==', ['get', 'kind'], kind]);
    const cc = el.filterCC.value.trim().toUpperCase();
    if (cc) parts.push(['==', ['get', 'cc'], cc]);
    if (parts.length === 0) return null;
    return parts.length === 1 ? parts[0] : ['all', ...parts];
}
el.filterKind.addEventListener('change', () => client.setFilter(filterExpression()));
el.filterCC.addEventListener('change', () => client.setFilter(filterExpression()));
/** The connection's state, the one live region of the page: changed only when the state does, so
 *  screen readers hear each change once (the figures above change many times a second). */
function showConnection() {
    el.root.dataset.connection = state.connection;
    const text = state.connection === 'open' ? 'live' : state.connection;
    if (el.conn.textContent !== text) el.conn.textContent = text;
    el.refusal.hidden = state.connection !== 'refused';
    el.refusal.textContent = state.connection === 'refused' ? state.refusal : '';
}

client.on('status', () => {
    showConnection();
    refresh();
});

el.algorithm.addEventListener('change', () => client.setAlgorithm(el.algorithm.value));

el.pace.max = String(PACE_STEPS.length - 1);
el.pace.value = String(PACE_STEPS.indexOf(state.settings.pace));
function showPace() {
    const p = state.settings.pace;
    el.paceOut.textContent = p === Infinity ? 'max' : `${p}/ms`;
}
el.pace.addEventListener('input', () => {
    client.setPace(PACE_STEPS[Number(el.pace.value)]);
    showPace();
});

el.rate.max = String(MAX_VIEWPORT_RATE);
el.rate.value = String(state.settings.rate);
function showRate() {
    el.rateOut.textContent = `${state.settings.rate}/s`;
}
el.rate.addEventListener('input', () => {
    client.setRate(Number(el.rate.value));
    showRate();
});

// The panel folds to its header so it never hides markers people want to click.
el.toggle.addEventListener('click', () => {
    const collapsed = el.root.classList.toggle('collapsed');
    el.toggle.setAttribute('aria-expanded', String(!collapsed));
    el.toggle.textContent = collapsed ? '▸' : '▾';
});
if (map.getSize().x < 700) el.toggle.click();

showPace();
showRate();
setInterval(refresh, HUD_INTERVAL_MS);

// ---- Namespace for tests and the console -------------------------------------------------------

window.pinwheel = {
    state: state,
    map: map,
    layer: layer,
    client: client,
    /** Other viewers' viewport outlines. */
    presence: presenceGroup,
    /** True when the map is still and the last viewport sent has been served and applied completely. */
    settled: () => layer.settled(),
    /** True while markers are still moving or fading. */
    animating: () => layer.animating(),
    send: (msg) => client.send(msg),
};
