"""Timeline: streams × time for every rank, with level of detail (analysis/timeline.py).

A window with at most MAX_SHAPES GPU activities is drawn kernel by kernel (hover: op,
shapes, duration, grid, block, occupancy); a larger one as busy fraction per time bucket.
Streamlit reports selections, not zoom events, so the window is chosen with the slider or by
box-selecting a range on the chart.
"""

import streamlit as st

from analysis import timeline as tl
from analysis.figures_time import timeline_heatmap, timeline_kernels
from data import reads_timeline
from pages._ui import require_run

s, run_id = require_run()
st.title("Kernel timeline")
lanes = reads_timeline.lanes(s, run_id)
if lanes.empty:
    st.info("This run has no GPU activity (a CPU-only trace): there is no timeline to draw.")
    st.stop()
lt = tl.lane_table(lanes)
labels = lt["label"].tolist()
origin, end = int(lanes["first_ns"].min()), int(lanes["last_ns"].max())
span_ms = (end - origin) / 1e6
win_key, sel_key, applied_key = f"tl_window_{run_id}", f"tl_select_{run_id}", f"tl_applied_{run_id}"

# A box drawn on the previous run's chart becomes the window (once per distinct box).
boxes = (st.session_state.get(sel_key) or {}).get("selection", {}).get("box", [])
if boxes and boxes[0].get("x") and boxes[0] != st.session_state.get(applied_key):
    x0, x1 = sorted(float(x) for x in boxes[0]["x"][:2])
    st.session_state[applied_key] = boxes[0]
    st.session_state[win_key] = (max(0.0, x0), min(span_ms, x1))

left, right = st.columns([5, 1])
window = left.slider(
    "Window (ms from the first GPU activity)",
    min_value=0.0,
    max_value=span_ms,
    value=(0.0, span_ms),
    step=max(span_ms / 10_000, 0.001),
    format="%.3f",
    key=win_key,
)
if right.button("Whole run", icon=":material/zoom_out_map:"):
    st.session_state.pop(win_key, None)
    st.rerun()
t0, t1 = origin + int(window[0] * 1e6), origin + max(int(window[1] * 1e6), 1)
count = reads_timeline.window_count(s, run_id, t0, t1)

if count <= tl.MAX_SHAPES:
    st.caption(f"{count:,} GPU activities in the window, each drawn; hover for details.")
    rows = reads_timeline.window_events(s, run_id, t0, t1, tl.MAX_SHAPES)
    fig = timeline_kernels(tl.segments(rows, lt, origin), labels)
    fig.update_xaxes(range=list(window))
else:
    bucket_ns, n = tl.bucket_plan(t0, t1, len(lt))
    st.caption(
        f"{count:,} GPU activities in the window: busy fraction per {bucket_ns / 1e3:,.1f} µs "
        f"bucket (hover: the kernel with the most time). Narrow the window to at most "
        f"{tl.MAX_SHAPES:,} activities, or box-select a range, to see single kernels."
    )
    z, text = tl.busy_grid(reads_timeline.buckets(s, run_id, t0, t1, bucket_ns), lt, n, bucket_ns)
    fig = timeline_heatmap(z, text, labels, window[0], bucket_ns / 1e6)
fig.update_layout(dragmode="select")
st.plotly_chart(fig, width="stretch", on_select="rerun", selection_mode="box", key=sel_key)

with st.expander("Lanes"):
    st.dataframe(
        lanes.assign(span_ms=(lanes["last_ns"] - lanes["first_ns"]) / 1e6).drop(
            columns=["first_ns", "last_ns"]
        ),
        hide_index=True,
        width="stretch",
    )
