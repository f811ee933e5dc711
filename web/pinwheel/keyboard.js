/* Keyboard and screen-reader access to markers drawn on a canvas, which neither can reach: a visually
 * hidden list of buttons inside the map, one per marker in view, named by what the marker is
 * ("Cluster of 1,234 points", a point's name). Tab reaches them, Enter or Space acts as a click on the
 * marker, and the focused one is ringed on the map. Knows no map library: the adapters
 * (web/pinwheel/leaflet.js, web/pinwheel/maplibre.js) say where each marker is drawn and when the
 * view moved.
 */

// ---- Constants -----------------------------------------------------------------------------------

/** Most buttons in the list: the largest clusters first, then points, so a dense view stays a list
 *  one can tab through. */
const MAX_BUTTONS = 150;
/** The list follows the view this long after the last change (a pan's batches come in bursts). */
const UPDATE_DELAY_MS = 200;
/** Screen pixels around a marker's centre that count as in view. */
const VIEW_MARGIN_PX = 4;
/** Visually hidden, still read and focusable (the usual "sr-only" rules). */
const HIDDEN_STYLE = 'position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;' +
    'clip:rect(0 0 0 0);clip-path:inset(50%);white-space:nowrap;border:0;';
/** The ring drawn around the focused marker. */
const RING_STYLE = 'position:absolute;left:0;top:0;z-index:650;pointer-events:none;border-radius:50%;' +
    'box-sizing:border-box;border:3px solid #fff;box-shadow:0 0 0 2px #1d4ed8;display:none;';
const RING_PAD_PX = 4;

/** A marker's accessible name: a cluster's count, a point's name (or key, or id). */
export function markerName(feature) {
    if (feature.count > 1) return `Cluster of ${feature.count.toLocaleString('en')} points`;
    const props = feature.properties || {};
    if (props.name !== undefined && props.name !== '') return String(props.name);
    if (feature.key !== undefined) return String(feature.key);
    return `Point ${feature.id}`;
}

/**
 * Keeps a list of buttons for the markers in view, in `container` (the map's element).
 * @param {HTMLElement} container
 * @param {object} source
 * @param {() => Iterable<object>} source.entries what is drawn (`{feature, spread}`: `spread` for the
 *   pins of a same-coordinate group shown on request, which lead the list).
 * @param {(entry: object) => ({x: number, y: number, radius: number} | null)} source.place where the
 *   entry's marker is drawn, in the container's pixels; null when it is not drawn.
 * @param {(entry: object) => void} source.activate what a click on the marker does.
 * @returns {{schedule: () => void, placeRing: () => void, stop: () => void, list: HTMLElement}}:
 *   `schedule` when the view or the markers changed, `placeRing` while the map moves.
 */
export function markerButtons(container, source) {
    const list = document.createElement('ul');
    list.className = 'pw-keyboard';
    list.setAttribute('aria-label', 'Markers in view');
    list.style.cssText = HIDDEN_STYLE;
    // First in the map, so Tab from the map reaches the markers before the map's controls.
    container.insertBefore(list, container.firstChild);
    const ring = document.createElement('div');
    ring.style.cssText = RING_STYLE;
    ring.className = 'pw-focus-ring';
    ring.setAttribute('aria-hidden', 'true');
    container.appendChild(ring);

    /** id → {item, button, entry}. */
    const buttons = new Map();
    let timer = 0;
    let focused = null;

    const placeRing = () => {
        const p = focused && source.place(focused.entry);
        if (!p) {
            ring.style.display = 'none';
            return;
        }
        const size = 2 * (p.radius + RING_PAD_PX);
        ring.style.width = ring.style.height = `${size}px`;
        ring.style.transform = `translate(${Math.round(p.x - size / 2)}px, ${Math.round(p.y - size / 2)}px)`;
        ring.style.display = 'block';
    };

    const inView = (entry) => {
        const p = source.place(entry);
        return p !== null && p.x >= -VIEW_MARGIN_PX && p.y >= -VIEW_MARGIN_PX &&
            p.x <= container.clientWidth + VIEW_MARGIN_PX && p.y <= container.clientHeight + VIEW_MARGIN_PX;
    };

    const update = () => {
        timer = 0;
        const wanted = [];
        let rank = 0;
        for (const entry of source.entries()) {
            if (inView(entry)) wanted.push({ entry: entry, rank: rank++ });
        }
        // Spread pins (listed first) keep their place; then the largest clusters, then points by name.
        wanted.sort((a, b) => {
            const fa = a.entry.feature;
            const fb = b.entry.feature;
            if (a.entry.spread !== b.entry.spread) return a.entry.spread ? -1 : 1;
            if (fa.count !== fb.count) return fb.count - fa.count;
            return a.rank - b.rank;
        });
        wanted.length = Math.min(wanted.length, MAX_BUTTONS);
        const keep = new Set();
        const hadFocus = list.contains(document.activeElement);
        let previous = null;
        for (const { entry } of wanted) {
            const id = entry.feature.id;
            keep.add(id);
            let b = buttons.get(id);
            if (!b) {
                const item = document.createElement('li');
                const button = document.createElement('button');
                button.type = 'button';
                item.appendChild(button);
                b = { item: item, button: button, entry: entry };
                button.addEventListener('click', () => source.activate(b.entry));
                button.addEventListener('focus', () => {
                    focused = b;
                    placeRing();
                });
                button.addEventListener('blur', () => {
                    if (focused === b) focused = null;
                    placeRing();
                });
                buttons.set(id, b);
            }
            b.entry = entry;
            const name = markerName(entry.feature);
            if (b.button.textContent !== name) b.button.textContent = name;
            // In order, moving only what is out of place: a focused button stays where it is.
            const expected = previous ? previous.nextSibling : list.firstChild;
            if (expected !== b.item) list.insertBefore(b.item, expected);
            previous = b.item;
        }
        for (const [id, b] of buttons) {
            if (keep.has(id)) continue;
            b.item.remove();
            buttons.delete(id);
            if (focused === b) focused = null;
        }
        // The marker that had focus is gone (it split, or the view moved on): the next one takes it.
        if (hadFocus && !list.contains(document.activeElement) && list.firstChild) {
            list.firstChild.firstChild.focus();
        }
        placeRing();
    };

    const schedule = () => {
        if (!timer) timer = setTimeout(update, UPDATE_DELAY_MS);
    };
    return {
        list: list,
        schedule: schedule,
        placeRing: placeRing,
        stop: () => {
            clearTimeout(timer);
            list.remove();
            ring.remove();
            buttons.clear();
        },
    };
}
