"""HBM bandwidth: estimated from kernel bytes and time, beside NVML GPM DRAM_BW_UTIL samples
of the same window when the run has telemetry (analysis/bandwidth.py)."""

import streamlit as st

from analysis import bandwidth as bw
from analysis.figures.bandwidth import bandwidth_figure
from pages._chart import show_chart
from pages._ui import fmt_pct, md, require_run, run_facts

s, run_id = require_run()
run = s.run_summary(run_id)
st.title("HBM bandwidth")
facts = run_facts(run_id)
spec, work = facts.spec, facts.all_work
if work.empty:
    st.info("This run has no GPU activity (a CPU-only trace): there is no bandwidth to show.")
    st.stop()
peak = spec.hbm_bytes_per_s if spec else None
st.caption(
    "Estimated from the bytes each kernel's op must move (shapes × dtypes) over its time: "
    "compulsory traffic, plus one operand re-read per wave for cuBLAS's tiled GEMMs. L2 hits "
    "make the real traffic lower, other re-reads (persistent GEMM kernels) higher. "
    + (
        f"% of the {spec.name} datasheet's {spec.hbm_gb_per_s:,.0f} GB/s."
        if spec
        else f"{md(run['device_name'] or 'The device')} is not in the spec table: GB/s only."
    )
)

buckets = st.slider("Time buckets", 50, 2000, 400, 50)
# Per run and bucket count, kept in the shared facts: recomputed on every render they cost
# 4 s at 512 ranks.
series, gpm = facts.memo(
    f"page_bandwidth_{buckets}",
    lambda: bw.bandwidth_frames(
        work, facts.samples_around_run, facts.data.time_bases, peak, buckets
    ),
)
show_chart(bandwidth_figure(series, gpm))
if gpm.empty:
    st.caption("No telemetry for this run: NVML GPM DRAM_BW_UTIL samples appear here when "
               "`python -m collectors.nvml` ran on the host during the trace.")  # fmt: skip

busy = series["bytes"] > 0
c = st.columns(3)
c[0].metric("Mean while busy", fmt_pct(series.loc[busy, "util_pct"].mean() if peak else None))
c[1].metric("Peak bucket", fmt_pct(series["util_pct"].max() if peak else None))
c[2].metric("Bytes moved", f"{series['bytes'].sum() / 1e9:,.1f} GB")

st.subheader("Kernels that move the most bytes")
movers = facts.memo("page_kernel_bandwidth", lambda: bw.kernel_bandwidth(work, peak))
st.dataframe(
    movers.assign(bytes=movers["bytes"] / 1e9),
    hide_index=True,
    width="stretch",
    column_config={
        "name": st.column_config.TextColumn("kernel", width="large"),
        "kernel_class": st.column_config.TextColumn("class"),
        "count": st.column_config.NumberColumn("kernels", format="%d"),
        "time_ms": st.column_config.NumberColumn("time (ms)", format="%.3f"),
        "bytes": st.column_config.NumberColumn("GB moved", format="%.2f"),
        "gbps": st.column_config.NumberColumn("GB/s", format="%.0f"),
        "util_pct": st.column_config.ProgressColumn(
            "% of HBM peak", format="%.0f %%", min_value=0, max_value=100
        ),
    },
)
