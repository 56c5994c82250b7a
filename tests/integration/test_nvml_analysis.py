"""Telemetry analysis and reads on samples recorded on a real H200.

data/samples/nvml_phases_h200.csv was recorded by this agent (tools/nvml_phases.py) through
idle, bf16 GEMM, HBM copy, tiny kernels, a pinned H2D copy and a one-block spinning kernel,
3 s each at 100 ms; its `phase` column marks what ran.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers.paths import REPO, SAMPLES

from analysis.figures.telemetry import RUN_PANELS, gpu_panels
from analysis.telemetry import (
    ACTIVITIES,
    alerts,
    clock_reasons,
    phase_signature,
    utilization_trap,
)
from collectors.ingest import ingest
from collectors.nvml import NvmlSampler
from collectors.nvml_source import ReplaySource, read_recording
from data import reads_telemetry as rt
from data.store import Store
from data.telemetry_source import LakeTelemetry, run_samples, thinned

PHASES = REPO / "data" / "samples" / "nvml_phases_h200.csv"


@pytest.fixture(scope="module")
def recorded() -> tuple[pd.DataFrame, pd.Series]:
    samples = pd.DataFrame(read_recording(PHASES)).assign(host="h200")
    phase = pd.read_csv(PHASES)["phase"].fillna("")
    return samples, phase


def test_each_phase_has_its_signature(recorded: tuple[pd.DataFrame, pd.Series]) -> None:
    sig = phase_signature(*recorded)
    assert set(sig["activity"]) <= set(ACTIVITIES)
    assert sig.loc[["idle", "gemm_bf16", "hbm_copy", "tiny_kernels", "h2d_pinned",
                    "one_block_spin"], "activity"].tolist() == [
        "idle", "tensor", "hbm", "launch-bound", "copy", "few-sm"]  # fmt: skip
    gemm, hbm, h2d = sig.loc["gemm_bf16"], sig.loc["hbm_copy"], sig.loc["h2d_pinned"]
    assert gemm["gpm_tensor_util_pct"] > 80
    assert gemm["throttled_share"] > 0.5
    assert gemm["sm_clock_mhz"] < 1700 < sig.loc["idle", "sm_clock_mhz"]
    assert hbm["gpm_dram_bw_util_pct"] > 75
    assert hbm["gpm_tensor_util_pct"] == 0
    assert h2d["gpm_pcie_rx_mib_s"] > 40_000
    assert h2d["gpm_sm_util_pct"] < 1
    assert sig.loc["idle", "util_gpu_pct"] == 0


def test_the_utilization_trap_on_real_samples(recorded: tuple[pd.DataFrame, pd.Series]) -> None:
    samples, phase = recorded
    trap = utilization_trap(samples)
    share = trap["trap"].groupby(phase.to_numpy()).mean()
    # util.gpu reads ~100 % during the H2D copy and the one-block kernel, 30 % for the
    # launch-bound loop, while SM activity stays near 0: trapped. GEMM and HBM copy are not.
    assert share["h2d_pinned"] > 0.8
    assert share["one_block_spin"] > 0.8
    assert share["tiny_kernels"] > 0.8
    assert share["gemm_bf16"] < 0.2
    assert share["hbm_copy"] < 0.2
    assert share["idle"] == 0
    spin = trap[(phase == "one_block_spin").to_numpy() & trap["trap"]]
    # The first sample of a phase still describes the one before (a sample covers the past).
    assert spin["kind"].value_counts().index[0] == "few-sm"
    assert "few SMs" in spin["why"].iloc[-1]


def test_alerts_per_phase(recorded: tuple[pd.DataFrame, pd.Series]) -> None:
    samples, phase = recorded
    gpus = pd.DataFrame({"host": ["h200"], "gpu": [0], "mem_total_bytes": [150754820096]})
    kinds = {p: [a.kind for a in alerts(samples[phase == p], gpus)] for p in set(phase)}
    assert kinds["gemm_bf16"] == ["throttling"]
    assert kinds["h2d_pinned"] == ["utilization-trap"]
    assert kinds["tiny_kernels"] == ["utilization-trap"]
    assert kinds["idle"] == []
    assert kinds["hbm_copy"] == []
    full = gpus.assign(mem_total_bytes=samples["mem_used_bytes"].max() * 1.05)
    assert [a.kind for a in alerts(samples[phase == "idle_end"], full)] == ["memory"]
    assert clock_reasons(0x4 | 0x1) == ["idle", "power cap"]


def test_no_trap_on_a_busy_training_recording() -> None:
    samples = pd.DataFrame(read_recording(SAMPLES / "gpt_train_fp32_naive.nvml.csv"))
    assert not utilization_trap(samples)["trap"].any()


def test_bucketed_reads_and_figure(tmp_path: Path) -> None:
    NvmlSampler(tmp_path, host="h200", source=ReplaySource([PHASES], keep_time=True)).open()
    s = NvmlSampler(tmp_path, host="h200", source=ReplaySource([PHASES], keep_time=True))
    s.open()
    s.drain()
    s.close()
    store = Store(tmp_path)
    raw = rt.samples(store, 0, 2**62)
    start, end = int(raw["ts_ns"].min()), int(raw["ts_ns"].max()) + 1
    b = rt.bucketed(store, start, end, 10**9)
    assert b["samples"].sum() == len(raw) == 215
    assert len(b) == pytest.approx((end - start) / 1e9, abs=1.5)
    assert b["replayed"].all()
    assert b["clocks_event_reasons"].max() & 0x4  # the GEMM's power cap survives the OR
    assert b["gpm_tensor_util_pct"].max() > 50
    inv = rt.inventory(store)
    assert len(inv) == 1  # two starts, the newest row per GPU
    fig = gpu_panels(b, RUN_PANELS)
    assert len(fig.data) == len(RUN_PANELS)
    assert fig.data[0].name == "h200 · GPU 0"


def test_a_trace_run_gets_the_telemetry_of_its_window(tmp_path: Path) -> None:
    run_id = ingest([SAMPLES / "gpt_train_bf16.pt.trace.json.gz"], data_dir=tmp_path)
    s = NvmlSampler(
        tmp_path,
        host="node",
        source=ReplaySource([SAMPLES / "gpt_train_bf16.nvml.csv"], keep_time=True),
    )
    s.open()
    s.drain()
    s.close()
    # Telemetry of another time on the same store must not show up.
    other = NvmlSampler(tmp_path, host="node", source=ReplaySource([PHASES], keep_time=True))
    other.open()
    other.drain()
    other.close()
    store = Store(tmp_path)
    start, end = rt.run_window(store, run_id) or (0, 0)
    lake = LakeTelemetry(store)
    during = run_samples(lake, store, run_id)
    recorded = pd.read_csv(SAMPLES / "gpt_train_bf16.nvml.csv")
    assert set(during["ts_ns"]) == set(recorded["ts_ns"])
    assert during["ts_ns"].between(start - 10**9, end + 10**9).all()
    assert run_samples(lake, store, run_id, pad_ns=0)["ts_ns"].between(start, end).all()


def test_a_long_runs_telemetry_is_drawn_bucketed(tmp_path: Path) -> None:
    # GIVEN the six-phase H200 recording in a store: 217 samples of one GPU
    s = NvmlSampler(tmp_path, host="h200", source=ReplaySource([PHASES], keep_time=True))
    s.open()
    s.drain()
    s.close()
    lake = LakeTelemetry(Store(tmp_path))
    raw = lake.samples(0, 2**62)
    assert len(raw) == len(pd.read_csv(PHASES))
    # WHEN a chart may draw 20 points per GPU
    drawn = thinned(lake, raw, 20)
    # THEN it gets at most 20 buckets that hold every sample, over the same span, and the
    # GEMM phase's tensor activity survives the averaging
    assert 15 <= len(drawn) <= 20
    assert drawn["samples"].sum() == len(raw)
    assert drawn["ts_ns"].min() == raw["ts_ns"].min()
    assert drawn["ts_ns"].max() <= raw["ts_ns"].max()
    assert drawn["gpm_tensor_util_pct"].max() > 50
    assert thinned(lake, raw, len(raw)) is raw  # few enough: the raw samples themselves


TWO_GPUS = REPO / "data" / "samples" / "nvml_phases_2xh200.csv"


def test_two_gpus_one_working_one_idle(tmp_path: Path) -> None:
    """Recorded on a 2x H200 node: the agent sampled both GPUs while the phases ran on GPU 0.

    Replayed through the agent into a real store, GPU 0 shows each phase's signature and
    GPU 1 stays idle, tick for tick (tools/nvml_phases.py on nvidia-h200-x2).
    """
    s = NvmlSampler(tmp_path, host="2xh200", source=ReplaySource([TWO_GPUS], keep_time=True))
    s.open()
    s.drain()
    s.close()
    samples = Store(tmp_path).query("SELECT * FROM gpu_samples ORDER BY gpu, ts_ns")
    phase = pd.read_csv(TWO_GPUS)[["gpu", "ts_ns", "phase"]].fillna("")
    both = samples.merge(phase, on=["gpu", "ts_ns"], how="inner")
    assert sorted(both["gpu"].unique()) == [0, 1]
    assert len(both) == len(phase)
    med = both.groupby(["gpu", "phase"])[
        ["gpm_tensor_util_pct", "gpm_dram_bw_util_pct", "gpm_sm_util_pct", "util_gpu_pct"]
    ].median()
    assert med.loc[(0, "gemm_bf16"), "gpm_tensor_util_pct"] > 80
    assert med.loc[(0, "hbm_copy"), "gpm_dram_bw_util_pct"] > 80
    assert med.loc[(0, "h2d_pinned"), "util_gpu_pct"] > 90  # the utilization trap: a copy
    assert med.loc[(0, "h2d_pinned"), "gpm_sm_util_pct"] < 5
    gpu1 = med.loc[1]
    assert (gpu1[["gpm_tensor_util_pct", "gpm_sm_util_pct", "util_gpu_pct"]] < 1).all().all()
