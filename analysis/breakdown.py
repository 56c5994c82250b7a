"""Where the GPU time goes, per rank and per step: exact, on integer ns.

Definitions (the README's "Breakdown" section repeats them):

- **Step window.** A step's GPU work is the work its CPU ops launched (`gpu_events.step`).
  On each rank, step N's window runs from the end of step N-1's window to the end of step
  N's GPU work (the first window starts at the first step's CPU start; a step without GPU
  work ends at its CPU end; ends never go backwards). Windows tile the profiled GPU time
  without gap or overlap, so the shares below add up to exactly 100 %. A rank without
  ProfilerSteps has one window (step NA) from its first to its last GPU activity.
- **Categories**, exclusive, in priority order compute > comm > memcpy > memset: compute is
  the union of non-communication kernels; comm (exposed) the time NCCL kernels run while no
  compute runs; memcpy and memset likewise below them; idle the time nothing runs on any
  stream. So `compute + comm + memcpy + memset + idle = window`, per step, to the ns.
  Overlapped comm = union of comm − exposed comm.
- **Idle split.** Each idle gap (no GPU activity on any stream) is **host-wait** when the
  launch call of the GPU work that ends it started after the gap began (nothing was queued:
  the GPU waited for the CPU, the data loader or a host sync), or when no GPU work follows in
  the window; else **kernel-wait** when it is shorter than `kernel_wait_max_ns` (30 µs, HTA's
  `consecutive_kernel_delay`: back-to-back queued kernels); else **other** (queued work that
  waited on something else: an event, another stream, a collective peer).
- **Launch statistics**, per launching step: kernels, kernels shorter than 10 µs,
  launch-to-start delay (GPU start − start of its launch call) p50/p90/max.
- **Spread across ranks**: min/median/max of each share; the straggler is the rank with the
  most time not spent in exposed communication (the rank the others wait for).

`hta_comparable` maps the same events onto Holistic Trace Analysis's temporal breakdown
(its window, its event filter) so the two can be compared; ours stays the definition above.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.intervals import covered_before, islands
from analysis.kernel_classes import classify
from analysis.ranks import rank_positions

COMPUTE, COMM, MEMCPY, MEMSET = 0, 1, 2, 3
KERNEL_WAIT_MAX_NS = 30_000
SHORT_KERNEL_NS = 10_000
_UNKNOWN = np.iinfo(np.int64).max

SHARES = ("compute", "comm", "memcpy", "memset", "idle")
IDLE_SPLIT = ("host_wait", "kernel_wait", "idle_other")
STEP_COLUMNS = [
    "rank",
    "step",
    "start_ns",
    "end_ns",
    "window_ns",
    "compute_ns",
    "comm_ns",
    "memcpy_ns",
    "memset_ns",
    "idle_ns",
    "host_wait_ns",
    "kernel_wait_ns",
    "idle_other_ns",
    "comm_total_ns",
    "comm_overlapped_ns",
]
LAUNCH_COLUMNS = [
    "rank",
    "step",
    "kernel_count",
    "short_kernel_count",
    "launch_delay_p50_ns",
    "launch_delay_p90_ns",
    "launch_delay_max_ns",
]


def event_classes(kind: pd.Series, name: pd.Series) -> np.ndarray:
    """COMPUTE/COMM/MEMCPY/MEMSET code per GPU event: memcpy and memset by kind, comm by
    analysis.kernel_classes (NCCL/RCCL kernels), every other kernel is compute."""
    comm = (classify(name)["kernel_class"] == "comm").to_numpy()
    out = np.where(comm, COMM, COMPUTE).astype(np.int8)
    out[(kind == "memcpy").to_numpy()] = MEMCPY
    out[(kind == "memset").to_numpy()] = MEMSET
    return out


def step_windows(steps: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """One window per rank and step: rank, step (Int64, NA without steps), start_ns, end_ns.

    `steps` has the store's steps columns (rank, step, ts_ns, dur_ns, gpu_start_ns,
    gpu_end_ns); `events` at least rank, ts_ns, dur_ns (for ranks without steps).
    """
    parts = []
    if not steps.empty:
        # One pass over every rank's steps (a frame per rank cost ~8 ms: 512 ranks, 4 s).
        s = steps.sort_values(["rank", "step"])
        rank = s["rank"].to_numpy(np.int64)
        cpu_end = (s["ts_ns"] + s["dur_ns"]).to_numpy(np.int64)
        # Integer all the way: epoch-ns values (1.7e18) are not exact as float64.
        gpu_end = s["gpu_end_ns"].astype("Int64").fillna(pd.Series(cpu_end, index=s.index))
        end = pd.Series(gpu_end.to_numpy(np.int64)).groupby(rank).cummax().to_numpy(np.int64)
        first = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1]])
        ts = s["ts_ns"].to_numpy(np.int64)[first]
        g0 = s["gpu_start_ns"].astype("Int64").to_numpy(np.int64, na_value=_UNKNOWN)[first]
        start = np.concatenate([[0], end[:-1]])
        start[first] = np.minimum(ts, g0)
        end = np.maximum(end, start)
        parts.append(
            pd.DataFrame(
                {"rank": rank, "step": s["step"].to_numpy(), "start_ns": start, "end_ns": end}
            )
        )
    ranks_with_steps = set(steps["rank"]) if not steps.empty else set()
    rest = events[~events["rank"].isin(ranks_with_steps)]
    if not rest.empty:
        g = rest.assign(e=rest["ts_ns"] + rest["dur_ns"]).groupby("rank")
        span = pd.DataFrame({"start_ns": g["ts_ns"].min(), "end_ns": g["e"].max()}).reset_index()
        parts.append(span.assign(step=pd.Series(pd.NA, index=span.index, dtype="Int64")))
    if not parts:
        return pd.DataFrame(
            {
                "rank": pd.Series(dtype="int32"),
                "step": pd.Series(dtype="Int64"),
                "start_ns": pd.Series(dtype="int64"),
                "end_ns": pd.Series(dtype="int64"),
            }
        )
    out = pd.concat(parts, ignore_index=True)[["rank", "step", "start_ns", "end_ns"]]
    return out.astype({"step": "Int64", "start_ns": "int64", "end_ns": "int64"})


def _per_window(start: np.ndarray, end: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Covered length inside each window [bounds[i], bounds[i+1])."""
    return np.diff(covered_before(start, end, bounds))


def _union_per_window(
    ts: np.ndarray, te: np.ndarray, mask: np.ndarray, bounds: np.ndarray
) -> np.ndarray:
    s, e, _ = islands(ts[mask], te[mask] - ts[mask])
    return _per_window(s, e, bounds)


def _rank_breakdown(
    ts: np.ndarray,
    te: np.ndarray,
    cls: np.ndarray,
    launch: np.ndarray,
    bounds: np.ndarray,
    kernel_wait_max_ns: int,
) -> dict[str, np.ndarray]:
    """One rank's columns of STEP_COLUMNS: its events' starts, ends, classes and launch
    times (unknown = int64 max), its windows' `bounds` (starts, then the last end)."""
    t0, t1 = int(bounds[0]), int(bounds[-1])
    ts, te = np.clip(ts, t0, t1), np.clip(te, t0, t1)
    keep = te > ts
    ts, te, cls, launch = ts[keep], te[keep], cls[keep], launch[keep]
    u = {
        "compute": _union_per_window(ts, te, cls == COMPUTE, bounds),
        "c1": _union_per_window(ts, te, cls <= COMM, bounds),
        "c2": _union_per_window(ts, te, cls <= MEMCPY, bounds),
        "comm_total": _union_per_window(ts, te, cls == COMM, bounds),
    }
    # Ties at one start: the event launched first opens the island.
    order = np.lexsort((launch, ts))
    s, e, first = islands(ts[order], te[order] - ts[order])
    busy = _per_window(s, e, bounds)
    # Gaps: before each island (from the previous island's end or t0), and after the last.
    gap_s = np.append(np.concatenate([[t0], e[:-1]]) if len(s) else np.array([t0]), e[-1:])
    gap_e = np.append(s, t1)
    # After the last island nothing follows: the GPU waits for the host (next "launch" = t1).
    next_launch = np.append(launch[order][first], t1)
    ok = gap_e > gap_s
    gap_s, gap_e, next_launch = gap_s[ok], gap_e[ok], next_launch[ok]
    # Unlinked work (no launch call) is not known to be host-bound: not host wait.
    host = (next_launch > gap_s) & (next_launch != _UNKNOWN)
    short = ~host & (gap_e - gap_s < kernel_wait_max_ns)
    host_wait = _per_window(gap_s[host], gap_e[host], bounds)
    kernel_wait = _per_window(gap_s[short], gap_e[short], bounds)
    window = np.diff(bounds)
    idle = window - busy
    return {
        "window_ns": window,
        "compute_ns": u["compute"],
        "comm_ns": u["c1"] - u["compute"],
        "memcpy_ns": u["c2"] - u["c1"],
        "memset_ns": busy - u["c2"],
        "idle_ns": idle,
        "host_wait_ns": host_wait,
        "kernel_wait_ns": kernel_wait,
        "idle_other_ns": idle - host_wait - kernel_wait,
        "comm_total_ns": u["comm_total"],
        "comm_overlapped_ns": u["comm_total"] - (u["c1"] - u["compute"]),
    }


def breakdown(
    events: pd.DataFrame, steps: pd.DataFrame, *, kernel_wait_max_ns: int = KERNEL_WAIT_MAX_NS
) -> pd.DataFrame:
    """Per rank and step window: STEP_COLUMNS (all ns, int64).

    `events`: rank, kind, name, ts_ns, dur_ns, launch_ts_ns (data.reads_timeline.gpu_work);
    `steps`: the store's steps rows. Shares are exclusive and add up to `window_ns`.
    """
    # Ranks without GPU activity (CPU-only traces) have nothing to break down.
    windows = step_windows(steps[steps["rank"].isin(events["rank"])], events)
    if windows.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in STEP_COLUMNS})
    windows = windows.sort_values(["rank", "start_ns"], kind="stable", ignore_index=True)
    # Numpy per rank on rows found once: a pandas frame per rank cost ~50 ms (512 ranks: 25 s).
    ts = events["ts_ns"].to_numpy(np.int64)
    te = ts + events["dur_ns"].to_numpy(np.int64)
    cls = event_classes(events["kind"], events["name"])
    # Launch times stay integer (epoch ns are not exact as float64); unknown = int64 max.
    launch = events["launch_ts_ns"].astype("Int64").fillna(_UNKNOWN).to_numpy(np.int64)
    starts, ends = windows["start_ns"].to_numpy(np.int64), windows["end_ns"].to_numpy(np.int64)
    events_at = rank_positions(events)
    out = {c: np.empty(len(windows), dtype=np.int64) for c in STEP_COLUMNS[4:]}
    for rank, w in rank_positions(windows).items():
        at = events_at.get(rank, np.empty(0, dtype=np.int64))
        bounds = np.append(starts[w], ends[w][-1])
        cols = _rank_breakdown(ts[at], te[at], cls[at], launch[at], bounds, kernel_wait_max_ns)
        for c, v in cols.items():
            out[c][w] = v
    return windows.assign(**out)[STEP_COLUMNS]


def shares(per_step: pd.DataFrame) -> pd.DataFrame:
    """Per rank plus an overall row (rank NA): window_ms and *_pct of every category.

    Columns: rank, window_ms, compute_pct, comm_pct, memcpy_pct, memset_pct, idle_pct,
    host_wait_pct, kernel_wait_pct, idle_other_pct, gpu_busy_pct, comm_overlap_pct (share
    of all comm time hidden under compute; NaN without comm).
    """
    cols = [c for c in STEP_COLUMNS if c.endswith("_ns") and c not in ("start_ns", "end_ns")]
    per_rank = per_step.groupby("rank")[cols].sum().reset_index()
    total = per_rank[cols].sum().to_frame().T
    total["rank"] = pd.Series(pd.NA, index=total.index, dtype="Int64")
    t = pd.concat([per_rank, total], ignore_index=True)
    w = t["window_ns"].astype(float).replace(0, np.nan)
    out = pd.DataFrame({"rank": t["rank"].astype("Int64"), "window_ms": t["window_ns"] / 1e6})
    for c in (*SHARES, *IDLE_SPLIT):
        out[f"{c}_pct"] = 100.0 * t[f"{c}_ns"].astype(float) / w
    out["gpu_busy_pct"] = 100.0 - out["idle_pct"]
    comm = t["comm_total_ns"].astype(float).replace(0, np.nan)
    out["comm_overlap_pct"] = 100.0 * t["comm_overlapped_ns"].astype(float) / comm
    return out


def rank_spread(
    rank_shares: pd.DataFrame, per_step: pd.DataFrame
) -> tuple[pd.DataFrame, int | None]:
    """Spread of each share across ranks (metric, min, median, max, min_rank, max_rank) and
    the straggler rank (None with one rank)."""
    r = rank_shares[rank_shares["rank"].notna()].set_index("rank")
    metrics = [c for c in r.columns if c.endswith("_pct") or c == "window_ms"]
    spread = pd.DataFrame(
        {
            "metric": metrics,
            "min": [r[m].min() for m in metrics],
            "median": [r[m].median() for m in metrics],
            "max": [r[m].max() for m in metrics],
            "min_rank": [r[m].idxmin() if r[m].notna().any() else None for m in metrics],
            "max_rank": [r[m].idxmax() if r[m].notna().any() else None for m in metrics],
        }
    )
    if len(r) < 2:
        return spread, None
    work = per_step.groupby("rank")[["window_ns", "comm_ns"]].sum()
    busy = (work["window_ns"] - work["comm_ns"]).to_numpy()
    return spread, int(work.index.to_numpy()[np.argmax(busy)])


def launch_stats(events: pd.DataFrame, *, short_ns: int = SHORT_KERNEL_NS) -> pd.DataFrame:
    """Per rank and launching step (NA: outside steps): LAUNCH_COLUMNS (delays in ns)."""
    k = events[events["kind"] == "kernel"]
    if k.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in LAUNCH_COLUMNS})
    k = k.assign(
        short=k["dur_ns"] < short_ns,
        delay=(k["ts_ns"] - k["launch_ts_ns"].astype("Int64")).astype("Float64").astype(float),
        step=k["step"].astype("Int64"),
    )
    g = k.groupby(["rank", "step"], dropna=False)
    p50, p90 = g["delay"].quantile(0.5), g["delay"].quantile(0.9)
    return pd.DataFrame(
        {
            "kernel_count": g.size(),
            "short_kernel_count": g["short"].sum(),
            "launch_delay_p50_ns": p50,
            "launch_delay_p90_ns": p90,
            "launch_delay_max_ns": g["delay"].max(),
        }
    ).reset_index()[LAUNCH_COLUMNS]


def hta_comparable(
    events: pd.DataFrame,
    step_marks: pd.DataFrame,
    *,
    include_last_step: bool = False,
    hta_rounding: bool = True,
) -> pd.DataFrame:
    """HTA's `get_temporal_breakdown` on our events: rank, kernel_time_ns, idle_pct,
    compute_pct, non_compute_pct.

    `step_marks`: every ProfilerStep range HTA sees (rank, name, ts_ns, dur_ns; the CPU ones
    and their gpu_user_annotation twins, data.reads_timeline.step_marks). With two step names
    or more, HTA keeps GPU events whose launch call started before the last mark began (or,
    with `include_last_step`, ended), else every GPU event; its window is first start to last
    end of those; idle = window − union; compute = union of non-comm kernels; the rest is
    non-compute. `hta_rounding` applies HTA's rounding of ns timestamps to µs (start up, end
    down), which shortens every activity by up to 1 µs: on traces of many short kernels that
    alone moves the shares by several points (decode_b1_cudagraph: 20 pp).
    """
    filtered = step_marks["name"].nunique() >= 2
    rows = []
    for rank_key, ev in events.groupby("rank", sort=True):
        rank = int(str(rank_key))
        marks = step_marks[step_marks["rank"] == rank]
        if filtered and marks.empty:
            continue  # HTA keeps no kernel of a rank without steps
        if filtered:
            launch = ev["launch_ts_ns"].astype("Int64")
            if include_last_step:
                kept = launch <= (marks["ts_ns"] + marks["dur_ns"]).max()
            else:
                kept = launch < marks["ts_ns"].max()
            ev = ev[kept.fillna(False).astype(bool)]  # unlinked: not launched in a step
        if ev.empty:
            continue
        ts, end = ev["ts_ns"].to_numpy(np.int64), (ev["ts_ns"] + ev["dur_ns"]).to_numpy(np.int64)
        if hta_rounding:  # HTA: ts rounded up, end rounded down, to whole µs
            ts, end = -(-ts // 1000) * 1000, end // 1000 * 1000
        span = int(end.max() - ts.min())
        comp = event_classes(ev["kind"], ev["name"]) == COMPUTE
        keep = end > ts  # rounding can leave nothing (or less) of a sub-µs activity
        s, e, _ = islands(ts[keep], (end - ts)[keep])
        cs, ce, _ = islands(ts[keep & comp], (end - ts)[keep & comp])
        busy, compute = int((e - s).sum()), int((ce - cs).sum())
        rows.append(
            {
                "rank": rank,
                "kernel_time_ns": span,
                "idle_pct": 100.0 * (span - busy) / span,
                "compute_pct": 100.0 * compute / span,
                "non_compute_pct": 100.0 * (busy - compute) / span,
            }
        )
    return pd.DataFrame(
        rows, columns=["rank", "kernel_time_ns", "idle_pct", "compute_pct", "non_compute_pct"]
    )
