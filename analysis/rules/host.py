"""Rules about the host feeding the GPU: syncs, pageable copies, data loading, launch-bound
steps. Each measures GPU idle time that the host caused, from the trace's own timestamps
(CPU and GPU events share one clock in Kineto traces)."""

from __future__ import annotations

import numpy as np

from analysis.facts import Facts
from analysis.intervals import covered_before
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import host_wait_gaps, per_rank
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms


@rule("host-sync")
def host_sync(facts: Facts) -> Finding | None:
    th = CATALOG["host-sync"].thresholds
    syncs = facts.syncs[facts.syncs["step"].notna()] if len(facts.steps) else facts.syncs
    # An event sync outside any op is the framework waiting for its own work (DDP's reducer
    # for the gradient all-reduce), not a sync the user's loop added.
    syncs = syncs[~((syncs["name"] == "cudaEventSynchronize") & syncs["op"].isna())]
    if syncs.empty or len(syncs) / (facts.windows * facts.ranks) < th["min_syncs_per_step"]:
        return None
    # A sync that waited (the GPU was busy when it began) drains the queue: the GPU then
    # idles until the host launches again. A sync that found the GPU idle cost nothing.
    bubble = np.zeros(len(syncs), dtype=np.int64)
    for rank, idx, s, e, t0, t1 in per_rank(facts, syncs):
        if not len(s):  # no GPU work on this rank: its syncs waited on none
            continue
        busy_at_start = covered_before(s, e, t0 + 1) - covered_before(s, e, t0) > 0
        nxt = np.searchsorted(s, t1, side="left")
        next_start = np.where(nxt < len(s), s[np.minimum(nxt, len(s) - 1)], t1)
        # A bubble ends, at the latest, with the step window the sync is in.
        win = facts.per_step[facts.per_step["rank"] == rank].sort_values("start_ns")
        w = np.searchsorted(win["start_ns"].to_numpy(np.int64), t1, side="right") - 1
        w_end = win["end_ns"].to_numpy(np.int64)[np.clip(w, 0, max(len(win) - 1, 0))]
        next_start = np.minimum(next_start, np.where(w >= 0, w_end, t1)) if len(win) else t1
        gap = np.where(busy_at_start, np.maximum(next_start - t1, 0), 0)
        # Several syncs before one gap share it: count the gap once.
        _, keep = np.unique(next_start[::-1], return_index=True)
        once = np.zeros(len(gap), dtype=bool)
        once[len(gap) - 1 - keep] = True
        bubble[idx] = np.where(once, gap, 0)
    bubble_ms = facts.per_step_ms(float(bubble.sum()))
    model = facts.step_model
    # A value read back (`.item()`: a blocking copy of a few bytes) is a sync too.
    serial = model.serial_share("sync", "scalar_wait") if model is not None else bubble_ms
    host_bound = False
    if model is not None and model.host_ms >= model.gpu_ms:
        host_bound = True
        # When the host's own work outlasts the GPU's, the GPU keeps up with the launches: a
        # sync finds it nearly done and costs its wait, and the rest of the step beyond the
        # host's time is the host model's error, not the sync's (D81: host-sync-llama saved
        # -0.01 ms against 3.77 of serialization).
        own_wait = sum(model.waits_ms.get(w, 0.0) for w in ("sync", "scalar_wait"))
        serial = min(serial, own_wait)
    if 100 * serial / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    by_op = (
        syncs.assign(bubble_ns=bubble, op=syncs["op"].fillna("(no op)"))
        .groupby(["op", "name"], as_index=False)
        .agg(n=("bubble_ns", "size"), bubble_ns=("bubble_ns", "sum"))
        .sort_values("bubble_ns", ascending=False)
    )
    per_step = len(syncs) / (facts.windows * facts.ranks)
    evidence = [f"{per_step:.3g} host synchronisations per step"] + [
        f"{name} in {op}: {n} calls, GPU idle {ms(facts.per_step_ms(float(b)))} per step after them"
        for op, name, n, b in by_op.head(4).itertuples(index=False)
    ]
    if model is not None:
        evidence.append(
            f"without the profiler the step takes {ms(model.unprofiled_ms)}: "
            f"{ms(model.serial_ms)} more than the GPU's {ms(model.gpu_ms)} and the host's "
            f"{ms(model.host_ms)} of own work; the syncs account for {ms(serial)} of it"
            + (" (the host bounds the step: the syncs' own waiting)" if host_bound else "")
        )
    return Finding(
        serial_ms=serial,
        confidence="medium",
        evidence=tuple(evidence),
        why=(
            "A synchronisation that waits for the GPU drains its queue: the host cannot run "
            "ahead, so each step's launches and the GPU's work follow each other instead of "
            "overlapping. The saving is the step's serialization without the profiler (the "
            "step beyond its GPU and host time, analysis/step_model.py), the syncs' share of "
            "the waiting; when the host's own work outlasts the GPU's, the GPU keeps up and a "
            "sync costs only its own wait."
        ),
        ops=tuple(str(o) for o in by_op["op"].head(4)),
    )


# Pinned host-to-device copies reach this share of the host link: 55 of 64 GB/s on the H200's
# PCIe Gen5 x16 (pageable-resnet-after, 77 MB per copy).
_PINNED_LINK_SHARE = 0.85


@rule("pageable-memcpy")
def pageable_memcpy(facts: Facts) -> Finding | None:
    th = CATALOG["pageable-memcpy"].thresholds
    m = facts.memcpys
    if m.empty:
        return None
    if len(facts.steps):
        m = m[m["step"].notna()]
    host = m["memcpy_kind"].isin(["HtoD", "DtoH"])
    # Copies of a few bytes (a scalar, a generation flag) cost their latency either way.
    pageable = (
        host
        & ((m["src_memory"] == "Pageable") | (m["dst_memory"] == "Pageable"))
        & (m["bytes"] >= th["min_kb_per_copy"] * 1e3)
    )
    per_step = int(pageable.sum()) / (facts.windows * facts.ranks)
    if per_step < th["min_copies_per_step"]:
        return None
    pinned = m[host & ~pageable & (m["bytes"] >= 1 << 20)]
    if len(pinned):
        bw = float(pinned["bytes"].sum()) / float(pinned["dur_ns"].sum()) * 1e9
        source = f"pinned copies in this run: {bw / 1e9:.1f} GB/s"
    elif facts.spec is not None:
        link = facts.spec.host_link
        bw = link.bytes_per_s * _PINNED_LINK_SHARE
        source = f"{_PINNED_LINK_SHARE:.0%} of the {link.name} link, {bw / 1e9:.0f} GB/s"
    else:
        bw = th["pinned_gb_per_s"] * 1e9
        source = f"{th['pinned_gb_per_s']:g} GB/s, a conservative pinned rate on PCIe Gen4/5 x16"
    p = m[pageable]
    dur = p["dur_ns"].to_numpy(float)
    ideal = p["bytes"].to_numpy(float) / bw * 1e9
    saving = facts.per_step_ms(float(np.maximum(dur - ideal, 0).sum()))
    rate = float(p["bytes"].sum()) / float(p["dur_ns"].sum()) if p["dur_ns"].sum() else 0.0
    model = facts.step_model
    return Finding(
        gpu_ms=saving,
        serial_ms=model.serial_share("copy_wait") if model is not None else 0.0,
        confidence="high" if saving > 0.01 * facts.step_ms else "medium",
        evidence=(
            f"{per_step:.3g} copies per step from/to pageable host memory, "
            f"{p['bytes'].sum() / len(p) / 1e3:,.0f} kB each on average, at {rate:.1f} GB/s",
            f"pinned-copy speed used for the estimate: {source}",
            "a pageable copy is staged through a driver buffer and blocks the host "
            "until it is done (no overlap with compute)",
        ),
        why=(
            "A pinned, non_blocking copy runs at pinned-memory speed and lets the host go on "
            "launching. The saving removes the copy time above pinned speed and the waiting "
            "the blocking copies add to the step (their share of its serialization)."
        ),
        ops=("aten::copy_", "aten::to"),
    )


@rule("gpu-starvation")
def gpu_starvation(facts: Facts) -> Finding | None:
    th = CATALOG["gpu-starvation"].thresholds
    if facts.events.empty or facts.steps.empty:
        return None
    loading = facts.region_idle_ms("data_loading")
    code = facts.region_idle_ms("host_code")
    idle = loading + code
    if 100 * idle / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    r = facts.ranges
    loads = r[(r["kind"] == "cpu") & r["name"].str.contains("DataLoader", regex=False)]
    evidence = [
        f"the GPU idles {ms(idle)} per step while the host prepares input "
        f"({100 * idle / facts.step_ms:.0f} % of the step without the profiler)"
    ]
    if loading > 0 and len(loads):
        per_load = float(loads["dur_ns"].mean()) / 1e6
        evidence.append(
            f"{loads['name'].iloc[0]}: {len(loads)} calls, {ms(per_load)} each on average, "
            f"{ms(loading)} of GPU idle per step"
        )
    if code > 0:
        evidence.append(
            f"host code outside the model (before its first op, after its backward): "
            f"{ms(code)} of GPU idle per step: input preparation in the training loop "
            "(tokenising, augmenting, Python between steps)"
        )
    return Finding(
        host_ms=idle,
        confidence="high" if loading >= code else "medium",
        evidence=tuple(evidence),
        why=(
            "Data loading and input preparation on the training process's own thread run "
            "between steps; the GPU has nothing queued meanwhile. Workers that prepare "
            "batches ahead of time (a DataLoader with num_workers, or the preprocessing moved "
            "into the dataset) take that host time off the step: the saving removes the GPU "
            "idle measured in those host regions, without the profiler."
        ),
        ops=(str(loads["name"].iloc[0]),) if len(loads) else (),
    )


@rule("cuda-graphs")
def cuda_graphs(facts: Facts) -> Finding | None:
    th = CATALOG["cuda-graphs"].thresholds
    k = facts.kernels
    host_wait = facts.shares.get("host_wait_pct", 0.0)
    steps = facts.windows * facts.ranks
    if len(k) < th["min_kernels_per_step"] * steps or host_wait < th["min_host_wait_pct"]:
        return None
    median_us = float(k["dur_ns"].median()) / 1e3
    graphed, total = facts.graph_launched
    if median_us > th["max_median_kernel_us"] or graphed > th["max_graph_launch_share"] * total:
        return None
    # Gaps in the model's forward and backward passes are launch overhead; the host regions
    # other rules claim (data loading, syncs, the optimizer, the allocator) stay theirs.
    # Gaps longer than max_gap_us are host work a graph replay keeps, not launch overhead.
    gaps = host_wait_gaps(facts)
    short = gaps[gaps["gap_ns"] <= th["max_gap_us"] * 1e3]
    short_ns, all_ns = float(short["gap_ns"].sum()), float(gaps["gap_ns"].sum())
    model = facts.step_model
    if model is not None:
        region = facts.region_idle_ms("forward", "backward")
        saving = region * (short_ns / all_ns if all_ns else 0.0)
        gap_text = (
            f"GPU idle in the forward and backward passes: {ms(region)} per step, of it "
            f"{ms(saving)} in gaps shorter than {th['max_gap_us']:g} µs"
        )
    else:
        saving = facts.per_step_ms(short_ns)
        gap_text = (
            f"{len(short) / steps:,.0f} gaps per step shorter than {th['max_gap_us']:g} µs "
            f"between kernels, {ms(saving)} per step"
        )
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    launches = facts.launches
    calls = float(launches["calls"].sum()) / steps
    cpu_us = float(launches["cpu_ns"].sum()) / max(float(launches["calls"].sum()), 1.0) / 1e3
    busy = facts.step_busy_pct
    unprofiled = " without the profiler" if model is not None else ""
    return Finding(
        host_ms=saving,
        confidence="high" if host_wait >= 50 else "medium",
        evidence=(
            f"GPU busy {busy:.0f} % of the {ms(facts.step_ms)} step{unprofiled}; on the "
            f"profiled timeline idle waiting for the host {host_wait:.0f} % of it",
            gap_text + (" (without the profiler)" if model is not None else ""),
            f"{calls:,.0f} launch calls per step, {cpu_us:.1f} µs each inside the CUDA runtime "
            f"(profiled); median kernel {median_us:.1f} µs; {graphed:,} of {total:,} kernels "
            "from CUDA graphs",
        ),
        why=(
            "Kernels finish faster than the host can launch them, so the GPU waits between "
            "them with nothing queued. A CUDA graph replays the whole sequence with one "
            "launch: the saving removes the GPU idle of the forward and backward passes "
            "without the profiler (the optimizer, data loading and syncs are other rules'), "
            "in the share of gaps short enough to be launch overhead, never below the GPU's "
            "own time."
        ),
    )


RULES: tuple[Rule, ...] = (host_sync, pageable_memcpy, gpu_starvation, cuda_graphs)
