"""Where the tests' real traces are: the shared fixtures beside the repository, the
project's own recordings (data/samples, tests/data) and the golden files."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The H200 and public traces: ../shared/fixtures beside the repository, or $DASH_FIXTURES.
FIXTURES_ENV = "DASH_FIXTURES"
FIXTURES = Path(os.environ.get(FIXTURES_ENV) or REPO.parent / "shared" / "fixtures")
SAMPLES = REPO / "data" / "samples"
TEST_DATA = REPO / "tests" / "data"
GOLDEN_DIR = REPO / "tests" / "golden"
# The top-level scripts: the page registry and the server that warms it (D99).
ENTRY_POINTS = ("app.py", "serve.py")


def fixture(rel: str) -> Path:
    """A path under the shared fixtures (tests/conftest.py checks they are there)."""
    return FIXTURES / rel
