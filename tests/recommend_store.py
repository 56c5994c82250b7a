"""One store for the recommendation tests: the H200 ceilings measured on the fixtures' card
(../shared/fixtures/h200/ceilings.json) and each fixture ingested once, when first asked for."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from conftest import FIXTURES, fixture_runs
from fixture_store import session_folder

from analysis.facts import Facts, gather
from collectors.calibrate import main as calibrate
from collectors.ingest import ingest
from data.store import Store


@cache
def _folder() -> Path:
    folder = session_folder("recommend-fixtures-")
    assert calibrate(["--data", str(folder), "--import", str(FIXTURES / "h200/ceilings.json")]) == 0
    return folder


def facts(label: str) -> Facts:
    """The facts of one fixture run; labels as tests/conftest.py's fixture_runs, or a bare
    H200 name such as "decode_b1"."""
    return _facts(f"h200/{label}.pt.trace.json.gz" if "/" not in label else label)


@cache
def _facts(label: str) -> Facts:
    paths = next(r.paths for r in fixture_runs() if r.label == label)
    run_id = ingest(list(paths), data_dir=_folder())
    return gather(Store(_folder()), run_id)
