"""Runs: every ingested run, newest first; open one or delete it."""

import pandas as pd
import streamlit as st

from analysis.text import fmt_bytes, plural
from data.errors import DashError
from pages._ui import md, show_error, store

st.title("Runs")
s = store()
runs = s.runs()
if runs.empty:
    st.info("No runs yet. Upload a torch.profiler trace on the Upload page.")
    st.page_link("pages/upload.py", label="Upload a trace", icon=":material/upload:")
    st.stop()

sizes = s.query("SELECT run_id, sum(file_bytes) AS bytes FROM ranks GROUP BY run_id")
table = runs.merge(sizes, on="run_id", how="left")
view = pd.DataFrame(
    {
        "name": table["name"],
        "run id": table["run_id"],
        "device": table["device_name"].fillna("CPU only"),
        "ranks": table["rank_count"],
        "kernels": table["kernel_count"],
        "events": table["events_total"],
        "malformed": table["events_malformed"],
        "size": [fmt_bytes(b) for b in table["bytes"]],
        "ingested": pd.to_datetime(table["ingested_at_ns"], unit="ns", utc=True).dt.strftime(
            "%Y-%m-%d %H:%M:%S UTC"
        ),
    }
)
st.caption(f"{plural(len(view), 'run')} in {md(s.data_dir, None)}")
picked = st.dataframe(
    view,
    hide_index=True,
    width="stretch",
    on_select="rerun",
    selection_mode="single-row",
    key="runs_table",
    column_config={
        c: st.column_config.NumberColumn(c, format="localized")
        for c in ("ranks", "kernels", "events", "malformed")
    },
)
rows = picked.selection.rows if picked is not None else []
if rows:
    run_id = str(view.iloc[rows[0]]["run id"])
    left, right = st.columns([1, 1])
    if left.button("Open overview", type="primary", icon=":material/speed:"):
        st.session_state["run"] = run_id
        st.switch_page("pages/overview.py")
    with right.popover("Delete run", icon=":material/delete:"):
        st.markdown(f"Delete **{md(view.iloc[rows[0]]['name'])}** (`{run_id}`) from the store?")
        if st.button("Delete", type="primary"):
            try:
                s.delete_run(run_id)
            except DashError as e:
                show_error(e)
            st.session_state.pop("run", None)
            st.rerun()
else:
    st.caption("Select a row to open or delete a run.")
