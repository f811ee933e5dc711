import { pinwheelLayer } from '../pinwheel/leaflet.js';

const map = L.map('map').setView([48, 10], 5);
L.tileLayer('https://tile.openstreetmap.org/{z}/{x}/{y}.png', {
    attribution: '© OpenStreetMap contributors',
}).addTo(map);

const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
window.markers = pinwheelLayer(url).addTo(map);
