/* The members of a cluster on the Pinwheel layer: `layer.leaves(feature)` and `layer.children(feature)`
 * (also handed to `clusterclick` handlers), and, with the `clusterList` option, a popup listing a
 * clicked cluster's points a page at a time. Included into the layer class (web/pinwheel/leaflet.js).
 */

import { markerName } from './keyboard.js';

// ---- Constants -----------------------------------------------------------------------------------

/** Points per page of the member list unless `clusterListPageSize` says otherwise (the server allows 1–500). */
export const DEFAULT_LIST_PAGE_SIZE = 20;
const MAX_LIST_PAGE_SIZE = 500;
/** Tallest the list of a page gets before it scrolls. */
const LIST_MAX_HEIGHT_PX = 260;

function button(parent, text, className) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = className;
    b.textContent = text;
    parent.appendChild(b);
    return b;
}

// ---- Included into the layer ---------------------------------------------------------------------

export const Members = {
    /** One page of a cluster's points (see PinwheelClient.leaves): resolves with `{total, points, next}`. */
    leaves: function (feature, options) {
        return this.client.leaves(feature.id, options);
    },

    /** The features one zoom finer that make up a cluster: resolves with `{features}`. */
    children: function (feature) {
        return this.client.children(feature.id);
    },

    /** What a `clusterclick` handler gets besides the feature: methods that ask for its members. */
    _memberMethods: function (feature) {
        return {
            leaves: (options) => this.leaves(feature, options),
            children: () => this.children(feature),
        };
    },

    /** Opens a popup at `latlng` listing the cluster's points, a page at a time, with buttons for the
     *  pages before and after and one that zooms to where it splits. */
    _openMemberList: function (feature, latlng) {
        const size = Math.max(1, Math.min(MAX_LIST_PAGE_SIZE, this.options.clusterListPageSize || DEFAULT_LIST_PAGE_SIZE));
        const view = memberListView(feature);
        const popup = L.popup({ offset: [0, -4], minWidth: 200 }).setLatLng(latlng).setContent(view.root);
        // Cursors of the pages seen: [null, next of page 1, …]; `page` indexes the one shown.
        const cursors = [null];
        let page = 0;
        const show = (n) => {
            view.busy();
            this.leaves(feature, { limit: size, cursor: cursors[n] }).then((answer) => {
                page = n;
                if (answer.next !== null && cursors.length === n + 1) cursors.push(answer.next);
                view.fill(answer, n * size, (point) => this._memberChosen(point));
                view.previous.disabled = n === 0;
                view.next.disabled = answer.next === null;
                popup.update();
            }, (err) => view.failed(err));
        };
        view.previous.addEventListener('click', () => show(page - 1));
        view.next.addEventListener('click', () => show(page + 1));
        view.zoom.addEventListener('click', () => {
            this._map.closePopup(popup);
            this.zoomToExpansion(feature, latlng).catch((err) => console.warn(`pinwheel: ${err}`));
        });
        L.DomEvent.disableClickPropagation(view.root);
        popup.openOn(this._map);
        show(0);
        return popup;
    },

    /** A point chosen in a member list: the same as a click on it where it lies. */
    _memberChosen: function (point) {
        this._pointClick(point, L.latLng(point.lat, this._displayLng(point.lon)));
    },
};

/** The member list's DOM: a title, the list, a status line and the buttons; `fill` shows a page. */
function memberListView(feature) {
    const root = document.createElement('div');
    root.className = 'pw-popup pw-members';
    const title = document.createElement('h3');
    title.textContent = `${feature.count.toLocaleString('en')} points`;
    root.appendChild(title);
    const list = document.createElement('ol');
    list.className = 'pw-members-list';
    // The list scrolls; the title, status and buttons stay in view.
    list.style.maxHeight = `${LIST_MAX_HEIGHT_PX}px`;
    list.style.overflowY = 'auto';
    root.appendChild(list);
    const status = document.createElement('p');
    status.className = 'pw-members-status';
    status.setAttribute('aria-live', 'polite');
    root.appendChild(status);
    const nav = document.createElement('div');
    nav.className = 'pw-members-nav';
    root.appendChild(nav);
    const view = {
        root: root,
        previous: button(nav, '‹ Previous', 'pw-members-previous'),
        next: button(nav, 'Next ›', 'pw-members-next'),
        zoom: button(nav, 'Zoom in', 'pw-members-zoom'),
        busy: () => {
            status.textContent = 'Loading…';
        },
        failed: (err) => {
            status.textContent = `Could not list the points: ${err.message}`;
        },
        fill: (answer, first, choose) => {
            list.replaceChildren();
            list.start = first + 1;
            for (const point of answer.points) {
                const item = document.createElement('li');
                button(item, markerName(point), 'pw-member').addEventListener('click', () => choose(point));
                list.appendChild(item);
            }
            const last = first + answer.points.length;
            status.textContent = `${(first + 1).toLocaleString('en')}–${last.toLocaleString('en')} of ${answer.total.toLocaleString('en')}`;
        },
    };
    view.previous.disabled = true;
    view.next.disabled = true;
    return view;
}
