"""The report of one run as a JSON document: `report_json(facts)`.

JSON layout: `run` (id, name, ranks, device_name), `metrics` (`overall` and `per_rank`, each
with kernel_count, kernel_time_ms, step_time_ms (on the trace's timeline), gpu_busy_pct,
idle_pct, compute_pct, comm_pct, memcpy_pct, achieved_tflops, mfu_pct, hbm_bw_util_pct, plus
the breakdown's other shares; overall also unprofiled_step_ms and profiler_share_pct),
`step_model` (the step without the profiler and what bounds it: analysis.step_model, with
its basis: hook, tag or model), `roofline` (one row per op class and precision:
analysis.roofline.ROOFLINE_COLUMNS, i.e. name, flops, bytes, intensity, achieved_tflops,
achieved_gbps, bound, pct_of_ceiling…), `breakdown` (per step windows in ms, the spread
across ranks, the straggler, launch statistics, GPU idle by host region), `recommendations`
(ranked by saving: analysis.rules.recommend.Recommendation.as_json: id, title, est_saving_pct
and est_saving_ms per step of the unprofiled step, confidence, evidence, fix, why, kernels,
ops, minor, alternative_of, track_record, likely_saving_ms, close_to: the higher-ranked ids
whose likely savings overlap, close_call: what that means) and `minor_recommendations`
(those under 0.5 % of the step, not ranked). Shares are exclusive shares of the step time
(analysis.breakdown), so compute + comm + memcpy + memset + idle = 100; comm_pct is exposed
communication.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis import breakdown as bd
from analysis import roofline
from analysis.facts import Facts
from analysis.rank_metrics import rank_compute_metrics, rank_step_ms
from analysis.ranks import rank_positions, rows_of
from analysis.rules.recommend import recommend

COMPUTE_KEYS = ("achieved_tflops", "mfu_pct", "hbm_bw_util_pct")
SHARE_KEYS = (
    "gpu_busy_pct",
    "idle_pct",
    "compute_pct",
    "comm_pct",
    "memcpy_pct",
    "memset_pct",
    "host_wait_pct",
    "kernel_wait_pct",
    "idle_other_pct",
    "comm_overlap_pct",
)


def json_value(v: Any) -> Any:
    """JSON-safe scalar: numpy to Python, NaN/NA to None."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, np.integer | int) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, np.floating | float):
        return None if math.isnan(float(v)) else float(v)
    return v


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): json_value(v) for k, v in row.items()} for row in df.to_dict("records")]


def _metrics(
    kernel_count: int,
    kernel_time_ns: int,
    step_ms: list[float],
    share_row: pd.Series | None,
    compute: dict[str, float | None],
) -> dict[str, Any]:
    """One metrics block: kernels, the median step, the shares and compute-side rates."""
    out: dict[str, Any] = {
        "kernel_count": kernel_count,
        "kernel_time_ms": float(kernel_time_ns) / 1e6,
        "step_time_ms": float(np.median(step_ms)) if step_ms else None,
    }
    for key in SHARE_KEYS:
        out[key] = None if share_row is None else json_value(share_row[key])
    for key in COMPUTE_KEYS:
        out[key] = json_value(compute.get(key))
    return out


def _run_kernels(facts: Facts) -> tuple[int, int]:
    """The whole run's kernel count and kernel time (ns), also when a sample of its ranks
    was analysed."""
    if facts.sample is not None:
        return facts.sample.kernel_count, facts.sample.kernel_ns
    kernels = facts.events[facts.events["kind"] == "kernel"]
    return len(kernels), int(kernels["dur_ns"].sum())


def report_json(facts: Facts) -> dict[str, Any]:
    """The report as a JSON-ready dict: the run's metrics (compute-side ones against the
    matched device spec and measured ceilings), the roofline per op class, the breakdown and
    the ranked recommendations."""
    steps, work, spec = facts.steps, facts.all_work, facts.spec
    compute: dict[Any, dict[str, float | None]] = {
        None: roofline.run_compute_metrics(work, steps, spec)
    }
    compute.update(rank_compute_metrics(work, steps, spec))
    table = roofline.roofline_table(work, spec, facts.measured, by="op_class")
    doc = _document(facts, table=table, compute=compute)
    recs = recommend(facts)
    doc["recommendations"] = [r.as_json() for r in recs if not r.minor]
    doc["minor_recommendations"] = [r.as_json() for r in recs if r.minor]
    return doc


def _step_model(facts: Facts) -> dict[str, Any]:
    """The unprofiled step and what bounds it (analysis.step_model): null fields for a run
    without ProfilerSteps."""
    m = facts.step_model
    if m is None:
        keys = ("profiled_step_ms", "unprofiled_step_ms", "profiler_share_pct", "basis")
        return {k: None for k in (*keys, "gpu_ms", "host_ms", "serial_ms", "headroom_ms")}
    return {
        "profiled_step_ms": m.profiled_ms,
        "unprofiled_step_ms": m.unprofiled_ms,
        "profiler_share_pct": m.profiler_share_pct,
        "basis": m.source,
        "gpu_ms": m.gpu_ms,
        "host_ms": m.host_ms,
        "serial_ms": m.serial_ms,
        "headroom_ms": m.headroom_ms,
    }


def _document(
    facts: Facts,
    *,
    table: pd.DataFrame,
    compute: dict[Any, dict[str, float | None]],
) -> dict[str, Any]:
    """Everything but the recommendations: `table` the roofline rows, `compute` the
    compute-side metrics (achieved_tflops, mfu_pct, hbm_bw_util_pct) keyed by rank, with key
    None for the whole run; missing ones are null."""
    run, steps, events = facts.run, facts.steps, facts.events
    per_step = facts.per_step
    shares = facts.rank_shares
    spread, straggler = bd.rank_spread(shares, per_step)
    overall_share = shares[shares["rank"].isna()]
    step_model = _step_model(facts)
    ranks = sorted({int(r) for r in events["rank"]} | {int(r) for r in steps["rank"]})
    per_rank = []
    step_ms = rank_step_ms(steps, events)
    kernels = events[events["kind"] == "kernel"]
    kernel_count = kernels.groupby("rank").size()
    kernel_ns = kernels.groupby("rank")["dur_ns"].sum()
    ranked_shares = shares.dropna(subset=["rank"])
    share_at = rank_positions(ranked_shares)
    for r in ranks:
        row = rows_of(ranked_shares, share_at, r)
        m = _metrics(
            int(kernel_count.get(r, 0)),
            int(kernel_ns.get(r, 0)),
            step_ms.get(r, []),
            row.iloc[0] if len(row) else None,
            compute.get(r, {}),
        )
        per_rank.append({"rank": r, **m})
    windows = per_step.assign(
        **{
            c.replace("_ns", "_ms"): per_step[c] / 1e6
            for c in bd.STEP_COLUMNS
            if c.endswith("_ns") and c not in ("start_ns", "end_ns")
        }
    )
    windows = windows.drop(columns=[c for c in bd.STEP_COLUMNS if c.endswith("_ns")])
    launch = facts.launch_stats
    return {
        "run": {
            "id": run.run_id,
            "name": run.name,
            "ranks": run.rank_count,
            "device_name": run.device_name,
            # Only on a run of many ranks: which ones every figure below comes from.
            **({} if facts.sample is None else {"analysed_ranks": facts.sample.as_dict()}),
        },
        "metrics": {
            "overall": {
                **_metrics(
                    *_run_kernels(facts),
                    list(facts.step_times["step_time_ms"]),
                    overall_share.iloc[0] if len(overall_share) else None,
                    compute.get(None, {}),
                ),
                "unprofiled_step_ms": step_model["unprofiled_step_ms"],
                "profiler_share_pct": step_model["profiler_share_pct"],
            },
            "per_rank": per_rank,
        },
        "step_model": step_model,
        "roofline": records(table),
        "breakdown": {
            "definitions": "exclusive shares of each step window (analysis/breakdown.py)",
            "per_step": records(windows),
            "spread": records(spread),
            "straggler_rank": straggler,
            "launch": records(launch),
            "idle_by_host_region": records(facts.region_table),
        },
    }
