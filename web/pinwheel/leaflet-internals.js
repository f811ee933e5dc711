/* The one place the Pinwheel layer touches Leaflet's internals: members whose names start with an
 * underscore, and the map's `panBy`, which it wraps. Written against Leaflet 1.6.0 (Debian's
 * libjs-leaflet, /usr/share/javascript/leaflet/leaflet.js); each use says what it relies on, so a
 * newer Leaflet is checked here and nowhere else. Every other module of the layer goes through these
 * functions or Leaflet's public API.
 */

/** The Leaflet these functions were written and tested against. */
export const LEAFLET_VERSION_WRITTEN_FOR = '1.6.0';

// ---- The map's animations ----------------------------------------------------------------------------

/** Whether a zoom animation runs (`map._animatingZoom`, set between `zoomanim` and its end). */
export function zoomAnimating(map) {
    return Boolean(map && map._animatingZoom);
}

/** Whether an animated pan runs (`map._panAnim`, the PosAnimation panBy starts, and its `_inProgress`). */
export function panAnimating(map) {
    return Boolean(map && map._panAnim && map._panAnim._inProgress);
}

/** Where the running animated pan ends, as the map's centre then; null when none runs. It reads the
 *  PosAnimation's start and offset (`_startPos`, `_offset`) against the map pane's position now. */
export function panTarget(map) {
    const anim = map && map._panAnim;
    if (!anim || !anim._inProgress) return null;
    const target = anim._startPos.add(anim._offset);
    const shift = target.subtract(map._getMapPanePos());
    return map.layerPointToLatLng(map._getCenterLayerPoint().subtract(shift));
}

/** Whether the user is dragging anything (`L.Draggable._dragging`): the map keeps its own cursor. */
export function dragging() {
    return Boolean(L.Draggable._dragging);
}

/**
 * Leaflet starts animated pans (a drag's inertia among them) through `map.panBy`, with no event that
 * says where they end. This wraps this map's `panBy`: `inside(true)` before it runs (its first step
 * fires `move` from inside panBy, before the end is known), `inside(false)` after, then `started()`.
 * @returns a function that takes the wrapper away.
 */
export function watchPanBy(map, inside, started) {
    const panBy = map.panBy;
    const wrapped = function () {
        inside(true);
        let result;
        try {
            result = panBy.apply(this, arguments);
        } finally {
            inside(false);
        }
        started();
        return result;
    };
    map.panBy = wrapped;
    return () => {
        if (map.panBy === wrapped) delete map.panBy;
    };
}

// ---- The canvas renderer ---------------------------------------------------------------------------

/** The renderer's `<canvas>` element (`renderer._container`). */
export function rendererCanvas(renderer) {
    return renderer._container;
}

/**
 * Leaflet's canvas renderers redraw only when a move ends, over the view plus their padding: a held
 * drag past that padding shows nothing in the revealed area. This moves the canvas to the view and
 * redraws it (at most once a frame) whenever a drag reveals ground outside it.
 * @returns a function that stops it.
 */
export function redrawWhileDragging(map, renderer) {
    let frame = 0;
    const check = () => {
        frame = 0;
        // `_bounds`: what the canvas covers, in layer pixels; `_map`: set while on a map.
        const b = renderer._bounds;
        if (!b || !renderer._map || map._animatingZoom) return;
        const size = map.getSize();
        const topLeft = map.containerPointToLayerPoint([0, 0]);
        const view = L.bounds(topLeft, topLeft.add(size));
        if (!b.contains(view)) recentre(renderer);
    };
    const onMove = () => {
        if (!frame) frame = requestAnimationFrame(check);
    };
    map.on('move', onMove);
    return () => {
        map.off('move', onMove);
        if (frame) cancelAnimationFrame(frame);
    };
}

/** Moves a canvas renderer's canvas to the view and redraws it, as its own `_update` at the end of a
 *  move does, but without setting the canvas size again when it has not changed: that reallocates
 *  and re-uploads the whole canvas, which made drag frames long tasks in software compositing. */
function recentre(renderer) {
    const canvas = renderer._container;
    const ratio = L.Browser.retina ? 2 : 1;
    // The base Renderer's `_update` recomputes `_bounds` for the view; Canvas's own also resizes.
    L.Renderer.prototype._update.call(renderer);
    const b = renderer._bounds;
    const size = b.getSize();
    if (canvas.width !== ratio * size.x || canvas.height !== ratio * size.y) {
        renderer._update();
        return;
    }
    L.DomUtil.setPosition(canvas, b.min);
    renderer._ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    renderer._ctx.translate(-b.min.x, -b.min.y);
    // Paths clip themselves to the new bounds and the whole canvas is cleared and drawn again.
    renderer.fire('update');
}

// ---- Markers drawn as sprites ------------------------------------------------------------------------

/** A marker drawn on the shared canvas as a pre-rendered sprite: one drawImage per marker instead of
 *  arcs, strokes and text. It overrides CircleMarker's `_updatePath`, which Canvas calls while it
 *  draws (`_drawing`), and draws on its context (`_ctx`) at the projected point (`_point`);
 *  hit-testing stays CircleMarker's. `options.sprite` is `{canvas, half, size}`. */
let SpriteMarker = null;
export function spriteMarkerClass() {
    if (!SpriteMarker) {
        SpriteMarker = L.CircleMarker.extend({
            _updatePath: function () {
                const renderer = this._renderer;
                if (!renderer._drawing || this._empty()) return;
                const sprite = this.options.sprite;
                const ctx = renderer._ctx;
                ctx.globalAlpha = this.options.opacity;
                // Whole pixels keep the sprite crisp.
                ctx.drawImage(sprite.canvas, Math.round(this._point.x) - sprite.half,
                              Math.round(this._point.y) - sprite.half, sprite.size, sprite.size);
            },
        });
    }
    return SpriteMarker;
}

/** Whether a circle marker drawn on a canvas contains a layer point (`_point` is set once it has
 *  been projected; `_containsPoint` is Canvas's own hit test). */
export function markerContains(marker, layerPoint) {
    return Boolean(marker._point) && marker._containsPoint(layerPoint);
}
