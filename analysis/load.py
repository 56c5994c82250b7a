"""The read side of the analyses: a run's frames, read from the store once, as typed objects.

This is the only analysis module that talks to the store (data.store, data.reads*); every
other one computes over what these functions return, so a report, its charts, the
recommendations and a comparison read each table once. The parts are loaded separately
because the pages need different amounts: the Roofline page needs `RunData`, the
recommendations also the host-side `HostData` and the run's `RunTelemetry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.timeline import MAX_SHAPES, bucket_plan
from data import (
    reads,
    reads_host,
    reads_recommend,
    reads_roofline,
    reads_telemetry,
    reads_timeline,
)
from data.cli_child import resolve_trace
from data.store import DEFAULT_DATA_DIR, Store

# Other analysis modules name these through this module: they never import data.store.
__all__ = ["DEFAULT_DATA_DIR", "Store"]


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


@dataclass(frozen=True)
class RunData:
    """What every analysis of a run starts from (frames as data.reads* return them)."""

    run: RunInfo
    steps: pd.DataFrame  # data.reads.steps
    events: pd.DataFrame  # data.reads.gpu_events: every kernel, memcpy and memset
    ops: pd.DataFrame  # data.reads_roofline.launching_ops
    tiled_gemm_launches: pd.DataFrame  # data.reads_roofline.tiled_gemm_launches
    ceilings: pd.DataFrame  # data.reads_roofline.ceilings of the run's device
    time_bases: pd.DataFrame  # data.reads_roofline.time_bases


@dataclass(frozen=True)
class HostData:
    """The host side of a run, for the recommendation rules (data.reads_recommend)."""

    syncs: pd.DataFrame
    launches: pd.DataFrame
    memcpys: pd.DataFrame
    ranges: pd.DataFrame
    memory_peaks: pd.DataFrame
    collectives: pd.DataFrame
    allocator_calls: pd.DataFrame
    backward_ops: int
    shaped_ops: pd.DataFrame  # the ops named in `load_host(shaped=…)`, with their shapes
    step_host: pd.DataFrame  # data.reads_host.step_host: event counts, blocked time per step
    pass_spans: pd.DataFrame  # data.reads_host.pass_spans: forward and backward per step
    regions: pd.DataFrame  # data.reads_host.region_intervals
    recomputed: pd.DataFrame  # data.reads_host.recomputed_forward
    trace_metadata: pd.DataFrame  # data.reads_host.trace_metadata


@dataclass(frozen=True)
class RunTelemetry:
    """NVML/GPM samples around a run: `samples` spans the run's window widened by
    `pad_ns` on each side (a sample describes the period before it); `window` is the run's
    own span in Unix ns (None without baseTimeNanoseconds); `inventory` the newest
    gpu_inventory row of each GPU the agents saw."""

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
    run = RunInfo.of(store.run_summary(run_id))
    return RunData(
        run=run,
        steps=reads.steps(store, run_id),
        events=reads.gpu_events(store, run_id),
        ops=reads_roofline.launching_ops(store, run_id),
        tiled_gemm_launches=reads_roofline.tiled_gemm_launches(store, run_id),
        ceilings=reads_roofline.ceilings(store, run.device_name),
        time_bases=reads_roofline.time_bases(store, run_id),
    )


def load_host(store: Store, run_id: str, shaped: tuple[str, ...] = ()) -> HostData:
    """The host-side frames of a run; `shaped`: op names whose calls are read with shapes."""
    return HostData(
        syncs=reads_recommend.host_syncs(store, run_id),
        launches=reads_recommend.launch_calls(store, run_id),
        memcpys=reads_recommend.memcpys(store, run_id),
        ranges=reads_recommend.ranges(store, run_id),
        memory_peaks=reads_recommend.memory_peaks(store, run_id),
        collectives=reads_recommend.collectives(store, run_id),
        allocator_calls=reads_recommend.allocator_calls(store, run_id),
        backward_ops=reads_recommend.backward_op_count(store, run_id),
        shaped_ops=reads_recommend.shaped_ops(store, run_id, shaped),
        step_host=reads_host.step_host(store, run_id),
        pass_spans=reads_host.pass_spans(store, run_id),
        regions=reads_host.region_intervals(store, run_id),
        recomputed=reads_host.recomputed_forward(store, run_id),
        trace_metadata=reads_host.trace_metadata(store, run_id),
    )


def load_telemetry(store: Store, run_id: str, pad_ns: int = 1_000_000_000) -> RunTelemetry:
    """The NVML/GPM samples around a run (pad_ns on each side) and the GPUs' inventory."""
    return RunTelemetry(
        samples=reads_telemetry.run_samples(store, run_id, pad_ns=pad_ns),
        window=reads_telemetry.run_window(store, run_id),
        pad_ns=pad_ns,
        inventory=reads_telemetry.inventory(store),
    )


def load_evidence(store: Store, run_id: str, shaped: tuple[str, ...] = ()) -> RunEvidence:
    """Every part of one run, each table read once."""
    return RunEvidence(
        load_run(store, run_id), load_host(store, run_id, shaped), load_telemetry(store, run_id)
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
