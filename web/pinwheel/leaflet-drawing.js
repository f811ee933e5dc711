/* Canvas drawing of the Pinwheel layer: the default styles, each marker as a pre-rendered sprite on
 * the layer's canvas, where a feature is drawn (longitudes wrapped to the view) and cluster icons
 * fitted to the room their neighbours leave. Included into the layer class (web/pinwheel/leaflet.js).
 */

import { spriteMarkerClass, zoomAnimating } from './leaflet-internals.js';

// ---- Constants -----------------------------------------------------------------------------------

/** Points: small amber dots with a dark rim. */
export const DEFAULT_POINT_STYLE = { radius: 5, color: '#0b1220', weight: 1.5, fillColor: '#fbbf24', opacity: 0.9 };
/** Cluster colour by count: RGB stops at 10^0 … 10^5 points, interpolated on log10(count). */
const CLUSTER_COLOR_STOPS = [
    [45, 212, 191], [56, 189, 248], [129, 140, 248], [192, 132, 252], [232, 121, 249], [251, 146, 60],
];
/** Cluster radius in pixels: base plus growth per decade of count. */
const CLUSTER_RADIUS_BASE = 10;
const CLUSTER_RADIUS_PER_DECADE = 3.6;
/** Leaflet weight of every marker: pads Leaflet's redraw bounds around a cluster's halo. */
export const CLUSTER_HALO_WEIGHT = 6;
const CLUSTER_HALO_OPACITY = 0.35;
const CLUSTER_FILL_OPACITY = 0.92;
const CLUSTER_LABEL_COLOR = '#0b1220';
const CLUSTER_LABEL_FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
/** A cluster's icon radius is at most this share of the distance to its nearest neighbouring
 *  cluster (two such icons overlap by less than a quarter of a radius), but at least MIN_ICON_RADIUS. */
const NEIGHBOUR_RADIUS_SHARE = 0.55;
const MIN_ICON_RADIUS = 8;
/** Grid cell (pixels) in which the icon fit looks for neighbours: larger than any icon's room. */
const FIT_GRID_CELL_PX = 64;
/** Distinct marker sprites kept (one per colour, size and label seen). */
const SPRITE_CACHE_LIMIT = 4000;
/** Cluster labels: the font size for an icon of radius 14 or more (smaller icons start smaller, at
 *  LABEL_FONT_START_MIN_PX), shrunk down to MIN_LABEL_FONT_PX before the icon grows to fit it; and
 *  the room kept between the label and the icon's edge. */
const LABEL_FONT_PX = 11;
const LABEL_FONT_START_MIN_PX = 9;
const MIN_LABEL_FONT_PX = 7;
const LABEL_PAD_PX = 0;
/** Half the height of a label's digits as a share of the font size (their cap height is ~0.72 em). */
const LABEL_HALF_HEIGHT_EM = 0.36;
/** Donuts: the hole is at least this share of the radius, the ring at least DONUT_MIN_RING_PX wide. */
const DONUT_HOLE_SHARE = 0.62;
const DONUT_MIN_RING_PX = 2.5;
const DONUT_HOLE_COLOR = '#0f172a';
const DONUT_LABEL_COLOR = '#f8fafc';
/** The flag ring: its width and its gap outside the icon. */
const FLAG_RING_WIDTH = 2.5;
const FLAG_RING_GAP = 1.5;
/** Label widths measured, by font size and text. */
const LABEL_WIDTH_CACHE_LIMIT = 4000;

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

function circlePath(ctx, c, r) {
    ctx.beginPath();
    ctx.arc(c, c, r, 0, Math.PI * 2);
}

function labelFont(fontPx) {
    return `600 ${fontPx}px ${CLUSTER_LABEL_FONT_FAMILY}`;
}

let measuring = null;
const labelWidths = new Map();

/** Width in pixels of `label` drawn at `fontPx`. */
function labelWidth(label, fontPx) {
    const key = `${fontPx}|${label}`;
    let w = labelWidths.get(key);
    if (w === undefined) {
        if (!measuring) measuring = document.createElement('canvas').getContext('2d');
        measuring.font = labelFont(fontPx);
        w = measuring.measureText(label).width;
        if (labelWidths.size >= LABEL_WIDTH_CACHE_LIMIT) labelWidths.clear();
        labelWidths.set(key, w);
    }
    return w;
}

/** The width a label of `fontPx` has inside a disc of radius `r`: the chord at its digits' top and
 *  bottom, less the padding. */
function labelRoom(r, fontPx) {
    const h = LABEL_HALF_HEIGHT_EM * fontPx;
    return r > h ? 2 * Math.sqrt(r * r - h * h) - 2 * LABEL_PAD_PX : 0;
}

/**
 * Fits a cluster's label into its icon: the font shrinks (to MIN_LABEL_FONT_PX) until the label fits
 * inside the disc the label is drawn on (a plain icon's whole disc, a donut's hole), and when even
 * the smallest font is too wide the icon grows until it fits.
 * @param {{ring: (r: number) => number, radiusFor: (inner: number) => number}} shape what of the
 *   radius is not the label's (`ring`), and the least radius whose label disc is `inner`.
 * @returns {{radius, fontPx, width, room}} the icon's radius and the label's font, width and room.
 */
export function fitLabel(label, radius, shape) {
    let fontPx = Math.max(LABEL_FONT_START_MIN_PX, Math.round(LABEL_FONT_PX * Math.sqrt(Math.min(1, radius / 14))));
    let width = labelWidth(label, fontPx);
    while (label && width > labelRoom(radius - shape.ring(radius), fontPx) && fontPx > MIN_LABEL_FONT_PX) {
        fontPx--;
        width = labelWidth(label, fontPx);
    }
    if (label && width > labelRoom(radius - shape.ring(radius), fontPx)) {
        const h = LABEL_HALF_HEIGHT_EM * fontPx;
        // Whole halves of a pixel, as icon radii are kept.
        radius = Math.ceil(2 * shape.radiusFor(Math.sqrt((width / 2 + LABEL_PAD_PX) ** 2 + h * h))) / 2;
    }
    return { radius: radius, fontPx: fontPx, width: width, room: labelRoom(radius - shape.ring(radius), fontPx) };
}

/** A plain disc: the label may use all of it. */
const DISC = { ring: () => 0, radiusFor: (inner) => inner };
/** A donut: its ring is what the hole (DONUT_HOLE_SHARE) leaves, at least DONUT_MIN_RING_PX. */
const DONUT = {
    ring: (r) => Math.max(DONUT_MIN_RING_PX, r * (1 - DONUT_HOLE_SHARE)),
    radiusFor: (inner) => Math.max(inner + DONUT_MIN_RING_PX, inner / DONUT_HOLE_SHARE),
};

/** A donut of `segments` ({count, color}) from 12 o'clock clockwise, between the hole and `r`. */
function drawDonut(ctx, c, r, segments, holeColor) {
    const total = segments.reduce((n, s) => n + s.count, 0) || 1;
    const hole = r - DONUT.ring(r);
    let angle = -Math.PI / 2;
    for (const s of segments) {
        const sweep = (2 * Math.PI * s.count) / total;
        ctx.beginPath();
        ctx.arc(c, c, r, angle, angle + sweep);
        ctx.arc(c, c, hole, angle + sweep, angle, true);
        ctx.closePath();
        ctx.fillStyle = s.color;
        ctx.fill();
        angle += sweep;
    }
    circlePath(ctx, c, hole);
    ctx.fillStyle = holeColor;
    ctx.fill();
}

// ---- Included into the layer ---------------------------------------------------------------------

export const Drawing = {
    _initDrawing: function () {
        /** Pre-rendered markers by what they look like (see `_sprite`). */
        this._sprites = new Map();
        /** What cluster icons are sized by: see defaultClusterIcon. */
        this._sizing = { scale: 1, maxRadius: Infinity };
        /** Longitude the markers are wrapped around (the map's centre when last rewrapped). */
        this._wrapCenter = 0;
        this._fitFrame = 0;
    },

    /** The sprite cached under `key`, else a new one of `radius` (plus halo) drawn by `draw(ctx, centre)`. */
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

    /** A cluster's sprite: a disc (or a donut of `icon.segments`) with its label fitted inside, and
     *  a ring when `icon.ring` names its colour. The sprite's `radius` is the icon's (grown to fit
     *  the label); its `label` says how the label fits ({text, width, room, fontPx}). */
    _clusterSprite: function (icon) {
        const segments = Array.isArray(icon.segments) && icon.segments.length ? icon.segments : null;
        const label = icon.label === undefined ? '' : String(icon.label);
        const fit = fitLabel(label, Math.round(icon.radius * 2) / 2, segments ? DONUT : DISC);
        const radius = fit.radius;
        const shares = segments ? segments.map((g) => `${g.color}:${g.count}`).join(',') : '';
        const key = `c|${icon.color}|${radius}|${label}|${icon.textColor}|${fit.fontPx}|${shares}|${icon.ring || ''}`;
        const outer = radius + (icon.ring ? FLAG_RING_GAP + FLAG_RING_WIDTH : 0);
        const sprite = this._sprite(key, outer, (ctx, c) => {
            if (segments) {
                drawDonut(ctx, c, radius, segments, icon.color);
            } else {
                circlePath(ctx, c, radius);
                ctx.globalAlpha = CLUSTER_FILL_OPACITY;
                ctx.fillStyle = icon.color;
                ctx.fill();
                ctx.globalAlpha = CLUSTER_HALO_OPACITY;
                ctx.lineWidth = CLUSTER_HALO_WEIGHT;
                ctx.strokeStyle = icon.color;
                ctx.stroke();
            }
            if (icon.ring) {
                circlePath(ctx, c, radius + FLAG_RING_GAP + FLAG_RING_WIDTH / 2);
                ctx.globalAlpha = 1;
                ctx.lineWidth = FLAG_RING_WIDTH;
                ctx.strokeStyle = icon.ring;
                ctx.stroke();
            }
            ctx.globalAlpha = 1;
            ctx.fillStyle = icon.textColor || CLUSTER_LABEL_COLOR;
            ctx.font = labelFont(fit.fontPx);
            ctx.textAlign = 'center';
            ctx.textBaseline = 'middle';
            ctx.fillText(label, c, c + 0.5);
        });
        sprite.radius = radius;
        sprite.label = { text: label, width: fit.width, room: fit.room, fontPx: fit.fontPx };
        return sprite;
    },

    /** Leaflet options for a feature's marker at opacity `alpha`. `radius` is for hit-testing and
     *  `weight` pads Leaflet's redraw bounds around the halo. */
    _style: function (feature, alpha, room) {
        if (feature.count > 1) {
            const sizing = room === undefined || room >= this._sizing.maxRadius ? this._sizing
                : { scale: this._sizing.scale, maxRadius: room };
            const contents = this._contents(feature);
            const icon = Object.assign(defaultClusterIcon(feature, sizing), this._contentsIcon(contents));
            if (icon.segments) Object.assign(icon, { color: DONUT_HOLE_COLOR, textColor: DONUT_LABEL_COLOR });
            // The default icon function is already applied (its colour by count would fill a donut's hole).
            if (this.options.clusterIcon !== defaultClusterIcon) Object.assign(icon, this.options.clusterIcon(feature, sizing, contents));
            icon.radius = Math.min(icon.radius, sizing.maxRadius);
            const sprite = this._clusterSprite(icon);
            return { renderer: this._renderer, radius: sprite.radius, weight: CLUSTER_HALO_WEIGHT, opacity: alpha,
                     sprite: sprite };
        }
        return this._pointMarkerStyle(feature, alpha);
    },

    /** Sets how cluster icons are sized (from the server's hello) and restyles the clusters drawn. */
    _setSizing: function (scale, maxRadius) {
        if (scale === this._sizing.scale && maxRadius === this._sizing.maxRadius) return;
        this._sizing = { scale: scale, maxRadius: maxRadius };
        for (const entry of this.markers.values()) {
            if (entry.feature.count > 1) entry.layer.setStyle(this._style(entry.feature, 1, entry.room));
        }
    },

    _setAlpha: function (entry, alpha) {
        entry.layer.setStyle({ opacity: alpha });
        this._setLegAlpha(entry, alpha);
    },

    // ---- Where features are drawn ----

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

    /** Draws a feature's marker (and its leg, for a spread pin) at `at` in `group`; returns its entry. */
    _createEntry: function (feature, at, alpha, group) {
        const layer = new (spriteMarkerClass())(at, this._style(feature, alpha));
        layer.pinwheelId = feature.id;
        const entry = { layer: layer, feature: feature, leg: null, dot: null, origin: null };
        this._addLeg(entry, at, alpha, group);
        group.addLayer(layer);
        return entry;
    },

    _removeEntryLayers: function (entry, group) {
        group.removeLayer(entry.layer);
        this._removeLeg(entry, group);
    },

    _place: function (entry, at) {
        entry.layer.setLatLng(at);
        this._placeLeg(entry, at);
    },

    /** The map's centre moved more than a quarter turn from where markers were wrapped: wrap again. */
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

    // ---- Icons fitted to their neighbours ----

    /** Gives each cluster icon room up to its nearest neighbour (NEIGHBOUR_RADIUS_SHARE), using a
     *  grid of the clusters' final screen positions; restyles only those whose room changed. */
    _fitClusters: function () {
        this._fitFrame = 0;
        const map = this._map;
        if (!map || zoomAnimating(map)) return;
        const cell = FIT_GRID_CELL_PX;
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
            const room = Math.max(MIN_ICON_RADIUS, Math.round(NEIGHBOUR_RADIUS_SHARE * nearestIn(grid, c) * 2) / 2);
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
};

/** Distance from cluster `c` to its nearest other cluster in the grid's 3 × 3 cells around it. */
function nearestIn(grid, c) {
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
    return nearest;
}
