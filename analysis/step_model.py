"""How long a step takes without the profiler, and what bounds it: GPU time, host time, and
the serialization between them.

torch.profiler with record_shapes and profile_memory (the hook's defaults) slowed the host
side of the validation set's steps by 1.2-2.1× (tests/data/validation_h200). A saving read
off the profiled timeline counts that overhead as something to gain, so every saving is
taken against the step the workload runs unprofiled:

- **unprofiled step**: what the hook measured on the steps its schedule does not record
  (the trace's `dashboardUnprofiledSteps`), else the run tag `unprofiled_step_ms`, else the
  model below.
- **G**, the GPU time of a step's own work (the union of what its ops launched); kernel
  durations are not stretched by the profiler (precision-gpt2: 50.3 ms profiled, 50.2 ms
  unprofiled for a GPU-bound step).
- **H**, the host's own time per step: the ProfilerStep's CPU span less the time spent
  waiting in synchronize calls and blocked launch/copy calls, less the profiler's cost per
  recorded CPU op and runtime call: a multiple (COST_PER_EVENT_EMPTY) of the median recorded
  duration of the trace's own aten::empty calls, the host's speed under the profiler, and at
  most MAX_PROFILER_SHARE of the host time.
- **S**, serialization: what the unprofiled step has beyond max(G, H), host and GPU waiting
  for each other (a sync per step, a blocking copy, an allocator that synchronizes).

A fix changes one of them: kernel work G, host work H, or serialization S; the step after it
is max(G', H') + S' (StepModel.after), never below the GPU's or the host's own time.

The model's unprofiled step, for traces without a measurement: max(G, span − overhead) for a
step without waiting host syncs, and G + (span − G) × H/H_profiled for one with them (the
idle a sync exposes shrinks with the host time). Fitted on half of the validation pairs,
its error on the other half is in BENCHMARKS.md (tools/fit_step_model.py).
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.ranks import rank_positions

# The profiler's cost on the host per recorded CPU op or runtime call, as a multiple of the
# median recorded duration of the trace's aten::empty calls. That duration is the host's speed
# under the profiler, flags included, read off the trace itself: the cost per op was 2.3 µs on
# one H100 machine and 5.6 on another (D91, D94), and any constant missed one of them. Fitted
# on the H200's tune half alone (tools/fit_step_model.py, D94); a trace without aten::empty
# pays FALLBACK_NS_PER_EVENT, the tune half's median.
COST_PER_EVENT_EMPTY = 0.63
FALLBACK_NS_PER_EVENT = 3_100
# The most of a step's profiled host time the profiler is charged: the largest share it took
# on the tune half's profiler-bound runs. A trace whose aten::empty calls are slow beside its
# other events (HTA's A100 trace: 11 µs, against 4 µs of host time per recorded event) would
# otherwise lose its whole host time to the profiler.
MAX_PROFILER_SHARE = 0.55
# The most the parts' modelled host times are scaled to the step's (StepModel.host_scale): the
# host-bound validation runs span 0.74-1.39 on the H200, 0.77-1.42 on the H100 (5th to 95th
# percentile, D95).
MAX_HOST_SCALE = 2.0
HOOK_KEY = "dashboardUnprofiledSteps"
TAG = "unprofiled_step_ms"
# Where a run's unprofiled step comes from, as the pages and the report state it.
BASIS = {
    "hook": "measured by the profiler hook on steps it did not record",
    "tag": f"given by the run's {TAG} tag",
    "model": "estimated from the trace by the profiler-overhead model, about ±30 %",
}
# Waiting that serializes host and GPU (data.reads_host.step_host): syncs, values read back
# (a blocking copy of a scalar), blocking copies, allocator calls. A full launch queue
# (queue_ns) is the host ahead of the GPU, not waiting.
WAIT_COLUMNS = ("sync_ns", "scalar_wait_ns", "copy_wait_ns", "alloc_ns")
_WAITING_NS = 1_000_000  # a step that spends this long waiting serializes host and GPU
# With nothing serializing them, a step whose GPU is busy for less than this share of it is
# host-bound: the GPU's time is measured, the host's only modelled.
HOST_BOUND_SHARE = 0.85


@dataclass(frozen=True, slots=True)
class StepModel:
    """One run's median step (slowest rank), in ms."""

    profiled_ms: float  # on the trace's timeline: the span of the GPU work each step launched
    unprofiled_ms: float  # the same workload without the profiler
    source: str  # "hook" (measured beside the trace), "tag", "model"
    gpu_ms: float  # G
    host_ms: float  # H, without the profiler (estimated)
    host_profiled_ms: float  # H as the trace shows it
    overhead_ms: float  # the profiler's estimated cost per step on the host
    waits_ms: dict[str, float]  # host waiting per step: sync, scalar_wait, copy_wait, alloc
    # The profiler's cost per recorded op on the host, this run's runtime calls spread over
    # its ops: what a part of the step is charged per op it recorded.
    ns_per_op: float = FALLBACK_NS_PER_EVENT
    cpu_ops: float = 0.0  # CPU ops the profiler recorded per step
    runtime_calls: float = 0.0  # runtime calls it recorded per step
    empty_ns: float = math.nan  # median recorded aten::empty duration (NaN: none recorded)
    # H over the host time the overhead model leaves of the trace's step: where H is the
    # measured step (host-bound), the model's error on the whole step, which its parts share.
    host_scale: float = 1.0

    def host_ms_of(self, dur_ns: float, cpu_ops: float) -> float:
        """Host time without the profiler of a part of the step that took `dur_ns` on the
        trace with `cpu_ops` events recorded in it."""
        return max(dur_ns - cpu_ops * self.ns_per_op, 0.0) / 1e6

    def part_host_ms(self, dur_ns: float, cpu_ops: float) -> float:
        """Host time without the profiler of a part of the step (a host region, the
        checkpoints): `host_ms_of` in the proportion H bears to the model's host time, so
        the parts of a host-bound step add up to its measured time."""
        return self.host_ms_of(dur_ns, cpu_ops) * self.host_scale

    def serial_share(self, *waits: str) -> float:
        """The part of S some kinds of waiting (sync, scalar_wait, copy_wait, alloc) account
        for: S in proportion to the time the host spent in them."""
        total = sum(self.waits_ms.values())
        part = sum(self.waits_ms.get(w, 0.0) for w in waits)
        return self.serial_ms * part / total if total > 0 else 0.0

    @property
    def serial_ms(self) -> float:
        """S: the unprofiled step beyond max(G, H)."""
        return max(self.unprofiled_ms - max(self.gpu_ms, self.host_ms), 0.0)

    @staticmethod
    def host_sets_pace(gpu_ms: float, host_ms: float) -> bool:
        """Whether the host's work, not the GPU's, bounds a step of these two (they overlap;
        a tie goes to the host)."""
        return host_ms >= gpu_ms

    @property
    def headroom_ms(self) -> float:
        """What host-side fixes can gain at most: the unprofiled step less the GPU's time."""
        return max(self.unprofiled_ms - self.gpu_ms, 0.0)

    @property
    def profiler_share_pct(self) -> float:
        """How much of the profiled step the profiler added."""
        if self.profiled_ms <= 0:
            return 0.0
        return max(100.0 * (1 - self.unprofiled_ms / self.profiled_ms), 0.0)

    def after(self, gpu_ms: float = 0.0, host_ms: float = 0.0, serial_ms: float = 0.0) -> float:
        """The unprofiled step once a fix removes that much GPU time, host time and
        serialization per step (a negative amount is one the fix adds)."""
        g = max(self.gpu_ms - gpu_ms, 0.0)
        h = max(self.host_ms - host_ms, 0.0)
        return max(g, h) + max(self.serial_ms - serial_ms, 0.0)

    def saving(self, gpu_ms: float = 0.0, host_ms: float = 0.0, serial_ms: float = 0.0) -> float:
        """The unprofiled step less `after` (never negative)."""
        return max(self.unprofiled_ms - self.after(gpu_ms, host_ms, serial_ms), 0.0)


def profiled_spans(steps: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Per rank and step: span_ns, the step's time on the trace's timeline. A step ends when
    both its CPU range and the GPU work it launched have ended (the later of the two: with
    no sync in the loop the CPU runs ahead and the GPU end counts); step N runs from the end
    of step N-1, the first step from its CPU start or, when the CPU ran ahead, from the end
    of the GPU work launched before it. Columns: rank, step, span_ns."""
    if steps.empty:
        return pd.DataFrame({"rank": [], "step": [], "span_ns": []})
    s = steps.sort_values(["rank", "step"], kind="stable")
    rank = s["rank"].to_numpy(np.int64)
    cpu_end = (s["ts_ns"] + s["dur_ns"]).to_numpy(np.int64)
    gpu_end = s["gpu_end_ns"].astype("Int64").fillna(0).to_numpy(np.int64)
    gpu_start = s["gpu_start_ns"].astype("Int64")
    ts = s["ts_ns"].to_numpy(np.int64)
    # The GPU work outside every step, split by rank once (a mask per rank cost ranks × events).
    outside = events[events["step"].isna()]
    outside_at = rank_positions(outside)
    o_ts = outside["ts_ns"].to_numpy(np.int64)
    o_end = o_ts + outside["dur_ns"].to_numpy(np.int64)
    span = np.empty(len(s), dtype=np.int64)
    bounds = np.flatnonzero(np.diff(rank)) + 1
    for a, b in zip([0, *bounds], [*bounds, len(s)], strict=True):
        ends = np.maximum.accumulate(np.maximum(cpu_end[a:b], gpu_end[a:b]))
        start = int(ts[a])
        if pd.notna(gpu_start.iloc[a]):
            mine = outside_at.get(int(rank[a]), np.empty(0, dtype=np.int64))
            before = o_end[mine][o_ts[mine] < int(gpu_start.iloc[a])]
            if len(before):
                start = max(start, int(before.max()))
        span[a:b] = np.diff(np.concatenate([[start], ends]))
    return pd.DataFrame(
        {"rank": s["rank"].to_numpy(), "step": s["step"].to_numpy(), "span_ns": span}
    )


def ns_per_event(empty_ns: float) -> float:
    """The profiler's cost per recorded op or runtime call on a host whose aten::empty calls
    took `empty_ns` under it (NaN: the fallback)."""
    return FALLBACK_NS_PER_EVENT if math.isnan(empty_ns) else COST_PER_EVENT_EMPTY * empty_ns


def hook_ms(trace_metadata: pd.DataFrame) -> float | None:
    """The hook's unprofiled median (slowest rank) from the ranks' trace metadata."""
    found = []
    for text in trace_metadata["trace_metadata"].dropna():
        try:
            value = json.loads(text).get(HOOK_KEY)
        except (ValueError, AttributeError):
            continue
        if isinstance(value, dict) and isinstance(value.get("median_ms"), int | float):
            found.append(float(value["median_ms"]))
    return max(found) if found else None


def step_model(
    steps: pd.DataFrame,
    events: pd.DataFrame,
    step_host: pd.DataFrame,
    trace_metadata: pd.DataFrame,
    tags: dict[str, str],
) -> StepModel | None:
    """The step model of a run (None without ProfilerSteps). `steps`: data.reads.steps;
    `events`: data.reads.gpu_events; `step_host`: data.reads_host.step_host; `trace_metadata`:
    data.reads_host.trace_metadata; `tags`: the run's tags."""
    if steps.empty:
        return None
    per = steps.merge(profiled_spans(steps, events), on=["rank", "step"]).merge(
        step_host, on=["rank", "step"], how="left"
    )
    per = per.fillna(
        {c: 0 for c in ("cpu_ops", "runtime_calls", "syncs", *WAIT_COLUMNS, "queue_ns")}
    )
    blocked = per[[*WAIT_COLUMNS, "queue_ns"]].sum(axis=1)
    host = (per["dur_ns"] - blocked).clip(lower=0).astype(float)
    empty = per["empty_ns"].astype(float)
    empty_ns = float(empty.median()) if empty.notna().any() else math.nan
    per_event = ns_per_event(empty_ns)
    recorded = (per["cpu_ops"] + per["runtime_calls"]).astype(float)
    overhead = np.minimum(recorded * per_event, MAX_PROFILER_SHARE * host)
    host_unprof = (host - overhead).clip(lower=0)
    gpu = per["gpu_busy_ns"].astype(float)
    span = per["span_ns"].astype(float)
    # A sync serializes whatever its wait under the profiler: the profiled host, slower,
    # reaches it when the GPU is nearly done; without the profiler it waits longer.
    waits = (per["syncs"] > 0) | (
        per[["scalar_wait_ns", "copy_wait_ns", "alloc_ns"]].sum(axis=1) >= _WAITING_NS
    )
    ratio = (host_unprof / host.where(host > 0)).fillna(1.0)
    modelled = np.where(
        waits, gpu + (span - gpu).clip(lower=0) * ratio, np.maximum(gpu, span - overhead)
    )
    per = per.assign(
        host=host, host_unprof=host_unprof, overhead=overhead, modelled=modelled, gpu=gpu
    )
    # The slowest rank of each step, then the median step.
    slowest = per.loc[per.groupby("step")["span_ns"].idxmax()]
    med = slowest[
        ["span_ns", "gpu", "host", "host_unprof", "overhead", "modelled", *WAIT_COLUMNS]
    ].median()
    cpu_ops = float(slowest["cpu_ops"].median())
    calls = float(slowest["runtime_calls"].median())
    unprofiled, source = hook_ms(trace_metadata), "hook"
    if TAG in tags:
        with contextlib.suppress(ValueError):
            unprofiled, source = float(tags[TAG]), "tag"
    if unprofiled is None or not 0 < unprofiled < math.inf:
        unprofiled, source = float(med["modelled"]) / 1e6, "model"
    gpu_ms = float(med["gpu"]) / 1e6
    modelled_host_ms = float(med["host_unprof"]) / 1e6
    host_ms = min(modelled_host_ms, unprofiled)
    if not waits.loc[slowest.index].any() and (
        host_ms >= gpu_ms or gpu_ms < HOST_BOUND_SHARE * unprofiled
    ):
        # Host-bound with nothing making host and GPU wait for each other: the step is the
        # host's own time (the model's host estimate is the noisier number). A GPU idle for
        # more than 15 % of such a step says so whatever the host estimate (D93).
        host_ms = unprofiled
    return StepModel(
        profiled_ms=float(med["span_ns"]) / 1e6,
        unprofiled_ms=unprofiled,
        source=source,
        gpu_ms=gpu_ms,
        host_ms=host_ms,
        host_profiled_ms=float(med["host"]) / 1e6,
        overhead_ms=float(med["overhead"]) / 1e6,
        waits_ms={c.removesuffix("_ns"): float(med[c]) / 1e6 for c in WAIT_COLUMNS},
        ns_per_op=float(med["overhead"]) / cpu_ops if cpu_ops else per_event,
        cpu_ops=cpu_ops,
        runtime_calls=calls,
        empty_ns=empty_ns,
        host_scale=_host_scale(host_ms, modelled_host_ms),
    )


def _host_scale(host_ms: float, modelled_host_ms: float) -> float:
    """StepModel.host_scale, within MAX_HOST_SCALE either way: beyond it the trace does not
    hold the host's work (DataLoader workers' processes), so its parts cannot be scaled to it."""
    if modelled_host_ms <= 0:
        return 1.0
    return min(max(host_ms / modelled_host_ms, 1 / MAX_HOST_SCALE), MAX_HOST_SCALE)
