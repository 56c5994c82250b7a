"""The basic facts of a run: time per step, GPU busy %, kernel counts, top kernels.

Definitions (used by the Overview page and, later, the report):
- time per step: from one ProfilerStep's start to the next one's; the last step runs until
  the later of its CPU end and the end of the GPU work it launched. With no host sync the CPU
  runs ahead, so the CPU span alone would understate the step.
- GPU busy %: the union of all GPU activity intervals (kernels, memcpy, memset, any stream)
  over the step time (over the GPU-active span when the trace has no ProfilerSteps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True, slots=True)
class RunOverview:
    """Headline numbers of one run (times in ms, shares in %)."""

    rank_count: int
    step_count: int
    step_time_ms: float | None
    gpu_busy_pct: float | None
    kernel_count: int
    kernel_time_ms: float


def busy_ns(ts_ns: np.ndarray, dur_ns: np.ndarray) -> int:
    """Length of the union of intervals [ts, ts+dur) in ns."""
    if len(ts_ns) == 0:
        return 0
    order = np.argsort(ts_ns, kind="stable")
    start = ts_ns[order].astype(np.int64)
    end = start + dur_ns[order].astype(np.int64)
    reach = np.maximum.accumulate(end)
    # A new island starts where an interval begins after everything before it ended.
    new = np.empty(len(start), dtype=bool)
    new[0] = True
    new[1:] = start[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    island_end = np.append(reach[idx[1:] - 1], reach[-1])
    return int((island_end - start[idx]).sum())


def step_times(steps: pd.DataFrame) -> pd.DataFrame:
    """Per step (slowest rank): step, step_time_ms, gpu_busy_pct, kernel_count, kernel_time_ms.

    `steps` has the store's `steps` columns (rank, step, ts_ns, dur_ns, gpu_end_ns, …).
    """
    cols = ["step", "step_time_ms", "gpu_busy_pct", "kernel_count", "kernel_time_ms"]
    if steps.empty:
        return pd.DataFrame(columns=cols)
    s = steps.sort_values(["rank", "step"]).copy()
    next_start = s.groupby("rank")["ts_ns"].shift(-1)
    last_end = np.maximum(s["ts_ns"] + s["dur_ns"], s["gpu_end_ns"].fillna(0))
    s["period_ns"] = next_start.fillna(pd.Series(last_end, index=s.index)) - s["ts_ns"]
    per = s.groupby("step").agg(
        period_ns=("period_ns", "max"),
        busy_ns=("gpu_busy_ns", "max"),
        kernel_count=("kernel_count", "sum"),
        kernel_time_ns=("kernel_time_ns", "sum"),
    )
    out = pd.DataFrame({
        "step": per.index.astype(int),
        "step_time_ms": per["period_ns"].to_numpy() / 1e6,
        "gpu_busy_pct": 100.0 * per["busy_ns"].to_numpy() / per["period_ns"].to_numpy(),
        "kernel_count": per["kernel_count"].astype(int).to_numpy(),
        "kernel_time_ms": per["kernel_time_ns"].to_numpy() / 1e6,
    })  # fmt: skip
    return out.reset_index(drop=True)


def overview(
    rank_count: int, steps: pd.DataFrame, intervals: pd.DataFrame, kernels: pd.DataFrame
) -> RunOverview:
    """Headline numbers from the store's steps, GPU intervals and kernel totals frames."""
    per_step = step_times(steps)
    kernel_count = int(kernels["count"].sum()) if not kernels.empty else 0
    kernel_time_ms = float(kernels["total_ns"].sum()) / 1e6 if not kernels.empty else 0.0
    if not per_step.empty:
        busy = steps.groupby("rank")["gpu_busy_ns"].sum().sum()
        period = (per_step["step_time_ms"].sum() * 1e6) * max(steps["rank"].nunique(), 1)
        return RunOverview(
            rank_count=rank_count,
            step_count=len(per_step),
            step_time_ms=float(per_step["step_time_ms"].median()),
            gpu_busy_pct=float(100.0 * busy / period) if period else None,
            kernel_count=kernel_count,
            kernel_time_ms=kernel_time_ms,
        )
    busy_total = span_total = 0
    for _, g in intervals.groupby("rank"):
        ts, dur = g["ts_ns"].to_numpy(), g["dur_ns"].to_numpy()
        busy_total += busy_ns(ts, dur)
        span_total += int((ts + dur).max() - ts.min())
    return RunOverview(
        rank_count=rank_count,
        step_count=0,
        step_time_ms=None,
        gpu_busy_pct=100.0 * busy_total / span_total if span_total else None,
        kernel_count=kernel_count,
        kernel_time_ms=kernel_time_ms,
    )


def top_kernels(kernels: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The n kernels with the most total time: name, count, total_ms, mean_us, share_pct."""
    cols = ["name", "count", "total_ms", "mean_us", "share_pct"]
    if kernels.empty:
        return pd.DataFrame(columns=cols)
    total = float(kernels["total_ns"].sum()) or 1.0
    top = kernels.nlargest(n, "total_ns")
    return pd.DataFrame({
        "name": top["name"].to_numpy(),
        "count": top["count"].astype(int).to_numpy(),
        "total_ms": top["total_ns"].to_numpy() / 1e6,
        "mean_us": top["mean_ns"].to_numpy() / 1e3,
        "share_pct": 100.0 * top["total_ns"].to_numpy() / total,
    })  # fmt: skip
