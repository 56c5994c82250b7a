"""The run metrics the report, the comparison and the pages show: one label (with its
unit), one short title, one better direction and one number of decimals per key."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Metric:
    key: str
    label: str  # in tables: what it is, with its unit
    title: str  # on a metric tile, whose value carries the unit
    better: str  # "lower", "higher", or "" where neither is better
    digits: int


_ALL = (
    Metric("step_time_ms", "time per step, profiled (ms)", "Step, profiled", "lower", 2),
    Metric("unprofiled_step_ms", "time per step, unprofiled (ms)", "Step, unprofiled", "lower", 2),
    Metric("profiler_share_pct", "profiler's share of the step (%)", "Profiler's share", "", 1),
    Metric("kernel_count", "kernels", "Kernels", "", 0),
    Metric("kernel_time_ms", "kernel time (ms)", "Kernel time", "", 2),
    Metric("kernels_per_step", "kernels per step", "Kernels per step", "lower", 0),
    Metric("kernel_ms_per_step", "kernel time per step (ms)", "Kernel time per step", "lower", 2),
    Metric("gpu_busy_pct", "GPU busy (%)", "GPU busy", "higher", 1),
    Metric("compute_pct", "compute (%)", "Compute", "higher", 1),
    Metric("comm_pct", "comm, exposed (%)", "Comm (exposed)", "lower", 1),
    Metric("comm_overlap_pct", "comm overlapped (%)", "Comm overlapped", "higher", 1),
    Metric("memcpy_pct", "memcpy (%)", "Memcpy", "lower", 1),
    Metric("memset_pct", "memset (%)", "Memset", "lower", 1),
    Metric("idle_pct", "idle (%)", "Idle", "lower", 1),
    Metric("host_wait_pct", "idle: host wait (%)", "Idle: host wait", "lower", 1),
    Metric("kernel_wait_pct", "idle: kernel wait (%)", "Idle: kernel wait", "lower", 1),
    Metric("idle_other_pct", "idle: other (%)", "Idle: other", "lower", 1),
    Metric("tokens_per_s", "tokens per second", "Tokens/s", "higher", 0),
    Metric("achieved_tflops", "achieved TFLOP/s per GPU", "Achieved TFLOP/s", "higher", 2),
    Metric("mfu_pct", "MFU (%)", "MFU", "higher", 1),
    Metric("hbm_bw_util_pct", "HBM bandwidth (%)", "HBM bandwidth", "higher", 1),
    Metric("modelled_time_pct", "GPU time with a work model (%)", "Time modelled", "", 1),
)
METRICS = {m.key: m for m in _ALL}

# The report's key metrics table, in reading order.
REPORT_METRICS = (
    "unprofiled_step_ms", "step_time_ms", "profiler_share_pct", "kernel_count",
    "kernel_time_ms", "gpu_busy_pct", "compute_pct",
    "comm_pct", "comm_overlap_pct", "memcpy_pct", "memset_pct", "idle_pct", "host_wait_pct",
    "kernel_wait_pct", "achieved_tflops", "mfu_pct", "hbm_bw_util_pct",
)  # fmt: skip
# The comparison's rows: totals become per-step values (runs profile different step counts).
COMPARE_METRICS = (
    "unprofiled_step_ms", "step_time_ms", "tokens_per_s", "profiler_share_pct",
    "gpu_busy_pct", "idle_pct", "host_wait_pct", "kernel_wait_pct",
    "idle_other_pct", "compute_pct", "comm_pct", "comm_overlap_pct", "memcpy_pct",
    "memset_pct", "kernels_per_step", "kernel_ms_per_step", "achieved_tflops", "mfu_pct",
    "hbm_bw_util_pct", "modelled_time_pct",
)  # fmt: skip
