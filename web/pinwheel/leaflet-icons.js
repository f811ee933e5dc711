/* Point icons of the Pinwheel layer: an icon per category (a built-in shape, an SVG or any image,
 * chosen by a property), turned to the point's heading: its heading property, or, for a point
 * without one, the direction of its last move. Included into the layer class (web/pinwheel/leaflet.js).
 */

import { CLUSTER_HALO_WEIGHT } from './leaflet-drawing.js';

// ---- Constants -----------------------------------------------------------------------------------

/** An icon's size (pixels across) and colours unless its spec says otherwise. */
const ICON_SIZE_PX = 16;
const ICON_COLOR = '#22d3ee';
const ICON_OUTLINE = '#0b1220';
const ICON_OUTLINE_WIDTH = 1.5;
/** Headings are drawn in steps of this many degrees (one sprite per step). */
const HEADING_STEP_DEG = 5;
/** The property a point's heading is read from unless `headingProperty` names another. */
export const DEFAULT_HEADING_PROPERTY = 'heading';
/** Moves shorter than this (pixels at zoom 0, where the world is 256 wide) leave the heading as it was. */
const MIN_MOVE_PX = 1e-7;
/** Headings remembered from moves, at most (the oldest go first). */
const HEADINGS_LIMIT = 20000;
/** Built-in shapes, pointing north before they are turned: corners as fractions of the size. */
const SHAPES = {
    arrow: [[0, -0.5], [0.4, 0.5], [0, 0.22], [-0.4, 0.5]],
    triangle: [[0, -0.5], [0.45, 0.45], [-0.45, 0.45]],
    square: [[-0.4, -0.4], [0.4, -0.4], [0.4, 0.4], [-0.4, 0.4]],
};

/** Degrees clockwise from north of the move from `a` to `b` (points projected at zoom 0), or null. */
export function headingOfMove(a, b) {
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    if (Math.abs(dx) < MIN_MOVE_PX && Math.abs(dy) < MIN_MOVE_PX) return null;
    // Screen y grows southwards: north is −y.
    return (Math.atan2(dx, -dy) * 180 / Math.PI + 360) % 360;
}

/** An icon spec in full: `{shape | svg | image, size, color, outline, rotate}`. */
function fullSpec(spec) {
    const s = typeof spec === 'string' ? { shape: spec } : spec;
    return Object.assign({ size: ICON_SIZE_PX, color: ICON_COLOR, outline: ICON_OUTLINE, rotate: true }, s);
}

function drawShape(ctx, c, spec) {
    const size = spec.size;
    ctx.beginPath();
    if (spec.shape === 'dot' || !SHAPES[spec.shape]) {
        ctx.arc(c, c, size / 2 - ICON_OUTLINE_WIDTH / 2, 0, Math.PI * 2);
    } else {
        SHAPES[spec.shape].forEach(([x, y], i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, c + x * size, c + y * size));
        ctx.closePath();
    }
    ctx.fillStyle = spec.color;
    ctx.fill();
    ctx.lineJoin = 'round';
    ctx.lineWidth = ICON_OUTLINE_WIDTH;
    ctx.strokeStyle = spec.outline;
    ctx.stroke();
}

// ---- Included into the layer ---------------------------------------------------------------------

export const PointIcons = {
    _initIcons: function () {
        /** id → degrees: the heading of points that move without a heading property. */
        this._headings = new Map();
        /** SVG text → {image, ready}: SVG icons, loaded once. */
        this._svgImages = new Map();
        this._iconIds = new Map();
    },

    /** The icon spec for a point, or null for the default dot (`pointIcon` option). */
    _pointIconSpec: function (feature) {
        const o = this.options.pointIcon;
        if (!o) return null;
        if (typeof o === 'function') return o(feature) || null;
        const value = (feature.properties || {})[o.property];
        const icons = o.icons || {};
        const spec = value !== undefined && Object.prototype.hasOwnProperty.call(icons, value) ? icons[value] : o.fallback;
        return spec || null;
    },

    /** A point's heading in degrees clockwise from north: its heading property, else its last move's; null when neither. */
    _heading: function (feature) {
        const raw = (feature.properties || {})[this.options.headingProperty || DEFAULT_HEADING_PROPERTY];
        const given = raw === undefined || raw === '' ? NaN : Number(raw);
        if (Number.isFinite(given)) return ((given % 360) + 360) % 360;
        const moved = this._headings.get(feature.id);
        return moved === undefined ? null : moved;
    },

    /** A point moved from `previous` to `next` (same id): without a heading property, its heading
     *  becomes the move's direction. */
    _noteMove: function (previous, next) {
        if (!this._map || next.count !== 1 || previous.count !== 1) return;
        const a = this._map.project([previous.lat, previous.lon], 0);
        // A move across the antimeridian is the short way round, not most of a turn back.
        const lon = next.lon + 360 * Math.round((previous.lon - next.lon) / 360);
        const b = this._map.project([next.lat, lon], 0);
        const heading = headingOfMove(a, b);
        if (heading === null) return;
        this._headings.delete(next.id);
        if (this._headings.size >= HEADINGS_LIMIT) this._headings.delete(this._headings.keys().next().value);
        this._headings.set(next.id, heading);
    },

    /** Leaflet options for a point's marker: its icon turned to its heading, else the dot of `pointStyle`. */
    _pointMarkerStyle: function (feature, alpha) {
        const spec = this._pointIconSpec(feature);
        const sprite = spec ? this._iconSprite(fullSpec(spec), this._heading(feature)) : null;
        if (sprite) {
            return { renderer: this._renderer, radius: sprite.radius, weight: CLUSTER_HALO_WEIGHT, opacity: alpha,
                     sprite: sprite };
        }
        const style = this._pointStyle(feature);
        return { renderer: this._renderer, radius: style.radius, weight: CLUSTER_HALO_WEIGHT, opacity: alpha,
                 sprite: this._pointSprite(style) };
    },

    /** The sprite of an icon at a heading (degrees, or null: unturned); null while its SVG loads. */
    _iconSprite: function (spec, heading) {
        const image = spec.image || (spec.svg ? this._svgImage(spec.svg) : null);
        if (spec.svg && !image) return null;
        const step = spec.rotate && heading !== null ? Math.round(heading / HEADING_STEP_DEG) % (360 / HEADING_STEP_DEG) : 0;
        const what = image ? `img${this._iconId(image)}` : spec.shape;
        const key = `i|${what}|${spec.size}|${spec.color}|${spec.outline}|${step}`;
        // Room for the icon turned any way: its diagonal.
        const sprite = this._sprite(key, spec.size * Math.SQRT1_2, (ctx, c) => {
            ctx.translate(c, c);
            ctx.rotate((step * HEADING_STEP_DEG * Math.PI) / 180);
            ctx.translate(-c, -c);
            if (image) ctx.drawImage(image, c - spec.size / 2, c - spec.size / 2, spec.size, spec.size);
            else drawShape(ctx, c, spec);
        });
        sprite.radius = spec.size / 2;
        sprite.heading = step * HEADING_STEP_DEG;
        return sprite;
    },

    /** A number naming an image among the icons, for sprite keys. */
    _iconId: function (image) {
        let id = this._iconIds.get(image);
        if (id === undefined) this._iconIds.set(image, (id = this._iconIds.size));
        return id;
    },

    /** The loaded image of an SVG icon, or null while it loads (the points are restyled when it has). */
    _svgImage: function (svg) {
        let entry = this._svgImages.get(svg);
        if (!entry) {
            const image = new Image();
            entry = { image: image, ready: false };
            this._svgImages.set(svg, entry);
            image.onload = () => {
                entry.ready = true;
                this._restylePoints();
            };
            image.onerror = () => console.warn('pinwheel: an SVG point icon did not load');
            image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
        }
        return entry.ready ? entry.image : null;
    },

    _restylePoints: function () {
        for (const entry of this.markers.values()) {
            if (entry.feature.count !== 1) continue;
            const style = this._style(entry.feature, entry.layer.options.opacity);
            entry.layer.setStyle({ sprite: style.sprite });
            entry.layer.setRadius(style.radius);
        }
    },
};
