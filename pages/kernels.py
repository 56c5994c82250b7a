"""Kernels: per kernel name, calls, total/mean/min/max time, tensor cores, launch
configuration, occupancy and the achieved rates; tensor-core use per kernel class
(analysis/kernels.py)."""

import streamlit as st

from analysis.figures.kernels import tensor_core_bars
from analysis.kernels import kernel_table, tensor_core_share_pct, tensor_core_use
from analysis.load import load_launch_configs
from pages._chart import show_chart
from pages._ui import fmt_ms, fmt_pct, require_run, run_facts

NUM = st.column_config.NumberColumn
COLUMNS = {
    "name": st.column_config.TextColumn("kernel", width="large"),
    "kernel_class": st.column_config.TextColumn("class"),
    "tensor_core": st.column_config.CheckboxColumn("tensor cores"),
    "calls": NUM("calls", format="%d"),
    "total_ms": NUM("total (ms)", format="%.3f"),
    "share_pct": st.column_config.ProgressColumn(
        "share of kernel time", format="%.1f %%", min_value=0, max_value=100
    ),
    "mean_us": NUM("mean (µs)", format="%.1f"),
    "min_us": NUM("min (µs)", format="%.1f"),
    "max_us": NUM("max (µs)", format="%.1f"),
    "grid": st.column_config.TextColumn("grid", help="The most frequent grid"),
    "block": st.column_config.TextColumn("block", help="The most frequent block"),
    "configs": NUM("launch configs", format="%d", help="Distinct grid and block pairs"),
    "registers_per_thread": NUM("registers per thread", format="%d"),
    "shared_mem_bytes": NUM("shared memory (B)", format="%d", help="Per block, the largest"),
    "occupancy_pct": NUM("occupancy (%)", format="%.1f", help="Kineto's estimate, time-weighted"),
    "tflops": NUM("achieved TFLOP/s", format="%.2f", help="Modelled FLOPs over the time"),
    "gbps": NUM("achieved GB/s", format="%.0f", help="Modelled bytes over the time"),
    "modelled_pct": NUM("time modelled (%)", format="%.0f"),
    "kernels": NUM("kernels", format="%d"),
    "time_ms": NUM("time (ms)", format="%.3f"),
    "tensor_core_ms": NUM("on tensor cores (ms)", format="%.3f"),
    "tensor_core_pct": st.column_config.ProgressColumn(
        "share on tensor cores", format="%.1f %%", min_value=0, max_value=100
    ),
}

s, run_id = require_run()
st.title("Kernels")
facts = run_facts(run_id)
work = facts.all_work
# Per run, kept in the shared facts: recomputed on every render they cost 4 s at 512 ranks.
kernels = facts.memo(
    "page_kernel_table", lambda: kernel_table(work, load_launch_configs(s, run_id))
)
if kernels.empty:
    st.info("This run has no GPU kernels (a CPU-only trace).")
    st.stop()
classes = facts.memo("page_tensor_core_use", lambda: tensor_core_use(work))
c = st.columns(4)
c[0].metric("Kernel names", f"{len(kernels):,}")
c[1].metric("Kernel launches", f"{int(kernels['calls'].sum()):,}")
c[2].metric("Kernel time", fmt_ms(float(kernels["total_ms"].sum())))
c[3].metric(
    "On tensor cores",
    fmt_pct(facts.memo("page_tensor_core_pct", lambda: tensor_core_share_pct(work))),
    help="Share of kernel time in tensor-core kernels (GEMM, convolution, attention), "
    "read from the kernel names",
)

st.subheader("Tensor-core use by kernel class")
show_chart(tensor_core_bars(classes))
st.dataframe(
    classes.sort_values("time_ms", ascending=False),  # the chart's order, longest on top
    hide_index=True,
    width="stretch",
    column_config=COLUMNS,
)

st.subheader("Per kernel")
needle = st.text_input("Filter by kernel name", placeholder="e.g. gemm")
shown = kernels
if needle:
    shown = kernels[kernels["name"].str.contains(needle, case=False, regex=False)]
st.caption(
    f"{len(shown):,} of {len(kernels):,} kernel names, most time first. Rates are modelled "
    "work (from the launching op's shapes) over the kernel's time, where its op has a model."
)
st.dataframe(shown, hide_index=True, width="stretch", column_config=COLUMNS)
