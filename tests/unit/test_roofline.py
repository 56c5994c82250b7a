"""Roofline rows, bounds, run metrics and the bandwidth series on small hand-built frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.bandwidth import bandwidth_series, kernel_bandwidth
from analysis.roofline import Ceilings, roofline_table, run_compute_metrics, step_metrics
from analysis.specs import match_spec

H200 = match_spec("NVIDIA H200")
ROOFS = Ceilings("measured", {"bf16": 800e12, "fp32": 50e12}, 4e12)  # ridge bf16: 200 FLOP/B


def kernels(*rows: tuple[str, str, float, float, int, int]) -> pd.DataFrame:
    """(name, precision, flops, bytes, ts_ns, dur_ns) -> a kernel_work-shaped frame."""
    name, prec, flops, moved, ts, dur = zip(*rows, strict=True)
    n = len(rows)
    return pd.DataFrame({
        "rank": [0] * n, "step": [1] * n, "kind": ["kernel"] * n, "name": name,
        "ts_ns": ts, "dur_ns": dur, "est_occupancy_pct": [50.0] * n,
        "op_external_id": range(n), "op_name": name, "op_class": ["gemm"] * n,
        "kernel_class": ["gemm"] * n, "tensor_core": [True] * n, "precision": prec,
        "flops": flops, "bytes": moved,
        "attribution": ["modelled" if f == f else "no shapes" for f in flops],
    })  # fmt: skip


def test_rows_bounds_and_percentages_by_hand() -> None:
    df = kernels(
        # 400 GFLOP over 1 GB in 1 ms: I = 400 ≥ ridge 200 -> compute; 400 TFLOP/s of 800
        ("big", "bf16", 400e9, 1e9, 0, 1_000_000),
        # 1 GFLOP over 1 GB in 0.5 ms: I = 1 -> memory; roof 1 × 4e12 = 4 TFLOP/s; 2 of 4
        ("stream", "bf16", 1e9, 1e9, 2_000_000, 500_000),
        # 2 µs kernel at 1 % of its roof -> latency
        ("tiny", "fp32", 1e3, 1e5, 3_000_000, 2_000),
        ("shapeless", "bf16", np.nan, np.nan, 4_000_000, 1_000),
    )
    t = roofline_table(df, H200, ROOFS, by="name").set_index("name")
    assert t.loc["big", "intensity"] == 400
    assert t.loc["big", "achieved_tflops"] == pytest.approx(400)
    assert t.loc["big", "bound"] == "compute"
    assert t.loc["big", "pct_of_measured"] == pytest.approx(50)
    assert t.loc["big", "pct_of_datasheet"] == pytest.approx(100 * 400 / 989.4)
    assert t.loc["stream", "bound"] == "memory"
    assert t.loc["stream", "pct_of_ceiling"] == pytest.approx(50)
    assert t.loc["tiny", "bound"] == "latency"
    assert pd.isna(t.loc["shapeless", "flops"])
    assert t.loc["shapeless", "note"] == "no shapes"
    assert t.loc["shapeless", "bound"] is None
    assert t["share_pct"].sum() == pytest.approx(100)


def test_groups_split_by_precision_and_keep_all_time() -> None:
    df = kernels(("a", "bf16", 1e9, 1e6, 0, 1000), ("b", "fp32", 1e9, 1e6, 1000, 3000))
    t = roofline_table(df, H200, None, by="op_class")
    assert sorted(t["precision"]) == ["bf16", "fp32"]
    assert t["time_ms"].sum() == pytest.approx(0.004)
    assert t.set_index("precision").loc["fp32", "pct_of_ceiling"] == pytest.approx(
        100 * (1e9 / 3e-6) / 67e12
    )  # no measured roofs: % of the datasheet


def test_run_metrics_per_gpu_over_step_time() -> None:
    df = kernels(("a", "bf16", 989.4e9, 4.8e9, 0, 1_000_000))
    steps = pd.DataFrame({"rank": [0], "step": [1], "ts_ns": [0], "dur_ns": [2_000_000],
                          "gpu_start_ns": [0], "gpu_end_ns": [1_000_000],
                          "gpu_busy_ns": [1_000_000],
                          "kernel_count": [1], "kernel_time_ns": [1_000_000]})  # fmt: skip
    m = run_compute_metrics(df, steps, H200, tokens_per_step=4096)
    # 989.4 GFLOP in a 2 ms step: 494.7 TFLOP/s, half the bf16 peak; 4.8 GB: 50 % of HBM
    assert m["achieved_tflops"] == pytest.approx(494.7)
    assert m["mfu_pct"] == pytest.approx(50)
    assert m["hbm_bw_util_pct"] == pytest.approx(50)
    assert m["tokens_per_s"] == pytest.approx(4096 / 0.002)
    assert m["modelled_time_pct"] == 100
    per_step = step_metrics(df, steps, H200)
    assert per_step["mfu_pct"].tolist() == pytest.approx([50])


def test_bandwidth_series_conserves_bytes_and_adds_overlaps() -> None:
    # 4 GB over [0, 1 ms) and 2 GB over [0.5, 1 ms): 4 TB/s, then 8 TB/s
    df = kernels(("x", "bf16", 0.0, 4e9, 0, 1_000_000), ("y", "bf16", 0.0, 2e9, 500_000, 500_000))
    s = bandwidth_series(df, 4.8e12, buckets=2)
    assert s["bytes"].sum() == pytest.approx(6e9)
    assert s["gbps"].tolist() == pytest.approx([4000, 8000])
    assert s["util_pct"].tolist() == pytest.approx([100 * 4 / 4.8, 100 * 8 / 4.8])
    k = kernel_bandwidth(df, 4.8e12)
    assert k.set_index("name").loc["y", "gbps"] == pytest.approx(4000)
