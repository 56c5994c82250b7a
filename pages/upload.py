"""Upload: torch.profiler traces (one file per rank) become a run, with live progress."""

import shutil
from pathlib import Path

import streamlit as st

from data.errors import DashError, error_text
from data.scratch import scratch
from pages._ui import md, run_ingest, show_error, store

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
    with scratch("upload") as tmp:
        shown: dict[str, str] = {}  # spooled path -> the name the browser gave
        paths = []
        for i, f in enumerate(files or []):
            # Spool to disk in chunks: the parser reads files, and a 1 GB upload must not be
            # held twice in memory. A folder per file: two files may share a name (rank0.json
            # from two folders), and the file keeps its name (the rank may come from it).
            base = Path(f.name.replace("\0", "")).name
            dest = tmp / str(i) / (base if base not in ("", ".", "..") else "upload.json")
            dest.parent.mkdir()
            with dest.open("wb") as out:
                shutil.copyfileobj(f, out, length=1 << 22)
            paths.append(dest)
            shown[str(dest)] = f.name

        def progress(stage: str, frac: float) -> None:
            label = {"parse": "Parsing", "link": "Linking and writing", "commit": "Done"}
            bar.progress(min(frac, 1.0), text=f"{label.get(stage, stage)}… {frac:.0%}")

        try:
            run_id = run_ingest(paths, name=name or None, on_progress=progress)
        except DashError as e:
            bar.empty()
            message = error_text(e)
            for spooled, original in shown.items():  # the user's file names, not ours
                message = message.replace(spooled, original)
            show_error(DashError(message))
    bar.progress(1.0, text="Ingested")
    summary = s.run_summary(run_id)
    st.success(
        f"Run **{md(summary['name'])}** (`{run_id}`): {summary['rank_count']} rank(s), "
        f"{summary['kernel_count']:,} kernels, {summary['events_total']:,} events"
        + (f", {summary['events_malformed']:,} malformed" if summary["events_malformed"] else ""),
        icon="✅",
    )
    st.session_state["run"] = run_id
    st.page_link("pages/overview.py", label="Open the overview", icon=":material/speed:")
