"""Compare: two runs side by side (analysis/compare.py): headline deltas, GPU time per step by
kernel class, every metric, and the recommendations that went away, appeared or stayed.

The runs come from ?before=ID&after=ID, else the two newest runs (the older one is "before").
"""

import pandas as pd
import streamlit as st

from analysis.compare import compare_runs
from analysis.figures.compare import class_bars
from data.errors import DashError
from pages._ui import fmt_ms, fmt_pct, md, run_labels, show_error, store

# (metric, headline label, formatter of the value, unit of the delta).
HEADLINES = (
    ("unprofiled_step_ms", "Step, unprofiled", fmt_ms, " ms"),
    ("step_time_ms", "Step, profiled", fmt_ms, " ms"),
    ("gpu_busy_pct", "GPU busy", fmt_pct, " pp"),
    ("host_wait_pct", "Idle: host wait", fmt_pct, " pp"),
    ("kernels_per_step", "Kernels per step", lambda v: "—" if v is None else f"{v:,.0f}", ""),
    ("mfu_pct", "MFU", fmt_pct, " pp"),
)

st.title("Compare runs")
s = store()
runs = s.runs()
if len(runs) < 2:
    st.info("Comparing needs two runs. Upload a trace on the Upload page.")
    st.stop()
ids = runs["run_id"].tolist()
labels = run_labels(runs)


def picked(param: str, default: str) -> int:
    wanted = st.query_params.get(param)
    return ids.index(wanted) if wanted in ids else ids.index(default)


left, right = st.columns(2)
before = left.selectbox("Before", ids, index=picked("before", ids[1]), format_func=labels.get)
after = right.selectbox("After", ids, index=picked("after", ids[0]), format_func=labels.get)
st.query_params["before"], st.query_params["after"] = before, after
if before == after:
    st.warning("Before and after are the same run: every delta is zero.")
try:
    c = compare_runs(s, before, after)
except DashError as e:
    show_error(e)
st.markdown(f"**{md(c.verdict, None)}**")

m = c.metrics.set_index("metric")
cols = st.columns(len(HEADLINES))
for col, (key, label, fmt, unit) in zip(cols, HEADLINES, strict=True):
    row = m.loc[key]
    value = None if pd.isna(row["after"]) else float(row["after"])
    note = " (not comparable: the runs model different shares of their GPU time)"
    note = note if row["change"] == "not comparable" else ""
    before_text = fmt(None if pd.isna(row["before"]) else float(row["before"]))
    col.metric(
        label,
        fmt(value),
        None if pd.isna(row["delta"]) or note else f"{float(row['delta']):+,.2f}{unit}",
        delta_color="inverse" if row["better"] == "lower" else "normal",
        help=f"before: {before_text}{note}",
    )

st.subheader("GPU time per step by kernel class")
st.caption(
    "Kernels, memcpy and memset, classified by name, divided by the run's step windows (one "
    "per rank and step): the bars of a run add up to its GPU time per step and GPU."
)
if c.classes.empty:
    st.info("Neither run has GPU activity.")
else:
    st.plotly_chart(
        class_bars(c.classes, c.before["name"], c.after["name"]), width="stretch", key="classes"
    )
    st.dataframe(
        c.classes,
        hide_index=True,
        width="stretch",
        column_config={
            "before_ms_per_step": st.column_config.NumberColumn("before (ms/step)", format="%.3f"),
            "after_ms_per_step": st.column_config.NumberColumn("after (ms/step)", format="%.3f"),
            "delta_ms_per_step": st.column_config.NumberColumn("Δ (ms/step)", format="%+.3f"),
            "delta_pct": st.column_config.NumberColumn("Δ %", format="%+.1f"),
        },
    )

st.subheader("Metrics")
st.dataframe(
    c.metrics.drop(columns="metric"),
    hide_index=True,
    width="stretch",
    column_config={
        "before": st.column_config.NumberColumn(format="%.4g"),
        "after": st.column_config.NumberColumn(format="%.4g"),
        "delta": st.column_config.NumberColumn("Δ", format="%+.4g"),
        "delta_pct": st.column_config.NumberColumn("Δ %", format="%+.1f"),
    },
)

st.subheader("Recommendations")
recs = c.recommendations
# A gone finding has only a before side, a new one only an after side.
SIDES = {"gone": ("before",), "unseen": ("before",), "new": ("after",), "kept": ("before", "after")}
TITLES = {
    "gone": "Gone",
    "unseen": "Not measurable in the after run (its GPU time has no op shapes, e.g. CUDA graphs)",
    "new": "New",
    "kept": "Kept",
}
for status, title in TITLES.items():
    columns = ["id", "title"]
    columns += [
        f"{side}_{c}" for c in ("rank", "saving_pct", "saving_ms") for side in SIDES[status]
    ]
    part = recs.loc[recs["status"] == status, [*columns, "confidence"]]
    if part.empty and status == "unseen":
        continue
    st.markdown(f"**{title}** ({len(part)})")
    if part.empty:
        st.caption("none")
        continue
    st.dataframe(
        part,
        hide_index=True,
        width="stretch",
        key=f"recs_{status}",
        column_config={
            c: st.column_config.NumberColumn(
                c.replace("_saving_pct", " saving %")
                .replace("_saving_ms", " saving (ms/step)")
                .replace("_rank", " rank"),
                format="%d" if c.endswith("_rank") else "%.2f",
            )
            for c in columns[2:]
        },
    )
