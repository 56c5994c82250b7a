"""One store for the shared fixtures, each ingested once per test session when a test first
asks for it (the breakdown, HTA and timeline tests share it)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from conftest import fixture_runs

from collectors.ingest import ingest
from data.store import Store


@cache
def session_folder(prefix: str) -> Path:
    """A temporary store folder shared by the whole test session, removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@cache
def fixture_run(label: str) -> tuple[Store, str]:
    """(store, run id) of one fixture; labels as tests/conftest.py's fixture_runs."""
    folder = session_folder("breakdown-fixtures-")
    paths = next(r.paths for r in fixture_runs() if r.label == label)
    run_id = ingest(list(paths), data_dir=folder)
    return Store(folder), run_id
