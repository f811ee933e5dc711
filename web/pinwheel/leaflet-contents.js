/* What clusters hold, on the Pinwheel layer: with a server that breaks clusters down by a column
 * (`serve --group-by`), each cluster is drawn as a donut of its groups' shares and a legend names the
 * colours; with flag rules (`serve --flag`), a cluster that holds a flagged point gets a ring. Both
 * reach a custom `clusterIcon` as its third argument. Included into the layer class
 * (web/pinwheel/leaflet.js).
 */

// ---- Constants -----------------------------------------------------------------------------------

/** Colours of the group values in hello's order (the server sends at most 12), then "other"; no two
 *  alike on the dark basemap (the twelfth was a second yellow beside the fourth's amber). */
export const GROUP_COLORS = ['#38bdf8', '#f472b6', '#a3e635', '#fbbf24', '#c084fc', '#34d399', '#fb923c',
                             '#818cf8', '#f87171', '#2dd4bf', '#e879f9', '#f8fafc'];
export const OTHER_GROUP_COLOR = '#94a3b8';
/** The ring of a cluster holding a flagged point. */
export const FLAG_RING_COLOR = '#ef4444';
/** Where the legend goes (a Leaflet control position). */
const LEGEND_POSITION = 'bottomleft';

// ---- What a cluster holds --------------------------------------------------------------------------

/**
 * What `feature` holds, as hello describes the breakdown: `{groups, flags, flagged}`. `groups` is
 * `[{value, index, count, color}]` (value `null` for "other"), or null when the server breaks nothing
 * down; `flags` is `{name: count}`, or null without flag rules; `flagged` is the total flag count.
 */
export function clusterContents(feature, hello, groupColor) {
    const described = hello && hello.groups;
    let groups = null;
    if (described && Array.isArray(feature.groups)) {
        groups = feature.groups.map(([index, count]) => {
            const value = index < described.values.length ? described.values[index] : null;
            return { value: value, index: index, count: count, color: groupColor(value, index) };
        });
    }
    let flags = null;
    let flagged = 0;
    const names = hello && Array.isArray(hello.flags) ? hello.flags : [];
    if (names.length && Array.isArray(feature.flags)) {
        flags = {};
        names.forEach((name, i) => {
            flags[name] = feature.flags[i] || 0;
            flagged += flags[name];
        });
    }
    return { groups: groups, flags: flags, flagged: flagged };
}

// ---- Included into the layer ---------------------------------------------------------------------

export const Contents = {
    _initContents: function () {
        /** The legend control while the server breaks clusters down and `legend` is on. */
        this._legend = null;
        /** hello's breakdown as last seen (JSON), to notice a change. */
        this._described = null;
    },

    /** A hello: the legend follows its breakdown, and clusters drawn under another are drawn again. */
    _onContentsDescribed: function (hello) {
        const described = JSON.stringify([hello.groups || null, hello.flags || []]);
        if (described === this._described) return;
        this._described = described;
        this._updateLegend(hello);
        for (const entry of this.markers.values()) {
            if (entry.feature.count > 1) entry.layer.setStyle(this._style(entry.feature, entry.layer.options.opacity, entry.room));
        }
    },

    /** The colour of group value `value` (index `index` in hello's values; "other" is null). */
    _groupColor: function (value, index) {
        const chosen = this.options.groupColors;
        if (typeof chosen === 'function') return chosen(value, index);
        const palette = Array.isArray(chosen) ? chosen : GROUP_COLORS;
        return value === null ? OTHER_GROUP_COLOR : palette[index % palette.length];
    },

    /** What a cluster feature holds, for its icon (see clusterContents). */
    _contents: function (feature) {
        return clusterContents(feature, this.client.state.hello, (v, i) => this._groupColor(v, i));
    },

    /** The default icon's donut and ring for what a cluster holds: `{segments, ring}`. */
    _contentsIcon: function (contents) {
        const icon = { segments: null, ring: null };
        if (contents.groups && contents.groups.length) {
            icon.segments = contents.groups.map((g) => ({ count: g.count, color: g.color }));
        }
        if (contents.flagged > 0 && this.options.flagRing) icon.ring = this.options.flagRing;
        return icon;
    },

    /** Shows, replaces or takes away the legend for hello's breakdown. */
    _updateLegend: function (hello) {
        if (this._legend) {
            this._legend.remove();
            this._legend = null;
        }
        const groups = hello && hello.groups;
        const flags = hello && Array.isArray(hello.flags) ? hello.flags : [];
        if (!this._map || !this.options.legend || (!groups && !flags.length)) return;
        const legend = L.control({ position: LEGEND_POSITION });
        legend.onAdd = () => this._legendElement(groups, flags);
        this._legend = legend.addTo(this._map);
    },

    _legendElement: function (groups, flags) {
        const root = L.DomUtil.create('div', 'pw-legend');
        root.setAttribute('role', 'group');
        root.setAttribute('aria-label', 'Legend');
        root.style.cssText = 'background:rgba(15,23,42,.88);color:#e2e8f0;padding:6px 9px;border-radius:6px;' +
            'font:12px system-ui,sans-serif;line-height:1.5;';
        const row = (swatchCSS, text) => {
            const line = L.DomUtil.create('div', 'pw-legend-row', root);
            const swatch = L.DomUtil.create('span', 'pw-legend-swatch', line);
            swatch.style.cssText = 'display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:50%;' + swatchCSS;
            line.appendChild(document.createTextNode(text));
        };
        if (groups) {
            const title = L.DomUtil.create('div', 'pw-legend-title', root);
            title.textContent = groups.column;
            title.style.fontWeight = '600';
            groups.values.forEach((v, i) => row(`background:${this._groupColor(v, i)}`, v));
            row(`background:${this._groupColor(null, groups.values.length)}`, 'other');
        }
        if (this.options.flagRing) for (const name of flags) row(`border:2px solid ${this.options.flagRing};box-sizing:border-box`, `holds ${name}`);
        L.DomEvent.disableClickPropagation(root);
        return root;
    },
};
