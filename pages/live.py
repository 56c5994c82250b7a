"""Live GPUs: every GPU's NVML/GPM telemetry, refreshing, with alerts and a run's window.

Samples come from the store's lake or from a Prometheus server (the sidebar's URL, else
$DASH_PROMETHEUS_URL; data.telemetry_source). Host and GPU names may come from a Prometheus
label, someone else's text: they are escaped wherever Markdown would render them.
"""

import time

import pandas as pd
import streamlit as st

from analysis.figures.telemetry import RUN_PANELS, gpu_panels
from analysis.telemetry import age_text, alerts, clock_reasons, freshness, gpu_label
from analysis.text import fmt_bytes
from data import reads_telemetry as rt
from data.errors import DashError
from data.telemetry_source import (
    open_telemetry,
    prometheus_url_from_env,
    run_samples,
    thinned,
)
from pages._chart import show_chart
from pages._ui import fmt_time_ns, md, run_labels, show_error, store

WINDOWS = {"1 min": 60, "5 min": 300, "15 min": 900, "1 h": 3600, "6 h": 21600, "24 h": 86400}
REFRESH = {"1 s": "1s", "5 s": "5s", "off": None}
# Time buckets per chart line: enough for the eye, cheap to draw as SVG (analysis/figures/
# telemetry.py); a run's telemetry with more samples per GPU is bucketed to as many.
POINTS_PER_LINE = 600
ALERT_WINDOW_NS = 60 * 10**9
ICONS = {"throttling": "🌡️", "memory": "💾", "utilization-trap": "🪤"}

s = store()
st.title("Live GPUs")
url = st.sidebar.text_input(
    "Prometheus URL",
    value=prometheus_url_from_env() or "",
    help="Read telemetry from this Prometheus server (agents run with --prometheus-port, or "
    "a cluster's dcgm-exporter) instead of the store. Empty: the store.",
)
try:
    src = open_telemetry(s, url)
    all_gpus = src.gpus()
except DashError as e:
    show_error(e)
if all_gpus.empty:
    st.info(
        f"No GPU telemetry yet in {src.label}. Start `python -m collectors.nvml` on each GPU "
        "node, or `python -m collectors.nvml --replay CSV --loop` to play back a recording."
    )
    st.stop()

c = st.columns([1, 1, 3])
window_s = WINDOWS[c[0].selectbox("Window", list(WINDOWS), index=1)]
refresh = REFRESH[c[1].selectbox("Refresh", list(REFRESH))]
labels = [gpu_label(h, g) for h, g in zip(all_gpus["host"], all_gpus["gpu"], strict=True)]
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
    try:
        window(src.gpus())
    except DashError as e:  # Prometheus went away between two refreshes
        st.error(md(str(e)), icon="🚫")


def window(gpus: pd.DataFrame) -> None:
    """The chosen GPUs' newest samples, alerts and charts over the chosen window."""
    gpus = gpus[[gpu_label(h, g) in chosen for h, g in zip(gpus["host"], gpus["gpu"], strict=True)]]
    if gpus.empty:
        st.info("Pick at least one GPU.")
        return
    # The window ends at the newest sample, not at the clock: a stopped agent or a replay
    # with recorded times still shows its data.
    end = int(gpus["last_ns"].max()) + 1
    start = end - window_s * 10**9
    frame = src.bucketed(start, end, max(10**9, window_s * 10**9 // POINTS_PER_LINE))
    keys = set(zip(gpus["host"], gpus["gpu"], strict=True))
    frame = frame[[k in keys for k in zip(frame["host"], frame["gpu"], strict=True)]]
    recent = src.samples(end - ALERT_WINDOW_NS, end)
    recent = recent[[k in keys for k in zip(recent["host"], recent["gpu"], strict=True)]]
    live_now, age_s = freshness(end - 1, time.time_ns())
    newest_at = fmt_time_ns(end - 1)
    if (gpus["source"] == "replay").any():
        st.warning(
            "Replayed data: samples recorded on a real GPU and played back by "
            "`collectors.nvml --replay`, not live telemetry.",
            icon=":material/replay:",
        )
    if live_now:
        st.success(f"Live · newest sample {age_text(age_s)} ago ({newest_at})", icon="🟢")
    else:
        st.warning(
            f"Not live: the newest sample is {age_text(age_s)} old ({newest_at}); no agent has "
            f"reported since. The charts show the {window_s // 60} min before it.",
            icon=":material/pause_circle:",
        )
    gpu_count = len(gpus)
    st.caption(
        f"{gpu_count} GPU{'s' if gpu_count != 1 else ''} from {md(src.label)} · the window "
        f"ends at the newest sample ({newest_at}) · {int(frame['samples'].sum()):,} samples in it"
    )
    for a in alerts(recent, gpus):
        st.warning(
            f"**{md(gpu_label(a.host, a.gpu))}** · {a.kind}: {md(a.message, None)}"
            + ("" if live_now else f" (as of {newest_at})"),
            icon=ICONS[a.kind],
        )
    newest = recent.sort_values("ts_ns").groupby(["host", "gpu"]).tail(1)
    for _, inv in gpus.iterrows():
        row = newest[(newest["host"] == inv["host"]) & (newest["gpu"] == inv["gpu"])]
        name = inv["name"] if isinstance(inv["name"], str) else "unknown model"
        st.markdown(
            f"**{md(gpu_label(inv['host'], inv['gpu']))}** · {md(name)}"
            + (" · _replayed_" if inv["source"] == "replay" else "")
            + ("" if live_now else f" · _newest sample {fmt_time_ns(inv['last_ns'])}_")
        )
        if len(row):
            gpu_metrics(row.iloc[0], inv)
    limits = {
        (h, g): p / 1e3
        for h, g, p in zip(gpus["host"], gpus["gpu"], gpus["power_limit_mw"], strict=True)
        if pd.notna(p)
    }
    show_chart(gpu_panels(frame, power_limits_w=limits), key="live_panels")
    with st.expander("Processes"):
        st.dataframe(
            newest[["host", "gpu", "process_count", "processes"]],
            hide_index=True,
            column_config={
                "gpu": st.column_config.NumberColumn("GPU", format="%d"),
                "process_count": st.column_config.NumberColumn("processes", format="%d"),
                "processes": st.column_config.TextColumn("[pid, memory used (bytes)]"),
            },
        )


live()

st.subheader("Telemetry during a trace run")
runs = s.runs()
if runs.empty:
    st.caption("No trace runs yet.")
else:
    labels = run_labels(runs)
    run_id = st.selectbox("Run", list(labels), format_func=labels.__getitem__)
    run_span = rt.run_window(s, run_id)
    try:
        during = run_samples(src, s, run_id)
    except DashError as e:
        show_error(e)
    if run_span is None:
        st.caption("This trace has no Unix time base (baseTimeNanoseconds).")
    elif during.empty:
        st.caption(f"No telemetry in {md(src.label)} during this run (±1 s).")
    else:
        # A profiled window is often under a second: whole seconds would read "from 21:57:46
        # to 21:57:46".
        short = run_span[1] - run_span[0] < 10e9
        st.caption(
            f"{len(during):,} sample{'s' if len(during) != 1 else ''} from "
            f"{fmt_time_ns(during['ts_ns'].min(), short)} to "
            f"{fmt_time_ns(during['ts_ns'].max(), short)} in {md(src.label)}; the trace spans "
            f"{fmt_time_ns(run_span[0], short)} to {fmt_time_ns(run_span[1], short)}"
        )
        drawn = thinned(src, during, POINTS_PER_LINE)
        show_chart(gpu_panels(drawn, RUN_PANELS), key="run_panels")
