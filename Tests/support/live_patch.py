"""What the live-data tests share: the producers' token and an empty patch of map to draw in."""

TOKEN = "test-token-0123456789abcdef"

# A patch of the South Pacific with no synthetic points: everything in it is the producers'.
SOUTH, WEST = -40.0, -120.0


def patch_box(size):
    """The patch's corner square of `size` degrees, as a viewport bbox."""
    return [WEST, SOUTH, WEST + size, SOUTH + size]


def grid_point(k, columns, spacing, margin):
    """Point k of a grid in the patch: `columns` wide, `spacing` degrees apart, `margin` from the corner."""
    return SOUTH + margin + (k // columns) * spacing, WEST + margin + (k % columns) * spacing
