"""The report's per-rank metrics in one pass over the run's frames: the same numbers as the
whole-run functions called on each rank's rows (analysis.overview.step_times,
analysis.roofline.run_compute_metrics), without their fixed cost per call: at 128 ranks
those calls were 40 s of a 46 s report, 0.1-0.3 s each."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.ranks import rank_positions
from analysis.specs import DeviceSpec
from analysis.step_model import profiled_spans


def rank_step_ms(steps: pd.DataFrame, events: pd.DataFrame) -> dict[int, list[float]]:
    """Each rank's step times (ms, in step order): what step_times gives for the rank alone
    (its steps' spans; a span depends on that rank's rows only)."""
    if steps.empty:
        return {}
    spans = steps[["rank", "step"]].merge(profiled_spans(steps, events), on=["rank", "step"])
    spans = spans.sort_values(["rank", "step"], kind="stable")
    out: dict[int, list[float]] = {}
    for rank, idx in rank_positions(spans).items():
        out[rank] = list(spans["span_ns"].to_numpy()[idx] / 1e6)
    return out


def rank_compute_metrics(
    work: pd.DataFrame, steps: pd.DataFrame, spec: DeviceSpec | None
) -> dict[int, dict[str, float | None]]:
    """run_compute_metrics(work of rank r, steps of rank r, spec) for every rank r of `work`
    (no tokens per step: a rank's tokens are not known)."""
    out: dict[int, dict[str, float | None]] = {}
    if work.empty:
        return out
    dur = work["dur_ns"].astype(float).to_numpy()
    modelled = (work["flops"].notna() & work["bytes"].notna()).to_numpy()
    step_ms = rank_step_ms(steps, work)
    summed = _step_sums(work, steps)
    peaks = _main_peaks(work, spec)
    for rank, idx in rank_positions(work).items():
        d = dur[idx]
        total = d.sum()
        m: dict[str, float | None] = {
            "achieved_tflops": None, "mfu_pct": None, "hbm_bw_util_pct": None,
            "tokens_per_s": None,
            "modelled_time_pct": float(100 * d[modelled[idx]].sum() / total) if total else None,
        }  # fmt: skip
        out[rank] = m
        if rank in step_ms:
            times = step_ms[rank]
            flops, moved = summed.get(rank, (0.0, 0.0))
        else:  # no steps on this rank: its GPU-active span is the time
            rows = work.iloc[idx]
            end = rows["ts_ns"] + rows["dur_ns"]
            times = [float(end.max() - rows["ts_ns"].min()) / 1e6]
            flops, moved = float(rows["flops"].sum()), float(rows["bytes"].sum())
        if not times:
            continue
        time_s = float(np.sum(times)) / 1e3
        m["achieved_tflops"] = flops / time_s / 1e12
        if spec is not None:
            peak = peaks.get(rank)
            m["mfu_pct"] = 100 * flops / time_s / peak if peak else None
            m["hbm_bw_util_pct"] = 100 * moved / time_s / spec.hbm_bytes_per_s
    return out


def _step_sums(work: pd.DataFrame, steps: pd.DataFrame) -> dict[int, tuple[float, float]]:
    """Per rank with steps: its per-step sums of flops and of bytes, summed over its steps in
    step order (a step without work counts 0, as the whole-run function's left join does).
    One grouping: a frame lookup per rank cost ~14 ms (512 ranks: 7 s)."""
    if steps.empty:
        return {}
    per_step = work.groupby(["rank", "step"])[["flops", "bytes"]].sum(min_count=1)
    keys = steps[["rank", "step"]].sort_values(["rank", "step"], kind="stable")
    both = keys.merge(per_step.reset_index(), on=["rank", "step"], how="left", sort=False)
    flops = both["flops"].fillna(0.0).to_numpy(dtype=float)
    moved = both["bytes"].fillna(0.0).to_numpy(dtype=float)
    return {
        rank: (float(np.sum(flops[at])), float(np.sum(moved[at])))
        for rank, at in rank_positions(both).items()
    }


def _main_peaks(work: pd.DataFrame, spec: DeviceSpec | None) -> dict[int, float | None]:
    """Per rank: the dense peak of the precision that does most of its modelled FLOPs."""
    if spec is None:
        return {}
    by_prec = work.groupby(["rank", "precision"])["flops"].sum().reset_index()
    if by_prec.empty:
        return {}
    best = by_prec.loc[by_prec.groupby("rank")["flops"].idxmax()]
    return {
        int(r): spec.peak_flop_per_s(str(prec)) if flops > 0 else None
        for r, prec, flops in zip(best["rank"], best["precision"], best["flops"], strict=True)
    }
