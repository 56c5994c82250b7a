"""What the recommendation rules look at: one run's facts, read once from the store.

`Facts` holds frames (no Streamlit, no files); reads happen in `gather` and lazily, so a rule
that needs allocator events or NVML samples pays for them only when it runs. Savings are per
step and per rank: `per_step_ms(total_ns)` turns time summed over every profiled step of every
rank into milliseconds per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, cast

import pandas as pd

from analysis import breakdown as bd
from analysis import roofline
from analysis.gemm_shapes import weight_gemms
from analysis.gemm_traffic import run_kernel_work
from analysis.overview import step_times
from analysis.specs import DeviceSpec, match_spec
from data import reads, reads_recommend, reads_roofline, reads_telemetry, reads_timeline
from data.store import Store

T = TypeVar("T")


@dataclass
class Facts:
    """One run as the rules see it. Frames are the store's reads (data/reads_*.py)."""

    store: Store
    run_id: str
    run: dict[str, Any]
    spec: DeviceSpec | None
    measured: roofline.Ceilings | None  # collectors.calibrate's, for this device name
    steps: pd.DataFrame
    events: pd.DataFrame  # data.reads_timeline.gpu_work
    per_step: pd.DataFrame  # analysis.breakdown.breakdown
    all_work: pd.DataFrame  # analysis.roofline.kernel_work of every GPU activity
    ops: pd.DataFrame  # data.reads_roofline.launching_ops
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A derived value computed once per run (several rules share it)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return cast(T, self._memo[key])

    @cached_property
    def ceilings(self) -> roofline.Ceilings | None:
        """The roofs savings are estimated against: measured, else the datasheet's."""
        if self.measured is not None or self.spec is None:
            return self.measured
        return roofline.datasheet_ceilings(self.spec)

    @cached_property
    def work(self) -> pd.DataFrame:
        """`all_work` inside the profiled steps: warm-up launches outside them are not the
        steady state (all of it for a trace without steps)."""
        if self.steps.empty:
            return self.all_work
        return self.all_work[self.all_work["step"].notna()].reset_index(drop=True)

    @property
    def ranks(self) -> int:
        return max(int(self.events["rank"].nunique()), 1) if len(self.events) else 1

    @property
    def windows(self) -> int:
        """Step windows per rank (1 for a trace without ProfilerSteps)."""
        if self.per_step.empty:
            return 1
        return max(int(self.per_step.groupby("rank").size().max()), 1)

    @cached_property
    def step_ms(self) -> float:
        """Median step time (slowest rank, start to next start); the whole window without
        steps."""
        times = step_times(self.steps)
        if len(times):
            return float(times["step_time_ms"].median())
        return float(self.per_step["window_ns"].max()) / 1e6 if len(self.per_step) else 0.0

    def per_step_ms(self, total_ns: float) -> float:
        """Time summed over all steps and ranks, as ms per step (per rank)."""
        return float(total_ns) / 1e6 / (self.windows * self.ranks)

    @cached_property
    def shares(self) -> dict[str, float]:
        """The run's exclusive time shares (analysis.breakdown.shares, all ranks), in %."""
        sh = bd.shares(self.per_step)
        row = sh[sh["rank"].isna()]
        if row.empty:
            return {}
        return {str(k): float(v) for k, v in row.iloc[0].items() if k != "rank" and pd.notna(v)}

    def total_ns(self, key: str) -> float:
        """A breakdown column (idle_ns, host_wait_ns…) summed over steps and ranks."""
        return float(self.per_step[key].sum()) if key in self.per_step else 0.0

    @cached_property
    def kernels(self) -> pd.DataFrame:
        """`work` rows of kernels only."""
        return self.work[self.work["kind"] == "kernel"]

    @cached_property
    def is_training(self) -> bool:
        """A backward pass ran (autograd ops launched GPU work)."""
        return bool(reads_recommend.backward_op_count(self.store, self.run_id) > 0)

    @cached_property
    def syncs(self) -> pd.DataFrame:
        return reads_recommend.host_syncs(self.store, self.run_id)

    @cached_property
    def launches(self) -> pd.DataFrame:
        return reads_recommend.launch_calls(self.store, self.run_id)

    @cached_property
    def memcpys(self) -> pd.DataFrame:
        return reads_recommend.memcpys(self.store, self.run_id)

    @cached_property
    def ranges(self) -> pd.DataFrame:
        return reads_recommend.ranges(self.store, self.run_id)

    @cached_property
    def memory(self) -> pd.DataFrame:
        return reads_recommend.memory_peaks(self.store, self.run_id)

    @cached_property
    def collectives(self) -> pd.DataFrame:
        return reads_recommend.collectives(self.store, self.run_id)

    @cached_property
    def telemetry(self) -> pd.DataFrame:
        """NVML/GPM samples taken while the run was profiled (empty when none were)."""
        return reads_telemetry.run_samples(self.store, self.run_id, pad_ns=0)

    def shaped_ops(self, *names: str) -> pd.DataFrame:
        return reads_recommend.shaped_ops(self.store, self.run_id, names)

    @cached_property
    def gpu_inventory(self) -> pd.DataFrame:
        """The newest gpu_inventory row of each (host, gpu) the NVML agents saw (max clocks,
        power limit); empty without telemetry."""
        return reads_telemetry.inventory(self.store)

    @cached_property
    def allocator_calls(self) -> pd.DataFrame:
        """cudaMalloc/cudaFree (hip…) runtime calls: rank, step, name, ts_ns, dur_ns."""
        return reads_recommend.allocator_calls(self.store, self.run_id)

    @cached_property
    def weight_gemms(self) -> pd.DataFrame:
        """Activation × weight GEMM kernels with their token rows and weight bytes
        (analysis.gemm_shapes.weight_gemms)."""
        return weight_gemms(self.kernels, self.ops)


def gather(store: Store, run_id: str) -> Facts:
    """Read one run's facts (the eager part: GPU work, steps, ops, roofline work)."""
    run = store.run_summary(run_id)
    steps = reads.steps(store, run_id)
    events = reads_timeline.gpu_work(store, run_id)
    ops = reads_roofline.launching_ops(store, run_id)
    spec = match_spec(run.get("device_name"))
    return Facts(
        store=store,
        run_id=run_id,
        run=run,
        spec=spec,
        measured=roofline.measured_ceilings(reads_roofline.ceilings(store, run.get("device_name"))),
        steps=steps,
        events=events,
        per_step=bd.breakdown(events, steps),
        all_work=run_kernel_work(store, run_id, ops, spec),
        ops=ops,
    )


def top_names(rows: pd.DataFrame, col: str, n: int) -> tuple[str, ...]:
    """The n values of `col` (op_name, name) with the most GPU time in `rows`."""
    by = rows.groupby(col, observed=True)["dur_ns"].sum()
    return tuple(str(x) for x in by.nlargest(n).index)


def share_pct(part_ns: float, facts: Facts) -> float:
    """A per-step saving as a % of the step time."""
    return 100.0 * part_ns / facts.step_ms if facts.step_ms else 0.0


def ms(x: float) -> str:
    """A duration for evidence text: 3 significant digits, in ms or µs."""
    if abs(x) >= 1:
        return f"{x:.3g} ms" if abs(x) < 1000 else f"{x:,.0f} ms"
    return f"{x * 1e3:.3g} µs"
