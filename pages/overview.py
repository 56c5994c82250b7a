"""Overview: the basic facts of one run: device, ranks, steps, time per step, busy, kernels."""

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analysis.overview import overview, top_kernels
from analysis.ranks import spread
from analysis.step_model import BASIS
from analysis.text import fmt_bytes
from data import reads
from pages._chart import show_chart
from pages._ui import (
    fmt_ms,
    fmt_pct,
    fmt_time_ns,
    md,
    rank_picker,
    require_run,
    run_facts,
)

s, run_id = require_run()
run = s.run_summary(run_id)
st.title(md(run["name"]))
ranks = reads.ranks(s, run_id)
# The rank files' own names: `source` holds the paths ingested, a temporary folder for an
# upload.
files = ranks["file_name"].astype(str).tolist()
st.caption(
    md(
        f"{run_id} · {'file' if len(files) == 1 else f'{len(files)} files'}: "
        f"{', '.join(files)} · ingested {fmt_time_ns(run['ingested_at_ns'])}",
        None,
    )
)

facts = run_facts(run_id)
kernels = reads.kernel_totals(s, run_id)
per_step = facts.step_times
ov = overview(int(run["rank_count"]), per_step, facts.shares, kernels)
devices = reads.devices(s, run_id)
if devices.empty:
    st.markdown("**CPU only**: the trace has no GPU device properties")
else:
    d = devices.iloc[0]
    st.markdown(
        f"**{md(d['name'])}** · {d['num_sms']} SMs · {fmt_bytes(d['total_global_mem_bytes'])}"
        f" · compute capability {d['compute_major']}.{d['compute_minor']}"
        + (
            f" · {per_rank} GPUs visible per rank"
            if (per_rank := int(devices.groupby("rank").size().max())) > 1
            else ""
        )
    )

model = facts.step_model
c = st.columns(5 if model is None else 6)
c[0].metric("Ranks", ov.rank_count)
c[1].metric("Steps", ov.step_count or "—", help="ProfilerStep#N ranges in the trace")
if model is not None:
    c.pop(2).metric(
        "Step, unprofiled",
        fmt_ms(model.unprofiled_ms),
        help=f"The median step without the profiler: {BASIS[model.source]}. Savings on the "
        "Recommendations page are taken against it.",
    )
c[2].metric(
    "Step, profiled" if model is not None else "Time per step",
    fmt_ms(ov.step_time_ms),
    help="Median span of the GPU work each step launched on the trace's timeline (slowest rank)",
)
c[3].metric(
    # Beside the unprofiled step, say whose timeline this share is of (the caption gives the
    # unprofiled one).
    "GPU busy, profiled" if model is not None else "GPU busy",
    fmt_pct(ov.gpu_busy_pct),
    help="Time with any GPU activity (any stream) over the profiled GPU time; the Breakdown "
    "page splits the rest",
)
c[4].metric("Kernels", f"{ov.kernel_count:,}", help=f"{fmt_ms(ov.kernel_time_ms)} of kernel time")
if model is not None:
    # G and H overlap, so they are not a split of the step: say which one sets its pace.
    pace = "host's" if model.host_sets_pace(model.gpu_ms, model.host_ms) else "GPU's"
    still = (
        f", and both stand still {fmt_ms(model.serial_ms)} more (a blocking sync or copy)"
        if model.serial_ms > 0
        else ""
    )
    st.caption(
        f"The profiler added {fmt_pct(model.profiler_share_pct)} to the step "
        f"({fmt_ms(model.profiled_ms)} profiled, {fmt_ms(model.unprofiled_ms)} without it: "
        f"{BASIS[model.source]}). Per step without it, host work {fmt_ms(model.host_ms)} and "
        f"GPU work {fmt_ms(model.gpu_ms)} overlap (the GPU busy "
        f"{fmt_pct(facts.step_busy_pct)} of the step without "
        "it); the "
        f"{pace} sets the pace{still}."
    )

if run["events_malformed"]:
    examples = [e for r in ranks["malformed_examples"] for e in json.loads(r or "[]")]
    n = int(run["events_malformed"])
    st.warning(
        md(
            f"{n:,} malformed {'event was' if n == 1 else 'events were'} not fully read, e.g.: "
            + "; ".join(examples[:3]),
            None,
        ),
        icon="⚠️",
    )

if not per_step.empty:
    st.subheader("Steps")
    fig = go.Figure()
    fig.add_bar(
        x=per_step["step"],
        y=per_step["step_time_ms"],
        name="profiled step (ms)",
        customdata=per_step["kernel_count"],
        hovertemplate="step %{x}<br>%{y:.2f} ms profiled<br>%{customdata} kernels<extra></extra>",
    )
    if model is not None:
        # The bars are the trace's own (profiled) steps; the line is what the user's job
        # runs at, so the bars are not read as its speed.
        fig.add_hline(
            y=model.unprofiled_ms,
            line_dash="dash",
            annotation_text=f"without the profiler: {fmt_ms(model.unprofiled_ms)}",
            annotation_position="top left",
        )
    fig.update_layout(
        xaxis={"title": "step", "type": "category"},
        yaxis_title="step time, profiled (ms)",
        height=280,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
    )
    show_chart(fig)

st.subheader("Top 10 kernels by total time")
top = top_kernels(kernels, 10)
if top.empty:
    st.info("This run has no GPU kernels (a CPU-only trace).")
else:
    st.dataframe(
        top,
        hide_index=True,
        width="stretch",
        column_config={
            "name": st.column_config.TextColumn("kernel", width="large"),
            "total_ms": st.column_config.NumberColumn("total (ms)", format="%.3f"),
            "mean_us": st.column_config.NumberColumn("mean (µs)", format="%.1f"),
            "share_pct": st.column_config.ProgressColumn(
                "share of kernel time", format="%.1f %%", min_value=0, max_value=100
            ),
        },
    )

with st.expander("Ranks"):
    kernel_spread = spread(ranks.set_index("rank")["kernel_count"])
    picked = rank_picker(
        [int(r) for r in ranks["rank"]], f"ov_rank_{run_id}", kernel_spread["outliers"]
    )
    if picked is not None:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "per rank": what,
                        **{k: v for k, v in sp.items() if k != "outliers"},
                        "furthest from the median": ", ".join(map(str, sp["outliers"])) or "—",
                    }
                    for what, sp in (
                        ("kernels", kernel_spread),
                        ("events", spread(ranks.set_index("rank")["events_total"])),
                        ("malformed", spread(ranks.set_index("rank")["events_malformed"])),
                    )
                ]
            ),
            hide_index=True,
            width="stretch",
        )
    shown = ranks if picked is None else ranks[ranks["rank"] == picked]
    st.dataframe(
        pd.DataFrame(
            {
                "rank": shown["rank"],
                "device": shown["device_name"],
                "file": shown["file_name"],
                "size": [fmt_bytes(b) for b in shown["file_bytes"]],
                "kernels": shown["kernel_count"],
                "events": shown["events_total"],
                "malformed events": shown["events_malformed"],
                "rank from": shown["rank_source"],
            }
        ),
        hide_index=True,
        width="stretch",
    )
