"""Compare: two runs side by side (analysis/compare.py): why this pair, how the runs differ
(analysis/comparability.py), step time and tokens/s first, GPU time per step by kernel class,
every metric, and the recommendations that went away, appeared or stayed.

The runs come from ?before=ID&after=ID, else the two latest runs of one name.
"""

import pandas as pd
import streamlit as st

from analysis.comparability import default_pair
from analysis.compare import Side, compare_sides, gone_note, side_of
from analysis.figures.compare import class_bars
from data.errors import DashError
from pages._chart import show_chart
from pages._ui import (
    RUNS_CACHED,
    fmt_ms,
    fmt_pct,
    md,
    run_facts,
    run_labels,
    show_error,
    store,
)


def fmt_count(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f}"


# (metric, headline label, formatter of the value, format of the signed delta), in reading
# order.
HEADLINES = (
    ("step", "Step time", fmt_ms, lambda d: ("+" if d >= 0 else "-") + fmt_ms(abs(d))),
    ("tokens_per_s", "Tokens/s", fmt_count, "{:+,.0f}".format),
    ("mfu_pct", "MFU", fmt_pct, "{:+,.1f} pp".format),
    ("gpu_busy_pct", "GPU busy", fmt_pct, "{:+,.1f} pp".format),
    ("host_wait_pct", "Idle: host wait", fmt_pct, "{:+,.1f} pp".format),
    ("kernels_per_step", "Kernels per step", fmt_count, "{:+,.0f}".format),
)


# A run never changes after ingest: its side (report, classes, profile) is shared.
@st.cache_resource(show_spinner="Reading the run…", ttl=600, max_entries=RUNS_CACHED)
def comparison_side(run_id: str) -> Side:
    return side_of(run_facts(run_id))


st.title("Compare runs")
s = store()
runs = s.runs()
pair = default_pair(runs)
if pair is None:
    st.info("Comparing needs two runs. Upload a trace on the Upload page.")
    st.stop()
ids = runs["run_id"].tolist()
labels = run_labels(runs)


def picked(param: str, default: str) -> int:
    wanted = st.query_params.get(param)
    return ids.index(wanted) if wanted in ids else ids.index(default)


left, right = st.columns(2)
before = left.selectbox("Before", ids, index=picked("before", pair.before), format_func=labels.get)
after = right.selectbox("After", ids, index=picked("after", pair.after), format_func=labels.get)
st.query_params["before"], st.query_params["after"] = before, after
st.caption(
    md(
        f"Default pair: {pair.reason}."
        if (before, after) == (pair.before, pair.after)
        else f"A pair you chose (the default would be {pair.reason})."
    )
)
if before == after:
    st.warning("Before and after are the same run: every delta is zero.")
try:
    c = compare_sides(comparison_side(before), comparison_side(after))
except DashError as e:
    show_error(e)
# Run names are user text: escaped, so that `__next__` or `*` stay as written.
for difference in c.differences:
    st.warning(md(difference, None), icon="⚠️")
st.markdown(f"**{md(c.verdict, None)}**")

m = c.metrics.set_index("metric")
# The step both runs have: unprofiled when both have a step model, else on the timeline.
unprofiled = m.loc["unprofiled_step_ms"]
both_unprofiled = not unprofiled[["before", "after"]].isna().any()
m.loc["step"] = m.loc["unprofiled_step_ms" if both_unprofiled else "step_time_ms"]
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
        None if pd.isna(row["delta"]) or note else unit(float(row["delta"])),
        delta_color="inverse" if row["better"] == "lower" else "normal",
        delta_arrow="off",
        help=f"before: {before_text}{note}",
    )
st.caption(
    "Step time: "
    + (
        "without the profiler (both runs have a step model)"
        if both_unprofiled
        else "on the traces' timelines"
    )
    + ". Tokens/s: the run's tokens-per-step tag, else the token ids fed to the largest "
    "embedding table per step. "
    + (
        f"MFU against the {c.mfu_reference} for both runs."
        if c.mfu_reference
        else "MFU: neither device is in the spec table."
    )
)

st.subheader("GPU time per step by kernel class")
st.caption(
    "Kernels, memcpy and memset, classified by name, divided by the run's step windows (one "
    "per rank and step): the bars of a run add up to its GPU time per step and GPU."
)
if c.classes.empty:
    st.info("Neither run has GPU activity.")
else:
    show_chart(class_bars(c.classes, c.before["name"], c.after["name"]), key="classes")
    st.dataframe(
        c.classes,
        hide_index=True,
        width="stretch",
        column_config={
            "kernel_class": st.column_config.TextColumn("kernel class"),
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
        "label": st.column_config.TextColumn("metric", width="medium"),
        "before": st.column_config.NumberColumn(format="localized"),
        "after": st.column_config.NumberColumn(format="localized"),
        "better": st.column_config.TextColumn("better when"),
        "delta": st.column_config.NumberColumn("Δ", format="%+.2f"),
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
LIKELY = {"before_likely_low_ms": "likely from (ms/step)", "before_likely_high_ms": "likely to"}
for status, title in TITLES.items():
    columns = ["id", "title"]
    columns += [
        f"{which}_{what}" for what in ("rank", "saving_pct", "saving_ms") for which in SIDES[status]
    ]
    if status == "gone":
        columns += list(LIKELY)
    part = recs.loc[recs["status"] == status, [*columns, "confidence"]]
    if part.empty and status == "unseen":
        continue
    st.markdown(f"**{title}** ({len(part)})")
    if part.empty:
        st.caption("none")
        continue
    if status == "gone":
        st.caption(gone_note(c.metrics))
    st.dataframe(
        part,
        hide_index=True,
        width="stretch",
        key=f"recs_{status}",
        column_config={
            "title": st.column_config.TextColumn("recommendation"),
            **{
                col: st.column_config.NumberColumn(
                    LIKELY.get(col)
                    or col.replace("_saving_pct", " saving (% of step)")
                    .replace("_saving_ms", " saving (ms/step)")
                    .replace("_rank", " rank"),
                    format="%d" if col.endswith("_rank") else "%.2f",
                )
                for col in columns[2:]
            },
        },
    )
