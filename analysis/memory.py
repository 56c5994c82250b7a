"""Device memory from the caching allocator's events: the curves, the peak, the headroom.

`allocated` is what tensors hold, `reserved` what the caching allocator took from the driver
(allocated plus its cache); the headroom is the device's memory (deviceProperties) minus the
reserved peak: what a larger batch could still use before the allocator has to ask the
driver for more than there is. Allocations made before the profiler started have no event:
the part of the peak no recorded allocation explains is reported as such.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import MemoryPeak

SUMMARY_COLUMNS = [
    "device", "peak_allocated_bytes", "peak_reserved_bytes", "total_memory_bytes",
    "headroom_bytes", "reserved_pct", "peak_ms", "allocations", "frees",
]  # fmt: skip
CUDA = 1


def device_labels(devices: pd.DataFrame) -> list[str]:
    """'cuda:0' or 'cpu' per row of data.reads_memory.memory_devices, 'rank 1 · cuda:0' when
    the run has several ranks."""
    many = devices["rank"].nunique() > 1
    out = []
    for rank, kind, dev in zip(
        devices["rank"], devices["device_type"], devices["device_id"], strict=True
    ):
        name = f"cuda:{dev}" if kind == CUDA else "cpu"
        out.append(f"rank {rank} · {name}" if many else name)
    return out


def memory_summary(devices: pd.DataFrame) -> pd.DataFrame:
    """One row per device (SUMMARY_COLUMNS): the peaks, the device's memory, the headroom
    (memory − reserved peak) and the reserved peak as % of the memory (NaN without
    deviceProperties), the time of the allocated peak in ms from the first allocator event,
    and the allocator's allocations and frees."""
    total = devices["total_memory_bytes"].astype("Float64")
    reserved = devices["peak_reserved_bytes"].astype("Float64")
    t0 = int(devices["first_ns"].min()) if len(devices) else 0
    return pd.DataFrame({
        "device": device_labels(devices),
        "peak_allocated_bytes": devices["peak_allocated_bytes"],
        "peak_reserved_bytes": devices["peak_reserved_bytes"],
        "total_memory_bytes": devices["total_memory_bytes"],
        "headroom_bytes": (total - reserved).astype("Float64"),
        "reserved_pct": (100 * reserved / total).astype("Float64"),
        "peak_ms": (devices["peak_ts_ns"] - t0) / 1e6,
        "allocations": devices["allocations"], "frees": devices["frees"],
    })  # fmt: skip


def unexplained_bytes(peak: MemoryPeak, allocated_at_peak: int) -> int:
    """The part of the allocated peak that no allocation recorded in the trace explains
    (tensors allocated before the profiler started, e.g. the weights)."""
    return max(int(allocated_at_peak) - int(peak.alive["bytes"].sum()), 0)


def allocator_call_table(calls: pd.DataFrame, steps: int) -> pd.DataFrame:
    """Driver-level allocator calls (cudaMalloc, cudaFree, hip…; analysis.facts
    allocator_calls) per name: name, calls, per_step (over `steps` profiled step windows,
    NaN without steps), total_ms, max_ms."""
    cols = ["name", "calls", "per_step", "total_ms", "max_ms"]
    if calls.empty:
        return pd.DataFrame(columns=cols)
    g = calls.groupby("name", sort=True)["dur_ns"]
    out = pd.DataFrame({
        "name": g.size().index.astype(str), "calls": g.size().to_numpy(),
        "total_ms": g.sum().to_numpy() / 1e6, "max_ms": g.max().to_numpy() / 1e6,
    })  # fmt: skip
    out["per_step"] = out["calls"] / steps if steps else np.nan
    return out[cols]
