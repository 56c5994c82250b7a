"""The Roofline and HBM bandwidth pages under AppTest, on a real store: the project's own
H200 GPT-2 bf16 trace, the NVML/GPM samples recorded with it (replayed at their recorded
times), and the ceilings measured on an H200 by `python -m collectors.calibrate`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import chart_specs, dashboard_store, open_page
from helpers.paths import REPO, SAMPLES, TEST_DATA
from streamlit.testing.v1 import AppTest

from collectors.calibrate import main as calibrate
from collectors.ingest import ingest
from collectors.nvml import NvmlSampler
from collectors.nvml_source import ReplaySource
from data.store import Store

TRACE = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("roofline")
    ingest([TEST_DATA / "cpu_mlp.pt.trace.json.gz"], data_dir=d, name="cpu")
    ingest([SAMPLES / "decode_b1_eager.pt.trace.json.gz"], data_dir=d, name="no-telemetry")
    ingest([TRACE], data_dir=d, name="gpt", tags={"tokens_per_step": "8192"})
    sampler = NvmlSampler(
        d,
        host="node-a",
        source=ReplaySource([TRACE.with_name("gpt_train_bf16.nvml.csv")], keep_time=True),
    )
    sampler.open()
    sampler.drain()
    sampler.close()
    assert (
        calibrate(["--data", str(d), "--import", str(REPO / "data/samples/ceilings_h200.json")])
        == 0
    )
    with dashboard_store(d):
        yield d


def page(store_dir: Path, path: str, run: str) -> AppTest:
    at = open_page(path, Store(store_dir).resolve_run(run))
    assert not at.error, [e.value for e in at.error]
    return at


def traces(at: AppTest) -> list[dict]:  # type: ignore[type-arg]
    return chart_specs(at)[0]["data"]


def test_roofline_draws_both_roof_sets_and_every_gpu_nanosecond(store_dir: Path) -> None:
    at = page(store_dir, "pages/roofline.py", "gpt")
    names = {t["name"] for t in traces(at)}
    assert {"bf16 datasheet", "bf16 measured", "bf16 ops"} <= names
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["MFU"].endswith("%")
    assert metrics["Tokens/s"] != "—"  # from the run tag tokens_per_step
    table = at.dataframe[0].value
    s = Store(store_dir)
    run_id = s.resolve_run("gpt")
    total_ms = s.query("SELECT sum(dur_ns) / 1e6 AS t FROM gpu_events WHERE run_id = ?", [run_id])
    assert table["time_ms"].sum() == pytest.approx(float(total_ms["t"].iloc[0]))
    gemm = table[(table["name"] == "gemm") & (table["precision"] == "bf16")].iloc[0]
    assert gemm["bound"] in {"compute", "memory", "latency"}
    assert 0 < gemm["pct_of_ceiling"] < 150
    assert "measured ceilings: 4,202 GB/s" in at.caption[0].value


def test_roofline_override_and_per_kernel_points(store_dir: Path) -> None:
    at = page(store_dir, "pages/roofline.py", "gpt")
    at.sidebar.selectbox[1].set_value("L4").run()
    assert "spec **L4** (chosen)" in at.caption[0].value
    at.selectbox[0].set_value("kernel").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["name"].str.startswith("nvjet_sm90_tst").any()


def test_bandwidth_page_draws_gpm_beside_the_estimate(store_dir: Path) -> None:
    at = page(store_dir, "pages/bandwidth.py", "gpt")
    names = [t["name"] for t in traces(at)]
    assert any(n.startswith("trace estimate") for n in names)
    assert any(n.startswith("measured (NVML GPM DRAM_BW_UTIL)") for n in names)
    kernels = at.dataframe[0].value
    assert (kernels["util_pct"] > 0).all()


def test_bandwidth_page_without_telemetry_says_so(store_dir: Path) -> None:
    at = page(store_dir, "pages/bandwidth.py", "no-telemetry")
    assert any("No telemetry for this run" in c.value for c in at.caption)


@pytest.mark.parametrize("path", ["pages/roofline.py", "pages/bandwidth.py"])
def test_cpu_only_runs_get_a_message(store_dir: Path, path: str) -> None:
    at = page(store_dir, path, "cpu")
    assert "CPU-only" in at.info[0].value
