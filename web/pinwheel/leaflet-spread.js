/* Spread legs of the Pinwheel layer: a pin the server spread away from a coordinate it shares with
 * others is drawn with a leg back to its true position and a dot there, and a same-coordinate group
 * the user opens is shown as such pins around its cluster. Included into the layer class
 * (web/pinwheel/leaflet.js).
 */

// ---- Constants -----------------------------------------------------------------------------------

/** Legs from a spread pin to its true position, and the dot marking that position. */
const LEG_STYLE = { color: '#fde68a', weight: 1, opacity: 0.75, interactive: false };
const ANCHOR_STYLE = { radius: 2.5, color: '#fde68a', weight: 0, fillColor: '#fde68a', fillOpacity: 1, interactive: false };
/** Opacity of a cluster while its same-coordinate members are shown spread around it. */
const SPREAD_OWNER_ALPHA = 0.25;

// ---- Included into the layer ---------------------------------------------------------------------

export const SpreadLegs = {
    _initSpread: function () {
        /** The pins of a same-coordinate group shown on request (id → entry). */
        this.spread = new Map();
        /** The cluster whose group is shown (drawn faint meanwhile). */
        this._spreadOwner = null;
    },

    /** A spread pin (a feature with an `anchor`) at `at` gets its leg and dot in `group`. */
    _addLeg: function (entry, at, alpha, group) {
        const feature = entry.feature;
        if (!feature.anchor) return;
        const anchor = this._anchorLatLng(feature);
        entry.leg = L.polyline([anchor, at], Object.assign({ renderer: this._renderer }, LEG_STYLE,
            { opacity: LEG_STYLE.opacity * alpha }));
        entry.dot = L.circleMarker(anchor, Object.assign({ renderer: this._renderer }, ANCHOR_STYLE));
        group.addLayer(entry.leg);
        group.addLayer(entry.dot);
    },

    _removeLeg: function (entry, group) {
        if (entry.leg) group.removeLayer(entry.leg);
        if (entry.dot) group.removeLayer(entry.dot);
    },

    /** The pin moved to `at`: its leg follows. */
    _placeLeg: function (entry, at) {
        if (entry.leg) entry.leg.setLatLngs([this._anchorLatLng(entry.feature), at]);
    },

    _setLegAlpha: function (entry, alpha) {
        if (entry.leg) entry.leg.setStyle({ opacity: LEG_STYLE.opacity * alpha });
        if (entry.dot) entry.dot.setStyle({ fillOpacity: ANCHOR_STYLE.fillOpacity * alpha });
    },

    /** Shows an `expansion` message's spread group around its cluster. */
    _showSpread: function (msg) {
        this._clearSpread();
        // The group's cluster steps back while its members are shown around it.
        const owner = this.markers.get(msg.id);
        if (owner) {
            this._setAlpha(owner, SPREAD_OWNER_ALPHA);
            this._spreadOwner = owner;
        }
        for (const f of msg.spread) {
            const entry = this._createEntry(f, this._featureLatLng(f), 1, this._expansionGroup);
            entry.spread = true;
            this.spread.set(f.id, entry);
        }
        if (this._keyboard) this._keyboard.schedule();
    },

    _clearSpread: function () {
        if (this._expansionGroup) this._expansionGroup.clearLayers();
        this.spread.clear();
        const owner = this._spreadOwner;
        if (owner && this.markers.get(owner.feature.id) === owner) this._setAlpha(owner, 1);
        this._spreadOwner = null;
        if (this._keyboard) this._keyboard.schedule();
    },
};
