"""Timeline: streams × time for every rank, with level of detail (analysis/timeline.py).

A window with at most MAX_SHAPES GPU activities is drawn kernel by kernel (hover: op,
shapes, duration, grid, block, occupancy); a larger one as busy fraction per time bucket.
Streamlit reports selections, not zoom events, so the window is chosen with the slider or by
box-selecting a range on the chart.
"""

import streamlit as st

from analysis import timeline as tl
from analysis.figures.timeline import timeline_figure
from analysis.load import load_lanes, load_timeline_window
from pages._ui import MANY_RANKS, require_run

s, run_id = require_run()
st.title("Kernel timeline")
lanes = load_lanes(s, run_id)
if lanes.empty:
    st.info("This run has no GPU activity (a CPU-only trace): there is no timeline to draw.")
    st.stop()
origin, end = int(lanes["first_ns"].min()), int(lanes["last_ns"].max())
# Many ranks: the lanes of the ranks picked (a lane per stream of 512 ranks is unreadable).
all_ranks = sorted(int(r) for r in lanes["rank"].unique())
picked = None
if len(all_ranks) > MANY_RANKS:
    picked = (
        st.multiselect(
            f"Ranks (of {len(all_ranks)})",
            all_ranks,
            default=all_ranks[: MANY_RANKS // 2],
            key=f"tl_ranks_{run_id}",
        )
        or all_ranks[:1]
    )
    lanes = lanes[lanes["rank"].isin(picked)]
span_ms = (end - origin) / 1e6
win_key, sel_key, applied_key = f"tl_window_{run_id}", f"tl_select_{run_id}", f"tl_applied_{run_id}"

# A box drawn on the previous run's chart becomes the window (once per distinct box).
boxes = (st.session_state.get(sel_key) or {}).get("selection", {}).get("box", [])
if boxes and boxes[0].get("x") and boxes[0] != st.session_state.get(applied_key):
    x0, x1 = sorted(float(x) for x in boxes[0]["x"][:2])
    st.session_state[applied_key] = boxes[0]
    st.session_state[win_key] = (max(0.0, x0), min(span_ms, x1))

# A link from another page (?t0_ns=…&t1_ns=…, absolute ns) opens on that window, once.
link = (st.query_params.get("t0_ns"), st.query_params.get("t1_ns"))
if link[0] and link[1] and link != st.session_state.get(f"tl_link_{run_id}"):
    st.session_state[f"tl_link_{run_id}"] = link
    st.session_state[win_key] = (
        min(max(0.0, (int(link[0]) - origin) / 1e6), span_ms),
        min(max(0.0, (int(link[1]) - origin) / 1e6), span_ms),
    )

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
view = load_timeline_window(s, run_id, lanes, t0, t1, ranks=picked)
if view.bucket_ns is None:
    st.caption(f"{view.count:,} GPU activities in the window, each drawn; hover for details.")
else:
    st.caption(
        f"{view.count:,} GPU activities in the window: busy fraction per "
        f"{view.bucket_ns / 1e3:,.1f} µs bucket (hover: the kernel with the most time). Narrow "
        f"the window to at most {tl.MAX_SHAPES:,} activities, or box-select a range, to see "
        "single kernels."
    )
figure = timeline_figure(view)
figure.update_layout(dragmode="select")
st.plotly_chart(figure, width="stretch", on_select="rerun", selection_mode="box", key=sel_key)

with st.expander("Lanes"):
    st.dataframe(
        lanes.assign(span_ms=(lanes["last_ns"] - lanes["first_ns"]) / 1e6).drop(
            columns=["first_ns", "last_ns"]
        ),
        hide_index=True,
        width="stretch",
    )
