"""Streamlit entry point: the page registry and navigation, nothing else."""

import streamlit as st

st.set_page_config(page_title="GPU Perf Dashboard", page_icon="⚡", layout="wide")

PAGES = [
    st.Page("pages/runs.py", title="Runs", icon=":material/list:", url_path="runs", default=True),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload:", url_path="upload"),
    st.Page("pages/overview.py", title="Overview", icon=":material/speed:", url_path="overview"),
]

st.navigation(PAGES).run()
