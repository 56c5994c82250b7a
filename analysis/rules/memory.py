"""Rules about device memory left unused: a batch too small for the GPU, an allocator that
gives memory back and takes it again. Both need the allocator's events
(`profile_memory=True`) and the device's memory (deviceProperties) to know the headroom."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.facts import Facts
from analysis.gemm_shapes import time_weighted_median
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import idle_within
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms


def _peak_share(facts: Facts) -> tuple[float, float, float] | None:
    """(peak reserved bytes, device bytes, peak %) of the fullest rank, None when unknown."""
    m = facts.memory.dropna(subset=["peak_reserved_bytes", "total_memory_bytes"])
    m = m[m["total_memory_bytes"] > 0]
    if m.empty:
        return None
    row = m.iloc[int(np.argmax((m["peak_reserved_bytes"] / m["total_memory_bytes"]).to_numpy()))]
    peak, total = float(row["peak_reserved_bytes"]), float(row["total_memory_bytes"])
    return peak, total, 100.0 * peak / total


def _loading_idle_ms(facts: Facts) -> float:
    """GPU idle time per step inside data-loading ranges (it grows with the batch)."""
    r = facts.ranges
    loads = r[(r["kind"] == "cpu") & r["name"].str.contains("DataLoader", regex=False)]
    if loads.empty:
        return 0.0
    return facts.per_step_ms(float(idle_within(facts, loads.reset_index(drop=True)).sum()))


@rule("small-batch")
def small_batch(facts: Facts) -> Finding | None:
    th = CATALOG["small-batch"].thresholds
    busy_pct = facts.shares.get("gpu_busy_pct", 100.0)
    if not facts.is_training or busy_pct > th["max_gpu_busy_pct"]:
        return None
    mem = _peak_share(facts)
    if mem is None or mem[2] > th["max_peak_memory_pct"]:
        return None
    g = facts.weight_gemms
    if g.empty or mem[0] <= 0:
        return None
    tokens = time_weighted_median(g["tokens"], g["dur_ns"])
    if tokens > th["max_tokens"]:
        return None
    peak, total, peak_pct = mem
    k = min(th["max_batch_factor"], th["usable_memory_pct"] / 100 * total / peak)
    step = facts.step_ms
    model = facts.step_model
    loading = min(_loading_idle_ms(facts), step)
    if model is not None:
        # Per original batch: the GPU's work and the data loading grow k×, the host's
        # launches and Python do not (conservative for GEMMs this small, which gain
        # efficiency), and the step's waiting stays.
        busy = model.gpu_ms
        batched = (max(busy * k, model.host_ms + loading * (k - 1)) + model.serial_ms) / k
    else:
        busy = step * busy_pct / 100
        batched = max((step - loading) / k + loading, busy)
    saving = step - batched
    if 100 * saving / max(step, 1e-9) < th["min_share_pct"]:
        return None
    return Finding(
        saving_ms=saving,
        confidence="medium",
        evidence=(
            f"weight GEMMs carry {tokens:,.0f} token rows (time-weighted median, e.g. "
            f"{_example(g)}); the GPU is busy {busy_pct:.0f} % of the {ms(step)} step",
            f"allocator peak {peak / 1e9:.1f} GB reserved of {total / 1e9:.0f} GB "
            f"({peak_pct:.1f} %): room for a {k:.3g}× batch",
            f"{k:.3g}× the batch: about {ms(batched)} per step's worth of samples instead of "
            f"{ms(step)}",
        ),
        why=(
            "The step waits mostly for the host, whose per-step work (Python, launches) "
            "does not grow with the batch. With a batch k× larger (k from the memory "
            "headroom, at most "
            f"{th['max_batch_factor']:g}), the time per original batch becomes "
            "max((step − loading) / k + loading, GPU busy time), data loading growing with "
            "the batch and GPU work counted as growing k× (conservative)."
        ),
        ops=tuple(sorted(set(g["op_name"]))),
    )


def _example(g: pd.DataFrame) -> str:
    by = g.groupby(["tokens", "k", "n"])["dur_ns"].sum()
    m, kdim, n = (int(v) for v in by.index[int(np.argmax(by.to_numpy()))])
    return f"[{m}, {kdim}] × [{kdim}, {n}]"


@rule("memory-headroom")
def memory_headroom(facts: Facts) -> Finding | None:
    th = CATALOG["memory-headroom"].thresholds
    calls = facts.allocator_calls
    if len(facts.steps):
        calls = calls[calls["step"].notna()]
    per_step = len(calls) / (facts.windows * facts.ranks)
    if calls.empty or per_step < th["min_calls_per_step"] or facts.events.empty:
        return None
    mem = _peak_share(facts)
    if mem is None or mem[2] > th["max_peak_memory_pct"]:
        return None
    idle = idle_within(facts, calls.reset_index(drop=True))
    saving = facts.per_step_ms(float(idle.sum()))
    model = facts.step_model
    if model is not None:  # driver calls: the profiler does not stretch them
        saving = min(saving, model.serial_ms)
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    peak, total, peak_pct = mem
    names = calls["name"].value_counts()
    return Finding(
        serial_ms=saving,
        confidence="medium",
        evidence=(
            f"{per_step:.3g} allocator calls reach the driver per step ("
            + ", ".join(f"{n} × {c}" for n, c in names.items())
            + f"), {ms(facts.per_step_ms(float(calls['dur_ns'].sum())))} of host time",
            f"the GPU idles {ms(saving)} per step during them",
            f"allocator peak {peak / 1e9:.1f} GB reserved of {total / 1e9:.0f} GB "
            f"({peak_pct:.1f} %): nothing needs the memory back",
        ),
        why=(
            "PyTorch's caching allocator keeps freed blocks; calls to cudaFree/cudaMalloc in "
            "the steady state mean the cache is emptied (torch.cuda.empty_cache, "
            "PYTORCH_NO_CUDA_MEMORY_CACHING) or fragmented. cudaFree synchronises the device, "
            "so the saving is the GPU idle time measured during those calls (at most the "
            "step's serialization without the profiler)."
        ),
    )


RULES: tuple[Rule, ...] = (small_batch, memory_headroom)
