"""Report: a preview of a run's report, and the report to download as HTML, Markdown, JSON or
PDF (analysis/report.py; the same files as `python -m analysis.report`)."""

from typing import Any

import streamlit as st

from analysis.load import Store
from analysis.report.charts import CHART_SECTIONS
from analysis.report.export import FORMATS, MEDIA_TYPES, export
from analysis.report.run import report_of
from analysis.report.sections import (
    NO_RECOMMENDATIONS,
    TITLES,
    Chart,
    recommendations,
    saving_text,
    summary_lines,
)
from pages._chart import show_chart
from pages._ui import RUNS_CACHED, fmt_ms, fmt_pct, md, require_run, run_facts

LABELS = {
    "html": "HTML (interactive, offline)",
    "md": "Markdown",
    "json": "JSON",
    "pdf": "PDF",
}


# A run never changes after ingest: built once per server process from the pages' shared
# facts (every visit rebuilt it from the store: 21-24 s on the 1.3 M-event run at load 4.6).
@st.cache_resource(show_spinner="Building the report…", ttl=600, max_entries=RUNS_CACHED)
def report(_s: Store, run_id: str) -> tuple[dict[str, Any], dict[str, Chart]]:
    return report_of(_s, run_facts(run_id))


s, run_id = require_run()
st.title("Report")
doc, charts = report(s, run_id)

st.caption("Download the whole report; every file holds the sections previewed below.")
cols = st.columns(len(FORMATS))
name = doc["run"]["name"]
for col, fmt in zip(cols, FORMATS, strict=True):
    col.download_button(
        LABELS[fmt],
        # Built on click: the PDF takes a few seconds, and most visits download one format.
        data=lambda fmt=fmt: export(doc, charts, fmt),
        file_name=f"{name}-{run_id}.{fmt}",
        mime=MEDIA_TYPES[fmt],
        on_click="ignore",
        icon=":material/download:",
        key=f"report_{fmt}",
        width="stretch",
    )

st.subheader(TITLES["summary"])
for line in summary_lines(doc):
    st.markdown(md(line, None))
m = doc["metrics"]["overall"]
unprofiled = m["unprofiled_step_ms"] is not None
c = st.columns(6 if unprofiled else 5)
if unprofiled:
    c.pop(0).metric("Step, unprofiled", fmt_ms(m["unprofiled_step_ms"]))
c[0].metric("Step, profiled" if unprofiled else "Time per step", fmt_ms(m["step_time_ms"]))
c[1].metric(
    "GPU busy, profiled" if unprofiled else "GPU busy",
    fmt_pct(m["gpu_busy_pct"]),
    help="of the profiled GPU time",
)
c[2].metric("MFU", fmt_pct(m["mfu_pct"]))
c[3].metric("HBM bandwidth", fmt_pct(m["hbm_bw_util_pct"]))
c[4].metric("Kernels", f"{m['kernel_count']:,}")

st.subheader(TITLES["recommendations"])
recs = recommendations(doc)
if not recs:
    st.info(NO_RECOMMENDATIONS)
for n, rec in enumerate(recs, start=1):
    with st.expander(f"{n}. {md(rec['title'], None)} · {md(saving_text(rec))}", expanded=n == 1):
        st.markdown(md(rec.get("why") or "", None))
        st.caption(md(rec.get("saving_basis") or "", None))
        st.markdown("\n".join(f"- {md(e)}" for e in rec.get("evidence") or []))
        st.code(str(rec.get("fix") or ""), language="python")

st.subheader("Charts")
# Only the open tab's chart is sent: Chromium drew all four on every visit (the timeline's
# shapes the most), and a tab switch reruns from the cached report.
tabs = st.tabs([TITLES[k] for k in CHART_SECTIONS], key="report_chart", on_change="rerun")
for tab, key in zip(tabs, CHART_SECTIONS, strict=True):
    if not tab.open:
        continue
    chart = charts[key]
    if chart.figure is None:
        tab.info(md(chart.summary, None))
        continue
    with tab:
        show_chart(chart.figure, key=f"report_chart_{key}")
    tab.caption(md(chart.summary, None))
