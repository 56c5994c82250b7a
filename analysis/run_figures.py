"""A run's charts as both the pages and the report draw them: the reads and the analysis steps
in front of each figure builder, so that a page and an exported report show the same figure.

Pages add their widgets around these (spec override, bucket count, window); the report calls
them with the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from analysis import bandwidth as bw
from analysis import roofline as rf
from analysis import timeline as tl
from analysis.figures_time import timeline_heatmap, timeline_kernels
from analysis.gemm_traffic import run_kernel_work
from analysis.specs import DeviceSpec, match_spec
from data import reads_roofline, reads_telemetry, reads_timeline
from data.store import Store


@dataclass(frozen=True, slots=True)
class RooflineInputs:
    """What the roofline and bandwidth charts of one run are drawn from."""

    spec: DeviceSpec | None  # the spec in use (matched, or the override)
    matched: DeviceSpec | None  # the spec matched from the trace's device name
    measured: rf.Ceilings | None
    roof_sets: list[rf.Ceilings]  # datasheet first, then measured
    work: pd.DataFrame  # analysis.roofline.kernel_work; empty for a CPU-only run


def roofline_inputs(store: Store, run_id: str, spec_name: str | None = None) -> RooflineInputs:
    """Spec, ceilings and per-kernel work of a run; `spec_name` overrides the matched spec."""
    device = store.run_summary(run_id).get("device_name")
    matched = match_spec(device)
    spec = match_spec(device, spec_name)
    measured = rf.measured_ceilings(reads_roofline.ceilings(store, device))
    sheet = rf.datasheet_ceilings(spec) if spec else None
    ops = reads_roofline.launching_ops(store, run_id)
    work = run_kernel_work(store, run_id, ops, spec)
    roof_sets = [r for r in (sheet, measured) if r is not None]
    return RooflineInputs(spec, matched, measured, roof_sets, work)


def bandwidth_frames(
    store: Store, run_id: str, work: pd.DataFrame, peak_bytes_per_s: float | None, buckets: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(estimated series, GPM samples), both with `t_s` from the run's first GPU event, for
    figures_roofline.bandwidth_figure. The samples are those with DRAM_BW_UTIL; empty when
    the run has no telemetry or no Unix time base to place it."""
    series = bw.bandwidth_series(work, peak_bytes_per_s, buckets)
    origin = int(work["ts_ns"].min())
    series["t_s"] = (series["ts_ns"] - origin) / 1e9
    gpm = reads_telemetry.run_samples(store, run_id)
    bases = reads_roofline.time_bases(store, run_id)["base_time_ns"].dropna()
    if gpm.empty or not len(bases):
        return series, gpm.iloc[0:0]
    gpm = gpm[gpm["gpm_dram_bw_util_pct"].notna()]
    return series, gpm.assign(t_s=(gpm["ts_ns"] - (int(bases.iloc[0]) + origin)) / 1e9)


@dataclass(frozen=True, slots=True)
class TimelineView:
    """A timeline window's figure: kernel by kernel (bucket_ns None) or busy fraction."""

    figure: go.Figure
    count: int  # GPU activities overlapping the window
    bucket_ns: int | None


def timeline_view(
    store: Store,
    run_id: str,
    lanes: pd.DataFrame,
    t0_ns: int,
    t1_ns: int,
    max_shapes: int = tl.MAX_SHAPES,
) -> TimelineView:
    """The timeline of [t0, t1) (trace ns) over `lanes` (data.reads_timeline.lanes): each
    activity when at most `max_shapes` overlap it, else busy fraction per lane and bucket."""
    lt = tl.lane_table(lanes)
    labels = lt["label"].tolist()
    origin = int(lanes["first_ns"].min())
    window_ms = ((t0_ns - origin) / 1e6, (t1_ns - origin) / 1e6)
    count = reads_timeline.window_count(store, run_id, t0_ns, t1_ns)
    if count <= max_shapes:
        rows = reads_timeline.window_events(store, run_id, t0_ns, t1_ns, max_shapes)
        fig = timeline_kernels(tl.segments(rows, lt, origin), labels)
        fig.update_xaxes(range=list(window_ms))
        return TimelineView(fig, count, None)
    bucket_ns, n = tl.bucket_plan(t0_ns, t1_ns, len(lt))
    grid = reads_timeline.buckets(store, run_id, t0_ns, t1_ns, bucket_ns)
    z, text = tl.busy_grid(grid, lt, n, bucket_ns)
    fig = timeline_heatmap(z, text, labels, window_ms[0], bucket_ns / 1e6)
    return TimelineView(fig, count, bucket_ns)
