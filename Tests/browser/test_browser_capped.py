"""A view holding more features than `serve --max-features` allows: the page shows the nearest ones
and tells the user to zoom in."""

import pytest
from browser_support import markers, open_map, running_server, screenshot, set_view

LIMIT = 50


@pytest.fixture(scope="module")
def server():
    with running_server(["--max-features", str(LIMIT)]) as s:
        yield s


def test_a_capped_view_shows_the_limit_and_a_hint_that_goes_away_when_zoomed_in(page, server):
    open_map(page, server, 50, 10, 5)
    shown = markers(page)
    assert len(shown) == LIMIT
    hint = page.locator("#hud-capped")
    assert hint.is_visible()
    text = hint.text_content()
    assert text.startswith(f"Showing the {LIMIT} nearest of ") and text.endswith("zoom in for the rest")
    available = int(text.split(" of ")[1].split(" ")[0].replace(",", ""))
    assert available > LIMIT
    screenshot(page, "capped-view.png")
    # Somewhere with fewer features than the limit the hint disappears.
    set_view(page, 64.1, -21.9, 10)
    assert len(markers(page)) < LIMIT
    assert not hint.is_visible()
    assert page.console_log.errors == []
