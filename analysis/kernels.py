"""Kernels: per kernel name, how often and how long it ran, how it was launched, what it
achieved; and how much of the GPU time ran on tensor cores, per kernel class.

Tensor-core use is read from the kernel's name (analysis.kernel_classes: `nvjet_*`,
`*_tensorop_*`, `*gmma*`, flash/cuDNN attention…): the trace records no pipe counters. Rates
are the roofline's modelled FLOPs and bytes (analysis.roofline.kernel_work) over the time of
the kernels whose op has a work model; `modelled_pct` says how much of the kernel's time that
covers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.kernel_classes import KERNEL_CLASSES

KERNEL_COLUMNS = [
    "name", "kernel_class", "tensor_core", "calls", "total_ms", "share_pct", "mean_us",
    "min_us", "max_us", "grid", "block", "configs", "registers_per_thread",
    "shared_mem_bytes", "occupancy_pct", "tflops", "gbps", "modelled_pct",
]  # fmt: skip
CLASS_COLUMNS = ["kernel_class", "kernels", "time_ms", "tensor_core_ms", "tensor_core_pct"]


def kernel_table(work: pd.DataFrame, configs: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel name (KERNEL_COLUMNS), most time first.

    Args:
        work: analysis.roofline.kernel_work rows (kernels are kept, memcpy/memset dropped).
        configs: data.reads_kernels.launch_configs (grid, block, configs, registers,
            shared memory, occupancy per name).
    Columns: calls, total_ms, share_pct (of all kernel time), mean_us, min_us, max_us,
    grid/block (the most frequent; configs = how many distinct), registers_per_thread,
    shared_mem_bytes, occupancy_pct (time-weighted estimate), tflops and gbps (modelled
    work over modelled time; tflops NaN for kernels modelled with no FLOPs), modelled_pct.
    """
    k = work[work["kind"] == "kernel"]
    if k.empty:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    modelled = k["flops"].notna() & k["bytes"].notna()
    dur = k["dur_ns"].astype(np.float64)
    frame = pd.DataFrame({
        "name": k["name"].astype(str), "kernel_class": k["kernel_class"],
        "tensor_core": k["tensor_core"], "dur": dur, "mdur": dur.where(modelled, 0.0),
        "flops": k["flops"].where(modelled, 0.0), "bytes": k["bytes"].where(modelled, 0.0),
    })  # fmt: skip
    g = frame.groupby("name", sort=False).agg(
        kernel_class=("kernel_class", "first"), tensor_core=("tensor_core", "first"),
        calls=("dur", "size"), total=("dur", "sum"), min_ns=("dur", "min"),
        max_ns=("dur", "max"), mdur=("mdur", "sum"), flops=("flops", "sum"),
        bytes=("bytes", "sum"),
    ).reset_index()  # fmt: skip
    out = g.merge(configs, on="name", how="left")
    secs = (out["mdur"] / 1e9).where(out["mdur"] > 0)
    out["total_ms"] = out["total"] / 1e6
    out["share_pct"] = 100 * out["total"] / float(dur.sum())
    out["mean_us"] = out["total"] / out["calls"] / 1e3
    out["min_us"], out["max_us"] = out["min_ns"] / 1e3, out["max_ns"] / 1e3
    out["tflops"] = (out["flops"] / secs / 1e12).where(out["flops"] > 0)
    out["gbps"] = out["bytes"] / secs / 1e9
    out["modelled_pct"] = 100 * out["mdur"] / out["total"]
    out["configs"] = out["configs"].astype("Int64")
    return out.sort_values("total_ms", ascending=False, ignore_index=True)[KERNEL_COLUMNS]


def tensor_core_use(work: pd.DataFrame) -> pd.DataFrame:
    """Kernel time per class and the part of it on tensor cores (CLASS_COLUMNS), classes in
    KERNEL_CLASSES order, only those with kernels."""
    k = work[work["kind"] == "kernel"]
    if k.empty:
        return pd.DataFrame(columns=CLASS_COLUMNS)
    dur = k["dur_ns"].astype(np.float64)
    frame = pd.DataFrame(
        {"kernel_class": k["kernel_class"], "dur": dur, "tc": dur.where(k["tensor_core"], 0.0)}
    )
    g = frame.groupby("kernel_class").agg(
        kernels=("dur", "size"), dur=("dur", "sum"), tc=("tc", "sum")
    )
    order = [c for c in KERNEL_CLASSES if c in g.index]
    g = g.loc[order]
    return pd.DataFrame({
        "kernel_class": pd.Series(order, dtype=object),
        "kernels": g["kernels"].to_numpy(np.int64),
        "time_ms": g["dur"].to_numpy() / 1e6,
        "tensor_core_ms": g["tc"].to_numpy() / 1e6,
        "tensor_core_pct": 100 * g["tc"].to_numpy() / g["dur"].to_numpy(),
    })  # fmt: skip


def tensor_core_share_pct(work: pd.DataFrame) -> float | None:
    """Share of all kernel time spent in tensor-core kernels, %; None without kernels."""
    k = work[work["kind"] == "kernel"]
    total = float(k["dur_ns"].sum())
    return 100 * float(k.loc[k["tensor_core"], "dur_ns"].sum()) / total if total else None
