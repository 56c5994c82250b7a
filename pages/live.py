"""Live GPUs: every GPU's NVML/GPM telemetry, refreshing, with alerts and a run's window."""

import time

import pandas as pd
import streamlit as st

from analysis.figures.telemetry import RUN_PANELS, gpu_panels
from analysis.telemetry import alerts, clock_reasons
from data import reads_telemetry as rt
from pages._ui import fmt_bytes, md, run_labels, store

WINDOWS = {"1 min": 60, "5 min": 300, "15 min": 900, "1 h": 3600, "6 h": 21600, "24 h": 86400}
REFRESH = {"1 s": "1s", "5 s": "5s", "off": None}
POINTS_PER_LINE = 600  # time buckets per chart line: enough for the eye, cheap to draw
ALERT_WINDOW_NS = 60 * 10**9
ICONS = {"throttling": "🌡️", "memory": "💾", "utilization-trap": "🪤"}

s = store()
st.title("Live GPUs")
if rt.gpus(s).empty:
    st.info(
        "No GPU telemetry yet. Start `python -m collectors.nvml` on each GPU node, or "
        "`python -m collectors.nvml --replay CSV --loop` to play back a recording."
    )
    st.stop()

c = st.columns([1, 1, 3])
window_s = WINDOWS[c[0].selectbox("Window", list(WINDOWS), index=1)]
refresh = REFRESH[c[1].selectbox("Refresh", list(REFRESH))]
all_gpus = rt.gpus(s)
labels = [f"{h}:{g}" for h, g in zip(all_gpus["host"], all_gpus["gpu"], strict=True)]
chosen = c[2].multiselect("GPUs", labels, default=labels[:8])


def gpu_metrics(row: pd.Series, inv: pd.Series) -> None:
    """One GPU's newest sample as a row of metrics."""
    m = st.columns(6)
    sm, dram = row["gpm_sm_util_pct"], row["gpm_dram_bw_util_pct"]
    m[0].metric(
        "SM activity",
        "—" if pd.isna(sm) else f"{sm:.0f} %",
        help=f"utilization.gpu says {row['util_gpu_pct']} %",
    )
    peak = inv["peak_hbm_bytes_per_s"]
    m[1].metric(
        "HBM bandwidth",
        "—" if pd.isna(dram) else f"{dram:.0f} %",
        help=None
        if pd.isna(peak) or pd.isna(dram)
        else f"{dram / 100 * peak / 1e9:,.0f} GB/s of {peak / 1e9:,.0f}",
    )
    tensor = row["gpm_tensor_util_pct"]
    m[2].metric("Tensor cores", "—" if pd.isna(tensor) else f"{tensor:.0f} %")
    limit = inv["power_limit_mw"]
    power = row["power_mw"]
    m[3].metric(
        "Power",
        "—" if pd.isna(power) else f"{power / 1e3:.0f} W",
        help=None if pd.isna(limit) else f"limit {limit / 1e3:.0f} W",
    )
    reasons = ", ".join(r for r in clock_reasons(row["clocks_event_reasons"]) if r != "idle")
    # the unit in the label: in six columns "1980 MHz" is cut to "1980 M…"
    m[4].metric("SM clock MHz", f"{row['sm_clock_mhz']}", help=reasons or "not throttled")
    total = inv["mem_total_bytes"]
    m[5].metric(
        "Memory used",
        fmt_bytes(row["mem_used_bytes"]),
        help=None if pd.isna(total) else f"of {fmt_bytes(total)}",
    )


@st.fragment(run_every=refresh)
def live() -> None:
    gpus = rt.gpus(s)
    gpus = gpus[[f"{h}:{g}" in chosen for h, g in zip(gpus["host"], gpus["gpu"], strict=True)]]
    if gpus.empty:
        st.info("Pick at least one GPU.")
        return
    # The window ends at the newest sample, not at the clock: a stopped agent or a replay
    # with recorded times still shows its data.
    end = int(gpus["last_ns"].max()) + 1
    start = end - window_s * 10**9
    frame = rt.bucketed(s, start, end, max(10**9, window_s * 10**9 // POINTS_PER_LINE))
    keys = set(zip(gpus["host"], gpus["gpu"], strict=True))
    frame = frame[[k in keys for k in zip(frame["host"], frame["gpu"], strict=True)]]
    recent = rt.samples(s, end - ALERT_WINDOW_NS, end)
    recent = recent[[k in keys for k in zip(recent["host"], recent["gpu"], strict=True)]]
    if (gpus["source"] == "replay").any():
        st.warning(
            "Replayed data: samples recorded on a real GPU and played back by "
            "`collectors.nvml --replay`, not live telemetry.",
            icon="⏪",
        )
    age_s = (time.time_ns() - end) / 1e9
    st.caption(
        f"{len(gpus)} GPU(s) · newest sample {age_s:,.0f} s ago · "
        f"{int(frame['samples'].sum()):,} samples in the window"
    )
    for a in alerts(recent, gpus):
        text = f"**{md(a.host)}:{a.gpu}** · {a.kind}: {md(a.message, None)}"
        st.warning(text, icon=ICONS[a.kind])
    newest = recent.sort_values("ts_ns").groupby(["host", "gpu"]).tail(1)
    for _, inv in gpus.iterrows():
        row = newest[(newest["host"] == inv["host"]) & (newest["gpu"] == inv["gpu"])]
        name = inv["name"] if isinstance(inv["name"], str) else "GPU"
        st.markdown(
            f"**{md(inv['host'])}:{inv['gpu']}** · {md(name)}"
            + (" · _replayed_" if inv["source"] == "replay" else "")
        )
        if len(row):
            gpu_metrics(row.iloc[0], inv)
    limits = {
        (h, g): p / 1e3
        for h, g, p in zip(gpus["host"], gpus["gpu"], gpus["power_limit_mw"], strict=True)
        if pd.notna(p)
    }
    st.plotly_chart(gpu_panels(frame, power_limits_w=limits), width="stretch")
    with st.expander("Processes"):
        st.dataframe(newest[["host", "gpu", "process_count", "processes"]], hide_index=True)


live()

st.subheader("Telemetry during a trace run")
runs = s.runs()
if runs.empty:
    st.caption("No trace runs yet.")
else:
    labels = run_labels(runs)
    run_id = st.selectbox("Run", list(labels), format_func=labels.__getitem__)
    window = rt.run_window(s, run_id)
    during = rt.run_samples(s, run_id)
    if window is None:
        st.caption("This trace has no Unix time base (baseTimeNanoseconds).")
    elif during.empty:
        st.caption("No telemetry was recorded during this run (±1 s).")
    else:
        st.caption(
            f"{len(during)} samples from {during['ts_ns'].min()} to "
            f"{during['ts_ns'].max()} (Unix ns); the trace spans {window[0]}–{window[1]}"
        )
        st.plotly_chart(gpu_panels(during, RUN_PANELS), width="stretch")
