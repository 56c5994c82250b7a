"""Rules about device memory left unused: a batch too small for the GPU, an allocator that
gives memory back and takes it again. Both need the allocator's events
(`profile_memory=True`) and the device's memory (deviceProperties) to know the headroom."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.facts import Facts
from analysis.gemm_shapes import time_weighted_median
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import idle_within, kernels_in_ranges
from analysis.rules.registry import Finding, Rule, rule
from analysis.step_model import StepModel
from analysis.text import fmt_bytes, ms


def _peak_share(facts: Facts) -> tuple[float, float, float] | None:
    """(peak reserved bytes, device bytes, peak %) of the fullest rank, None when unknown."""
    m = facts.memory.dropna(subset=["peak_reserved_bytes", "total_memory_bytes"])
    m = m[m["total_memory_bytes"] > 0]
    if m.empty:
        return None
    row = m.iloc[int(np.argmax((m["peak_reserved_bytes"] / m["total_memory_bytes"]).to_numpy()))]
    peak, total = float(row["peak_reserved_bytes"]), float(row["total_memory_bytes"])
    return peak, total, 100.0 * peak / total


def _input_ms(facts: Facts) -> float:
    """Host time per step that grows with the batch: input preparation, in DataLoader ranges
    and in the step's host code outside the model (the GPU's idle there without the
    profiler, analysis.host_regions; on the trace without a step model)."""
    if facts.step_model is not None:
        return facts.region_idle_ms("data_loading", "host_code")
    r = facts.ranges
    loads = r[(r["kind"] == "cpu") & r["name"].str.contains("DataLoader", regex=False)]
    if loads.empty:
        return 0.0
    return facts.per_step_ms(float(idle_within(facts, loads.reset_index(drop=True)).sum()))


def _fixed_gpu_ms(facts: Facts, kernel_fixed_us: float) -> float:
    """GPU time per step that a larger batch does not grow (D101): the optimizer step's
    kernels (their work follows the parameters) and every other kernel's first
    kernel_fixed_us (its launch, ramp-up and tail on the device)."""
    d = facts.kernels["dur_ns"].to_numpy(np.float64)
    opt = kernels_in_ranges(facts, "Optimizer.step#")
    fixed_ns = d[opt].sum() + np.minimum(d[~opt], kernel_fixed_us * 1e3).sum()
    return facts.per_step_ms(float(fixed_ns))


def allocator_waiting_ms(model: StepModel, gpu_ms: float, host_ms: float) -> tuple[float, float]:
    """(the allocator's share of the step's waiting, that share in a step of gpu_ms and
    host_ms): cudaFree synchronises, so host and GPU stop overlapping; the overlap lost is at
    most the shorter of the two and grows with it, the rest stays (D103: on the 4x batch
    runs of the emptied-cache workloads, off by a median factor of 1.26 on an H100 (10 runs)
    and 1.25 on the H200 (17), against 1.84 and 1.54 with the share kept as it was)."""
    alloc = model.serial_share("alloc")
    shorter = min(model.gpu_ms, model.host_ms)
    lost = min(shorter, alloc)
    grown = lost * min(gpu_ms, host_ms) / shorter if lost > 0 else 0.0
    return alloc, alloc - lost + grown


@rule("small-batch")
def small_batch(facts: Facts) -> Finding | None:
    th = CATALOG["small-batch"].thresholds
    model = facts.step_model
    busy_pct = facts.step_busy_pct
    # Without a step model, only a mostly idle GPU says the host bounds the step.
    if not facts.is_training or (model is None and busy_pct > th["max_gpu_busy_pct"]):
        return None
    mem = _peak_share(facts)
    if mem is None or mem[2] > th["max_peak_memory_pct"]:
        return None
    g = facts.weight_gemms
    if g.empty or mem[0] <= 0:
        return None
    tokens = time_weighted_median(g["tokens"], g["dur_ns"])
    peak, total, peak_pct = mem
    k = min(th["max_batch_factor"], th["usable_memory_pct"] / 100 * total / peak)
    step = facts.step_ms
    loading = min(_input_ms(facts), step)
    if model is not None:
        # Per original batch: the GPU's work grows k× but for its fixed part (D101: the 4×
        # batch runs' GPU time +2.8/+3.7 % in the median, H100/H200, where k× was +11.6/
        # +13.1 %), the input preparation grows k×, the host's launches and Python do not,
        # and the step's waiting stays but for the allocator's share (allocator_waiting_ms).
        busy = model.gpu_ms
        fixed = min(_fixed_gpu_ms(facts, th["kernel_fixed_us"]), busy)
        gpu_k = fixed + k * (busy - fixed)
        host_k = model.host_ms + loading * (k - 1)
        alloc, alloc_k = allocator_waiting_ms(model, gpu_k, host_k)
        batched = (max(gpu_k, host_k) + model.serial_ms - alloc + alloc_k) / k
        fixed_line: tuple[str, ...] = (
            f"{ms(fixed)} of the GPU's {ms(busy)} per step does not grow with the batch "
            f"(optimizer kernels, each other kernel's first {th['kernel_fixed_us']:g} µs)",
        ) + (
            (
                f"{ms(alloc)} of the step's waiting is the allocator's (cudaFree's sync stops "
                f"host and GPU overlapping): about {ms(alloc_k)} at {k:.3g}× the batch, as the "
                "shorter of the two grows",
            )
            if alloc > 0
            else ()
        )
    else:
        busy = step * busy_pct / 100
        batched = max((step - loading) / k + loading, busy)
        fixed_line = ()
    saving = step - batched
    if 100 * saving / max(step, 1e-9) < th["min_share_pct"]:
        return None
    return Finding(
        saving_ms=saving,
        confidence="medium",
        evidence=(
            f"weight GEMMs carry {tokens:,.0f} token rows (time-weighted median, e.g. "
            f"{_example(g)}); the GPU is busy {busy_pct:.0f} % of the {ms(step)} step "
            "without the profiler",
            f"allocator peak {fmt_bytes(peak)} reserved of {fmt_bytes(total)} "
            f"({peak_pct:.1f} %): room for a {k:.3g}× batch",
            *fixed_line,
            f"{k:.3g}× the batch: about {ms(batched)} per step's worth of samples instead of "
            f"{ms(step)}",
        ),
        why=(
            "The host's per-step work (Python, launches) does not grow with the batch, nor "
            "does part of the GPU's: the optimizer step and each kernel's fixed cost. With a "
            "batch k× larger (k from the memory headroom, at most "
            f"{th['max_batch_factor']:g}), the time per original batch becomes "
            "(max(fixed GPU + (GPU − fixed GPU) × k, host + input × (k − 1)) + waiting) / k: "
            "input preparation (data loading, host code outside the model) grows with the "
            f"batch; the fixed GPU time is the optimizer's kernels and the first "
            f"{th['kernel_fixed_us']:g} µs of every other kernel. The allocator's share of "
            "the waiting (cudaFree synchronises, so host and GPU stop overlapping) grows as "
            "the shorter of the two."
        ),
        ops=tuple(sorted(set(g["op_name"]))),
    )


def _example(g: pd.DataFrame) -> str:
    by = g.groupby(["tokens", "k", "n"])["dur_ns"].sum()
    m, kdim, n = (int(v) for v in by.index[int(np.argmax(by.to_numpy()))])
    return f"[{m}, {kdim}] × [{kdim}, {n}]"


@rule("memory-headroom")
def memory_headroom(facts: Facts) -> Finding | None:
    """Allocator calls in the steady state, and activation recomputation while most of the
    memory is free; at capacity, the allocator calls are its retries."""
    th = CATALOG["memory-headroom"].thresholds
    mem = _peak_share(facts)
    if mem is None or facts.events.empty:
        return None
    peak, total, peak_pct = mem
    found = [f for f in (_allocator_churn(facts, peak_pct), _recompute(facts, peak_pct)) if f]
    if not found:
        return None
    finding = Finding(
        gpu_ms=sum(f.gpu_ms for f in found),
        host_ms=sum(f.host_ms for f in found),
        serial_ms=sum(f.serial_ms for f in found),
        confidence="medium",
        evidence=(
            *(e for f in found for e in f.evidence),
            f"allocator peak {fmt_bytes(peak)} reserved of {fmt_bytes(total)} "
            f"({peak_pct:.1f} %)"
            + (
                ": near capacity, so the allocator frees its cache and retries"
                if peak_pct >= th["near_capacity_pct"]
                else ": room to keep what is freed or recomputed"
            ),
        ),
        why=" ".join(f.why for f in found),
    )
    return finding if saving_share(facts, finding) >= th["min_share_pct"] else None


def saving_share(facts: Facts, f: Finding) -> float:
    """The finding's saving in % of the step (the step model's, else the trace's)."""
    model = facts.step_model
    saving = (
        model.saving(f.gpu_ms, f.host_ms, f.serial_ms)
        if model is not None
        else f.gpu_ms + f.host_ms + f.serial_ms
    )
    return 100 * saving / max(facts.step_ms, 1e-9)


def _allocator_churn(facts: Facts, peak_pct: float) -> Finding | None:
    th = CATALOG["memory-headroom"].thresholds
    calls = facts.allocator_calls
    if len(facts.steps):
        calls = calls[calls["step"].notna()]
    per_step = len(calls) / (facts.windows * facts.ranks)
    near = peak_pct >= th["near_capacity_pct"]
    if calls.empty or per_step < th["min_calls_per_step"]:
        return None
    if not near and peak_pct > th["max_peak_memory_pct"]:
        return None
    idle = facts.per_step_ms(float(idle_within(facts, calls.reset_index(drop=True)).sum()))
    model = facts.step_model
    # cudaFree synchronises: as a sync, it serializes host and GPU for the rest of the step,
    # not only while it runs (D82: the idle during the calls was half the measured saving on
    # allocator-densenet, -llama, -neox and -gpt2-r4); its share of the step's waiting.
    serial = model.serial_share("alloc") if model is not None else idle
    in_calls = facts.per_step_ms(float(calls["dur_ns"].sum()))
    # The calls' own host time is saved too, where it exceeds their share of the waiting (D86:
    # on a host-bound step the share is 0 but the calls still cost their time).
    host = max(in_calls - serial, 0.0) if model is not None else 0.0
    names = calls["name"].value_counts()
    return Finding(
        serial_ms=serial,
        host_ms=host,
        confidence="medium",
        evidence=(
            f"{per_step:.3g} allocator calls reach the driver per step ("
            + ", ".join(f"{n} × {c}" for n, c in names.items())
            + f"), {ms(in_calls)} of host time; "
            f"the GPU idles {ms(idle)} per step during them"
            + (
                f"; without the profiler they account for {ms(serial)} of the step's "
                f"{ms(model.serial_ms)} beyond its GPU and host time"
                if model is not None
                else ""
            ),
        ),
        why=(
            "PyTorch's caching allocator keeps freed blocks; cudaFree/cudaMalloc calls in the "
            "steady state mean the cache is emptied (torch.cuda.empty_cache, "
            "PYTORCH_NO_CUDA_MEMORY_CACHING), fragmented, or, near capacity, freed to retry "
            "an allocation. cudaFree synchronises the device, so host and GPU stop "
            "overlapping: that part of the saving is the step's serialization without the "
            "profiler (the step beyond its GPU and host time) in the allocator calls' share of "
            "the step's waiting, and at least the calls' own host time."
        ),
    )


def _recompute(facts: Facts, peak_pct: float) -> Finding | None:
    th = CATALOG["memory-headroom"].thresholds
    r = facts.host.recomputed
    # Numbered forward ops with no checkpoint around them (no node unpacking them, no entry in
    # the forward pass) are some custom backward's, not a recomputation: timm GhostNet's 16
    # a step, with 0 ns of checkpoint host time, on a model that does not checkpoint.
    if r.empty or not r["host_ns"].sum() > 0 or peak_pct > th["max_peak_memory_pct"]:
        return None
    steps = facts.windows * facts.ranks
    gpu_ms = facts.per_step_ms(float(r["gpu_ns"].sum()))
    host_ns, cpu_ops = float(r["host_ns"].sum()), float(r["cpu_ops"].sum())
    model = facts.step_model
    # The checkpointed forward's own ops also run slower under the saved-tensor hooks, which
    # the trace gives no reference for (D65): a share of the checkpoint's host time fitted on
    # the tune half's seven recompute pairs (D87, again with the host scale in D95).
    host_ms = (
        model.part_host_ms(host_ns, cpu_ops) * th["checkpoint_host_factor"]
        if model is not None
        else host_ns / 1e6
    ) / steps
    return Finding(
        gpu_ms=gpu_ms,
        host_ms=host_ms,
        confidence="medium",
        evidence=(
            f"activation checkpointing: {float(r['ops'].sum()) / steps:,.0f} forward ops run "
            f"again inside the backward pass per step, {ms(gpu_ms)} of GPU time; with the "
            f"checkpoints' own Python around them and the checkpointed forward's slower ops, "
            f"{ms(host_ms)} of host time (without the profiler)",
        ),
        why=(
            "Checkpointing trades memory for time: the backward pass runs the checkpointed "
            "layers' forward again. With most of the device memory free, keeping the "
            "activations saves that recomputation: the GPU time of the kernels it launches, "
            "and the host's time issuing them and running the checkpoints' Python (entering "
            "each checkpoint in the forward pass, restoring it in the backward pass), and the "
            "checkpointed forward's ops, slower under the saved-tensor hooks (counted as "
            f"{th['checkpoint_host_factor'] - 1:.1f} × the rest of that host time without the "
            "profiler, as measured on seven before/after pairs)."
        ),
    )


RULES: tuple[Rule, ...] = (small_batch, memory_headroom)
