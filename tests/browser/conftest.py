"""Fixtures of the browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.browser import launch
from playwright import sync_api as playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, for one test module."""
    with playwright.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()
