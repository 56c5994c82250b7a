"""Rules from NVML telemetry sampled while the run was profiled (collectors.nvml beside the
trace: `profile_to_dashboard(..., nvml=True)` or an agent on the node)."""

from __future__ import annotations

import pandas as pd

from analysis.facts import Facts
from analysis.rules.catalog import CATALOG
from analysis.rules.registry import Finding, Rule, rule
from analysis.telemetry import THROTTLE_BITS, clock_reasons
from analysis.text import ms


def _run_gpus(facts: Facts) -> pd.DataFrame:
    """The samples of the GPUs the run used: on each host, the `ranks` busiest GPUs (an idle
    neighbour, or another job's GPU, says nothing about this run)."""
    t = facts.telemetry
    if t.empty:
        return t
    util = t.groupby(["host", "gpu"])["util_gpu_pct"].mean().sort_values(ascending=False)
    keep = set(util.index[: facts.ranks])
    return t[[k in keep for k in zip(t["host"], t["gpu"], strict=True)]]


def _max_clock(facts: Facts, samples: pd.DataFrame) -> pd.Series:
    """Per sample: its GPU's maximum SM clock (the agent's inventory, else the highest clock
    sampled on that GPU during the run: then a GPU throttled all along shows no loss)."""
    inv = facts.gpu_inventory
    seen = samples.groupby(["host", "gpu"])["sm_clock_mhz"].transform("max").astype(float)
    if inv.empty or "max_sm_clock_mhz" not in inv:
        return seen
    m = samples[["host", "gpu"]].merge(
        inv[["host", "gpu", "max_sm_clock_mhz"]], how="left", on=["host", "gpu"]
    )
    top = pd.Series(m["max_sm_clock_mhz"].to_numpy(dtype=float), index=samples.index)
    return top.fillna(seen)


@rule("power-throttling")
def power_throttling(facts: Facts) -> Finding | None:
    th = CATALOG["power-throttling"].thresholds
    t = _run_gpus(facts)
    t = t[t["sm_clock_mhz"].notna()]
    if t.empty:
        return None
    mask = t["clocks_event_reasons"].fillna(0).astype("int64")
    top = _max_clock(facts, t)
    clock = t["sm_clock_mhz"].astype(float)
    throttled = ((mask & THROTTLE_BITS) > 0) & (clock < top)
    share = float(throttled.mean())
    if share < th["min_throttled_share"]:
        return None
    loss = ((1 - clock / top) * throttled).mean()
    saving = facts.gpu_busy_ms * float(loss)
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    reasons = sorted({r for m in mask[throttled] for r in clock_reasons(int(m) & THROTTLE_BITS)})
    c = clock[throttled]
    return Finding(
        gpu_ms=saving,
        confidence="medium",
        evidence=(
            f"{int(throttled.sum())} of {len(t)} NVML samples during the run report "
            f"{', '.join(reasons)}",
            f"SM clock {c.median():.0f} MHz (median of those samples, lowest {c.min():.0f}) "
            f"against a maximum of {top[throttled].max():.0f} MHz",
            f"GPU busy {facts.step_busy_pct:.0f} % of the step: {ms(saving)} per step is the "
            "busy time lost to the lower clock",
        ),
        why=(
            "Kernel time stretches as the SM clock drops. Over the run's samples, the mean of "
            "(1 − clock / maximum clock) on samples with a power, thermal or slowdown reason, "
            "times the step's GPU-busy time, is the time the throttling cost (an upper bound "
            "for memory-bound kernels, whose speed follows the memory clock)."
        ),
    )


RULES: tuple[Rule, ...] = (power_throttling,)
