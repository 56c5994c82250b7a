"""Per-kernel statistics and tensor-core use, on small hand-built frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.kernels import kernel_table, tensor_core_share_pct, tensor_core_use


def work() -> pd.DataFrame:
    # GIVEN two tensor-core GEMM launches (one modelled), an elementwise kernel and a memcpy
    return pd.DataFrame({
        "kind": ["kernel", "kernel", "kernel", "memcpy"],
        "name": ["nvjet_a", "nvjet_a", "elementwise_k", "Memcpy HtoD"],
        "kernel_class": ["gemm", "gemm", "elementwise", "memcpy"],
        "tensor_core": [True, True, False, False],
        "dur_ns": [300, 100, 600, 1000],
        "flops": [3e6, np.nan, 0.0, 0.0],
        "bytes": [1e3, np.nan, 6e3, 5e3],
    })  # fmt: skip


def configs() -> pd.DataFrame:
    return pd.DataFrame({
        "name": ["nvjet_a", "elementwise_k"], "grid": ["[132, 1, 1]", "[8, 1, 1]"],
        "block": ["[384, 1, 1]", "[128, 1, 1]"], "configs": [1, 2],
        "registers_per_thread": [168, 32], "shared_mem_bytes": [200_000, 0],
        "occupancy_pct": [12.5, None],
    })  # fmt: skip


def test_kernel_table_times_rates_and_configs() -> None:
    t = kernel_table(work(), configs()).set_index("name")
    # THEN memcpy is not a kernel; shares are of kernel time (1000 ns)
    assert list(t.index) == ["elementwise_k", "nvjet_a"]
    g = t.loc["nvjet_a"]
    assert (g["calls"], g["total_ms"], g["min_us"], g["max_us"]) == (2, 4e-4, 0.1, 0.3)
    assert g["share_pct"] == pytest.approx(40.0)
    assert g["modelled_pct"] == pytest.approx(75.0)
    assert g["tflops"] == pytest.approx(3e6 / 300e-9 / 1e12)
    assert (g["grid"], g["configs"]) == ("[132, 1, 1]", 1)
    # a kernel modelled with 0 FLOPs has a bandwidth, not a FLOP rate
    assert np.isnan(t.loc["elementwise_k", "tflops"])
    assert t.loc["elementwise_k", "gbps"] == pytest.approx(6e3 / 600e-9 / 1e9)


def test_tensor_core_use_by_class_and_overall() -> None:
    c = tensor_core_use(work()).set_index("kernel_class")
    assert list(c.index) == ["gemm", "elementwise"]  # KERNEL_CLASSES order, kernels only
    assert c.loc["gemm", "tensor_core_pct"] == 100.0
    assert c.loc["elementwise", "tensor_core_ms"] == 0.0
    assert tensor_core_share_pct(work()) == pytest.approx(40.0)
    assert tensor_core_share_pct(work().iloc[3:]) is None
