"""Upload: torch.profiler traces (one file per rank) become a run, with live progress."""

import shutil
import tempfile
from pathlib import Path

import streamlit as st

from analysis.report.md import md_escape
from data.errors import DashError
from pages._ui import run_ingest, store

st.title("Upload traces")
st.markdown(
    "Drop a `torch.profiler` trace (`.json` or `.json.gz`, up to 1 GB), several files for the "
    "ranks of one distributed run, or a `.zip` / `.tar.gz` of a trace folder. Files are read "
    "as data only, never executed."
)
s = store()
files = st.file_uploader(
    "Trace files",
    type=["json", "gz", "zip", "tar", "tgz"],
    accept_multiple_files=True,
    key="trace_files",
)
name = st.text_input("Run name (optional)", placeholder="defaults to the file name")

if st.button("Ingest", type="primary", icon=":material/upload:"):
    if not files:
        st.warning("Choose at least one trace file first.")
        st.stop()
    bar = st.progress(0.0, text="Saving upload…")
    with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
        paths = []
        for f in files or []:
            # Spool to disk in chunks: the parser reads files, and a 1 GB upload must not be
            # held twice in memory.
            dest = Path(tmp) / Path(f.name).name
            with dest.open("wb") as out:
                shutil.copyfileobj(f, out, length=1 << 22)
            paths.append(dest)

        def progress(stage: str, frac: float) -> None:
            label = {"parse": "Parsing", "link": "Linking and writing", "commit": "Done"}
            bar.progress(min(frac, 1.0), text=f"{label.get(stage, stage)}… {frac:.0%}")

        try:
            run_id = run_ingest(paths, name=name or None, on_progress=progress)
        except DashError as e:
            bar.empty()
            # The message names the spooled copy; the user knows the file by its own name.
            st.text(str(e).replace(f"{tmp}/", ""))
            st.error("The upload was not ingested.", icon="🚫")
            st.stop()
    bar.progress(1.0, text="Ingested")
    summary = s.run_summary(run_id)
    ranks, bad = int(summary["rank_count"]), int(summary["events_malformed"])
    st.success(
        md_escape(
            f"Run {summary['name']} ({run_id}): {ranks} rank{'s' if ranks != 1 else ''}, "
            f"{summary['kernel_count']:,} kernels, {summary['events_total']:,} events"
            + (f", {bad:,} malformed" if bad else "")
        ),
        icon="✅",
    )
    st.session_state["run"] = run_id
    st.page_link("pages/overview.py", label="Open the overview", icon=":material/speed:")
