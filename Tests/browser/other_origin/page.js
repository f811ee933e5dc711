/* An app served from another origin than the Pinwheel server's: Leaflet from the Pinwheel server
 * (a classic script), the Pinwheel modules imported from `?modules=` (the Pinwheel server, or this
 * page's own folder when they are self-hosted), and the layer connected to `?server=`. What happens
 * is recorded in `window.embedded` for the tests. */

const params = new URLSearchParams(location.search);
const server = params.get('server');
const modules = params.get('modules') || server;
const embedded = { ready: false, importError: null, events: [] };
window.embedded = embedded;

function load(tag, attributes) {
    return new Promise((resolve, reject) => {
        const el = Object.assign(document.createElement(tag), attributes);
        el.onload = resolve;
        el.onerror = () => reject(new Error(`cannot load ${attributes.src || attributes.href}`));
        document.head.appendChild(el);
    });
}

try {
    await load('link', { rel: 'stylesheet', href: `${server}/vendor/leaflet/leaflet.css` });
    await load('script', { src: `${server}/vendor/leaflet/leaflet.js` });
    const { pinwheelLayer } = await import(`${modules}/pinwheel/leaflet.js`);
    const map = L.map('map').setView([48, 10], 5);
    const layer = pinwheelLayer(server.replace(/^http/, 'ws') + '/').addTo(map);
    for (const type of ['status', 'stale', 'refused']) {
        layer.client.on(type, (e) => embedded.events.push([type, e.connection || e.reason || e.silentMs || null]));
    }
    Object.assign(embedded, { map: map, layer: layer, client: layer.client, ready: true });
} catch (e) {
    embedded.importError = String(e);
}
