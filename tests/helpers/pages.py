"""The dashboard's pages under Streamlit's AppTest, on a store of the test's own."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from analysis.timeline import MAX_SHAPES, MAX_SPEC_BYTES
from collectors.ingest import ingest
from data.demo import MARKER
from helpers.paths import REPO


@contextmanager
def dashboard_store(d: Path) -> Iterator[Path]:
    """Point the pages at store `d` (DASH_DATA) while the block runs, without the demo set."""
    (d / MARKER).touch()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DASH_DATA", str(d))
        yield d


def page_runs(factory: pytest.TempPathFactory, traces: Sequence[Path]) -> Iterator[dict[Path, str]]:
    """A fixture's body: `traces` ingested one run each into a store of its own, the pages
    pointed at it; yields trace -> run id."""
    d = factory.mktemp("store")
    ids = {p: ingest([p], data_dir=d) for p in traces}
    with dashboard_store(d):
        yield ids


def open_page(page: str, run_id: str | None = None) -> AppTest:
    """Run app.py, pick `run_id` in the sidebar, switch to `page`; it raised nothing."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    if run_id is not None:
        at.session_state["run"] = run_id
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def timeline_payload(at: AppTest) -> dict[str, Any]:
    """What the Timeline page hands its browser component, within its size caps."""
    spec = at.get("component_instance")[0].proto.json_args
    assert len(spec.encode()) <= MAX_SPEC_BYTES
    p: dict[str, Any] = json.loads(spec)["payload"]
    assert p["shapes"] <= MAX_SHAPES
    return p


def chart_specs(node: Any) -> list[dict[str, Any]]:
    """The figures (data and layout) an AppTest run, or one of its tabs, drew: those of
    pages/_chart.py's element, then any st.plotly_chart's (a trace type outside the basic
    bundle)."""
    light = [json.loads(json.loads(e.proto.json)) for e in node.get("bidi_component")]
    return light + [json.loads(e.proto.spec) for e in node.get("plotly_chart")]


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: str) -> str:
    """What a reader sees of a page's Markdown text: its backslash escapes resolved and its
    invisible word joiners left out (pages/_ui.py md puts both into a user's string)."""
    return _ESCAPED.sub(r"\1", markdown).replace("\u2060", "")
