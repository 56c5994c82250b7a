"""Streamlit entry point: the page registry and navigation, nothing else."""

import streamlit as st

from pages._ui import run_page

st.set_page_config(page_title="GPU Perf Dashboard", page_icon="⚡", layout="wide")

PAGES = [
    st.Page("pages/runs.py", title="Runs", icon=":material/list:", url_path="runs", default=True),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload:", url_path="upload"),
    st.Page("pages/overview.py", title="Overview", icon=":material/speed:", url_path="overview"),
    st.Page(
        "pages/roofline.py", title="Roofline", icon=":material/show_chart:", url_path="roofline"
    ),
    st.Page(
        "pages/bandwidth.py", title="HBM bandwidth", icon=":material/memory:", url_path="bandwidth"
    ),
    st.Page("pages/live.py", title="Live GPUs", icon=":material/monitor_heart:", url_path="live"),
    st.Page(
        "pages/breakdown.py", title="Breakdown", icon=":material/donut_large:", url_path="breakdown"
    ),
    st.Page("pages/timeline.py", title="Timeline", icon=":material/timeline:", url_path="timeline"),
    st.Page(
        "pages/recommendations.py",
        title="Recommendations",
        icon=":material/recommend:",
        url_path="recommendations",
    ),
    st.Page(
        "pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"
    ),
    st.Page("pages/report.py", title="Report", icon=":material/description:", url_path="report"),
]

run_page(st.navigation(PAGES))
