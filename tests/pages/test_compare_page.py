"""The Compare page under AppTest on the H200 decode pair (decode_b1 -> decode_b1_cudagraph):
the two newest runs by default, the runs from the query, and a store with one run."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.compare import DECODE, comparison, metric
from helpers.pages import dashboard_store, open_page
from helpers.paths import REPO, TEST_DATA, fixture
from streamlit.testing.v1 import AppTest

from analysis.metrics import COMPARE_METRICS
from collectors.ingest import ingest
from pages._ui import fmt_ms


@pytest.fixture(scope="module")
def page_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    d = tmp_path_factory.mktemp("compare")
    before = ingest([fixture(DECODE[0])], data_dir=d)
    after = ingest([fixture(DECODE[1])], data_dir=d)
    with dashboard_store(d):
        yield d, before, after


def test_page_defaults_to_the_two_newest_runs(page_store: tuple[Path, str, str]) -> None:
    decode = comparison(DECODE)
    _, before, after = page_store
    at = open_page("pages/compare.py")
    assert not at.error
    assert [sb.value for sb in at.selectbox] == [before, after]
    metrics = {m.label: m for m in at.metric}
    for key, label in (
        ("unprofiled_step_ms", "Step, unprofiled"),
        ("step_time_ms", "Step, profiled"),
    ):
        step = metric(decode, key)
        assert metrics[label].value == fmt_ms(step["after"])
        assert metrics[label].delta == f"{step['delta']:+,.2f} ms"
    assert not metrics["MFU"].delta  # graph replays have no op shapes: no MFU to compare
    assert "not comparable" in metrics["MFU"].help
    assert at.markdown[0].value == f"**{decode.verdict}**"
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    bars = [t for t in chart["data"] if t["type"] == "bar"]
    assert len(bars) == 2
    assert list(bars[0]["x"]) == list(decode.classes["kernel_class"])
    after_y = bars[1]["y"]  # plotly 7 ships numeric arrays as base64 typed arrays
    after_y = np.frombuffer(base64.b64decode(after_y["bdata"]), dtype=after_y["dtype"])
    assert list(after_y) == pytest.approx(list(decode.classes["after_ms_per_step"]))
    table = at.dataframe[1].value  # the metrics table
    assert len(table) == len(COMPARE_METRICS)
    gone = at.dataframe[2].value  # the first recommendations table: gone
    assert "cuda-graphs" in set(gone["id"])


def test_page_takes_the_runs_from_the_query(page_store: tuple[Path, str, str]) -> None:
    _, before, after = page_store
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.query_params.update(before=after, after=before)
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert [sb.value for sb in at.selectbox] == [after, before]
    unprof = metric(comparison(DECODE), "unprofiled_step_ms")
    assert at.markdown[0].value.startswith(
        f"**step time {unprof['after']:,.1f} -> {unprof['before']:,.1f} ms unprofiled"
    )
    assert {m.label: m for m in at.metric}["Step, unprofiled"].delta.startswith("+")


def test_page_with_one_run_says_what_to_do(tmp_path: Path) -> None:
    ingest([TEST_DATA / "cpu_mlp.pt.trace.json.gz"], data_dir=tmp_path)
    with dashboard_store(tmp_path):
        at = open_page("pages/compare.py")
    assert "needs two runs" in at.info[0].value
