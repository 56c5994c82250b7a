"""The read side of the analyses: a run's frames, read from the store once, as typed objects.

The only analysis module that talks to the store (data.store, data.reads*): a report, its
charts, the recommendations and a comparison read each table once. The parts load apart
because pages need different amounts (Roofline `RunData`; recommendations also `HostData`
and `RunTelemetry`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from analysis import rank_sample as sampling
from analysis.rank_sample import RankSample
from analysis.timeline import MAX_SHAPES, bucket_plan
from analysis.timeline_budget import PIXELS, Budget, bucket_ns_of, plan
from data import (
    reads,
    reads_host,
    reads_kernels,
    reads_memory,
    reads_ops,
    reads_recommend,
    reads_roofline,
    reads_telemetry,
    reads_threads,
    reads_timeline,
)
from data.cli_child import resolve_trace
from data.store import DEFAULT_DATA_DIR, Store
from data.telemetry_source import TelemetrySource, open_telemetry, run_samples

# Other analysis modules name these through this module: they never import data.store.
__all__ = ["DEFAULT_DATA_DIR", "Store"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The `runs` row of one run."""

    run_id: str
    name: str
    rank_count: int
    device_name: str | None
    source: list[str]
    tags: dict[str, str]

    @classmethod
    def of(cls, row: dict[str, Any]) -> RunInfo:
        return cls(
            run_id=str(row["run_id"]),
            name=str(row["name"]),
            rank_count=int(row["rank_count"]),
            device_name=row.get("device_name"),
            source=[str(s) for s in row.get("source") or []],
            tags={str(k): str(v) for k, v in (row.get("tags") or {}).items()},
        )


def _read(read: Callable[[Store, str], T]) -> cached_property[T]:
    """An attribute read from the store (`read(store, run_id)`) on first access, then kept:
    a page that needs a few of a run's frames does not wait for the rest."""

    def get(self: _Frames) -> T:
        return read(self.store, self.run_id)

    return cached_property(get)


class _Frames:
    """One run's frames in one store, each read on first use (a run never changes after
    ingest, so late reads see what early ones would have)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id


class RunData(_Frames):
    """What every analysis of a run starts from (frames as data.reads* return them);
    `sample`: the analysed ranks of a run of many (`store` holds only those), or None."""

    def __init__(self, store: Store, run_id: str, sample: RankSample | None = None) -> None:
        super().__init__(store, run_id)
        self.run = RunInfo.of(store.run_summary(run_id))
        self.sample = sample

    steps = _read(reads.steps)
    events = _read(reads.gpu_events)  # every kernel, memcpy and memset
    ops = _read(reads_roofline.launching_ops)
    tiled_gemm_launches = _read(reads_roofline.tiled_gemm_launches)
    time_bases = _read(reads_roofline.time_bases)

    @cached_property
    def ceilings(self) -> pd.DataFrame:
        """data.reads_roofline.ceilings of the run's device."""
        return reads_roofline.ceilings(self.store, self.run.device_name)


class HostData(_Frames):
    """The host side of a run, for the recommendation rules (data.reads_recommend,
    data.reads_host); `shaped`: op names whose calls are read with their shapes."""

    def __init__(self, store: Store, run_id: str, shaped: tuple[str, ...] = ()) -> None:
        super().__init__(store, run_id)
        self.shaped = shaped

    syncs = _read(reads_recommend.host_syncs)
    launches = _read(reads_recommend.launch_calls)
    memcpys = _read(reads_recommend.memcpys)
    ranges = _read(reads_recommend.ranges)
    memory_peaks = _read(reads_recommend.memory_peaks)
    collectives = _read(reads_recommend.collectives)
    allocator_calls = _read(reads_recommend.allocator_calls)
    backward_ops = _read(reads_recommend.backward_op_count)
    step_host = _read(reads_host.step_host)  # event counts, blocked time per step
    pass_spans = _read(reads_host.pass_spans)  # forward and backward per step
    regions = _read(reads_host.region_intervals)
    recomputed = _read(reads_host.recomputed_forward)
    trace_metadata = _read(reads_host.trace_metadata)

    @cached_property
    def shaped_ops(self) -> pd.DataFrame:
        """The calls of the ops named in `shaped`, with their shapes."""
        return reads_recommend.shaped_ops(self.store, self.run_id, self.shaped)


@dataclass(frozen=True)
class RunTelemetry:
    """NVML/GPM `samples` in the run's `window` (Unix ns; None without baseTimeNanoseconds)
    widened by `pad_ns` each side; `inventory`: each GPU's newest gpu_inventory row."""

    samples: pd.DataFrame
    window: tuple[int, int] | None
    pad_ns: int
    inventory: pd.DataFrame

    def during_run(self) -> pd.DataFrame:
        """The samples taken inside the run's own window."""
        if self.window is None:
            return self.samples.iloc[0:0]
        ts = self.samples["ts_ns"]
        return self.samples[(ts >= self.window[0]) & (ts < self.window[1])]


@dataclass(frozen=True)
class RunEvidence:
    """Everything the recommendations and the report of one run read."""

    data: RunData
    host: HostData
    telemetry: RunTelemetry


def open_store(data_dir: Path | str) -> Store:
    """The store in `data_dir`, for a process that does not own the database file."""
    return Store(data_dir)


def resolve(data_dir: Path | str, ref: str) -> str:
    """A run id, a run name (its latest run), or a trace path: ingested first in a child
    process, or the run that already holds the same content; returns the run id."""
    if Path(ref).exists():
        return resolve_trace(ref, data_dir=data_dir)
    return open_store(data_dir).resolve_run(ref)


def load_run(store: Store, run_id: str) -> RunData:
    """The run's metadata, steps, GPU events, launching ops and what the roofline needs."""
    return RunData(store, run_id)


def load_host(store: Store, run_id: str, shaped: tuple[str, ...] = ()) -> HostData:
    """The host-side frames of a run; `shaped`: op names whose calls are read with shapes."""
    return HostData(store, run_id, shaped)


def load_telemetry(
    store: Store,
    run_id: str,
    pad_ns: int = 1_000_000_000,
    source: TelemetrySource | None = None,
) -> RunTelemetry:
    """The GPU samples around a run and the GPUs' inventory at its end, from `source`
    (default open_telemetry: Prometheus when $DASH_PROMETHEUS_URL is set, else the lake)."""
    telemetry = source or open_telemetry(store)
    window = reads_telemetry.run_window(store, run_id)
    samples = run_samples(telemetry, store, run_id, pad_ns=pad_ns)
    inventory = telemetry.inventory(None if window is None else window[1])
    return RunTelemetry(samples=samples, window=window, pad_ns=pad_ns, inventory=inventory)


def load_evidence(store: Store, run_id: str, shaped: tuple[str, ...] = ()) -> RunEvidence:
    """Every part of one run, each table read once; of a run of more than
    MAX_ANALYSED_RANKS ranks, the frames of its sample of ranks (analysis.rank_sample)."""
    size, sample = sampling.MAX_ANALYSED_RANKS, None
    if int(store.run_summary(run_id)["rank_count"]) > size:
        sample = sampling.choose(reads.rank_load(store, run_id), size)
    ranked = store if sample is None else store.of_ranks(sample.ranks)
    host = load_host(ranked, run_id, shaped)
    return RunEvidence(RunData(ranked, run_id, sample), host, load_telemetry(store, run_id))


def load_cpu_slices(store: Store, run_id: str) -> pd.DataFrame:
    """Every CPU slice of the run: ops, CPU annotations, nn.Module ranges
    (data.reads_ops.cpu_slices)."""
    return reads_ops.cpu_slices(store, run_id)


def load_launch_configs(store: Store, run_id: str) -> pd.DataFrame:
    """Each kernel name's most frequent grid and block, registers, shared memory and
    occupancy (data.reads_kernels.launch_configs)."""
    return reads_kernels.launch_configs(store, run_id)


@dataclass(frozen=True)
class RunMemory:
    """The allocator's events of a run: `devices` (data.reads_memory.memory_devices) and
    `series`, allocated and reserved bytes per device in buckets of `bucket_ns` from
    `t0_ns` (data.reads_memory.memory_series)."""

    devices: pd.DataFrame
    series: pd.DataFrame
    t0_ns: int
    bucket_ns: int


def load_memory(store: Store, run_id: str, max_points: int) -> RunMemory:
    """Each device's allocator summary and its curves, at most `max_points` per device."""
    devices = reads_memory.memory_devices(store, run_id)
    if devices.empty:
        return RunMemory(devices, devices.iloc[0:0], 0, 1)
    t0, t1 = int(devices["first_ns"].min()), int(devices["last_ns"].max())
    bucket = max(1, -(-(t1 - t0 + 1) // max_points))
    return RunMemory(devices, reads_memory.memory_series(store, run_id, t0, bucket), t0, bucket)


@dataclass(frozen=True)
class MemoryPeak:
    """What holds one device's memory at `t_ns`: `alive` (data.reads_memory.alive_at, the
    live allocations by the op that made them) and `stack` (data.reads_memory.stack_at, the
    CPU slices open at that moment)."""

    t_ns: int
    alive: pd.DataFrame
    stack: pd.DataFrame


def load_memory_peak(
    store: Store, run_id: str, rank: int, device_type: int, device_id: int, t_ns: int
) -> MemoryPeak:
    """The allocations alive on one device at t_ns and the ops running then."""
    return MemoryPeak(
        t_ns,
        reads_memory.alive_at(store, run_id, rank, device_type, device_id, t_ns),
        reads_memory.stack_at(store, run_id, rank, t_ns),
    )


@dataclass(frozen=True)
class BusyGrid:
    """Busy time per lane and time bucket (data.reads_timeline.buckets), `count` buckets of
    `bucket_ns` from the window's start."""

    buckets: pd.DataFrame
    bucket_ns: int
    count: int


@dataclass(frozen=True)
class TimelineWindow:
    """The GPU activities of [t0, t1) as a chart may carry them: `events` (one row each,
    data.reads_timeline.window_events) when at most `max_shapes` overlap the window, else
    a `grid` of busy time per lane and bucket."""

    lanes: pd.DataFrame
    t0_ns: int
    t1_ns: int
    count: int
    events: pd.DataFrame | None
    grid: BusyGrid | None

    @property
    def bucket_ns(self) -> int | None:
        return None if self.grid is None else self.grid.bucket_ns


def load_lanes(store: Store, run_id: str) -> pd.DataFrame:
    """One row per (rank, stream) with GPU activity (data.reads_timeline.lanes)."""
    return reads_timeline.lanes(store, run_id)


def load_timeline_window(
    store: Store,
    run_id: str,
    lanes: pd.DataFrame,
    t0_ns: int,
    t1_ns: int,
    max_shapes: int = MAX_SHAPES,
    ranks: list[int] | None = None,
) -> TimelineWindow:
    """The window's activities one by one if at most `max_shapes` overlap it, else its busy
    time per lane and bucket (analysis.timeline.bucket_plan: within MAX_SHAPES cells); of
    `ranks` only when given (`lanes` then holds theirs)."""
    count = reads_timeline.window_count(store, run_id, t0_ns, t1_ns, ranks)
    if count <= max_shapes:
        rows = reads_timeline.window_events(store, run_id, t0_ns, t1_ns, max_shapes, ranks)
        return TimelineWindow(lanes, t0_ns, t1_ns, count, rows, None)
    bucket_ns, n = bucket_plan(t0_ns, t1_ns, len(lanes))
    grid = reads_timeline.buckets(store, run_id, t0_ns, t1_ns, bucket_ns, ranks)
    return TimelineWindow(lanes, t0_ns, t1_ns, count, None, BusyGrid(grid, bucket_ns, n))


def load_threads(store: Store, run_id: str) -> pd.DataFrame:
    """One row per CPU thread with slices (data.reads_threads.threads)."""
    return reads_threads.threads(store, run_id)


def load_step_marks(store: Store, run_id: str) -> pd.DataFrame:
    """Every ProfilerStep range (data.reads_timeline.step_marks)."""
    return reads_timeline.step_marks(store, run_id)


@dataclass(frozen=True)
class ExploreWindow:
    """One window of the explorable timeline as its budget allows (analysis.timeline_view
    .plan): `gpu` (data.reads_timeline.window_events, longest first), `cpu`
    (data.reads_threads.window_slices), `grid` (busy time per GPU lane and bucket of
    `bucket_ns`, when the window holds more than the budget), and what the window holds in
    all (`gpu_count`, `cpu_count`)."""

    t0_ns: int
    t1_ns: int
    budget: Budget
    gpu_count: int
    cpu_count: int
    gpu: pd.DataFrame
    cpu: pd.DataFrame
    grid: pd.DataFrame | None
    bucket_ns: int


def load_explore_window(
    store: Store, run_id: str, gpu_lanes: int, t0_ns: int, t1_ns: int,
    max_shapes: int = MAX_SHAPES, ranks: list[int] | None = None,
) -> ExploreWindow:  # fmt: skip
    """The slices of [t0, t1) within `max_shapes` shapes (analysis.timeline_budget.plan), of
    `ranks` only when given (`gpu_lanes` then counts theirs).

    The GPU and the CPU side are read in two threads: DuckDB runs a query without the GIL,
    and a zoom step waits for both (the whole 1.3 M-event run: 0.67 s -> 0.48 s at load 5)."""
    min_dur = max(1, (t1_ns - t0_ns) // PIXELS)
    with ThreadPoolExecutor(2) as pool:
        cpu_counts = pool.submit(
            reads_threads.window_slice_counts, store, run_id, t0_ns, t1_ns, min_dur, ranks
        )
        n_gpu = reads_timeline.window_count(store, run_id, t0_ns, t1_ns, ranks)
        n_cpu, n_long = cpu_counts.result()
        b = plan(t0_ns, t1_ns, n_gpu, n_cpu, n_long, gpu_lanes, max_shapes)
        cpu_rows = pool.submit(
            reads_threads.window_slices, store, run_id, t0_ns, t1_ns, b.min_dur_ns,
            b.cpu_limit, ranks,
        )  # fmt: skip
        bucket = bucket_ns_of(t0_ns, t1_ns, b.buckets)
        cells = (
            pool.submit(reads_timeline.buckets, store, run_id, t0_ns, t1_ns, bucket, ranks)
            if b.buckets
            else None
        )
        gpu = reads_timeline.window_events(store, run_id, t0_ns, t1_ns, b.gpu_limit, ranks)
        cpu = cpu_rows.result()
        grid = cells.result() if cells is not None else None
    return ExploreWindow(t0_ns, t1_ns, b, n_gpu, n_cpu, gpu, cpu, grid, bucket)


def load_kernel_links(store: Store, run_id: str, rank: int, correlation: int) -> pd.DataFrame:
    """A GPU activity, its launch call and its op (data.reads_threads.kernel_links)."""
    return reads_threads.kernel_links(store, run_id, rank, correlation)


def load_op_kernels(
    store: Store, run_id: str, rank: int, external_id: int, limit: int
) -> pd.DataFrame:
    """The GPU activities an op launched (data.reads_threads.op_kernels)."""
    return reads_threads.op_kernels(store, run_id, rank, external_id, limit)


def load_search(
    store: Store, run_id: str, needle: str, limit: int, ranks: list[int] | None = None
) -> pd.DataFrame:
    """Slices whose name contains `needle` (data.reads_threads.search)."""
    return reads_threads.search(store, run_id, needle, limit, ranks)
