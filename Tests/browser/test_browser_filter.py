"""The demo page's filter box: choosing what to show sends a filter, and the count the page shows is
the number of points passing it, counted here from the data files themselves; the markers drawn over
the whole world add up to it, and every point drawn passes the filter."""

import csv
from pathlib import Path

from browser_support import open_map, running_server, wait_settled

DATA = Path(__file__).resolve().parents[2] / "data"


def rows(name):
    with open(DATA / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def shown_count(page, expected):
    page.wait_for_function("(n) => document.getElementById('filter-matching').textContent === n",
                           arg=f"{expected:,}", timeout=20000)
    wait_settled(page)
    return page.evaluate("""() => {
        let total = 0;
        const points = [];
        for (const e of pinwheel.state.markers.values()) {
            total += e.feature.count;
            if (e.feature.count === 1) points.push(e.feature.properties || {});
        }
        return [total, points];
    }""")


def test_the_filter_box_shows_exactly_the_matching_points(page, server):
    shops = rows("malls.csv")
    cities = rows("geonames_rg_cities1000_145k.csv")
    open_map(page, server, 20, 0, 1)
    everything = len(shops) + len(cities)
    assert page.evaluate("() => document.getElementById('filter-matching').textContent") == f"{everything:,}"

    page.select_option("#set-filter-kind", "shop")
    total, points = shown_count(page, len(shops))
    assert total == len(shops), "the world's markers add up to the matching points"
    assert points and all(p.get("kind") == "shop" for p in points)

    # Cities of one country: the count comes from the CSV, the filter ANDs both fields.
    page.select_option("#set-filter-kind", "city")
    page.fill("#set-filter-cc", "lu")
    page.press("#set-filter-cc", "Enter")
    page.locator("#set-filter-cc").blur()
    luxembourg = sum(1 for r in cities if r["cc"] == "LU")
    total, points = shown_count(page, luxembourg)
    assert total == luxembourg
    assert all(p.get("kind") == "city" and p.get("cc") == "LU" for p in points)

    page.fill("#set-filter-cc", "")
    page.locator("#set-filter-cc").blur()
    page.select_option("#set-filter-kind", "")
    total, _ = shown_count(page, everything)
    assert total == everything
    assert page.console_log.errors == []


def test_a_filter_refused_for_want_of_memory_leaves_the_client_on_the_filter_it_had(page):
    """With room for a small filter's index only, a filter whose index would not fit comes back as
    `filter-memory`, and the client keeps the filter in use: a reconnect asks for that one again."""
    luxembourg = ["all", ["==", ["get", "kind"], "city"], ["==", ["get", "cc"], "LU"]]
    cities = ["==", ["get", "kind"], "city"]
    expected = sum(1 for r in rows("geonames_rg_cities1000_145k.csv") if r["cc"] == "LU")
    with running_server(["--filter-memory", "1"]) as small:
        open_map(page, small, 49.7, 6.1, 8)
        page.evaluate("(f) => pinwheel.client.setFilter(f)", luxembourg)
        page.wait_for_function("(n) => pinwheel.client.state.hello.dataset.points === n", arg=expected, timeout=20000)
        page.evaluate("(f) => pinwheel.client.setFilter(f)", cities)
        page.wait_for_function("() => (pinwheel.client.state.lastError || {}).code === 'filter-memory'", timeout=20000)
        assert page.evaluate("() => pinwheel.client.options.filter") == luxembourg
        assert page.evaluate("() => pinwheel.client.state.hello.dataset.points") == expected
