"""pytest fixtures for the browser tests; they live in browser_support.py with the helpers."""

from browser_support import browser, live, page, server  # noqa: F401
