"""The report's charts: the pages' figures for one run, each with a one-paragraph text summary
(the Markdown report's stand-in for the chart, the caption in HTML and PDF) and, where the page
shows one, a small table.

A run without GPU activity (a CPU-only trace) gets no figures, and a summary that says so.
"""

from __future__ import annotations

import pandas as pd

from analysis import bandwidth as bw
from analysis import roofline as rf
from analysis.facts import Facts
from analysis.figures.bandwidth import bandwidth_figure
from analysis.figures.breakdown import breakdown_bars
from analysis.figures.roofline import roofline_figure
from analysis.figures.timeline import timeline_figure
from analysis.load import TimelineWindow
from analysis.report.sections import Chart, Table
from analysis.specs import DeviceSpec
from analysis.text import clip, fmt, fmt_sig, plural

CHART_SECTIONS = ("roofline", "bandwidth", "breakdown", "timeline")
NO_GPU = "No GPU activity in this run (a CPU-only trace): {}."
BANDWIDTH_BUCKETS = 400
TOP_KERNELS = 10
NAME_CHARS = 160  # kernel names in the table (templates run to 700 characters)
# A report's timeline is a snapshot of the whole run: kernel by kernel up to this many GPU
# activities, else busy fraction per bucket. Lower than the page's 20 000 because every drawn
# kernel carries a hover text into the HTML file: train_gpt2_fp32_naive's 6 051 activities
# are 2.0 MB kernel by kernel, 0.19 MB as buckets.
REPORT_TIMELINE_SHAPES = 5_000


def report_charts(facts: Facts, timeline: TimelineWindow | None) -> dict[str, Chart]:
    """The roofline, bandwidth, breakdown and timeline charts of a run (CHART_SECTIONS);
    `timeline` is the whole run loaded with at most REPORT_TIMELINE_SHAPES activities drawn
    one by one (None for a run without GPU activity)."""
    work = facts.all_work
    if work.empty or timeline is None:
        return {
            "roofline": Chart(None, NO_GPU.format("there is no roofline to draw")),
            "bandwidth": Chart(None, NO_GPU.format("there is no HBM traffic to show")),
            "breakdown": Chart(None, NO_GPU.format("there is no GPU time to break down")),
            "timeline": Chart(None, NO_GPU.format("there is no timeline to draw")),
        }
    return {
        "roofline": _roofline(work, facts.spec, facts.measured, facts.roof_sets),
        "bandwidth": _bandwidth(facts, work, facts.spec),
        "breakdown": _breakdown(facts),
        "timeline": _timeline(timeline),
    }


def _roofline(
    work: pd.DataFrame,
    spec: DeviceSpec | None,
    measured: rf.Ceilings | None,
    roof_sets: list[rf.Ceilings],
) -> Chart:
    rows = rf.roofline_table(work, spec, measured, by="op_class")
    fig = roofline_figure(rows, roof_sets)
    roofs = (
        f"Roofs of the {spec.name} datasheet (solid)" if spec else "No spec for this device"
    ) + (", measured ceilings (dashed)." if measured else ".")
    drawn = rows[rows["flops"].notna()]
    if drawn.empty:
        return Chart(fig, f"No op has a work model, so no point is drawn. {roofs}")
    top = drawn.iloc[0]
    return Chart(
        fig,
        f"{len(drawn)} op classes with a work model, one point each (sized by time). The "
        f"largest, {top['name']} ({top['precision']}), takes {fmt(top['share_pct'], 1)} % of "
        f"GPU time at {fmt(top['achieved_tflops'], 2)} TFLOP/s and "
        f"{fmt_sig(top['intensity'])} FLOP/byte, {fmt(top['pct_of_ceiling'], 1)} % of its "
        f"ceiling ({top['bound'] or 'no'} bound). {roofs}",
    )


def _bandwidth(facts: Facts, work: pd.DataFrame, spec: DeviceSpec | None) -> Chart:
    peak = spec.hbm_bytes_per_s if spec else None
    series, gpm = bw.bandwidth_frames(
        work, facts.samples_around_run, facts.data.time_bases, peak, BANDWIDTH_BUCKETS
    )
    busy = series["bytes"] > 0
    util = (
        f"mean {fmt(series.loc[busy, 'util_pct'].mean(), 1)} % of the {spec.name} peak while "
        f"busy, {fmt(series['util_pct'].max(), 1)} % in the busiest bucket"
        if spec
        else "the device is not in the spec table (GB/s only)"
    )
    telemetry = (
        f"{len(gpm)} NVML GPM DRAM_BW_UTIL samples of the same window are drawn beside it."
        if len(gpm)
        else "No NVML telemetry for this run."
    )
    kernels = bw.kernel_bandwidth(work, peak, TOP_KERNELS)
    kernels = kernels.assign(gb=kernels["bytes"] / 1e9)
    table = Table(
        ["kernel", "class", "count", "time (ms)", "GB moved", "GB/s", "% of HBM peak"],
        [
            [clip(str(r.name), NAME_CHARS), str(r.kernel_class), f"{r.count:,}", fmt(r.time_ms, 3),
             fmt(r.gb, 2), fmt(r.gbps, 0), fmt(r.util_pct, 1)]
            for r in kernels.itertuples()
        ],
        title=f"Kernels that move the most bytes (top {TOP_KERNELS})",
    )  # fmt: skip
    return Chart(
        bandwidth_figure(series, gpm),
        f"Estimated HBM traffic from modelled bytes over kernel time: "
        f"{series['bytes'].sum() / 1e9:,.1f} GB moved; {util}. {telemetry}",
        table,
    )


def _breakdown(facts: Facts) -> Chart:
    per_step = facts.per_step
    return Chart(
        breakdown_bars(per_step),
        f"Each of the {len(per_step)} step windows (per rank) split into compute, exposed "
        "communication, memcpy, memset and idle time (host wait, kernel wait, other), in ms.",
    )


def _timeline(view: TimelineWindow) -> Chart:
    first, last = int(view.lanes["first_ns"].min()), int(view.lanes["last_ns"].max())
    how = (
        "each drawn as a segment on its lane"
        if view.bucket_ns is None
        else f"drawn as busy fraction per {view.bucket_ns / 1e3:,.1f} µs bucket"
    )
    return Chart(
        timeline_figure(view),
        f"The whole run: {plural(view.count, 'GPU activity', 'GPU activities')} on "
        f"{plural(len(view.lanes), 'lane')} (rank · "
        f"stream) over {(last - first) / 1e6:,.3f} ms, {how}. The Timeline page zooms in.",
    )
