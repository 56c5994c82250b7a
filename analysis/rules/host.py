"""Rules about the host feeding the GPU: syncs, pageable copies, data loading, launch-bound
steps. Each measures GPU idle time that the host caused, from the trace's own timestamps
(CPU and GPU events share one clock in Kineto traces)."""

from __future__ import annotations

import numpy as np

from analysis.facts import Facts
from analysis.intervals import covered_before
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import host_wait_gaps, idle_within, per_rank
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
    saving = facts.per_step_ms(float(bubble.sum()))
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
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
    return Finding(
        saving_ms=saving,
        confidence="medium",
        evidence=tuple(evidence),
        why=(
            "After a synchronisation that waited for the GPU, the GPU queue is empty and the "
            "GPU idles until the host launches the next kernel. The saving is the measured "
            "idle gap from the end of each such sync to the next GPU activity."
        ),
        ops=tuple(str(o) for o in by_op["op"].head(4)),
    )


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
    else:
        bw = th["pinned_gb_per_s"] * 1e9
        source = f"{th['pinned_gb_per_s']:g} GB/s, a conservative pinned rate on PCIe Gen4/5 x16"
    p = m[pageable]
    dur = p["dur_ns"].to_numpy(float)
    ideal = p["bytes"].to_numpy(float) / bw * 1e9
    saving = facts.per_step_ms(float(np.maximum(dur - ideal, 0).sum()))
    rate = float(p["bytes"].sum()) / float(p["dur_ns"].sum()) if p["dur_ns"].sum() else 0.0
    return Finding(
        saving_ms=saving,
        confidence="high" if saving > 0.01 * facts.step_ms else "medium",
        evidence=(
            f"{per_step:.3g} copies per step from/to pageable host memory, "
            f"{p['bytes'].sum() / len(p) / 1e3:,.0f} kB each on average, at {rate:.1f} GB/s",
            f"pinned-copy speed used for the estimate: {source}",
            "a pageable copy is staged through a driver buffer and blocks the host "
            "until it is done (no overlap with compute)",
        ),
        why=(
            "The saving counts only the copy time above pinned-memory speed; the host "
            "synchronisation a blocking copy adds is counted by host-sync."
        ),
        ops=("aten::copy_", "aten::to"),
    )


@rule("gpu-starvation")
def gpu_starvation(facts: Facts) -> Finding | None:
    th = CATALOG["gpu-starvation"].thresholds
    r = facts.ranges
    loads = r[(r["kind"] == "cpu") & r["name"].str.contains("DataLoader", regex=False)]
    if loads.empty or facts.events.empty:
        return None
    idle = idle_within(facts, loads.reset_index(drop=True))
    saving = facts.per_step_ms(float(idle.sum()))
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    per_load = float(loads["dur_ns"].mean()) / 1e6
    return Finding(
        saving_ms=saving,
        confidence="high",
        evidence=(
            f"{loads['name'].iloc[0]}: {len(loads)} calls, {ms(per_load)} each on average",
            f"the GPU is idle for {ms(saving)} per step while the next batch is prepared "
            f"({100 * saving / facts.step_ms:.0f} % of the step)",
        ),
        why=(
            "Data loading on the training process's own thread runs between steps; the GPU "
            "has nothing queued meanwhile. Workers that prepare batches ahead of time hide it: "
            "the saving is the GPU idle time measured inside the data-loading ranges."
        ),
        ops=(str(loads["name"].iloc[0]),),
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
    # Launch overhead leaves short gaps between kernels; long ones are host work (data
    # loading, Python between iterations) that a graph replay does not remove.
    gaps = host_wait_gaps(facts)
    short = gaps[gaps["gap_ns"] <= th["max_gap_us"] * 1e3]
    saving = facts.per_step_ms(float(short["gap_ns"].sum()))
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    launches = facts.launches
    calls = float(launches["calls"].sum()) / steps
    cpu_us = float(launches["cpu_ns"].sum()) / max(float(launches["calls"].sum()), 1.0) / 1e3
    busy = facts.shares.get("gpu_busy_pct", 0.0)
    return Finding(
        saving_ms=saving,
        confidence="high" if host_wait >= 50 else "medium",
        evidence=(
            f"GPU busy {busy:.0f} % of the step; idle waiting for the host {host_wait:.0f} %",
            f"{len(short) / steps:,.0f} gaps per step shorter than {th['max_gap_us']:g} µs "
            f"between kernels, {ms(saving)} per step (median "
            f"{float(short['gap_ns'].median()) / 1e3:.0f} µs)",
            f"{calls:,.0f} launch calls per step, {cpu_us:.1f} µs of host time each; median "
            f"kernel {median_us:.1f} µs; {graphed:,} of {total:,} kernels from CUDA graphs",
        ),
        why=(
            "Kernels finish faster than the host can launch them, so the GPU waits between "
            "them with nothing queued. A CUDA graph replays the whole sequence with one "
            f"launch; the saving is the measured host-wait gaps shorter than "
            f"{th['max_gap_us']:g} µs (longer ones are host work a graph does not remove)."
        ),
    )


RULES: tuple[Rule, ...] = (host_sync, pageable_memcpy, gpu_starvation, cuda_graphs)
