"""One run as the analyses see it: the loaded frames (analysis.load) and what is derived
from them once (the step windows' breakdown, every GPU event's modelled work, the device's
roofs), shared by the recommendation rules, the report, its charts and the comparison.

Savings are per step and per rank: `per_step_ms(total_ns)` turns time summed over every
profiled step of every rank into milliseconds per step.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar, cast

import pandas as pd

from analysis import breakdown as bd
from analysis import roofline
from analysis.gemm_shapes import weight_gemms
from analysis.gemm_traffic import run_rereads
from analysis.host_regions import idle_by_region, region_table
from analysis.load import HostData, RunData, RunEvidence, RunTelemetry, Store, load_evidence
from analysis.overview import step_times
from analysis.specs import DeviceSpec, match_spec
from analysis.step_model import StepModel, step_model

T = TypeVar("T")
# The ops whose calls the rules read with their shapes (analysis.load.HostData.shaped_ops):
# the embedding tables name vocabulary and tokens, torch.cat calls show a growing KV cache.
SHAPED_OPS = ("aten::embedding", "aten::cat")


class Facts:
    """One run's frames and their derived values, each computed on first use.

    Built from `RunData` alone (a page that needs the roofline), or with the host side and
    the telemetry too (`RunEvidence`: the recommendations and the report need all three).
    `spec` overrides the device spec matched from the trace's device name.
    """

    def __init__(
        self,
        data: RunData,
        host: HostData | None = None,
        telemetry: RunTelemetry | None = None,
        *,
        spec: DeviceSpec | None = None,
    ) -> None:
        self.data = data
        self._host = host
        self._telemetry = telemetry
        self.run = data.run
        self.sample = data.sample  # the analysed ranks of a run of many (None: all)
        self.spec = spec or match_spec(data.run.device_name)
        self._memo: dict[str, Any] = {}

    @classmethod
    def of(cls, evidence: RunEvidence) -> Facts:
        return cls(evidence.data, evidence.host, evidence.telemetry)

    def with_spec(self, spec: DeviceSpec) -> Facts:
        """The same frames against another device spec: nothing read again, the derived
        values computed afresh."""
        return Facts(self.data, self._host, self._telemetry, spec=spec)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A derived value computed once per run (several rules share it)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return cast(T, self._memo[key])

    @property
    def host(self) -> HostData:
        if self._host is None:
            raise ValueError(f"{self.run.run_id}: facts built without the host-side frames")
        return self._host

    @property
    def steps(self) -> pd.DataFrame:
        return self.data.steps

    @property
    def events(self) -> pd.DataFrame:
        """Every GPU activity (data.reads.gpu_events)."""
        return self.data.events

    @property
    def ops(self) -> pd.DataFrame:
        return self.data.ops

    @cached_property
    def measured(self) -> roofline.Ceilings | None:
        """collectors.calibrate's ceilings for this device name, if any were measured."""
        return roofline.measured_ceilings(self.data.ceilings)

    @cached_property
    def ceilings(self) -> roofline.Ceilings | None:
        """The roofs savings are estimated against: measured, else the datasheet's."""
        if self.measured is not None or self.spec is None:
            return self.measured
        return roofline.datasheet_ceilings(self.spec)

    @property
    def roof_sets(self) -> list[roofline.Ceilings]:
        """The roofs a roofline chart draws: the datasheet's first, then the measured ones."""
        sheet = roofline.datasheet_ceilings(self.spec) if self.spec is not None else None
        return [r for r in (sheet, self.measured) if r is not None]

    @cached_property
    def step_model(self) -> StepModel | None:
        """The unprofiled step and what bounds it (analysis.step_model); None without
        ProfilerSteps."""
        h = self.host
        return step_model(self.steps, self.events, h.step_host, h.trace_metadata, self.run.tags)

    @cached_property
    def host_ms_per_launch(self) -> float:
        """The host's own time per kernel the model launches, without the profiler: the
        step model's host time, its share in the model's forward and backward passes (not
        input preparation or Python between steps), over the kernels a step launches (0
        without a step model)."""
        model = self.step_model
        launched = len(self.kernels) / (self.windows * self.ranks)
        if model is None or not launched:
            return 0.0
        s = self.steps.merge(self.host.pass_spans, on=["rank", "step"])
        end = (s["ts_ns"] + s["dur_ns"]).astype("Int64")
        model_end = s["bwd_end_ns"].astype("Int64").fillna(end)
        share = ((model_end - s["fwd_start_ns"].astype("Int64")) / s["dur_ns"]).astype(float)
        share_med = float(share.clip(0, 1).median()) if share.notna().any() else 1.0
        return model.host_ms * share_med / launched

    @cached_property
    def idle_regions(self) -> pd.DataFrame:
        """GPU idle time per rank, step and host region (analysis.host_regions)."""
        h = self.host
        return idle_by_region(self.events, self.per_step, self.steps, h.pass_spans, h.regions)

    def region_idle_ms(self, *regions: str) -> float:
        """GPU idle per step in these host regions: without the profiler (the trace's idle
        scaled to the step model's headroom), on the trace's timeline without a model."""
        t = self.region_table
        rows = t[t["region"].isin(regions)]
        return float(rows["unprofiled_ms"].fillna(rows["idle_ms"]).sum())

    def region_host_ms(self, region: str, name_prefix: str = "") -> float:
        """Host time per step inside one region's intervals (optimizer, data_loading; those
        whose name starts with `name_prefix`) without the profiler (its cost per recorded op
        removed; on the trace's timeline without a step model)."""
        r = self.host.regions
        r = r[(r["region"] == region) & r["name"].str.startswith(name_prefix)]
        if r.empty:
            return 0.0
        dur, ops = float(r["dur_ns"].sum()), float(r["cpu_ops"].sum())
        model = self.step_model
        total = model.part_host_ms(dur, ops) * 1e6 if model is not None else dur
        return self.per_step_ms(total)

    @cached_property
    def region_table(self) -> pd.DataFrame:
        """analysis.host_regions.region_table of the run."""
        model = self.step_model
        headroom = model.headroom_ms if model is not None else None
        return region_table(self.idle_regions, self.windows * self.ranks, headroom)

    @cached_property
    def per_step(self) -> pd.DataFrame:
        """analysis.breakdown.breakdown: one row per rank and step window."""
        return bd.breakdown(self.events, self.steps)

    @cached_property
    def all_work(self) -> pd.DataFrame:
        """analysis.roofline.kernel_work of every GPU activity, tiled GEMMs' re-reads
        included when the spec gives the L2 size."""
        rereads = run_rereads(self.data.tiled_gemm_launches, self.ops, self.spec)
        return roofline.kernel_work(self.events, self.ops, rereads)

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
    def step_times(self) -> pd.DataFrame:
        """analysis.overview.step_times of the run: per step, the slowest rank's time."""
        return step_times(self.steps, self.events)

    @cached_property
    def profiled_step_ms(self) -> float:
        """Median step time on the trace's timeline (analysis.overview.step_times, slowest
        rank); the whole window without steps."""
        times = self.step_times
        if len(times):
            return float(times["step_time_ms"].median())
        return float(self.per_step["window_ns"].max()) / 1e6 if len(self.per_step) else 0.0

    @cached_property
    def step_ms(self) -> float:
        """The step savings are taken against: the unprofiled step (the step model) when
        the host-side frames are loaded and the run has steps, else the trace's."""
        model = self.step_model if self._host is not None else None
        return model.unprofiled_ms if model is not None else self.profiled_step_ms

    @property
    def gpu_busy_ms(self) -> float:
        """The GPU's busy time per step against `step_ms`: the step model's GPU work (the
        profiler stretches the step, not the kernels, so the profiled timeline's busy share
        understates it), else the trace's busy share of its step."""
        model = self.step_model if self._host is not None else None
        if model is not None:
            return model.gpu_ms
        return self.step_ms * self.shares.get("gpu_busy_pct", 100.0) / 100.0

    @property
    def step_busy_pct(self) -> float:
        """`gpu_busy_ms` as a share of `step_ms`, the figure every finding quotes (the trace's
        own busy share, `shares["gpu_busy_pct"]`, is of the profiled timeline)."""
        return 100 * self.gpu_busy_ms / max(self.step_ms, 1e-9)

    def per_step_ms(self, total_ns: float) -> float:
        """Time summed over all steps and ranks, as ms per step (per rank)."""
        return float(total_ns) / 1e6 / (self.windows * self.ranks)

    @cached_property
    def launch_stats(self) -> pd.DataFrame:
        """analysis.breakdown.launch_stats of the run's GPU events."""
        return bd.launch_stats(self.events)

    @cached_property
    def rank_shares(self) -> pd.DataFrame:
        """analysis.breakdown.shares of the step windows: per rank, and overall (rank NA)."""
        return bd.shares(self.per_step)

    @cached_property
    def shares(self) -> dict[str, float]:
        """The run's exclusive time shares (all ranks), in %."""
        row = self.rank_shares[self.rank_shares["rank"].isna()]
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
    def graph_launched(self) -> tuple[int, int]:
        """(kernels replayed from CUDA graphs, all kernels) of the run."""
        k = self.events[self.events["kind"] == "kernel"]
        return int(k["from_graph"].sum()), len(k)

    @property
    def is_training(self) -> bool:
        """A backward pass ran (autograd ops launched GPU work)."""
        return self.host.backward_ops > 0

    @property
    def syncs(self) -> pd.DataFrame:
        return self.host.syncs

    @property
    def launches(self) -> pd.DataFrame:
        return self.host.launches

    @property
    def memcpys(self) -> pd.DataFrame:
        return self.host.memcpys

    @property
    def ranges(self) -> pd.DataFrame:
        return self.host.ranges

    @property
    def memory(self) -> pd.DataFrame:
        return self.host.memory_peaks

    @property
    def collectives(self) -> pd.DataFrame:
        return self.host.collectives

    @property
    def allocator_calls(self) -> pd.DataFrame:
        """cudaMalloc/cudaFree (hip…) runtime calls: rank, step, name, ts_ns, dur_ns."""
        return self.host.allocator_calls

    def shaped_ops(self, name: str) -> pd.DataFrame:
        """The calls of one op of SHAPED_OPS, with their shapes."""
        if name not in SHAPED_OPS:
            raise KeyError(f"{name}: not in analysis.facts.SHAPED_OPS, so not loaded")
        ops = self.host.shaped_ops
        return ops[ops["name"] == name]

    @cached_property
    def telemetry(self) -> pd.DataFrame:
        """NVML/GPM samples taken while the run was profiled (empty when none were)."""
        if self._telemetry is None:
            raise ValueError(f"{self.run.run_id}: facts built without the run's telemetry")
        return self._telemetry.during_run()

    @property
    def samples_around_run(self) -> pd.DataFrame:
        """The NVML/GPM samples of the run's window widened by a second on each side (what
        the bandwidth chart draws beside the trace's estimate)."""
        if self._telemetry is None:
            raise ValueError(f"{self.run.run_id}: facts built without the run's telemetry")
        return self._telemetry.samples

    @property
    def gpu_inventory(self) -> pd.DataFrame:
        """The newest gpu_inventory row of each (host, gpu) the NVML agents saw (max clocks,
        power limit); empty without telemetry."""
        if self._telemetry is None:
            raise ValueError(f"{self.run.run_id}: facts built without the run's telemetry")
        return self._telemetry.inventory

    @cached_property
    def weight_gemms(self) -> pd.DataFrame:
        """Activation × weight GEMM kernels with their token rows and weight bytes
        (analysis.gemm_shapes.weight_gemms)."""
        return weight_gemms(self.kernels, self.ops)


def gather(store: Store, run_id: str) -> Facts:
    """Read every part of one run (each table once) as the facts the rules and report use."""
    return Facts.of(load_evidence(store, run_id, SHAPED_OPS))
