"""Memory: allocated and reserved device memory over time from the allocator's events
(profile_memory=True), the peak and what holds it, the allocator's calls, the headroom
against the device's memory (analysis/memory.py)."""

import pandas as pd
import streamlit as st

from analysis.figures.memory import memory_figure
from analysis.load import load_memory, load_memory_peak
from analysis.memory import (
    allocator_call_table,
    device_labels,
    memory_summary,
    unexplained_bytes,
)
from analysis.text import fmt_bytes
from pages._chart import show_chart
from pages._ui import fmt_ms, fmt_pct, require_run, run_facts

MAX_POINTS = 1_000  # per device and curve
NUM = st.column_config.NumberColumn
GIB = 2**30

s, run_id = require_run()
st.title("Memory")
memory = load_memory(s, run_id, MAX_POINTS)
if memory.devices.empty:
    st.info(
        "This trace has no allocator events: record it with "
        "`torch.profiler.profile(profile_memory=True)`."
    )
    st.stop()
summary = memory_summary(memory.devices)
labels = device_labels(memory.devices)
gpus = [i for i, t in enumerate(memory.devices["device_type"]) if t == 1]
pick = st.selectbox("Device", gpus or list(range(len(labels))), format_func=labels.__getitem__)
dev, row = memory.devices.iloc[pick], summary.iloc[pick]

c = st.columns(4)
c[0].metric("Peak allocated", fmt_bytes(row["peak_allocated_bytes"]), help="Held by tensors")
c[1].metric(
    "Peak reserved",
    fmt_bytes(row["peak_reserved_bytes"]),
    help="Taken from the driver by the caching allocator: allocated plus its cache",
)
known = bool(pd.notna(row["total_memory_bytes"]))
c[2].metric(
    "Headroom",
    fmt_bytes(row["headroom_bytes"]) if known else "—",
    help="The device's memory minus the reserved peak"
    + ("" if known else " (the trace has no deviceProperties)"),
)
c[3].metric(
    "Reserved of the device",
    fmt_pct(float(row["reserved_pct"])) if known else "—",
    help=f"of {fmt_bytes(row['total_memory_bytes'])}" if known else None,
)

st.subheader("Over time")
show_chart(memory_figure(memory))
st.caption(
    f"The largest value in each {fmt_ms(memory.bucket_ns / 1e6)} bucket, so no peak is "
    "averaged away; solid allocated, dashed reserved."
)

st.subheader("At the peak")
peak = load_memory_peak(
    s, run_id, int(dev["rank"]), int(dev["device_type"]), int(dev["device_id"]),
    int(dev["peak_ts_ns"]),
)  # fmt: skip
st.markdown(
    f"{fmt_bytes(row['peak_allocated_bytes'])} allocated at "
    f"{row['peak_ms']:,.3f} ms from the first allocator event."
)
if peak.stack.empty:
    st.caption("No op was running at that moment.")
else:
    st.caption("Running at that moment, outermost first (per thread):")
    st.text("\n".join(f"{'  ' * i}{n}" for i, n in enumerate(peak.stack["name"].astype(str))))
before = unexplained_bytes(peak, int(row["peak_allocated_bytes"]))
st.caption(
    f"The live allocations by the op that made them; {fmt_bytes(before)} of the peak was "
    "allocated before the profiler started (no event records it)."
)
alive = peak.alive.assign(
    gib=peak.alive["bytes"] / GIB, largest_mib=peak.alive["largest_bytes"] / 2**20
)
st.dataframe(
    alive[["op", "allocations", "gib", "largest_mib"]],
    hide_index=True,
    width="stretch",
    column_config={
        "op": st.column_config.TextColumn("allocated by op", width="large"),
        "allocations": NUM("live allocations", format="%d"),
        "gib": NUM("live (GiB)", format="%.3f"),
        "largest_mib": NUM("largest (MiB)", format="%.1f"),
    },
)

st.subheader("Allocator calls")
facts = run_facts(run_id)
calls = allocator_call_table(facts.allocator_calls, facts.windows if len(facts.steps) else 0)
served = (
    f"The caching allocator served {int(dev['allocations']):,} allocations and "
    f"{int(dev['frees']):,} frees on {labels[pick]}"
)
if calls.empty:
    st.caption(f"{served}; none reached the driver: the cache held every allocation.")
else:
    st.caption(f"{served}; these reached the driver (each cudaFree synchronises the device):")
    st.dataframe(
        calls,
        hide_index=True,
        column_config={
            "name": st.column_config.TextColumn("call"),
            "calls": NUM("calls", format="%d"),
            "per_step": NUM("per step", format="%.1f"),
            "total_ms": NUM("total (ms)", format="%.3f"),
            "max_ms": NUM("longest (ms)", format="%.3f"),
        },
    )
with st.expander("Every device"):
    st.dataframe(
        summary.assign(
            peak_allocated_gib=summary["peak_allocated_bytes"] / GIB,
            peak_reserved_gib=summary["peak_reserved_bytes"] / GIB,
            memory_gib=summary["total_memory_bytes"] / GIB,
            headroom_gib=summary["headroom_bytes"] / GIB,
        )[["device", "peak_allocated_gib", "peak_reserved_gib", "memory_gib", "headroom_gib",
           "reserved_pct", "allocations", "frees"]],
        hide_index=True,
        column_config={
            "peak_allocated_gib": NUM("peak allocated (GiB)", format="%.3f"),
            "peak_reserved_gib": NUM("peak reserved (GiB)", format="%.3f"),
            "memory_gib": NUM("memory (GiB)", format="%.1f"),
            "headroom_gib": NUM("headroom (GiB)", format="%.1f"),
            "reserved_pct": NUM("reserved of memory (%)", format="%.1f"),
            "allocations": NUM("allocations", format="%d"),
            "frees": NUM("frees", format="%d"),
        },
    )  # fmt: skip
