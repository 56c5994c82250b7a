"""Where the host was while the GPU sat idle: every idle gap of a step window, split over the
host regions it falls in.

Regions, first match wins for each instant of a gap (the cause before the symptom):
allocator (cudaMalloc/cudaFree calls), sync (a …Synchronize call, and the gap right after
one that waited: the queue it drained stays empty until the host launches again),
data_loading (DataLoader ranges), optimizer (Optimizer.step / zero_grad ranges), host_code
(the step's own host code before the model's first op and after its backward: input
preparation, Python between steps), backward (the autograd engine's span), forward (the rest
of the model's span), other (idle outside any step's host range).

Each region's idle is also given without the profiler: the trace's idle scaled so that the
regions add up to the step model's headroom (unprofiled step − GPU time,
analysis.step_model), since the profiler stretches host time, not GPU time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.intervals import covered_before, islands
from analysis.ranks import rank_positions

REGIONS = (
    "allocator", "sync", "data_loading", "optimizer", "host_code", "backward", "forward",
    "other",
)  # fmt: skip
# The recommendation that claims each region's idle time (analysis.rules).
CLAIMED_BY = {
    "allocator": "memory-headroom", "sync": "host-sync", "data_loading": "gpu-starvation",
    "optimizer": "fused-optimizer", "host_code": "gpu-starvation", "backward": "cuda-graphs",
    "forward": "cuda-graphs", "other": "",
}  # fmt: skip
LABELS = {
    "allocator": "allocator calls", "sync": "synchronization", "data_loading": "data loading",
    "optimizer": "optimizer step", "host_code": "host code outside the model",
    "backward": "backward pass", "forward": "forward pass", "other": "outside the steps",
}  # fmt: skip
IDLE_COLUMNS = ["rank", "step", "region", "idle_ns"]
REGION_NOTE = (
    "Each idle instant of a step goes to the first host region it falls in (allocator calls, "
    "synchronization, data loading, optimizer step, host code outside the model, backward, "
    "forward); unprofiled is the trace's idle scaled to the step's headroom (unprofiled step "
    "less GPU time). Each recommendation claims only its region's idle."
)


def _union(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b, _ = islands(s, e - s)
    return a, b


def _overlap(gs: np.ndarray, ge: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per gap [gs, ge): its length covered by the disjoint sorted islands [s, e)."""
    if not len(s):
        return np.zeros(len(gs), dtype=np.int64)
    return np.asarray(covered_before(s, e, ge) - covered_before(s, e, gs), dtype=np.int64)


def _sync_bubbles(
    t0: np.ndarray, t1: np.ndarray, busy_s: np.ndarray, busy_e: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The sync calls [t0, t1), each extended to the next GPU activity when it waited (the
    GPU was busy as the call began)."""
    if not len(busy_s):
        return t0, t1
    waited = covered_before(busy_s, busy_e, t0 + 1) - covered_before(busy_s, busy_e, t0) > 0
    nxt = np.searchsorted(busy_s, t1, side="left")
    after = np.where(nxt < len(busy_s), busy_s[np.minimum(nxt, len(busy_s) - 1)], t1)
    return t0, np.where(waited, np.maximum(after, t1), t1)


def _step_bounds(steps: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """Per step row (rank, start, end, fwd, bwd0, bwd1, has_bwd): the step's host range and
    its forward and backward passes clipped into it, for every rank at once."""
    s = steps.merge(spans, on=["rank", "step"], how="left")
    start = s["ts_ns"].to_numpy(np.int64)
    end = start + s["dur_ns"].to_numpy(np.int64)
    fwd = s["fwd_start_ns"].astype("Int64").fillna(pd.Series(end, index=s.index))
    fwd_np = np.clip(fwd.to_numpy(np.int64), start, end)
    bwd0 = np.clip(s["bwd_start_ns"].astype("Int64").fillna(0).to_numpy(np.int64), fwd_np, end)
    bwd1 = np.clip(s["bwd_end_ns"].astype("Int64").fillna(0).to_numpy(np.int64), bwd0, end)
    return pd.DataFrame({
        "rank": s["rank"].to_numpy(), "start": start, "end": end, "fwd": fwd_np, "bwd0": bwd0,
        "bwd1": bwd1, "has_bwd": s["bwd_start_ns"].notna().to_numpy(),
    })  # fmt: skip


def _step_regions(
    b: dict[str, np.ndarray], at: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """host_code, backward and forward intervals of one rank's steps (rows `at` of
    _step_bounds' columns `b`)."""
    start, end, fwd, bwd0, bwd1 = (b[k][at] for k in ("start", "end", "fwd", "bwd0", "bwd1"))
    has_bwd = b["has_bwd"][at]
    model_end = np.where(has_bwd, bwd1, end)  # inference: the model runs to the step's end
    return {
        "host_code": (np.concatenate([start, model_end]), np.concatenate([fwd, end])),
        "backward": (bwd0[has_bwd], bwd1[has_bwd]),
        "forward": (fwd, np.where(has_bwd, bwd0, end)),
        "other": (np.array([np.iinfo(np.int64).min]), np.array([np.iinfo(np.int64).max])),
    }


def idle_by_region(
    events: pd.DataFrame,
    per_step: pd.DataFrame,
    steps: pd.DataFrame,
    spans: pd.DataFrame,
    regions: pd.DataFrame,
) -> pd.DataFrame:
    """GPU idle time of every step window split over REGIONS: IDLE_COLUMNS (one row per
    rank, step and region with idle time).

    `events`: data.reads.gpu_events; `per_step`: analysis.breakdown.breakdown (the windows);
    `steps`: data.reads.steps; `spans`: data.reads_host.pass_spans; `regions`:
    data.reads_host.region_intervals.
    """
    out: list[tuple[object, object, str, int]] = []
    # Numpy on each rank's rows found once: a mask per rank cost ranks × events, and a
    # pandas frame or merge per rank ~35 ms (128 ranks: 4.6 s).
    bounds = _step_bounds(steps, spans)
    events_at, regions_at, steps_at = (rank_positions(f) for f in (events, regions, bounds))
    b = {c: bounds[c].to_numpy() for c in bounds.columns}
    ts, dur = events["ts_ns"].to_numpy(np.int64), events["dur_ns"].to_numpy(np.int64)
    region = regions["region"].to_numpy(dtype=object)
    r0 = regions["ts_ns"].to_numpy(np.int64)
    r1 = r0 + regions["dur_ns"].to_numpy(np.int64)
    none = np.empty(0, dtype=np.int64)
    for rank, win in per_step.groupby("rank", sort=True):
        rank_no = int(str(rank))
        at = events_at.get(rank_no, none)
        bs, be, _ = islands(ts[at], dur[at])
        w0 = win["start_ns"].to_numpy(np.int64)
        w1 = win["end_ns"].to_numpy(np.int64)
        # Idle gaps per window: the window less the busy islands.
        gs, ge, gw = [], [], []
        for i, (a, b1) in enumerate(zip(w0, w1, strict=True)):
            lo, hi = np.searchsorted(be, a, side="right"), np.searchsorted(bs, b1, side="left")
            s_in, e_in = np.clip(bs[lo:hi], a, b1), np.clip(be[lo:hi], a, b1)
            starts = np.concatenate([[a], e_in])
            ends = np.concatenate([s_in, [b1]])
            keep = ends > starts
            gs.append(starts[keep])
            ge.append(ends[keep])
            gw.append(np.full(int(keep.sum()), i))
        if not gs:
            continue
        g0, g1, gwin = np.concatenate(gs), np.concatenate(ge), np.concatenate(gw)
        mine = regions_at.get(rank_no, none)
        intervals: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in ("allocator", "data_loading", "optimizer", "sync"):
            r = mine[region[mine] == name]
            intervals[name] = (r0[r], r1[r])
        intervals["sync"] = _sync_bubbles(*intervals["sync"], bs, be)
        intervals.update(_step_regions(b, steps_at.get(rank_no, none)))
        cum_s = np.empty(0, dtype=np.int64)
        cum_e = np.empty(0, dtype=np.int64)
        before = np.zeros(len(g0), dtype=np.int64)
        steps_of = win["step"].to_numpy()
        for name in REGIONS:
            s, e = intervals[name]
            cum_s, cum_e = _union(np.concatenate([cum_s, s]), np.concatenate([cum_e, e]))
            covered = _overlap(g0, g1, cum_s, cum_e)
            idle = np.bincount(gwin, weights=covered - before, minlength=len(win))
            before = covered
            out.extend((rank, steps_of[i], name, int(idle[i])) for i in np.flatnonzero(idle > 0))
    frame = pd.DataFrame(out, columns=IDLE_COLUMNS)
    return frame.astype({"idle_ns": "int64"})


def region_table(idle: pd.DataFrame, windows: int, headroom_ms: float | None) -> pd.DataFrame:
    """Per region with idle time, largest first: region, label, idle_ms (per step and rank, on
    the trace), unprofiled_ms (scaled to the step model's headroom; NaN without one),
    share_pct (of all idle), claimed_by (the recommendation id)."""
    cols = ["region", "label", "idle_ms", "unprofiled_ms", "share_pct", "claimed_by"]
    if idle.empty or windows == 0:
        return pd.DataFrame(columns=cols)
    per = idle.groupby("region")["idle_ns"].sum() / 1e6 / windows
    total = float(per.sum())
    scale = headroom_ms / total if headroom_ms is not None and total > 0 else np.nan
    order = [r for r in REGIONS if r in per.index]
    t = pd.DataFrame({"region": order, "idle_ms": per.loc[order].to_numpy()})
    t["label"] = t["region"].map(LABELS)
    t["unprofiled_ms"] = t["idle_ms"] * min(scale, 1.0) if scale == scale else np.nan
    t["share_pct"] = 100 * t["idle_ms"] / total if total else 0.0
    t["claimed_by"] = t["region"].map(CLAIMED_BY)
    return t.sort_values("idle_ms", ascending=False, ignore_index=True)[cols]
