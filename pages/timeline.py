"""Timeline: per rank, its CPU threads (ops, annotations, modules, runtime calls as nested
slices) above its GPU streams, drawn by a browser component (pages/_timeline/): wheel zoom and
drag pan in the browser, the detail of each new window loaded from the store; step
boundaries, kernels coloured by class, names on slices wide enough to hold them; select a
kernel for its launch and op (or an op for its kernels); search by name.

Each window carries at most 20 000 shapes and 10 MB (analysis/timeline_budget.py). Links from
other pages: ?t0_ns=…&t1_ns=… (absolute ns) opens a window, ?highlight=<kernel name> (repeated)
outlines those kernels, ?rec=<id> names the recommendation they came from.
"""

import pandas as pd
import streamlit as st

from analysis import timeline_view as tv
from analysis.load import (
    Store,
    load_explore_window,
    load_kernel_links,
    load_lanes,
    load_op_kernels,
    load_search,
    load_step_marks,
    load_threads,
)
from pages._timeline_component import timeline
from pages._ui import ranks_picker, require_run

SEARCH_HITS = 200
OP_KERNELS = 500
HIT_MARGIN = 4.0  # a search hit opens a window this many times its duration wide


# A run never changes after ingest: its lanes and step marks are read once, not on every
# render (each read scans the run's events).
@st.cache_data(show_spinner=False, ttl=600, max_entries=8)
def lanes_of(_store: Store, run_id: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The run's GPU streams, CPU threads and step marks."""
    return (
        load_lanes(_store, run_id),
        load_threads(_store, run_id),
        load_step_marks(_store, run_id),
    )


s, run_id = require_run()
st.title("Timeline")
streams, threads, marks = lanes_of(s, run_id)
if streams.empty and threads.empty:
    st.info("This run holds no CPU slices and no GPU activity: there is nothing to draw.")
    st.stop()
firsts = [int(f["first_ns"].min()) for f in (streams, threads) if len(f)]
lasts = [int(f["last_ns"].max()) for f in (streams, threads) if len(f)]
origin, end = min(firsts), max(lasts)  # the whole run's: the same axis for any ranks picked
picked = ranks_picker(sorted({*streams["rank"], *threads["rank"]}), f"tl_ranks_{run_id}")
if picked is not None:
    streams, threads = streams[streams["rank"].isin(picked)], threads[threads["rank"].isin(picked)]
lanes = tv.lane_table(threads, streams)
key = f"tl_{run_id}"
state = st.session_state.setdefault(
    f"tl_state_{run_id}", {"t0": origin, "t1": end, "answers": 0, "view_id": 0, "sel": None}
)


def move_to(t0_ns: int, t1_ns: int, sel: dict[str, object] | None = None) -> None:
    """Open a window from Python (a link, a search hit): the component adopts it."""
    state.update(t0=max(origin, t0_ns), t1=min(end, max(t1_ns, t0_ns + 1)), sel=sel)
    state["view_id"] += 1


# A link from another page opens its window once (the Recommendations page's kernels).
link = (st.query_params.get("t0_ns"), st.query_params.get("t1_ns"))
if link[0] and link[1] and link != st.session_state.get(f"tl_link_{run_id}"):
    st.session_state[f"tl_link_{run_id}"] = link
    move_to(int(link[0]), int(link[1]))
highlight = tuple(st.query_params.get_all("highlight"))
if highlight:
    rec = st.query_params.get("rec")
    st.caption(
        f"Outlined in orange: {len(highlight)} kernel name{'s' if len(highlight) > 1 else ''}"
        + (f" behind the recommendation {rec}" if rec else "")
        + "."
    )

needle = st.text_input(
    "Search by name", key=f"tl_search_{run_id}", placeholder="e.g. nvjet, aten::mm"
)
if needle:
    hits = load_search(s, run_id, needle, SEARCH_HITS, picked)
    total = int(hits["matches"].iloc[0]) if len(hits) else 0
    if not total:
        st.caption("No slice has that in its name.")
    else:

        def go() -> None:
            i = st.session_state[f"tl_hit_{run_id}"]
            if i is None:
                return
            h = hits.iloc[i]
            pad = int(max(h["dur_ns"], 1_000) * HIT_MARGIN)
            sel = {"lane": h["lane"], "kind": "gpu" if h["lane"] == "gpu" else h["kind"],
                   "rank": int(h["rank"]), "link": int(h["link"]) if pd.notna(h["link"]) else -1,
                   "ts": (int(h["ts_ns"]) - origin) / 1e3, "name": str(h["name"])}  # fmt: skip
            move_to(int(h["ts_ns"]) - pad, int(h["ts_ns"] + h["dur_ns"]) + pad, sel)

        st.selectbox(
            f"{total:,} slices match; outlined in yellow. Go to",
            range(len(hits)),
            index=None,
            format_func=lambda i: (
                f"{(hits['ts_ns'].iloc[i] - origin) / 1e6:,.3f} ms · "
                f"{hits['lane'].iloc[i].upper()} · {hits['name'].iloc[i][:120]}"
            ),
            key=f"tl_hit_{run_id}",
            on_change=go,
        )


@st.fragment
def view() -> None:
    """The component and the selection's details; a zoom, pan or click reruns only this."""
    value = st.session_state.get(key)
    if value and value.get("seq", 0) > state["answers"]:
        state["answers"] = value["seq"]
        state["t0"] = origin + int(float(value["t0"]) * 1e3)
        state["t1"] = origin + max(int(float(value["t1"]) * 1e3), state["t0"] - origin + 1)
        state["sel"] = value.get("sel")
    w = load_explore_window(s, run_id, len(streams), state["t0"], state["t1"], ranks=picked)
    sel, linked = state["sel"], None
    if sel and sel.get("link", -1) >= 0:
        if sel["lane"] == "gpu" or sel["kind"] == "runtime":
            linked = load_kernel_links(s, run_id, int(sel["rank"]), int(sel["link"]))
        elif sel["kind"] == "op":
            k = load_op_kernels(s, run_id, int(sel["rank"]), int(sel["link"]), OP_KERNELS)
            linked = k.rename(columns={"device": "pid", "stream": "tid"}).assign(lane="gpu")
    timeline(
        tv.payload(
            w, lanes, origin, end, marks, answers=state["answers"], view_id=state["view_id"],
            search=needle, highlight=highlight, linked=linked, selected=sel,
        ),
        key,
    )  # fmt: skip
    if not sel:
        st.caption(
            "Click a slice for what it is linked to: a kernel's launch and op, an op's kernels."
        )
        return
    st.subheader("Selected")
    st.text(f"{sel['name']} ({'GPU' if sel['lane'] == 'gpu' else 'CPU ' + str(sel['kind'])}, "
            f"rank {sel['rank']})")  # fmt: skip
    if linked is None or linked.empty:
        st.caption(
            "This op launched no GPU work itself (the ops inside it did)."
            if sel["kind"] == "op"
            else "Nothing in the trace links to this slice."
        )
        return
    shown = pd.DataFrame({
        "role": linked.get("role", "kernel"),
        "name": linked["name"].astype(str),
        "start (ms)": (linked["ts_ns"] - origin) / 1e6,
        "duration (µs)": linked["dur_ns"] / 1e3,
        "where": [f"rank {r} · {'stream' if ln == 'gpu' else 'thread'} {t}" for r, ln, t in
                  zip(linked["rank"], linked["lane"], linked["tid"], strict=True)],
        "input shapes": linked.get("input_dims"),
    })  # fmt: skip
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={
            "start (ms)": st.column_config.NumberColumn(format="%.3f"),
            "duration (µs)": st.column_config.NumberColumn(format="%.1f"),
        },
    )


view()
with st.expander("Lanes"):
    st.dataframe(lanes[["label", "kind"]], hide_index=True, width="stretch")
