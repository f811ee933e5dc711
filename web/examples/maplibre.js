import { pinwheelMapLibre } from '../pinwheel/maplibre.js';

// The pages Pinwheel serves allow no worker from a blob: URL: MapLibre's worker comes as a file.
maplibregl.setWorkerUrl('/vendor/maplibre/maplibre-gl-worker.js');

// The sea is the container's background, not a background layer.
document.getElementById('map').style.background = '#0c1624';

const map = new maplibregl.Map({
    container: 'map',
    center: [10, 48],
    zoom: 4,
    // Count labels appear with their circles, not faded in over the next frames.
    fadeDuration: 0,
    style: {
        version: 8,
        sources: {
            // Natural Earth 1:110m countries (public domain), shipped with the demo.
            world: { type: 'geojson', data: '../world-110m.json', attribution: 'Natural Earth' },
        },
        layers: [
            { id: 'land', type: 'fill', source: 'world', paint: { 'fill-color': '#1b2a3b', 'fill-outline-color': '#3b5068' } },
        ],
    },
});

const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
window.markers = pinwheelMapLibre(url).addTo(map);
window.map = map;
