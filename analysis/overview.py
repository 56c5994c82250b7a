"""The basic facts of a run: time per step, GPU busy %, kernel counts, top kernels.

Definitions (used by the Overview page and, later, the report):
- time per step: the span of the GPU work the step launched, from the end of the previous
  step's GPU work to the end of its own (analysis.step_model.profiled_spans). With no host
  sync the CPU runs ahead, so the CPU range alone would understate the step (ResNet-50 fp32:
  53-56 ms CPU ranges for 77 ms GPU steps).
- GPU busy %: 100 % minus the idle share of analysis.breakdown (the union of all GPU
  activity, any stream, over the step windows that tile the profiled GPU time), so the
  Overview, the Breakdown page and the report show one number.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.step_model import profiled_spans


@dataclass(frozen=True, slots=True)
class RunOverview:
    """Headline numbers of one run (times in ms, shares in %)."""

    rank_count: int
    step_count: int
    step_time_ms: float | None
    gpu_busy_pct: float | None
    kernel_count: int
    kernel_time_ms: float


def step_times(steps: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Per step (slowest rank): step, step_time_ms, kernel_count, kernel_time_ms.

    `steps` has the store's `steps` columns (rank, step, ts_ns, dur_ns, gpu_start_ns,
    gpu_end_ns, …); `events` the run's GPU activity (rank, step, ts_ns, dur_ns at least).
    A step's time is the span of the GPU work it launched (analysis.step_model.
    profiled_spans): where the CPU runs ahead of the GPU, the CPU range is shorter.
    """
    cols = ["step", "step_time_ms", "kernel_count", "kernel_time_ms"]
    if steps.empty:
        return pd.DataFrame(columns=cols)
    s = steps.merge(profiled_spans(steps, events), on=["rank", "step"])
    per = s.groupby("step").agg(
        period_ns=("span_ns", "max"),
        kernel_count=("kernel_count", "sum"),
        kernel_time_ns=("kernel_time_ns", "sum"),
    )
    out = pd.DataFrame({
        "step": per.index.astype(int),
        "step_time_ms": per["period_ns"].to_numpy() / 1e6,
        "kernel_count": per["kernel_count"].astype(int).to_numpy(),
        "kernel_time_ms": per["kernel_time_ns"].to_numpy() / 1e6,
    })  # fmt: skip
    return out.reset_index(drop=True)


def overview(
    rank_count: int, per_step: pd.DataFrame, shares: dict[str, float], kernels: pd.DataFrame
) -> RunOverview:
    """Headline numbers from `step_times`' frame, the run's breakdown shares
    (analysis.facts.Facts.shares, computed once per run) and the kernel totals
    (data.reads.kernel_totals)."""
    return RunOverview(
        rank_count=rank_count,
        step_count=len(per_step),
        step_time_ms=float(per_step["step_time_ms"].median()) if len(per_step) else None,
        gpu_busy_pct=shares.get("gpu_busy_pct"),
        kernel_count=int(kernels["count"].sum()) if not kernels.empty else 0,
        kernel_time_ms=float(kernels["total_ns"].sum()) / 1e6 if not kernels.empty else 0.0,
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
