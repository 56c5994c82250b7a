"""The Timeline page under AppTest: aggregated when the window holds too many activities,
kernel by kernel in a narrow window, and the spec sent to the browser stays within the caps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.pages import dashboard_store, open_page
from helpers.paths import SAMPLES, TEST_DATA, fixture
from streamlit.testing.v1 import AppTest

from analysis import timeline as tl
from collectors.ingest import ingest
from data import reads_timeline
from data.store import Store

SAMPLE = SAMPLES / "gpt_train_fp32_naive.pt.trace.json.gz"  # 2 k activities
LARGEST = "h200/hf_llama_generate_b4.pt.trace.json.gz"  # 38 k: more than one chart may hold
CPU_ONLY = TEST_DATA / "cpu_mlp.pt.trace.json.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str, str | None]]:
    d = tmp_path_factory.mktemp("store")
    run, cpu = ingest([SAMPLE], data_dir=d), ingest([CPU_ONLY], data_dir=d)
    big = ingest([fixture(LARGEST)], data_dir=d)
    with dashboard_store(d):
        yield d, run, cpu, big


def page(run_id: str) -> AppTest:
    at = open_page("pages/timeline.py", run_id)
    assert not at.error
    return at


def chart(at: AppTest) -> tuple[str, list[str]]:
    spec = at.get("plotly_chart")[0].proto.spec
    assert len(spec.encode()) <= tl.MAX_SPEC_BYTES
    return spec, [t["type"] for t in json.loads(spec)["data"]]


def cells(spec: str) -> int:
    """Heatmap cells in a plotly JSON spec (arrays travel as typed arrays with a shape)."""
    z = json.loads(spec)["data"][0]["z"]
    if isinstance(z, dict):
        return int(np.prod([int(n) for n in str(z["shape"]).split(",")]))
    return len(z) * len(z[0])


def test_a_small_run_is_drawn_kernel_by_kernel(runs: tuple[Path, str, str, str | None]) -> None:
    d, run, _, _ = runs
    s = Store(d)
    lanes = reads_timeline.lanes(s, run)
    total = reads_timeline.window_count(
        s, run, int(lanes["first_ns"].min()), int(lanes["last_ns"].max())
    )
    at = page(run)
    spec, types = chart(at)
    assert set(types) == {"scattergl"}
    assert f"{total:,} GPU activities in the window, each drawn" in at.caption[0].value
    assert "op: aten::" in spec  # hover names the launching op


def test_a_large_run_is_aggregated_until_the_window_is_narrow(
    runs: tuple[Path, str, str, str | None],
) -> None:
    d, _, _, big = runs
    assert big is not None
    s = Store(d)
    lanes = reads_timeline.lanes(s, big)
    t0, t1 = int(lanes["first_ns"].min()), int(lanes["last_ns"].max())
    total = reads_timeline.window_count(s, big, t0, t1)
    assert total > tl.MAX_SHAPES
    at = page(big)
    spec, types = chart(at)
    assert types == ["heatmap"]
    assert 0 < cells(spec) <= tl.MAX_SHAPES
    assert f"{total:,} GPU activities in the window: busy fraction" in at.caption[0].value
    # 90 % of the run is still too much; 2 ms in the middle is drawn kernel by kernel.
    span = (t1 - t0) / 1e6
    assert reads_timeline.window_count(s, big, t0, t0 + int(span * 0.9e6)) > tl.MAX_SHAPES
    at.slider[0].set_value((0.0, span * 0.9)).run()
    spec, types = chart(at)
    assert types == ["heatmap"]
    assert cells(spec) <= tl.MAX_SHAPES
    at.slider[0].set_value((span / 2, span / 2 + 2.0)).run()
    assert not at.exception
    spec, types = chart(at)
    assert set(types) == {"scattergl"}
    n = reads_timeline.window_count(
        s, big, t0 + int(span / 2 * 1e6), t0 + int((span / 2 + 2) * 1e6)
    )
    assert 0 < n <= tl.MAX_SHAPES
    assert f"{n:,} GPU activities in the window, each drawn" in at.caption[0].value


def test_cpu_only_run_says_so(runs: tuple[Path, str, str, str | None]) -> None:
    _, _, cpu, _ = runs
    at = page(cpu)
    assert "no GPU activity" in at.info[0].value
