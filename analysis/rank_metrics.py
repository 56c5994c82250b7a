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
    per_step = work.groupby(["rank", "step"])[["flops", "bytes"]].sum(min_count=1)
    by_prec = work.groupby(["rank", "precision"])["flops"].sum()
    steps_at = rank_positions(steps)
    stepped = set(per_step.index.get_level_values(0))
    step_col = steps["step"].to_numpy()
    for rank, idx in rank_positions(work).items():
        d = dur[idx]
        total = d.sum()
        m: dict[str, float | None] = {
            "achieved_tflops": None, "mfu_pct": None, "hbm_bw_util_pct": None,
            "tokens_per_s": None,
            "modelled_time_pct": float(100 * d[modelled[idx]].sum() / total) if total else None,
        }  # fmt: skip
        out[rank] = m
        rows = work.iloc[idx]
        if rank in step_ms:
            times = step_ms[rank]
            steps_of = np.sort(step_col[steps_at[rank]])
            mine = per_step.loc[[rank]].droplevel(0) if rank in stepped else None
            flops = _summed(mine, "flops", steps_of)
            moved = _summed(mine, "bytes", steps_of)
        else:  # no steps on this rank: its GPU-active span is the time
            end = rows["ts_ns"] + rows["dur_ns"]
            times = [float(end.max() - rows["ts_ns"].min()) / 1e6]
            flops, moved = float(rows["flops"].sum()), float(rows["bytes"].sum())
        if not times:
            continue
        time_s = float(np.sum(times)) / 1e3
        m["achieved_tflops"] = flops / time_s / 1e12
        if spec is not None:
            peak = _main_peak(by_prec, rank, spec)
            m["mfu_pct"] = 100 * flops / time_s / peak if peak else None
            m["hbm_bw_util_pct"] = 100 * moved / time_s / spec.hbm_bytes_per_s
    return out


def _summed(per_step: pd.DataFrame | None, col: str, steps: np.ndarray) -> float:
    """The rank's per-step sums of `col` over its steps, in step order (a step without
    work counts 0, as the whole-run function's left join does)."""
    if per_step is None:
        return 0.0
    values = per_step[col].reindex(steps).fillna(0.0).to_numpy(dtype=float)
    return float(np.sum(values))


def _main_peak(by_prec: pd.Series, rank: int, spec: DeviceSpec) -> float | None:
    """Dense peak of the precision that does most of the rank's modelled FLOPs."""
    if rank not in by_prec.index.get_level_values(0):
        return None
    mine = by_prec.loc[rank]
    if mine.empty or mine.max() <= 0:
        return None
    return spec.peak_flop_per_s(str(mine.idxmax()))
