/* Shareable views for a Leaflet map: the URL hash (`#lat,lon,zoom`) follows the map, and a link with
 * one opens the same view. Exported by web/pinwheel/leaflet.js.
 */

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
