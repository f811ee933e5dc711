"""pytest fixtures for the browser tests; they live in browser_support.py with the helpers."""

from browser_support import browser, page, server  # noqa: F401
