"""`python -m data.demo`: what `make demo` runs before the server, so the first page is ready."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli import run_module
from helpers.paths import REPO
from streamlit.testing.v1 import AppTest

from data.demo import MARKER, traces
from data.store import Store

DEMO_TRACES = traces()


def test_the_demo_set_loads_once_and_the_dashboard_opens_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # WHEN the demo set is loaded into an empty store
    first = run_module("data.demo", "--data", tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    # THEN every demo trace is a run, the newest the last one in name order, with ceilings
    # and telemetry, and each step was said as it started
    s = Store(tmp_path)
    runs = s.runs()
    assert len(runs) == len(DEMO_TRACES)
    assert runs.iloc[0]["name"] == DEMO_TRACES[-1].name.removesuffix(".pt.trace.json.gz")
    assert s.query("SELECT count(*) n FROM ceilings").iloc[0]["n"] > 0
    assert s.query("SELECT count(*) n FROM gpu_samples WHERE host = 'demo'").iloc[0]["n"] > 0
    lines = first.stdout.splitlines()
    assert lines[: len(DEMO_TRACES)] == [p.name for p in DEMO_TRACES]
    assert lines[-1] == f"demo set loaded in {tmp_path}"
    assert (tmp_path / MARKER).exists()
    before = s.checksums()
    s.close()

    # WHEN it runs again THEN nothing is written
    again = run_module("data.demo", "--data", tmp_path)
    assert again.returncode == 0
    assert again.stdout.strip() == f"demo set already there in {tmp_path}"
    # AND the dashboard's first visit loads nothing either: it opens on the newest demo run
    monkeypatch.setenv("DASH_DATA", str(tmp_path))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert not at.status, [x.label for x in at.status]
    s = Store(tmp_path)
    assert s.checksums() == before


def test_a_store_folder_that_is_a_file_is_one_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "store"
    blocker.write_text("not a folder")
    r = run_module("data.demo", "--data", blocker)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1
    assert str(blocker) in r.stderr
    assert blocker.read_text() == "not a folder"
