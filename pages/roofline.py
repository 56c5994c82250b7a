"""Roofline: how close each op class, op or kernel comes to the GPU's roofs (analysis/roofline.py).

Points are modelled FLOPs and bytes (from recorded shapes) over kernel time, sized by time;
roofs per precision from the datasheet (solid) and, once `python -m collectors.calibrate`
ran for this GPU, measured (dashed).
"""

import pandas as pd
import streamlit as st

from analysis import roofline as rf
from analysis.figures.roofline import roofline_figure
from analysis.specs import PRECISIONS, match_spec, spec_names
from pages._chart import show_chart
from pages._ui import fmt_pct, md, require_run, run_facts

GROUPS = {"op class": "op_class", "op": "op_name", "kernel class": "kernel_class", "kernel": "name"}

s, run_id = require_run()
run = s.run_summary(run_id)
st.title("Roofline")
choice = st.sidebar.selectbox(
    "Device spec",
    ["(match the trace's device)", *spec_names()],
    help="Override when the trace's device name is missing or wrong (e.g. a power-capped card)",
)
matched = match_spec(run["device_name"])
facts = run_facts(run_id, None if choice.startswith("(") else choice)
if facts.all_work.empty:
    st.info("This run has no GPU activity (a CPU-only trace): there is no roofline to draw.")
    st.stop()
spec, measured, work = facts.spec, facts.measured, facts.all_work

device = md(run["device_name"] or "no device name in the trace")
if spec is None:
    st.warning(f"**{device}**: not in the spec table; pick a spec in the sidebar for roofs.")
else:
    st.caption(
        f"**{device}** → spec **{spec.name}**{' (matched)' if spec is matched else ' (chosen)'}"
        f" · {spec.hbm_gb_per_s:,.0f} GB/s · source: {spec.source}"
        + (
            f" · measured ceilings: {measured.bandwidth_bytes_per_s / 1e9:,.0f} GB/s copy"
            if measured
            else " · no measured ceilings (run `python -m collectors.calibrate`)"
        )
    )

tags = run["tags"] or {}
tokens = rf.tokens_per_step(tags)
if tokens is None and rf.TOKENS_TAG in tags:
    st.warning(
        f"Tag {rf.TOKENS_TAG}={md(tags[rf.TOKENS_TAG])} is not a positive number of tokens: "
        "no tokens/s."
    )
# Per run and choice, kept in the shared facts: recomputed on every render they cost
# seconds at 512 ranks (1.4 M GPU events).
m = facts.memo(
    f"page_compute_metrics_{tokens}",
    lambda: rf.run_compute_metrics(work, facts.steps, spec, tokens_per_step=tokens),
)
c = st.columns(5)
achieved = m["achieved_tflops"]
c[0].metric(
    "Achieved TFLOP/s",  # the unit in the label: a 5-column value is cut off at ~9 characters
    "—" if achieved is None else f"{achieved:.1f}",
    help="Modelled FLOPs over step time, per GPU",
)
c[1].metric("MFU", fmt_pct(m["mfu_pct"]), help="Achieved over the dense datasheet peak")
c[2].metric("HBM bandwidth", fmt_pct(m["hbm_bw_util_pct"]), help="Modelled bytes over time")
c[3].metric(
    "Tokens/s",
    "—" if m["tokens_per_s"] is None else f"{m['tokens_per_s']:,.0f}",
    help="Needs the run tag tokens_per_step (ingest --tag tokens_per_step=N)",
)
c[4].metric(
    "Time modelled",
    fmt_pct(m["modelled_time_pct"]),
    help="Share of GPU time whose ops have shapes and a work model",
)

# A link from the Recommendations page (?ops=…, repeated) opens on those ops.
linked = st.query_params.get_all("ops")
left, mid, right = st.columns(3)
by = GROUPS[left.selectbox("Points per", list(GROUPS), index=1 if linked else 0)]
rows = facts.memo(f"page_roofline_{by}", lambda: rf.roofline_table(work, spec, measured, by))
# Only the precisions with a point: a copy's or an unmodelled op's precision draws nothing.
precisions = sorted(set(rows.loc[rows["flops"] > 0, "precision"]) - {""})
picked = mid.multiselect("Precision", precisions, default=precisions)
min_share = right.slider("Min share of GPU time (%)", 0.0, 10.0, 0.0, 0.1)
# Copies and unmodelled ops stay in the table; the chart has no point for 0 FLOP anyway.
kept = rows["precision"].isin(picked) | ~(rows["flops"] > 0)
shown = rows[kept & (rows["share_pct"] >= min_share)]
if linked and by == "op_name":
    shown = shown[shown["name"].isin(linked)]
    st.caption(f"Showing the ops a recommendation points at: {md(', '.join(linked))}.")
show_chart(roofline_figure(shown.reset_index(drop=True), facts.roof_sets))

unmodelled = rows[rows["flops"].isna()]
if not unmodelled.empty:
    reasons = unmodelled.groupby("note")["time_ms"].sum().sort_values(ascending=False)
    st.caption(
        "Not on the chart (no FLOPs model): "
        + "; ".join(f"{r or 'no model'}: {t:,.2f} ms" for r, t in reasons.items())
    )
st.dataframe(
    shown.assign(flops=shown["flops"] / 1e9, bytes=shown["bytes"] / 1e9),
    hide_index=True,
    width="stretch",
    column_config={
        "name": st.column_config.TextColumn(
            next(k for k, v in GROUPS.items() if v == by), width="large"
        ),
        "kernel_count": st.column_config.NumberColumn("kernels", format="%d"),
        "time_ms": st.column_config.NumberColumn("time (ms)", format="%.3f"),
        "share_pct": st.column_config.NumberColumn("share of GPU time (%)", format="%.1f"),
        "mean_us": st.column_config.NumberColumn("mean (µs)", format="%.1f"),
        "modelled_pct": st.column_config.NumberColumn("time modelled (%)", format="%.0f"),
        "flops": st.column_config.NumberColumn("GFLOP", format="%.2f"),
        "bytes": st.column_config.NumberColumn(
            "GB",
            format="%.3f",
            help="Modelled DRAM bytes: operands read once, output written. cuBLAS xmma GEMMs "
            "whose operand exceeds L2 add one re-read per wave of CTAs; other large GEMMs "
            "(nvjet, TF32 on Hopper, CUTLASS) can read more than this.",
        ),
        "intensity": st.column_config.NumberColumn("FLOP/byte", format="%.3g"),
        "achieved_tflops": st.column_config.NumberColumn("TFLOP/s", format="%.2f"),
        "achieved_gbps": st.column_config.NumberColumn("GB/s", format="%.0f"),
        "pct_of_ceiling": st.column_config.NumberColumn("% of ceiling", format="%.1f"),
        "pct_of_datasheet": st.column_config.NumberColumn("% of datasheet", format="%.1f"),
        "pct_of_measured": st.column_config.NumberColumn("% of measured", format="%.1f"),
        "note": st.column_config.TextColumn("not modelled because"),
    },
)
with st.expander("Per step"):
    per_step = rf.step_metrics(work, facts.steps, spec, tokens_per_step=tokens)
    st.dataframe(
        per_step.assign(flops=per_step["flops"] / 1e9, bytes=per_step["bytes"] / 1e9).rename(
            columns={
                "flops": "GFLOP",
                "bytes": "GB",
                "hbm_gbps": "HBM (GB/s)",
                "achieved_tflops": "achieved (TFLOP/s)",
                "mfu_pct": "MFU (%)",
                "hbm_bw_util_pct": "HBM bandwidth (%)",
                "tokens_per_s": "tokens/s",
                "step_time_ms": "step time (ms)",
            }
        ),
        hide_index=True,
        width="stretch",
    )
if spec is not None:
    with st.expander("Roofs (TFLOP/s)"):
        st.dataframe(
            pd.DataFrame(
                {
                    "precision": PRECISIONS,
                    "dense (datasheet)": [spec.dense_tflops.get(p) for p in PRECISIONS],
                    "sparse 2:4 (datasheet)": [spec.sparse_tflops.get(p) for p in PRECISIONS],
                    "measured": [
                        (measured.flop_per_s.get(p, float("nan")) / 1e12) if measured else None
                        for p in PRECISIONS
                    ],
                }
            ),
            hide_index=True,
        )
