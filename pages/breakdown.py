"""Breakdown: where the GPU time goes, per rank and per step (analysis/breakdown.py)."""

import pandas as pd
import streamlit as st

from analysis import breakdown as bd
from analysis.figures.breakdown import breakdown_bars, rank_share_bars
from analysis.host_regions import REGION_NOTE
from analysis.ranks import spread
from pages._chart import show_chart
from pages._ui import fmt_ms, fmt_pct, human_name, rank_picker, require_run, run_facts

s, run_id = require_run()
st.title("Breakdown: where the time goes")
facts = run_facts(run_id)
events = facts.events
if events.empty:
    st.info("This run has no GPU activity (a CPU-only trace): there is no GPU time to break down.")
    st.stop()
per_step = facts.per_step
shares = facts.rank_shares
overall = shares[shares["rank"].isna()].iloc[0]
st.caption(
    "Exclusive shares of each step's GPU window, in priority order compute > comm > memcpy > "
    "memset; idle is the time no stream runs anything. A step's GPU work is what its ops "
    "launched."
)

c = st.columns(6)
c[0].metric("Compute", fmt_pct(overall["compute_pct"]))
c[1].metric(
    "Comm (exposed)",
    fmt_pct(overall["comm_pct"]),
    help="NCCL kernels running while no compute runs",
)
c[2].metric("Memcpy", fmt_pct(overall["memcpy_pct"]))
c[3].metric("Memset", fmt_pct(overall["memset_pct"]))
c[4].metric("Idle", fmt_pct(overall["idle_pct"]))
c[5].metric(
    "Host wait",
    fmt_pct(overall["host_wait_pct"]),
    help="Idle while nothing was queued: the GPU waited for the CPU",
)

ranked = shares[shares["rank"].notna()].set_index("rank")
busy = spread(ranked["gpu_busy_pct"])
picked = rank_picker([int(r) for r in ranked.index], f"bd_rank_{run_id}", busy["outliers"])
shown = per_step if picked is None else per_step[per_step["rank"] == picked]

st.subheader("Per step" if picked is None else f"Per step, rank {picked}")
show_chart(breakdown_bars(shown))

regions = facts.region_table
if len(regions):
    st.subheader("GPU idle by host region")
    st.caption(REGION_NOTE)
    st.dataframe(
        pd.DataFrame(
            {
                "host region": regions["label"],
                "idle on the trace (ms per step)": regions["idle_ms"],
                "idle without the profiler (ms per step)": regions["unprofiled_ms"],
                "share of idle": regions["share_pct"],
                "claimed by": regions["claimed_by"].replace("", "—"),
            }
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "idle on the trace (ms per step)": st.column_config.NumberColumn(format="%.3f"),
            "idle without the profiler (ms per step)": st.column_config.NumberColumn(format="%.3f"),
            "share of idle": st.column_config.ProgressColumn(
                format="%.1f %%", min_value=0, max_value=100
            ),
        },
    )

if not pd.isna(overall["comm_overlap_pct"]):
    st.markdown(
        f"**Communication**: {fmt_ms(per_step['comm_total_ns'].sum() / 1e6)} of NCCL kernels, "
        f"{fmt_pct(overall['comm_overlap_pct'])} of it overlapped with compute."
    )

ranks = shares[shares["rank"].notna()]
if len(ranks) > 1:
    st.subheader("Across ranks")
    by_metric, straggler = bd.rank_spread(shares, per_step)
    if picked is None:
        show_chart(rank_share_bars(shares))
    else:
        st.markdown(
            f"GPU busy across the {len(ranked)} ranks: min {fmt_pct(busy['min'])}, median "
            f"{fmt_pct(busy['median'])}, max {fmt_pct(busy['max'])}; furthest from the "
            f"median: {', '.join(f'rank {r}' for r in busy['outliers']) or '—'}."
        )
    st.markdown(
        f"**Straggler: rank {straggler}**: the most time outside exposed communication "
        "(the rank the others wait for)."
    )
    st.dataframe(by_metric.rename(columns=human_name), hide_index=True, width="stretch")

st.subheader("Launches")
launch = facts.launch_stats
if picked is not None:
    launch = launch[launch["rank"] == picked]
st.dataframe(
    pd.DataFrame(
        {
            "rank": launch["rank"],
            "step": launch["step"],
            "kernels": launch["kernel_count"],
            "< 10 µs": launch["short_kernel_count"],
            "launch→start p50 (µs)": launch["launch_delay_p50_ns"] / 1e3,
            "p90 (µs)": launch["launch_delay_p90_ns"] / 1e3,
            "max (µs)": launch["launch_delay_max_ns"] / 1e3,
        }
    ),
    hide_index=True,
    width="stretch",
    column_config={
        c: st.column_config.NumberColumn(format="%.1f")
        for c in ("launch→start p50 (µs)", "p90 (µs)", "max (µs)")
    },
)

with st.expander("Per step, in ms"):
    ms = shown.drop(columns=["start_ns", "end_ns"])
    st.dataframe(
        ms.assign(**{c: ms[c] / 1e6 for c in ms.columns if c.endswith("_ns")}).rename(
            columns=lambda c: human_name(c.removesuffix("_ns") + "_ms" if c.endswith("_ns") else c)
        ),
        hide_index=True,
        width="stretch",
    )
