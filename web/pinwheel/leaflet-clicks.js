/* Clicks on the Pinwheel layer's markers: which marker a click landed on (the canvas lets every event
 * through to the layers beneath), the layer's `clusterclick` and `pointclick` events, and the popups
 * that follow. Included into the layer class (web/pinwheel/leaflet.js).
 */

import { dragging, markerContains, zoomAnimating } from './leaflet-internals.js';

/** Popups open this far (pixels) above the marker's centre. */
const POPUP_OFFSET = [0, -4];

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

/**
 * Clicks on markers drawn on a canvas that lets events through: a listener on the map's container,
 * in the capture phase, takes a click that lands on a marker (`find(event)` returns it) before any
 * layer beneath sees it, and hands it to `click(marker)`; other clicks go on to their targets. The
 * pointer becomes a hand over markers.
 * @returns a function that stops it.
 */
export function hitTesting(map, find, click) {
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
        const over = !zoomAnimating(map) && !dragging() && find(lastMove) !== null;
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

// ---- Included into the layer ---------------------------------------------------------------------

export const Clicks = {
    /** The marker drawn on top at a mouse event's position (a spread pin before the markers),
     *  as Leaflet's canvas renderer would find it; null when there is none. */
    _markerAt: function (e) {
        const p = this._map.mouseEventToLayerPoint(e);
        for (const entry of this.spread.values()) if (markerContains(entry.layer, p)) return entry;
        let hit = null;
        for (const entry of this.markers.values()) {
            const layer = entry.layer;
            if (layer.options.opacity > 0 && markerContains(layer, p)) hit = entry;
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
        if (entry.feature.count > 1) this._clusterClick(entry.feature, latlng);
        else this._pointClick(entry.feature, latlng);
    },

    /** A click on a cluster: `clusterclick` (with methods that fetch its members), then its popup
     *  (`clusterPopup`), else its member list (`clusterList`), else a zoom to where it splits. */
    _clusterClick: function (f, latlng) {
        this.fire('clusterclick', Object.assign({ feature: f, latlng: latlng }, this._memberMethods(f)));
        const content = this.options.clusterPopup ? this.options.clusterPopup(f, this) : null;
        if (content) {
            L.popup({ offset: POPUP_OFFSET }).setLatLng(latlng).setContent(content).openOn(this._map);
        } else if (this.options.clusterList) {
            this._openMemberList(f, latlng);
        } else if (this.options.zoomOnClusterClick) {
            this.zoomToExpansion(f, latlng).catch((err) => console.warn(`pinwheel: ${err}`));
        }
    },

    _pointClick: function (f, latlng) {
        this.fire('pointclick', { feature: f, latlng: latlng });
        const content = this.options.popup ? this.options.popup(f) : null;
        if (content) L.popup({ offset: POPUP_OFFSET }).setLatLng(latlng).setContent(content).openOn(this._map);
    },
};
