"""The Breakdown page under AppTest, on the project's 2-rank DDP recording and a CPU-only trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import chart_specs, dashboard_store, open_page
from helpers.paths import SAMPLES, TEST_DATA
from streamlit.testing.v1 import AppTest

from analysis import breakdown as bd
from collectors.ingest import ingest
from data import reads
from data.store import Store

DDP = SAMPLES / "ddp_gpt_bf16_2rank"
CPU_ONLY = TEST_DATA / "cpu_mlp.pt.trace.json.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    d = tmp_path_factory.mktemp("store")
    ddp, cpu = ingest([DDP], data_dir=d), ingest([CPU_ONLY], data_dir=d)
    with dashboard_store(d):
        yield d, ddp, cpu


def page(run_id: str) -> AppTest:
    at = open_page("pages/breakdown.py", run_id)
    assert not at.error
    return at


def test_metrics_match_the_analysis(runs: tuple[Path, str, str]) -> None:
    d, ddp, _ = runs
    at = page(ddp)
    s = Store(d)
    shares = bd.shares(bd.breakdown(reads.gpu_events(s, ddp), reads.steps(s, ddp)))
    overall = shares.iloc[-1]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Compute"] == f"{overall['compute_pct']:.1f} %"
    assert metrics["Comm (exposed)"] == f"{overall['comm_pct']:.1f} %"
    assert metrics["Idle"] == f"{overall['idle_pct']:.1f} %"
    assert metrics["Host wait"] == f"{overall['host_wait_pct']:.1f} %"


def test_charts_spread_and_launch_table(runs: tuple[Path, str, str]) -> None:
    _, ddp, _ = runs
    at = page(ddp)
    specs = [json.dumps(c, separators=(",", ":")) for c in chart_specs(at)]
    assert len(specs) == 2  # per step, and across ranks
    assert '"barmode":"stack"' in specs[0]
    assert "idle: host wait" in specs[0]
    assert any("Straggler: rank" in m.value for m in at.markdown)
    assert any("overlapped with compute" in m.value for m in at.markdown)
    launch = at.dataframe[-2].value  # spread, launches, per-step (in the expander)
    assert set(launch["rank"]) == {0, 1}
    assert (launch["kernels"] > 0).all()


def test_cpu_only_run_says_so(runs: tuple[Path, str, str]) -> None:
    _, _, cpu = runs
    at = page(cpu)
    assert "no GPU activity" in at.info[0].value
    assert not chart_specs(at)
