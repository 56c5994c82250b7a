"""Pytest fixtures and hooks shared by the whole suite; the helpers are in tests/helpers/."""

from __future__ import annotations

import os

import pytest
from helpers.paths import FIXTURES, FIXTURES_ENV

# ------------------------------------------------------------------ the shared fixtures


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop the run before it starts when the shared fixtures are not there: a third of the
    suite reads them, and a run without them would test far less than it says."""
    missing = [top for top in ("h200", "foreign") if not (FIXTURES / top).is_dir()]
    if missing:
        where = f"${FIXTURES_ENV}" if os.environ.get(FIXTURES_ENV) else "../shared/fixtures"
        raise pytest.UsageError(
            f"the shared fixtures are missing: no {' or '.join(f'{m}/' for m in missing)} in "
            f"{FIXTURES} ({where}); put them there or set {FIXTURES_ENV}=/path/to/fixtures"
        )
