"""Stores shared by the whole test session: each real trace ingested once, when a test first
asks for it, into a temporary folder removed at exit.

- fixture_run: a shared fixture in a plain store (the breakdown, HTA, timeline and compare
  tests);
- facts: a shared fixture's facts in a store holding the H200 ceilings measured on the
  fixtures' card (../shared/fixtures/h200/ceilings.json), as the recommendation tests need;
- sample_facts: the facts of one of the project's own traces (data/samples, tests/data).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from analysis.facts import Facts, gather
from collectors.calibrate import main as calibrate
from collectors.ingest import ingest
from data.store import Store
from helpers.paths import FIXTURES, SAMPLES
from helpers.traces import fixture_runs


@cache
def session_folder(prefix: str) -> Path:
    """A temporary store folder shared by the whole test session, removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _fixture_paths(label: str) -> list[Path]:
    """The paths of one fixture run; labels as helpers.traces.fixture_runs."""
    return list(next(r.paths for r in fixture_runs() if r.label == label))


def _gathered(folder: Path, paths: list[Path]) -> Facts:
    run_id = ingest(paths, data_dir=folder)
    return gather(Store(folder), run_id)


@cache
def fixture_run(label: str) -> tuple[Store, str]:
    """(store, run id) of one fixture; labels as helpers.traces.fixture_runs."""
    folder = session_folder("breakdown-fixtures-")
    run_id = ingest(_fixture_paths(label), data_dir=folder)
    return Store(folder), run_id


@cache
def _calibrated_folder() -> Path:
    folder = session_folder("recommend-fixtures-")
    assert calibrate(["--data", str(folder), "--import", str(FIXTURES / "h200/ceilings.json")]) == 0
    return folder


def facts(label: str) -> Facts:
    """The facts of one fixture run, with the H200's measured ceilings; labels as
    helpers.traces.fixture_runs, or a bare H200 name such as "decode_b1"."""
    return _facts(f"h200/{label}.pt.trace.json.gz" if "/" not in label else label)


@cache
def _facts(label: str) -> Facts:
    return _gathered(_calibrated_folder(), _fixture_paths(label))


@cache
def sample_facts(name: str, folder: Path = SAMPLES) -> Facts:
    """Facts of a trace (file or folder) in data/samples (or `folder`: tests/data)."""
    return _gathered(session_folder("rules-samples-"), [folder / name])
