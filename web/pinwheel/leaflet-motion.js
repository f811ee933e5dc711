/* Motion of the Pinwheel layer: the client's feature events become markers that fade in and out,
 * children that split out of their parent cluster, features that merge into the cluster that now
 * holds them, and moves that glide. Included into the layer class (web/pinwheel/leaflet.js).
 */

// ---- Constants -----------------------------------------------------------------------------------

/** Animation lengths: fade-in of a new feature, and the move of a split, merge or update. */
const FADE_MS = 300;
const MOVE_MS = 300;
/** Most features animating at once; beyond it features appear and vanish without animation. */
const MAX_ANIMATIONS = 250;
/** Room (screen pixels) around the view within which a marker's animation can be seen: the largest
 *  cluster icon with its halo. Animations wholly outside it end at once. */
const VISIBLE_MARGIN_PX = 48;
/** How long a removed feature's position can still serve as the origin of its children's split. */
const GHOST_TTL_MS = 3000;
/** Farthest (screen pixels) a split or merge looks for a parent it cannot name by id. */
const NEAREST_PARENT_PX = 160;
/** Most parent links followed to find a merge's target. */
const MAX_ANCESTOR_HOPS = 32;

function easeOutCubic(t) {
    return 1 - Math.pow(1 - t, 3);
}

// ---- Included into the layer ---------------------------------------------------------------------

export const Motion = {
    _initMotion: function () {
        /** entry → the animation it runs ({t0, from, to, fade, removeAtEnd}). */
        this._animations = new Map();
        /** id → entry of a removed feature still fading or merging away. */
        this._retiring = new Map();
        this._animationFrame = 0;
        /** id → parent id, as features named them: how a merge finds its target. */
        this._parentOf = new Map();
        /** id → {at, t} of features removed lately: where their children's split starts. */
        this._ghosts = new Map();
        /** The zoom level the batches serve and whether it went deeper or shallower lately. */
        this._served = { seq: null, level: null, direction: 0, changedAt: -Infinity };
        /** The batch being applied: {add, addById, direction, nearby}. */
        this._batch = null;
    },

    /** Forgets every animation and what splits and merges were told. */
    _resetMotion: function () {
        this._animations.clear();
        if (this._animationFrame) cancelAnimationFrame(this._animationFrame);
        this._animationFrame = 0;
        this._retiring.clear();
        this._parentOf.clear();
        this._ghosts.clear();
        Object.assign(this._served, { seq: null, level: null, direction: 0, changedAt: -Infinity });
    },

    // ---- Animation ----

    _animate: function (entry, spec) {
        const previous = this._animations.get(entry);
        // A move that interrupts a fade-in must not leave the feature half transparent.
        if (previous && previous.fade === 'in' && !spec.fade) this._setAlpha(entry, 1);
        const unseen = !this._mayBeSeen(entry.layer.getLatLng(), spec.to);
        if (!this.options.animate || unseen || (!previous && this._animations.size >= MAX_ANIMATIONS)) {
            if (previous) this._animations.delete(entry);
            this._finishAt(entry, spec);
            return;
        }
        this._animations.set(entry, Object.assign({ t0: performance.now() }, spec));
        if (!this._animationFrame) this._animationFrame = requestAnimationFrame((t) => this._step(t));
    },

    /** Whether an animation from `from` to `to` (or staying at `from`) passes through the view:
     *  a marker fading or moving out of sight is not worth a frame, nor a view waiting for it. */
    _mayBeSeen: function (from, to) {
        const map = this._map;
        if (!map) return false;
        const a = map.latLngToContainerPoint(from);
        const b = to ? map.latLngToContainerPoint(to) : a;
        const size = map.getSize();
        const m = VISIBLE_MARGIN_PX;
        return Math.max(a.x, b.x) >= -m && Math.min(a.x, b.x) <= size.x + m &&
               Math.max(a.y, b.y) >= -m && Math.min(a.y, b.y) <= size.y + m;
    },

    _step: function (now) {
        this._animationFrame = 0;
        const started = performance.now();
        for (const [entry, a] of this._animations) {
            const duration = a.from ? MOVE_MS : FADE_MS;
            const t = Math.min(1, Math.max(0, (now - a.t0) / duration));
            const e = easeOutCubic(t);
            if (a.from) {
                this._place(entry, L.latLng(a.from.lat + (a.to.lat - a.from.lat) * e,
                                            a.from.lng + (a.to.lng - a.from.lng) * e));
            }
            if (a.fade === 'in') this._setAlpha(entry, e);
            else if (a.fade === 'out') this._setAlpha(entry, 1 - e);
            if (t >= 1) {
                this._animations.delete(entry);
                if (a.removeAtEnd) this._finishAt(entry, a);
            }
        }
        if (this._animations.size) this._animationFrame = requestAnimationFrame((t) => this._step(t));
        const timing = this.client.state.timing;
        timing.animateMaxMs = Math.max(timing.animateMaxMs, performance.now() - started);
    },

    _finishAt: function (entry, spec) {
        if (spec.removeAtEnd) {
            this._removeEntryLayers(entry, this._group);
            if (this._retiring.get(entry.feature.id) === entry) this._retiring.delete(entry.feature.id);
            return;
        }
        if (spec.from) this._place(entry, spec.to);
        if (spec.fade === 'in') this._setAlpha(entry, 1);
    },

    // ---- Feature events ----

    /** A batch starts: whether its viewport went deeper (+1: clusters split), shallower (-1:
     *  merge) or stayed (0). A pan right after a zoom change keeps the change's direction for
     *  GHOST_TTL_MS, since the server may finish that change in the pan's batches. */
    _onBatchStart: function (msg) {
        const served = this._served;
        if (msg.seq !== served.seq) {
            const zoom = this.client.viewportZoom.get(msg.seq);
            const level = zoom === undefined ? served.level : Math.floor(zoom);
            const change = served.level === null || level === null ? 0 : Math.sign(level - served.level);
            const now = performance.now();
            if (change !== 0) {
                served.direction = change;
                served.changedAt = now;
            } else if (now - served.changedAt > GHOST_TTL_MS) {
                served.direction = 0;
            }
            served.seq = msg.seq;
            served.level = level;
        }
        let addById = null;
        if (served.direction < 0) {
            addById = new Map();
            for (const f of msg.add || []) addById.set(f.id, f);
        }
        const now = performance.now();
        for (const [id, g] of this._ghosts) if (now - g.t > GHOST_TTL_MS) this._ghosts.delete(id);
        this._batch = { add: msg.add || [], addById: addById, direction: served.direction, nearby: null };
    },

    _onRemoved: function (f) {
        const entry = this.markers.get(f.id);
        if (!entry || !this._map) return;
        this.markers.delete(f.id);
        const at = entry.layer.getLatLng();
        this._ghosts.set(f.id, { at: at, t: performance.now() });
        this._animations.delete(entry);
        this._retiring.set(f.id, entry);
        // A merge: the feature moves into the cluster that now holds it, then vanishes there.
        const c = this._batch;
        const target = c && c.direction < 0 ? this._mergeTarget(entry.feature, at, c) : null;
        if (target) this.client.state.counters.merges++;
        this._animate(entry, { from: target ? at : null, to: target, fade: 'out', removeAtEnd: true });
    },

    _onUpdated: function (f) {
        const entry = this.markers.get(f.id);
        if (!this._map) return;
        if (!entry) {
            this._onAdded(f);
            return;
        }
        this._rememberParent(f);
        const from = entry.layer.getLatLng();
        this._noteMove(entry.feature, f);
        entry.feature = f;
        if (Boolean(entry.leg) !== Boolean(f.anchor)) {
            // Gaining or losing a leg needs other layers; the id stays, the drawing is rebuilt.
            this._removeEntryLayers(entry, this._group);
            this._animations.delete(entry);
            this.markers.set(f.id, this._createEntry(f, this._featureLatLng(f), 1, this._group));
            return;
        }
        const style = this._style(f, 1, entry.room);
        entry.layer.setStyle(style);
        entry.layer.setRadius(style.radius);
        if (entry.dot) entry.dot.setLatLng(this._anchorLatLng(f));
        const to = this._featureLatLng(f);
        if (!from.equals(to)) this._animate(entry, { from: from, to: to, fade: null });
    },

    _onAdded: function (f) {
        if (!this._map) return;
        if (this.markers.has(f.id)) {
            this._onUpdated(f);
            return;
        }
        const old = this._retiring.get(f.id);
        if (old) {
            this._animations.delete(old);
            this._removeEntryLayers(old, this._group);
            this._retiring.delete(f.id);
        }
        this._rememberParent(f);
        const to = this._featureLatLng(f);
        const c = this._batch;
        // A split: children start where their parent was (a spread pin starts on its anchor).
        const from = f.anchor ? this._anchorLatLng(f) : c && c.direction > 0 ? this._splitOrigin(f, to, c) : null;
        const entry = this._draw(f, from, 0);
        if (from && !f.anchor) this.client.state.counters.splits++;
        this._animate(entry, { from: from && !from.equals(to) ? from : null, to: to, fade: 'in' });
    },

    _draw: function (f, from, alpha) {
        const entry = this._createEntry(f, from || this._featureLatLng(f), alpha, this._group);
        entry.origin = from;
        this.markers.set(f.id, entry);
        return entry;
    },

    _rememberParent: function (f) {
        if (f.parent !== undefined && f.parent !== f.id) this._parentOf.set(f.id, f.parent);
    },

    // ---- Where splits start and merges end ----

    /** Where a new feature's split starts: its parent, just removed or still shown, else the
     *  nearest cluster removed in the last GHOST_TTL_MS. */
    _splitOrigin: function (f, to, c) {
        if (f.parent === undefined || f.parent === f.id) return null;
        const ghost = this._ghosts.get(f.parent);
        if (ghost) return ghost.at;
        const shown = this.markers.get(f.parent);
        if (shown) return shown.layer.getLatLng();
        if (!c.nearby) {
            c.nearby = [];
            for (const [id, g] of this._ghosts) if (id > 0xffffffff) c.nearby.push(this._candidate(g.at, Infinity));
        }
        return this._nearest(c.nearby, this._map.latLngToContainerPoint(to), 0);
    },

    /** Where a removed feature merges to: its parent or nearest known ancestor arriving in this
     *  batch or on the map, else the nearest larger cluster arriving. */
    _mergeTarget: function (f, at, c) {
        let id = f.parent;
        for (let hops = 0; id !== undefined && id !== f.id && hops < MAX_ANCESTOR_HOPS; hops++) {
            const added = c.addById.get(id);
            if (added) return this._featureLatLng(added);
            const shown = this.markers.get(id);
            if (shown) return this._featureLatLng(shown.feature);
            id = this._parentOf.get(id);
        }
        if (!c.nearby) {
            c.nearby = [];
            for (const g of c.add) if (g.count > 1) c.nearby.push(this._candidate(this._featureLatLng(g), g.count));
        }
        return this._nearest(c.nearby, this._map.latLngToContainerPoint(at), f.count);
    },

    _candidate: function (at, count) {
        const p = this._map.latLngToContainerPoint(at);
        return { x: p.x, y: p.y, at: at, count: count };
    },

    /** The candidate holding more than `count` points nearest to `p`, within NEAREST_PARENT_PX. */
    _nearest: function (candidates, p, count) {
        let best = null;
        let bestSquared = NEAREST_PARENT_PX * NEAREST_PARENT_PX;
        for (const q of candidates) {
            if (q.count <= count) continue;
            const dx = q.x - p.x;
            const dy = q.y - p.y;
            const d = dx * dx + dy * dy;
            if (d < bestSquared) {
                bestSquared = d;
                best = q.at;
            }
        }
        return best;
    },
};
